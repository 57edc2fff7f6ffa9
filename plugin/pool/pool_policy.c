/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which entries of the node pool go: unused too long, then least recently used. */
#include <stdlib.h>
#include <string.h>

#include "pool/pool_policy.h"

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

static int newer_first(const void *pa, const void *pb)
{
	return (older_first(pb, pa));
}

static int by_user(const void *pa, const void *pb)
{
	const struct extc_pool_entry *a = pa, *b = pb;

	if (a->uid != b->uid)
		return (a->uid < b->uid ? -1 : 1);
	return (older_first(pa, pb));
}

static uint64_t at_most(uint64_t v, uint64_t max)
{
	return (v < max ? v : max);
}

/* What needs no measuring: pool_ttl, root's mark, and the keys beyond the newest pool_max_keys. */
static void choose_unmeasured(struct extc_pool_entry *e, size_t n,
			      const struct extc_pool_limits *lim, int64_t now)
{
	int64_t ttl = (int64_t)lim->ttl_days * SECONDS_PER_DAY;
	uint64_t keys = 0;
	size_t i;

	/* held keys count first: they stay whatever their age */
	for (i = 0; i < n; i++) {
		e[i].verdict = EXTC_POOL_KEEP;
		keys += e[i].busy;
	}
	for (i = 0; i < n; i++) {
		if (e[i].busy)
			continue;
		if (e[i].old_version)
			e[i].verdict = EXTC_POOL_EVICT_OLD_VERSION;
		else if (now - e[i].used > ttl)
			e[i].verdict = EXTC_POOL_EVICT_TTL;
		else if (e[i].unmeasurable)
			e[i].verdict = EXTC_POOL_EVICT_UNMEASURABLE;
		else if (lim->user_keys != 0 && keys >= lim->user_keys)
			e[i].verdict = EXTC_POOL_EVICT_USER_KEYS;
		else
			keys++;
	}
}

struct user_sums {
	uint64_t bytes, inodes;
	enum extc_pool_verdict full;	/* once a key did not fit, what every older one gets */
};

/* A held key stays: what it holds leaves the less for the others, all of it if unknown. */
static void add_busy(struct extc_pool_entry *e, const struct extc_pool_limits *lim,
		     extc_pool_measure_fn measure, void *ctx, struct user_sums *s)
{
	if (measure(ctx, e) != EXTC_POOL_FITS_BUDGET) {
		e->bytes = lim->user_max;
		e->inodes = lim->user_inodes;
		s->full = EXTC_POOL_EVICT_UNMEASURABLE;
	}
	s->bytes += e->bytes;
	s->inodes += e->inodes;
}

static void add_free(struct extc_pool_entry *e, const struct extc_pool_limits *lim,
		     extc_pool_measure_fn measure, void *ctx, struct user_sums *s)
{
	if (s->full != EXTC_POOL_KEEP) {
		e->verdict = s->full;
		return;
	}
	switch (measure(ctx, e)) {
	case EXTC_POOL_NOT_MEASURED:
		e->verdict = EXTC_POOL_EVICT_UNMEASURABLE;
		return;
	case EXTC_POOL_OVER_BUDGET:
		e->verdict = s->full = EXTC_POOL_EVICT_USER_INODES;
		return;
	case EXTC_POOL_FITS_BUDGET:
		break;
	}
	if (s->bytes + e->bytes > lim->user_max)
		e->verdict = s->full = EXTC_POOL_EVICT_USER_MAX;
	else if (lim->user_inodes != 0 && s->inodes + e->inodes > lim->user_inodes)
		e->verdict = s->full = EXTC_POOL_EVICT_USER_INODES;
	if (e->verdict != EXTC_POOL_KEEP)
		return;
	s->bytes += e->bytes;
	s->inodes += e->inodes;
}

void extc_pool_policy_choose_user(struct extc_pool_entry *e, size_t n, const struct extc_pool_limits *lim,
				  int64_t now, extc_pool_measure_fn measure, void *ctx)
{
	struct user_sums s = { 0, 0, EXTC_POOL_KEEP };
	size_t i;

	if (n == 0)
		return;
	qsort(e, n, sizeof(*e), newer_first);
	choose_unmeasured(e, n, lim, now);
	for (i = 0; i < n; i++) {
		if (e[i].busy)
			add_busy(&e[i], lim, measure, ctx, &s);
	}
	/* newest first: the keys kept are the newest that fit, as least recently used goes first */
	for (i = 0; i < n; i++) {
		if (!e[i].busy && e[i].verdict == EXTC_POOL_KEEP)
			add_free(&e[i], lim, measure, ctx, &s);
	}
}

int extc_pool_policy_choose_total(struct extc_pool_entry *e, size_t n, const struct extc_pool_limits *lim)
{
	uint64_t *kept, total = 0;
	size_t i, users = 0;

	if (n == 0)
		return (0);
	kept = calloc(n, sizeof(*kept));
	if (kept == NULL)
		return (-1);
	qsort(e, n, sizeof(*e), by_user);
	for (i = 0; i < n; i++) {
		if (i == 0 || e[i].uid != e[i - 1].uid)
			users++;
		e[i].user = users - 1;
		if (e[i].verdict == EXTC_POOL_KEEP)
			kept[e[i].user] += e[i].bytes;
	}
	for (i = 0; i < users; i++)
		total += at_most(kept[i], lim->user_max);
	qsort(e, n, sizeof(*e), older_first);
	for (i = 0; i < n && total > lim->total_max; i++) {
		uint64_t *k = &kept[e[i].user];
		uint64_t before = at_most(*k, lim->user_max);
		uint64_t after = at_most(*k - e[i].bytes, lim->user_max);

		/* one that would not lower the node's count is not taken for it */
		if (e[i].verdict != EXTC_POOL_KEEP || e[i].busy || after == before)
			continue;
		e[i].verdict = EXTC_POOL_EVICT_TOTAL_MAX;
		*k -= e[i].bytes;
		total -= before - after;
	}
	free(kept);
	return (0);
}

const char *extc_pool_policy_verdict_text(enum extc_pool_verdict v)
{
	switch (v) {
	case EXTC_POOL_KEEP:
		return ("kept");
	case EXTC_POOL_EVICT_TTL:
		return ("unused for longer than pool_ttl");
	case EXTC_POOL_EVICT_USER_MAX:
		return ("least recently used of a user over pool_max");
	case EXTC_POOL_EVICT_USER_KEYS:
		return ("older than a user's pool_max_keys newest keys");
	case EXTC_POOL_EVICT_USER_INODES:
		return ("least recently used of a user over pool_max_inodes");
	case EXTC_POOL_EVICT_UNMEASURABLE:
		return ("not measurable by root within the limits");
	case EXTC_POOL_EVICT_OLD_VERSION:
		return ("made under an older version of the key's rules");
	case EXTC_POOL_EVICT_TOTAL_MAX:
	case EXTC_POOL_VERDICTS:
		break;
	}
	return ("least recently used of the node over pool_total_max");
}
