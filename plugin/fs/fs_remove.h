/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: removal of a user-controlled tree, as root, through held descriptors only. */
#ifndef EXTC_FS_REMOVE_H_
#define EXTC_FS_REMOVE_H_

#include "fs/fs_ident.h"
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

/*
 * The same, for a top that must be the directory 'expect' (its device and
 * inode): another entry of that name (a directory a later run made at the
 * same path) is neither entered nor removed, and the walk stops with
 * extc_rm_not_expected (fs_rm.h) as the report's reason. The identity is
 * compared both on the name and on the descriptor the walk goes down
 * through, so what is removed below the top is the expected directory's.
 */
int extc_remove_tree_at_ident(int parentfd, const char *name, const struct extc_ident *expect,
			      const struct extc_rm_limits *limits, struct extc_rm_report *report);

#endif /* EXTC_FS_REMOVE_H_ */
