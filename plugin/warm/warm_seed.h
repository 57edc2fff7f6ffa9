/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: seeding a fresh leaf from a prepared cache, all of it or nothing. */
#ifndef EXTC_WARM_SEED_H_
#define EXTC_WARM_SEED_H_

#include <stddef.h>

#include "warm/warm_copy.h"

/*
 * <leaf>/.ext-cache-seeded.<step>: a step's tasks have seeded the leaf
 * (step_task.c). Not content: a leaf holding only these is still fresh.
 */
#define EXTC_SEEDED_MARK_PREFIX ".ext-cache-seeded."

enum extc_seed_result {
	EXTC_SEED_DONE,		/* the leaf holds the seed's tree */
	EXTC_SEED_NOT_FRESH,	/* the leaf already held files (an earlier step of a job-mode job) */
	EXTC_SEED_ABSENT,	/* the seed directory does not exist (found by whoever opens it) */
	EXTC_SEED_REFUSED,	/* failed or refused, 'why' says why; nothing copied is left */
};

/*
 * Seed: copy the tree of a seed directory 'srcfd' into a freshly made leaf
 * 'leaffd', keeping modification times to the nanosecond, skipping locks
 * (Inductor's locks/ directory included),
 * incomplete torch builds, the manifest and publishers' stages, special
 * files and other mounts; symlinks are copied as symlinks, never followed.
 * The size is measured first: more than max_bytes refuses the seed with
 * both sizes in 'why' and copies nothing. The copy goes to a hidden stage
 * in the leaf and is moved into place at the end; on any failure (the tree
 * growing past max_bytes during the copy included) everything copied is
 * removed. Returns EXTC_SEED_DONE, EXTC_SEED_NOT_FRESH or EXTC_SEED_REFUSED.
 */
enum extc_seed_result extc_warm_seed(int srcfd, int leaffd, const struct extc_warm_opts *o,
				    struct extc_copy_stats *st, char *why, size_t whylen);

/*
 * Whether the leaf is as slurmstepd made it: empty directories, the first
 * task's mark, and a container/ holding at most its env file.
 */
int extc_warm_seed_leaf_is_fresh(int leaffd, bool *fresh, char *why, size_t whylen);

#endif /* EXTC_WARM_SEED_H_ */
