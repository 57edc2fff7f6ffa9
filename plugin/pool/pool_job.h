/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool for job-mode jobs: the steps note their key, the epilog puts the builds back. */
#ifndef EXTC_POOL_JOB_H_
#define EXTC_POOL_JOB_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_tree.h"
#include "pool/pool_taken.h"
#include "warm/warm_publish.h"
#include "warm/warm_walk.h"

#define EXTC_POOL_JOB_SUFFIX ".job"

/*
 * init_post_opt of a job-mode step, as root: note, beside the user's keys,
 * <jobid>.job (root 0600) naming the key, the directory the step's caches
 * use ('dir': the leaf, or its container/ in an image) and when the job's
 * first step started here. A later step with the same key leaves it; one
 * with another key marks it mixed, and then none of the builds the job
 * made is pooled: job mode shares one directory among the job's steps, so
 * a build cannot be told apart from those of another environment. 0, or
 * -1 and 'why'.
 */
int extc_pool_job_note(const struct extc_tree *tree, const struct extc_ids *ids, const char *key,
		       const char *dir, char *why, size_t whylen);

enum extc_pool_job_result {
	EXTC_POOL_JOB_NONE,	/* no step of the job held a key on this node */
	EXTC_POOL_JOB_MOVED,	/* 'rep' says what moved into the key */
	EXTC_POOL_JOB_FAILED,	/* 'why' says why; the job's directory goes to the trash as always */
	EXTC_POOL_JOB_MIXED,	/* the job's steps held different keys: what it made is not pooled ('why') */
};

struct extc_pool_job_report {
	struct extc_warm_walk_report moved;	/* the job's directory, into the job's key */
	struct extc_pool_taken_report taken;	/* keys taken and still out, returned */
};

/*
 * The epilog, or the sweep of a crashed job, as root, before the job's
 * tree goes: take the note and put the job directory's completed builds
 * back into its key (extc_pool_return); then return every key a step of
 * the job took and did not put back (extc_pool_taken_return_job): of a
 * mixed job, only what the take brought, unchanged.
 */
enum extc_pool_job_result extc_pool_job_put_back(const struct extc_tree *tree,
						 const struct extc_ids *ids, const char *node,
						 struct extc_pool_job_report *rep, char *why,
						 size_t whylen);

#endif /* EXTC_POOL_JOB_H_ */
