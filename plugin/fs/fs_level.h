/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the descriptors of a walk down <base>[/<node>]/<uid>/<job>,
 * and the checks every level passes, for the files that walk the tree (the
 * rest of fs/, and the pool's levels). Not an API of the plugin.
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

#define SKELETON_MODE 0711	/* traversable, not listable: users cannot see each other's jobs */
#define LEAF_MODE 0700
#define TRASH_MODE 0700
#define LEVEL_RETRIES 64	/* bounded, but far above what racing epilogs can cause */
/* removal on a step's or an epilog's own path: the user may re-populate the tree forever */
#define CRITICAL_REMOVE_BUDGET_NS (10ull * 1000000000ull)
/*
 * How long a step waits for a level another step or epilog holds. Holders
 * never wait on anything a user controls, so a level is busy for
 * microseconds; past this, something is wrong and the step is refused
 * rather than left waiting.
 */
#define LEVEL_LOCK_WAIT_MS 2000

/* Everything a walk down the tree holds; closed in one place. */
struct extc_level_walk {
	struct extc_tree tree;	/* what is walked: a copy of the caller's (its config and policy stay theirs) */
	int base, node, uid, job;
	char path[PATH_MAX];	/* path of the deepest level opened, for messages */
};

/* A walk of 'tree' that holds nothing yet. */
void extc_level_walk_init(struct extc_level_walk *w, const struct extc_tree *tree);
void extc_level_walk_close(struct extc_level_walk *w);

/* The caller's removal limits, or the default ones with a deadline (CRITICAL_REMOVE_BUDGET_NS). */
const struct extc_rm_limits *extc_level_rm_limits(const struct extc_fs_policy *pol,
						  struct extc_rm_limits *buf);

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

#endif /* EXTC_FS_LEVEL_H_ */
