/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: a walk down <base>[/<node>]/<uid>/<job>: each level
 * opened and verified (no symlink followed, no mount crossed, the policy's
 * owner and modes), held, and dropped once empty; for the files that walk
 * the tree (the rest of fs/, and the pool's levels). Not an API of the plugin.
 */
#ifndef EXTC_FS_LEVEL_H_
#define EXTC_FS_LEVEL_H_

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_ident.h"
#include "fs/fs_policy.h"
#include "fs/fs_remove.h"

/*
 * How long a step waits for a level another step or epilog holds. Holders
 * never wait on anything a user controls, so a level is busy for
 * microseconds; past this, something is wrong and the step is refused
 * rather than left waiting.
 */
#define EXTC_LEVEL_LOCK_WAIT_MS 2000

/* Everything a walk down the tree holds; closed in one place. */
struct extc_level_walk {
	struct extc_tree tree;	/* what is walked (the caller's config and policy, not copied) */
	int base, node, uid, job;
	char path[PATH_MAX];	/* path of the deepest level opened, for messages */
};

/* A walk of 'tree' that holds nothing yet. */
void extc_level_walk_init(struct extc_level_walk *w, const struct extc_tree *tree);
void extc_level_walk_close(struct extc_level_walk *w);

/* Why openat(O_DIRECTORY|O_NOFOLLOW) of 'name' failed with 'err', in words. */
const char *extc_level_open_error(int parentfd, const char *name, int err);

/*
 * flock(fd, op) that never blocks for long: retried without blocking until
 * 'wait_ms' has passed (0: one try). -1 with errno EWOULDBLOCK when still busy.
 */
int extc_level_lock(int fd, int op, unsigned wait_ms);

/*
 * Open (and with 'create', make) the skeleton level 'name' below
 * 'parentfd', a level of the walk, into *out; w->path gets "/<name>". The
 * level must be on its parent's mount, which the opener identifies itself.
 */
enum extc_level_result extc_level_open(struct extc_level_walk *w, int parentfd, const char *name,
				       bool create, int *out, char *why, size_t whylen);
/* Base (and node level) into w->base and w->node. */
enum extc_level_result extc_level_open_top(struct extc_level_walk *w, bool create, char *why,
					   size_t whylen);
/* <uid> and <job> below the node level, into w->uid and w->job. */
enum extc_level_result extc_level_open_job(struct extc_level_walk *w, uid_t uid, uint32_t jobid,
					   bool create, char *why, size_t whylen);

/*
 * A job's level names ('uname', 'jname', EXTC_NAME_LEN each) and the
 * user's level opened into w->uid, nothing made: found, absent (or ids
 * never managed), or refused ('why' says why).
 */
enum extc_level_result extc_level_open_user(struct extc_level_walk *w, uid_t uid, uint32_t jobid,
					    char *uname, char *jname, char *why, size_t whylen);
/* Drop a user's level once empty and not in use; creators hold it shared while they use it. */
void extc_level_drop_uid(int nodefd, int uidfd, const char *uname, struct extc_rm_report *report);

#endif /* EXTC_FS_LEVEL_H_ */
