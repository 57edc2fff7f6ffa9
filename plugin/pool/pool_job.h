/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool for job-mode jobs: the steps note their key, the epilog puts the builds back. */
#ifndef EXTC_POOL_JOB_H_
#define EXTC_POOL_JOB_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_tree.h"
#include "warm/warm_publish.h"

#define EXTC_POOL_JOB_SUFFIX ".job"
/* The epilog moves, it never copies: renames take milliseconds, so more means a hung filesystem. */
#define EXTC_POOL_EPILOG_TIMEOUT 60

/*
 * init_post_opt of a job-mode step, as root: note, beside the user's keys,
 * <jobid>.job (root 0600) naming the key and the job's directory. A later
 * step with the same key leaves it; one with another key marks it mixed,
 * and then none of the job's builds is pooled: job mode shares one
 * directory among the job's steps, so a build cannot be told apart from
 * those of another environment. 0, or -1 and 'why'.
 */
int extc_pool_job_note(const struct extc_tree *tree, const struct extc_ids *ids, const char *key,
		       const char *leaf, char *why, size_t whylen);

enum extc_pool_job_result {
	EXTC_POOL_JOB_NONE,	/* no step of the job held a key on this node */
	EXTC_POOL_JOB_MOVED,	/* 'rep' says what moved into the key */
	EXTC_POOL_JOB_FAILED,	/* 'why' says why; the job's directory goes to the trash as always */
	EXTC_POOL_JOB_MIXED,	/* the job's steps held different keys: nothing pooled ('why') */
};

/*
 * The epilog, as root, before the job's tree is retired: take the note,
 * hold its key, and put the job directory's completed builds back into
 * it, as the user (ids->uid, ids->gid) in a child bounded by
 * EXTC_POOL_EPILOG_TIMEOUT seconds.
 */
enum extc_pool_job_result extc_pool_job_put_back(const struct extc_tree *tree,
						 const struct extc_ids *ids, const char *node,
						 struct extc_warm_walk_report *rep, char *why,
						 size_t whylen);

#endif /* EXTC_POOL_JOB_H_ */
