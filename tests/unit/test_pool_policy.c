/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: which keys of the node pool go: unused past pool_ttl, then least recently used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pool_policy.h"

#define DAY 86400
#define NOW (1800000000LL)
#define MAX_KEYS 4

#define K EXTC_POOL_KEEP
#define TTL EXTC_POOL_EVICT_TTL
#define USER EXTC_POOL_EVICT_USER_MAX
#define TOTAL EXTC_POOL_EVICT_TOTAL_MAX

/* One key as the evictor found it, and the verdict it must get. */
struct key_case {
	const char *key;
	uid_t uid;
	uint64_t bytes;
	int64_t age_days;
	bool busy;
	enum extc_pool_verdict want;
};

struct policy_case {
	const char *what;
	struct extc_pool_limits lim;
	struct key_case keys[MAX_KEYS];	/* ends at a NULL key */
};

static const struct policy_case cases[] = {
	{ "unused past pool_ttl goes, at pool_ttl stays", { 1000, 10000, 14 },
	  { { "old", 1, 10, 15, false, TTL }, { "edge", 1, 10, 14, false, K },
	    { "new", 1, 10, 0, false, K } } },
	{ "a busy key stays over every limit", { 1, 1, 1 },
	  { { "held", 1, 500, 100, true, K }, { "free", 1, 500, 100, false, TTL } } },
	{ "a user over pool_max loses its oldest until it fits; another user is untouched",
	  { 1000, 10000, 14 },
	  { { "a3", 1, 400, 3, false, USER }, { "a1", 1, 400, 1, false, K },
	    { "a2", 1, 400, 2, false, K }, { "b9", 2, 400, 9, false, K } } },
	{ "the node over pool_total_max loses the oldest free key of any user", { 1000, 1000, 14 },
	  { { "a1", 1, 400, 1, false, K }, { "b5", 2, 400, 5, false, TOTAL },
	    { "c3", 3, 400, 3, false, K }, { "c2", 3, 100, 2, true, K } } },
	{ "bytes evicted for pool_ttl count toward pool_max", { 500, 10000, 14 },
	  { { "stale", 1, 400, 30, false, TTL }, { "fresh", 1, 400, 1, false, K } } },
};

static void test_every_case(void **state)
{
	size_t c, i, j, n;

	(void)state;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct extc_pool_entry e[MAX_KEYS];

		memset(e, 0, sizeof(e));
		for (n = 0; n < MAX_KEYS && cases[c].keys[n].key != NULL; n++) {
			const struct key_case *k = &cases[c].keys[n];

			e[n].uid = k->uid;
			strcpy(e[n].key, k->key);
			e[n].bytes = k->bytes;
			e[n].used = NOW - k->age_days * DAY;
			e[n].busy = k->busy;
		}
		extc_pool_choose(e, n, &cases[c].lim, NOW);
		for (i = 0; i < n; i++) {
			/* sorted oldest first */
			if (i > 0 && e[i - 1].used > e[i].used)
				fail_msg("%s: not sorted oldest first", cases[c].what);
			for (j = 0; j < n && strcmp(cases[c].keys[j].key, e[i].key) != 0; j++)
				;
			if (e[i].verdict != cases[c].keys[j].want)
				fail_msg("%s: key %s got '%s', wanted '%s'", cases[c].what, e[i].key,
					 extc_pool_verdict_text(e[i].verdict),
					 extc_pool_verdict_text(cases[c].keys[j].want));
		}
	}
}

static void test_nothing_to_choose_and_the_texts(void **state)
{
	const struct extc_pool_limits lim = { 1000, 10000, 14 };

	(void)state;
	extc_pool_choose(NULL, 0, &lim, NOW);
	assert_string_equal(extc_pool_verdict_text(EXTC_POOL_KEEP), "kept");
	assert_non_null(strstr(extc_pool_verdict_text(EXTC_POOL_EVICT_TTL), "pool_ttl"));
	assert_non_null(strstr(extc_pool_verdict_text(EXTC_POOL_EVICT_USER_MAX), "pool_max"));
	assert_non_null(strstr(extc_pool_verdict_text(EXTC_POOL_EVICT_TOTAL_MAX), "pool_total_max"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_case),
		cmocka_unit_test(test_nothing_to_choose_and_the_texts),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
