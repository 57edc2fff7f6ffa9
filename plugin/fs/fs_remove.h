/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: removal of a user-controlled tree, as root, through held descriptors only. */
#ifndef EXTC_FS_REMOVE_H_
#define EXTC_FS_REMOVE_H_

#include "fs/fs_rm.h"

/*
 * Remove 'name' (a directory tree or a single entry) below 'parentfd'.
 * 'name' must be one plain entry: "", ".", ".." and anything with a '/'
 * are refused (EINVAL) without touching anything.
 * 'parentfd' must be a directory the caller trusts (root-owned, verified).
 * No symlink is followed, no mount point is entered or even opened (nor
 * any name stat-ed in a way that asks its filesystem), '..' is only used
 * to re-open an ancestor whose identity is then verified, and no mode or
 * owner is ever changed. Root removes only what the tree's user could have
 * removed: a directory is entered only if it belongs to the owner of the
 * directory it is in, or if that one is root's (the plugin's skeleton hands
 * over to the user there); another user's directory moved into the tree is
 * left whole and counted in 'foreign'. Returns 0 when everything is gone (or was never
 * there), -1 otherwise with the details in 'report'.
 */
int extc_remove_tree_at(int parentfd, const char *name, const struct extc_rm_limits *limits,
			struct extc_rm_report *report);

#endif /* EXTC_FS_REMOVE_H_ */
