/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which entries of the node pool go: unused too long, then least recently used. */
#ifndef EXTC_POOL_POLICY_H_
#define EXTC_POOL_POLICY_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pool_key.h"

struct extc_pool_limits {
	uint64_t user_max;	/* pool_max: bytes per user on this node */
	uint64_t total_max;	/* pool_total_max: bytes on this node */
	uint32_t ttl_days;	/* pool_ttl */
};

enum extc_pool_verdict {
	EXTC_POOL_KEEP,
	EXTC_POOL_EVICT_TTL,		/* unused for longer than pool_ttl */
	EXTC_POOL_EVICT_USER_MAX,	/* least recently used of a user over pool_max */
	EXTC_POOL_EVICT_TOTAL_MAX,	/* least recently used of the node over pool_total_max */
};

/* One key directory of one user, as the evictor found it. */
struct extc_pool_entry {
	uid_t uid;
	char key[EXTC_POOL_KEY_LEN + 1];
	uint64_t bytes;		/* as measured at its last publish */
	int64_t used;		/* last step start or publish, seconds since the epoch */
	bool busy;		/* a running step holds it: never evicted */
	enum extc_pool_verdict verdict;
};

/*
 * Decide every entry's verdict: those unused for pool_ttl days go; then,
 * oldest first, a user's entries while the user is over pool_max, then
 * the node's while it is over pool_total_max. Busy entries always stay
 * (and still count). Sorts 'e' oldest first.
 */
void extc_pool_choose(struct extc_pool_entry *e, size_t n, const struct extc_pool_limits *lim,
		      int64_t now);

const char *extc_pool_verdict_text(enum extc_pool_verdict v);

#endif /* EXTC_POOL_POLICY_H_ */
