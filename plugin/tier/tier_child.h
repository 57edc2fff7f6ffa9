/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the site tier's work as the job's user: a key's generation fetched into the node pool, or published. */
#ifndef EXTC_TIER_CHILD_H_
#define EXTC_TIER_CHILD_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tier/tier_fetch.h"
#include "tier/tier_path.h"
#include "tier/tier_publish.h"
#include "warm/warm_child.h"

/* What the user's child is given: the tier, the key, the node pool's key directory. */
struct extc_tier_child_arg {
	struct extc_warm_child_arg w;	/* the variables' subdirectories, the tag, the deadline */
	const char *tier;		/* the user's tier, tier= expanded */
	uid_t uid;			/* who must own it */
	const char *key;
	const char *key_dir;		/* the node pool's key directory (the user's own) */
	uint32_t keep;			/* tier_keep= */
	uint64_t max_bytes;		/* the largest generation fetched (the user's pool_max=) */
	uint64_t grace_ns;		/* a publish removes no generation a reader may still copy */
};

/* What comes back: which step failed and why, and what was fetched or published. */
struct extc_tier_child_res {
	bool key_holds_builds;	/* fetch: the key had a file already; the tier was not opened */
	enum extc_tier_path_result path;
	enum extc_tier_fetch_result fetch;
	enum extc_tier_publish_result publish;
	struct extc_tier_fetch_res fetched;
	struct extc_tier_publish_res published;
	char why[EXTC_WARM_CHILD_WHY_MAX];
};

/*
 * extc_as_user functions, in a process that is fully the job's user.
 * Fetch: first look at the key directory: one that holds a file (the
 * plugin's own names aside) has builds, and the tier is not opened
 * (r->key_holds_builds); one that holds only empty directories (a step
 * put back nothing) has them removed, so that the generation's take
 * their names. Then open the tier (extc_tier_path_open: the user's own, nobody
 * else's to write) and the key directory, and copy the newest whole
 * generation of the key into it (extc_tier_fetch). Publish: the same
 * opens, then a new generation of the key directory's builds
 * (extc_tier_publish). 0 when done; else 'why' says what failed.
 */
int extc_tier_child_fetch(void *varg, void *res, size_t reslen);
int extc_tier_child_publish(void *varg, void *res, size_t reslen);

#endif /* EXTC_TIER_CHILD_H_ */
