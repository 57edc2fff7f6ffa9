/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: which keys of the node pool go: unused past pool_ttl, then least recently used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pool/pool_policy.h"

#define DAY 86400
#define NOW (1800000000LL)
#define MAX_KEYS 6

#define K EXTC_POOL_KEEP
#define TTL EXTC_POOL_EVICT_TTL
#define USER EXTC_POOL_EVICT_USER_MAX
#define TOTAL EXTC_POOL_EVICT_TOTAL_MAX
#define KEYS EXTC_POOL_EVICT_USER_KEYS
#define INODES EXTC_POOL_EVICT_USER_INODES
#define UNM EXTC_POOL_EVICT_UNMEASURABLE
#define OLD EXTC_POOL_EVICT_OLD_VERSION

#define FITS EXTC_POOL_FITS_BUDGET
#define OVER EXTC_POOL_OVER_BUDGET
#define FAILS EXTC_POOL_NOT_MEASURED

/* One key as the evictor found it, what root's walk of it finds, and the verdict it must get. */
struct key_case {
	const char *key;
	uid_t uid;
	uint64_t bytes, inodes;
	int64_t age_days;
	bool busy;
	enum extc_pool_measured walk;
	enum extc_pool_verdict want;
	int record;		/* root's record says: 0 nothing special, 1 (true) unmeasurable, OLDREC */
};

#define OLDREC 2		/* root's record is of another key version */

struct policy_case {
	const char *what;
	struct extc_pool_limits lim;
	struct key_case keys[MAX_KEYS];	/* ends at a NULL key */
	const char *measured;		/* the keys walked, in order, one letter-run each */
};

/* The walk's stand-in: what the case says each key holds, and the order keys were walked in. */
struct walks {
	const struct policy_case *c;
	char order[128];
};

static const struct key_case *find(const struct policy_case *c, const char *key)
{
	size_t i;

	for (i = 0; i < MAX_KEYS && c->keys[i].key != NULL; i++) {
		if (strcmp(c->keys[i].key, key) == 0)
			return (&c->keys[i]);
	}
	fail_msg("%s: no key %s", c->what, key);
	return (NULL);
}

static enum extc_pool_measured fake_walk(void *ctx, struct extc_pool_entry *e)
{
	struct walks *w = ctx;
	const struct key_case *k = find(w->c, e->key);

	if (w->order[0] != '\0')
		strcat(w->order, " ");
	strcat(w->order, e->key);
	e->bytes = k->bytes;
	e->inodes = k->inodes;
	return (k->walk);
}

#define L(user, total, keys, inodes) { user, total, 14, keys, inodes }

static const struct policy_case user_cases[] = {
	{ "unused past pool_ttl goes unmeasured, at pool_ttl stays", L(1000, 10000, 0, 0),
	  { { "old", 1, 10, 1, 15, false, FITS, TTL, false },
	    { "edge", 1, 10, 1, 14, false, FITS, K, false },
	    { "new", 1, 10, 1, 0, false, FITS, K, false } }, "new edge" },
	{ "a busy key stays over every limit, and leaves nothing for the rest", L(1, 1, 0, 1),
	  { { "held", 1, 500, 9, 100, true, FITS, K, false },
	    { "free", 1, 1, 1, 1, false, FITS, USER, false } }, "held free" },
	{ "over pool_max: the oldest go, the newest that fit stay", L(1000, 10000, 0, 0),
	  { { "a3", 1, 400, 1, 3, false, FITS, USER, false },
	    { "a1", 1, 400, 1, 1, false, FITS, K, false },
	    { "a2", 1, 400, 1, 2, false, FITS, K, false },
	    { "a4", 1, 1, 1, 4, false, FITS, USER, false } }, "a1 a2 a3" },
	{ "beyond pool_max_keys: the oldest go unmeasured, held keys count first", L(1000, 10000, 2, 0),
	  { { "k1", 1, 1, 1, 1, false, FITS, K, false },
	    { "k2", 1, 1, 1, 2, false, FITS, KEYS, false },
	    { "k3", 1, 1, 1, 3, false, FITS, KEYS, false },
	    { "h9", 1, 1, 1, 9, true, FITS, K, false } }, "h9 k1" },
	{ "over pool_max_inodes: the oldest go", L(1000, 10000, 0, 100),
	  { { "i1", 1, 1, 60, 1, false, FITS, K, false },
	    { "i2", 1, 1, 60, 2, false, FITS, INODES, false },
	    { "i3", 1, 1, 1, 3, false, FITS, INODES, false } }, "i1 i2" },
	{ "a key root cannot measure goes alone; the names budget spent ends the user's keys",
	  L(1000, 10000, 0, 0),
	  { { "deep", 1, 0, 0, 1, false, FAILS, UNM, false },
	    { "ok", 1, 10, 1, 2, false, FITS, K, false },
	    { "wide", 1, 0, 0, 3, false, OVER, INODES, false },
	    { "after", 1, 1, 1, 4, false, FITS, INODES, false } }, "deep ok wide" },
	{ "root's unmeasurable mark: a free key goes unmeasured, a held one is walked again",
	  L(1000, 10000, 0, 0),
	  { { "marked", 1, 10, 1, 1, false, FITS, UNM, true },
	    { "heldmark", 1, 10, 1, 2, true, FITS, K, true } }, "heldmark" },
	{ "a key of an older key version goes unmeasured however new; a held one stays",
	  L(1000, 10000, 0, 0),
	  { { "v1new", 1, 10, 1, 0, false, FITS, OLD, OLDREC },
	    { "v1held", 1, 10, 1, 1, true, FITS, K, OLDREC },
	    { "v2", 1, 10, 1, 2, false, FITS, K, false } }, "v1held v2" },
	{ "a held key root cannot measure counts as the user's whole pool_max", L(1000, 10000, 0, 0),
	  { { "held", 1, 0, 0, 5, true, FAILS, K, false },
	    { "tiny", 1, 1, 1, 1, false, FITS, UNM, false } }, "held" },
};

static void run_user_case(const struct policy_case *c)
{
	struct extc_pool_entry e[MAX_KEYS];
	struct walks w = { c, "" };
	size_t i, n;

	memset(e, 0, sizeof(e));
	for (n = 0; n < MAX_KEYS && c->keys[n].key != NULL; n++) {
		e[n].uid = c->keys[n].uid;
		strcpy(e[n].key, c->keys[n].key);
		e[n].used = NOW - c->keys[n].age_days * DAY;
		e[n].busy = c->keys[n].busy;
		e[n].unmeasurable = c->keys[n].record == 1;
		e[n].old_version = c->keys[n].record == OLDREC;
	}
	extc_pool_policy_choose_user(e, n, &c->lim, NOW, fake_walk, &w);
	for (i = 0; i < n; i++) {
		const struct key_case *k = find(c, e[i].key);

		if (i > 0 && e[i - 1].used < e[i].used)
			fail_msg("%s: not sorted newest first", c->what);
		if (e[i].verdict != k->want)
			fail_msg("%s: key %s got '%s', wanted '%s'", c->what, e[i].key,
				 extc_pool_policy_verdict_text(e[i].verdict), extc_pool_policy_verdict_text(k->want));
	}
	if (strcmp(w.order, c->measured) != 0)
		fail_msg("%s: walked [%s], wanted [%s]", c->what, w.order, c->measured);
}

static void test_each_user_on_its_own(void **state)
{
	size_t c;

	(void)state;
	for (c = 0; c < sizeof(user_cases) / sizeof(user_cases[0]); c++)
		run_user_case(&user_cases[c]);
}

static const struct policy_case total_cases[] = {
	{ "the node over pool_total_max loses the oldest free key of any user", L(1000, 1000, 0, 0),
	  { { "a1", 1, 400, 1, 1, false, FITS, K, false },
	    { "b5", 2, 400, 1, 5, false, FITS, TOTAL, false },
	    { "c3", 3, 400, 1, 3, false, FITS, K, false },
	    { "c2", 3, 100, 1, 2, true, FITS, K, false } }, "" },
	{ "a user's held surplus over pool_max costs no other user a key", L(1000, 3000, 0, 0),
	  { { "huge", 1, 1ull << 44, 1, 0, true, FITS, K, false },
	    { "v1", 2, 900, 1, 9, false, FITS, K, false },
	    { "v2", 2, 90, 1, 8, false, FITS, K, false },
	    { "w1", 3, 900, 1, 7, false, FITS, K, false } }, "" },
	{ "a key whose going would not lower the count is not taken for it", L(1000, 1500, 0, 0),
	  { { "big", 1, 5000, 1, 0, true, FITS, K, false },
	    { "old", 1, 100, 1, 20, false, FITS, K, false },
	    { "v1", 2, 900, 1, 9, false, FITS, TOTAL, false },
	    { "v2", 2, 400, 1, 1, false, FITS, K, false } }, "" },
};

static void test_the_node_over_pool_total_max(void **state)
{
	size_t c, i, n;

	(void)state;
	for (c = 0; c < sizeof(total_cases) / sizeof(total_cases[0]); c++) {
		const struct policy_case *pc = &total_cases[c];
		struct extc_pool_entry e[MAX_KEYS];

		memset(e, 0, sizeof(e));
		for (n = 0; n < MAX_KEYS && pc->keys[n].key != NULL; n++) {
			e[n].uid = pc->keys[n].uid;
			strcpy(e[n].key, pc->keys[n].key);
			e[n].bytes = pc->keys[n].bytes;
			e[n].used = NOW - pc->keys[n].age_days * DAY;
			e[n].busy = pc->keys[n].busy;
		}
		assert_int_equal(extc_pool_policy_choose_total(e, n, &pc->lim), 0);
		for (i = 0; i < n; i++) {
			const struct key_case *k = find(pc, e[i].key);

			if (i > 0 && e[i - 1].used > e[i].used)
				fail_msg("%s: not sorted oldest first", pc->what);
			if (e[i].verdict != k->want)
				fail_msg("%s: key %s got '%s', wanted '%s'", pc->what, e[i].key,
					 extc_pool_policy_verdict_text(e[i].verdict),
					 extc_pool_policy_verdict_text(k->want));
		}
	}
}

static void test_nothing_to_choose_and_the_texts(void **state)
{
	const struct extc_pool_limits lim = L(1000, 10000, 0, 0);

	(void)state;
	extc_pool_policy_choose_user(NULL, 0, &lim, NOW, fake_walk, NULL);
	assert_int_equal(extc_pool_policy_choose_total(NULL, 0, &lim), 0);
	assert_string_equal(extc_pool_policy_verdict_text(EXTC_POOL_KEEP), "kept");
	assert_non_null(strstr(extc_pool_policy_verdict_text(EXTC_POOL_EVICT_TTL), "pool_ttl"));
	assert_non_null(strstr(extc_pool_policy_verdict_text(EXTC_POOL_EVICT_USER_MAX), "pool_max"));
	assert_non_null(strstr(extc_pool_policy_verdict_text(EXTC_POOL_EVICT_TOTAL_MAX), "pool_total_max"));
	assert_non_null(strstr(extc_pool_policy_verdict_text(EXTC_POOL_EVICT_USER_KEYS), "pool_max_keys"));
	assert_non_null(strstr(extc_pool_policy_verdict_text(EXTC_POOL_EVICT_USER_INODES), "pool_max_inodes"));
	assert_non_null(strstr(extc_pool_policy_verdict_text(EXTC_POOL_EVICT_UNMEASURABLE), "measurable"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_user_on_its_own),
		cmocka_unit_test(test_the_node_over_pool_total_max),
		cmocka_unit_test(test_nothing_to_choose_and_the_texts),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
