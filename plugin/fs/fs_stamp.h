/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a node-wide time stamp on the trash, to do something at most once per interval. */
#ifndef EXTC_FS_STAMP_H_
#define EXTC_FS_STAMP_H_

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"
#include "fs/fs_policy.h"

/*
 * When the thing 'name' was last done on this node: an extended attribute
 * trusted.ext-cache.<name> of <base>[/<node>]/.trash (root's, 0700; only
 * root may set a trusted attribute), so the base holds no file more.
 * True, and the stamp set to 'now', when that was at least 'interval_s'
 * ago (or never) and no other process is reading or setting a stamp of
 * the node at this moment (a lock of the stamp's own, never the emptier's:
 * fs_stamp.c); false otherwise and on any doubt (the lock busy). Where
 * the filesystem keeps no extended attributes, always true: the caller's
 * own bound per call is then the only one.
 */
bool extc_stamp_due(const struct extc_tree *tree, const char *name, uint32_t interval_s,
		    int64_t now);

#endif /* EXTC_FS_STAMP_H_ */
