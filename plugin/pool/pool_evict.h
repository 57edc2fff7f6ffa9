/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's eviction pass, as root, in the background. */
#ifndef EXTC_POOL_EVICT_H_
#define EXTC_POOL_EVICT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "fs/fs_policy.h"
#include "pool/pool_policy.h"

/* a user's keys looked at per pass: what is beyond waits for the next pass, no other user does */
#define EXTC_POOL_USER_SCAN_MAX (2 * EXTC_POOL_MAX_KEYS_MAX)

struct extc_pool_evict_report {
	unsigned users;		/* user levels looked at */
	unsigned keys;		/* key directories looked at */
	unsigned busy;		/* held by a running step */
	unsigned evicted;
	unsigned failed;	/* could not be moved out (a mount on it, ...) */
	unsigned left;		/* beyond EXTC_POOL_USER_SCAN_MAX of a user: for the next pass */
	bool overlapped;	/* another pass was running: this one did nothing */
	uint64_t bytes_kept;	/* allocated, as measured in this pass */
	uint64_t bytes_evicted;	/* of the evicted keys that were measured */
	uint64_t inodes_kept;
	unsigned by_reason[EXTC_POOL_VERDICTS];	/* per enum extc_pool_verdict */
};

/*
 * One eviction pass over the node's pool (in the background, never in a
 * step or an epilog; one pass at a time, a pass that finds another
 * running does nothing). Every user's level is reached, each user's keys
 * are chosen on their own (extc_pool_policy_choose_user), measured by root's walk
 * within a budget of their own (pool_max_inodes names and
 * EXTC_POOL_MEASURE_BUDGET_NS), then the node's (extc_pool_policy_choose_total);
 * those that go are renamed into the trash (the caller empties it). A key
 * directory without its record goes too. Users whose level is being
 * changed are left for next time.
 */
int extc_pool_evict(const struct extc_tree *tree, int64_t now, struct extc_pool_evict_report *rep,
		    char *why, size_t whylen);

/* One log-ready sentence for a pass: keys, users, what went and why, what is kept. */
void extc_pool_evict_report_text(const struct extc_pool_evict_report *rep, char *buf, size_t len);

#endif /* EXTC_POOL_EVICT_H_ */
