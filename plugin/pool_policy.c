/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which entries of the node pool go: unused too long, then least recently used. */
#include <stdlib.h>
#include <string.h>

#include "pool_policy.h"

#define SECONDS_PER_DAY 86400

static int older_first(const void *pa, const void *pb)
{
	const struct extc_pool_entry *a = pa, *b = pb;

	if (a->used != b->used)
		return (a->used < b->used ? -1 : 1);
	if (a->uid != b->uid)
		return (a->uid < b->uid ? -1 : 1);
	return (strcmp(a->key, b->key));
}

/* Bytes kept by the entries of 'uid' (every user's when 'all'). */
static uint64_t kept_bytes(const struct extc_pool_entry *e, size_t n, uid_t uid, bool all)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (e[i].verdict == EXTC_POOL_KEEP && (all || e[i].uid == uid))
			sum += e[i].bytes;
	}
	return (sum);
}

/* Oldest first, evict the entries of 'uid' (every user's when 'all') until they fit in 'max'. */
static void trim(struct extc_pool_entry *e, size_t n, uid_t uid, bool all, uint64_t max,
		 enum extc_pool_verdict why)
{
	uint64_t sum = kept_bytes(e, n, uid, all);
	size_t i;

	for (i = 0; i < n && sum > max; i++) {
		if (e[i].verdict != EXTC_POOL_KEEP || e[i].busy || (!all && e[i].uid != uid))
			continue;
		e[i].verdict = why;
		sum -= e[i].bytes;
	}
}

void extc_pool_choose(struct extc_pool_entry *e, size_t n, const struct extc_pool_limits *lim,
		      int64_t now)
{
	int64_t ttl = (int64_t)lim->ttl_days * SECONDS_PER_DAY;
	size_t i;

	if (n == 0)
		return;
	qsort(e, n, sizeof(*e), older_first);
	for (i = 0; i < n; i++) {
		e[i].verdict = EXTC_POOL_KEEP;
		if (!e[i].busy && now - e[i].used > ttl)
			e[i].verdict = EXTC_POOL_EVICT_TTL;
	}
	for (i = 0; i < n; i++) {
		/* each user once: at its first entry */
		size_t j;

		for (j = 0; j < i && e[j].uid != e[i].uid; j++)
			;
		if (j == i)
			trim(e, n, e[i].uid, false, lim->user_max, EXTC_POOL_EVICT_USER_MAX);
	}
	trim(e, n, 0, true, lim->total_max, EXTC_POOL_EVICT_TOTAL_MAX);
}

const char *extc_pool_verdict_text(enum extc_pool_verdict v)
{
	switch (v) {
	case EXTC_POOL_KEEP:
		return ("kept");
	case EXTC_POOL_EVICT_TTL:
		return ("unused for longer than pool_ttl");
	case EXTC_POOL_EVICT_USER_MAX:
		return ("least recently used of a user over pool_max");
	case EXTC_POOL_EVICT_TOTAL_MAX:
		break;
	}
	return ("least recently used of the node over pool_total_max");
}
