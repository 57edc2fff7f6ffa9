/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the sweep of what jobs whose epilog never ran left in the tree. */
#ifndef EXTC_FS_SWEEP_H_
#define EXTC_FS_SWEEP_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/fs_policy.h"
#include "fs/fs_rm.h"

/* Does the job still run (or is it still ending) anywhere? Unsure means yes. */
typedef bool (*extc_sweep_alive_fn)(uint32_t jobid, void *arg);

/* Called just before a job's tree goes, while the sweep holds its level (nothing else can). */
typedef void (*extc_sweep_retire_fn)(uid_t uid, uint32_t jobid, void *arg);

/* What the sweep asks, and whom it tells: either may be NULL. */
struct extc_sweep_calls {
	extc_sweep_alive_fn alive;
	void *alive_arg;
	extc_sweep_retire_fn before_retire;
	void *retire_arg;
};

struct extc_sweep_report {
	unsigned jobs_removed;	/* leftovers removed */
	unsigned jobs_failed;	/* leftovers that could not be removed completely */
	unsigned held;		/* job levels held by a running step here */
	unsigned alive;		/* not held, but the job is not over */
	unsigned refused;	/* levels that failed verification: left alone */
	struct extc_rm_report rm;
};

/*
 * Remove leftovers of jobs whose epilog never ran (slurmstepd or the node
 * killed): every job level that no step holds and whose job calls->alive
 * says is over, after calls->before_retire (what the job took from the
 * node pool goes back first). Levels that fail verification are counted
 * and left alone.
 */
int extc_sweep_leftovers(const struct extc_tree *tree, const struct extc_sweep_calls *calls,
			 struct extc_sweep_report *report, char *why, size_t whylen);

#endif /* EXTC_FS_SWEEP_H_ */
