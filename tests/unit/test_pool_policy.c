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

static void entry(struct extc_pool_entry *e, uid_t uid, const char *key, uint64_t bytes,
		  int64_t age_days, bool busy)
{
	memset(e, 0, sizeof(*e));
	e->uid = uid;
	strcpy(e->key, key);
	e->bytes = bytes;
	e->used = NOW - age_days * DAY;
	e->busy = busy;
}

/* The verdict of the entry whose key is 'key' (entries are re-sorted by the policy). */
static enum extc_pool_verdict verdict(const struct extc_pool_entry *e, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(e[i].key, key) == 0)
			return (e[i].verdict);
	}
	fail_msg("no entry %s", key);
	return (EXTC_POOL_KEEP);
}

static const struct extc_pool_limits roomy = { 1000, 10000, 14 };

static void test_unused_past_ttl_goes_the_rest_stays(void **state)
{
	struct extc_pool_entry e[3];

	(void)state;
	entry(&e[0], 1, "old", 10, 15, false);
	entry(&e[1], 1, "edge", 10, 14, false);
	entry(&e[2], 1, "new", 10, 0, false);
	extc_pool_choose(e, 3, &roomy, NOW);
	assert_int_equal(verdict(e, 3, "old"), EXTC_POOL_EVICT_TTL);
	assert_int_equal(verdict(e, 3, "edge"), EXTC_POOL_KEEP);
	assert_int_equal(verdict(e, 3, "new"), EXTC_POOL_KEEP);
}

static void test_a_busy_key_stays_over_every_limit(void **state)
{
	const struct extc_pool_limits tight = { 1, 1, 1 };
	struct extc_pool_entry e[2];

	(void)state;
	entry(&e[0], 1, "held", 500, 100, true);
	entry(&e[1], 1, "free", 500, 100, false);
	extc_pool_choose(e, 2, &tight, NOW);
	assert_int_equal(verdict(e, 2, "held"), EXTC_POOL_KEEP);
	assert_int_equal(verdict(e, 2, "free"), EXTC_POOL_EVICT_TTL);
}

static void test_a_user_over_pool_max_loses_its_oldest_until_it_fits(void **state)
{
	struct extc_pool_entry e[4];

	(void)state;
	entry(&e[0], 1, "a3", 400, 3, false);
	entry(&e[1], 1, "a1", 400, 1, false);
	entry(&e[2], 1, "a2", 400, 2, false);
	entry(&e[3], 2, "b9", 400, 9, false);	/* another user, older, under its limit */
	extc_pool_choose(e, 4, &roomy, NOW);
	assert_int_equal(verdict(e, 4, "a3"), EXTC_POOL_EVICT_USER_MAX);
	assert_int_equal(verdict(e, 4, "a2"), EXTC_POOL_KEEP);	/* 800 fits in 1000 */
	assert_int_equal(verdict(e, 4, "a1"), EXTC_POOL_KEEP);
	assert_int_equal(verdict(e, 4, "b9"), EXTC_POOL_KEEP);
	/* sorted oldest first */
	assert_string_equal(e[0].key, "b9");
	assert_string_equal(e[3].key, "a1");
}

static void test_the_node_over_pool_total_max_loses_the_oldest_of_any_user(void **state)
{
	const struct extc_pool_limits lim = { 1000, 1000, 14 };
	struct extc_pool_entry e[4];

	(void)state;
	entry(&e[0], 1, "a1", 400, 1, false);
	entry(&e[1], 2, "b5", 400, 5, false);
	entry(&e[2], 3, "c3", 400, 3, false);
	entry(&e[3], 3, "c2", 100, 2, true);	/* held: counts, never goes */
	extc_pool_choose(e, 4, &lim, NOW);
	/* 1300 bytes: the oldest free key goes, then 900 fits */
	assert_int_equal(verdict(e, 4, "b5"), EXTC_POOL_EVICT_TOTAL_MAX);
	assert_int_equal(verdict(e, 4, "c3"), EXTC_POOL_KEEP);
	assert_int_equal(verdict(e, 4, "a1"), EXTC_POOL_KEEP);
	assert_int_equal(verdict(e, 4, "c2"), EXTC_POOL_KEEP);
}

static void test_ttl_evictions_count_toward_the_limits(void **state)
{
	const struct extc_pool_limits lim = { 500, 10000, 14 };
	struct extc_pool_entry e[2];

	(void)state;
	entry(&e[0], 1, "stale", 400, 30, false);
	entry(&e[1], 1, "fresh", 400, 1, false);
	extc_pool_choose(e, 2, &lim, NOW);
	/* the stale key's bytes are gone already: the fresh one fits */
	assert_int_equal(verdict(e, 2, "stale"), EXTC_POOL_EVICT_TTL);
	assert_int_equal(verdict(e, 2, "fresh"), EXTC_POOL_KEEP);
}

static void test_nothing_to_choose_and_the_texts(void **state)
{
	(void)state;
	extc_pool_choose(NULL, 0, &roomy, NOW);
	assert_string_equal(extc_pool_verdict_text(EXTC_POOL_KEEP), "kept");
	assert_non_null(strstr(extc_pool_verdict_text(EXTC_POOL_EVICT_TTL), "pool_ttl"));
	assert_non_null(strstr(extc_pool_verdict_text(EXTC_POOL_EVICT_USER_MAX), "pool_max"));
	assert_non_null(strstr(extc_pool_verdict_text(EXTC_POOL_EVICT_TOTAL_MAX), "pool_total_max"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unused_past_ttl_goes_the_rest_stays),
		cmocka_unit_test(test_a_busy_key_stays_over_every_limit),
		cmocka_unit_test(test_a_user_over_pool_max_loses_its_oldest_until_it_fits),
		cmocka_unit_test(test_the_node_over_pool_total_max_loses_the_oldest_of_any_user),
		cmocka_unit_test(test_ttl_evictions_count_toward_the_limits),
		cmocka_unit_test(test_nothing_to_choose_and_the_texts),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
