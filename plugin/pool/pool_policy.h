/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which entries of the node pool go: unused too long, then least recently used. */
#ifndef EXTC_POOL_POLICY_H_
#define EXTC_POOL_POLICY_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pool/pool_key.h"

struct extc_pool_limits {
	uint64_t user_max;	/* pool_max: bytes per user on this node */
	uint64_t total_max;	/* pool_total_max: bytes on this node */
	uint32_t ttl_days;	/* pool_ttl */
	uint32_t user_keys;	/* pool_max_keys: keys per user on this node; 0: none */
	uint64_t user_inodes;	/* pool_max_inodes: inodes per user on this node; 0: none */
};

/* The first four are the indices of the report's counts every release had. */
enum extc_pool_verdict {
	EXTC_POOL_KEEP,
	EXTC_POOL_EVICT_TTL,		/* unused for longer than pool_ttl */
	EXTC_POOL_EVICT_USER_MAX,	/* least recently used of a user over pool_max */
	EXTC_POOL_EVICT_TOTAL_MAX,	/* least recently used of the node over pool_total_max */
	EXTC_POOL_EVICT_USER_KEYS,	/* older than a user's pool_max_keys newest */
	EXTC_POOL_EVICT_USER_INODES,	/* least recently used of a user over pool_max_inodes */
	EXTC_POOL_EVICT_UNMEASURABLE,	/* root could not measure it, or not within the user's budget */
	EXTC_POOL_EVICT_OLD_VERSION,	/* made under other key rules (EXTC_POOL_KEY_VERSION) */
	EXTC_POOL_VERDICTS
};

/* One key directory of one user, as the evictor found and measured it. */
struct extc_pool_entry {
	uid_t uid;
	char key[EXTC_POOL_KEY_LEN + 1];
	uint64_t bytes;		/* allocated, as root measured it in this pass */
	uint64_t inodes;
	int64_t used;		/* last step start or publish, seconds since the epoch */
	bool busy;		/* a running step holds it: never evicted */
	bool unmeasurable;	/* root's record says the last move left what cannot be measured */
	bool old_version;	/* root's record is of another EXTC_POOL_KEY_VERSION */
	enum extc_pool_verdict verdict;
	size_t user;		/* extc_pool_policy_choose_total's own */
};

/* What measuring one entry found; the callee fills its bytes and inodes. */
enum extc_pool_measured {
	EXTC_POOL_FITS_BUDGET,		/* measured */
	EXTC_POOL_OVER_BUDGET,		/* more names than the user's budget had left */
	EXTC_POOL_NOT_MEASURED,		/* too deep, a mount, the time budget, an error */
};
typedef enum extc_pool_measured (*extc_pool_measure_fn)(void *ctx, struct extc_pool_entry *e);

/*
 * One user's entries (all of one uid): those unused for pool_ttl days go,
 * then those older than the user's pool_max_keys newest; then, newest
 * first (held ones before all others, as they stay whatever they hold),
 * each is measured by 'measure' and kept while the user's sums stay
 * within pool_max and pool_max_inodes: from the first that does not fit,
 * it and every older one go, unmeasured. One that cannot be measured
 * goes; a held one that cannot be measured counts as the user's full
 * limits. Busy entries always stay. Sorts 'e' newest first.
 */
void extc_pool_policy_choose_user(struct extc_pool_entry *e, size_t n, const struct extc_pool_limits *lim,
				  int64_t now, extc_pool_measure_fn measure, void *ctx);

/*
 * The node's entries that every user's pass kept: oldest first, any
 * user's free entries go while the node is over pool_total_max. A user
 * counts toward it for no more than pool_max, so what a user's held keys
 * hold beyond that is the user's own to lose, never another user's.
 * Sorts 'e' oldest first.
 */
/* 0, or -1 when out of memory (every verdict is then left as it was). */
int extc_pool_policy_choose_total(struct extc_pool_entry *e, size_t n, const struct extc_pool_limits *lim);

const char *extc_pool_policy_verdict_text(enum extc_pool_verdict v);

#endif /* EXTC_POOL_POLICY_H_ */
