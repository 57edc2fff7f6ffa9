/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the root-only trash: a job's tree retired into it, and emptied. */
#ifndef EXTC_FS_TRASH_H_
#define EXTC_FS_TRASH_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_level.h"
#include "fs/fs_policy.h"
#include "fs/fs_remove.h"

#define EXTC_TRASH_NAME ".trash"
/*
 * <base>[/<node>]/.trash/.kept: what the emptier met and must not remove
 * (directories of other users moved into a job's tree, mounts it could not
 * detach, immutable files). Each trash entry holding such things is moved
 * there once, reported once with its first path, and left to the admin.
 */
#define EXTC_TRASH_KEPT_NAME ".kept"

/* <base>[/<node>]/.trash opened (with 'create', made first) into *out. */
enum extc_level_result extc_trash_open(struct extc_level_walk *w, bool create, int *out, char *why,
				       size_t whylen);
/* Move dirfd/name into the trash under a name no other move can take, made from 'tag'; 0 or -1 (errno). */
int extc_trash_move(int dirfd, const char *name, int trashfd, const char *tag);

/*
 * Take a job's tree out of the epilog's critical path: rename it, in O(1)
 * whatever its size, into <base>[/<node>]/.trash (root-owned 0700, same
 * filesystem), then drop the user's level if empty. 'moved' says whether
 * there was a tree to move. Never while something holds the job level.
 */
enum extc_trash_retire_result {
	EXTC_TRASH_RETIRE_DONE,		/* moved, or nothing to move ('moved' says which) */
	EXTC_TRASH_RETIRE_NO_TRASH,	/* the trash could not be had: remove the tree in place instead */
	EXTC_TRASH_RETIRE_REFUSED,	/* the tree itself was refused ('why') */
	EXTC_TRASH_RETIRE_HELD,		/* a process holds the job level (a step's detached end): try later */
};

/*
 * 'before_move' (may be NULL) runs once the job level is held, right before
 * the tree goes, with nothing of the job's running on it: what the job took
 * from the node pool goes back then, a step's end that could not move it
 * having left a note (pool_taken.h).
 */
enum extc_trash_retire_result extc_trash_retire_job(const struct extc_tree *tree, uid_t uid,
						    uint32_t jobid, void (*before_move)(void *arg),
						    void *arg, bool *moved, char *why, size_t whylen);

/*
 * Remove everything in the trash with the removal engine, within
 * the policy's rm_limits. One emptier at a time (a second returns 0 at once).
 * 0 when the trash is empty (or absent) afterwards.
 */
int extc_trash_empty(const struct extc_tree *tree, struct extc_rm_report *report, char *why,
		     size_t whylen);

#endif /* EXTC_FS_TRASH_H_ */
