/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: hash.h. The values are pinned: the pool's keys and
 * the manifests' CPU fingerprints are made with these functions and kept on
 * disk, so a change here would rename every key a node holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/hash.h"

/* FNV-1a's own offset basis, for its published test vectors */
#define FNV1A_OFFSET_BASIS 14695981039346656037ULL

static void test_fnv1a_is_fnv1a(void **state)
{
	(void)state;
	assert_true(extc_hash_fnv1a(FNV1A_OFFSET_BASIS, "", 0) == FNV1A_OFFSET_BASIS);
	assert_true(extc_hash_fnv1a(FNV1A_OFFSET_BASIS, "a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(extc_hash_fnv1a(FNV1A_OFFSET_BASIS, "foobar", 6) == 0x85944171f73967e8ULL);
}

/* from the plugin's start, as every key and fingerprint has been made */
static void test_fnv1a_from_the_plugins_start_is_pinned(void **state)
{
	(void)state;
	assert_true(EXTC_HASH_START == 1469598103934665603ULL);
	assert_true(extc_hash_fnv1a(EXTC_HASH_START, "", 0) == 0x14650fb0739d0383ULL);
	assert_true(extc_hash_fnv1a(EXTC_HASH_START, "a", 1) == 0x44bd8ad473cd9906ULL);
	/* the CPU fingerprint's text for "flags : fpu sse2 avx2 avx512f" */
	assert_true(extc_hash_fnv1a(EXTC_HASH_START, " fpu sse2 avx2 avx512f", 22) ==
		    0xed43584f081f833fULL);
}

/* carried on byte by byte or all at once, the same */
static void test_fnv1a_carries_on(void **state)
{
	static const char text[] = "ext-cache: the same bytes in any pieces";
	uint64_t h = EXTC_HASH_START;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(text) - 1; i++)
		h = extc_hash_fnv1a(h, text + i, 1);
	assert_true(h == extc_hash_fnv1a(EXTC_HASH_START, text, sizeof(text) - 1));
	h = extc_hash_fnv1a(extc_hash_fnv1a(EXTC_HASH_START, text, 10), text + 10,
			    sizeof(text) - 11);
	assert_true(h == extc_hash_fnv1a(EXTC_HASH_START, text, sizeof(text) - 1));
}

static void pair_of(const void *data, size_t n, uint64_t a, uint64_t b)
{
	struct extc_hash_pair h;

	extc_hash_pair_init(&h);
	extc_hash_pair_bytes(&h, data, n);
	assert_true(h.a == a);
	assert_true(h.b == b);
	/* lane a is FNV-1a from the plugin's start */
	assert_true(h.a == extc_hash_fnv1a(EXTC_HASH_START, data, n));
}

static void test_pair_is_pinned(void **state)
{
	unsigned char all[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)i;
	pair_of("", 0, 0x14650fb0739d0383ULL, 0x84222325cbf29ce4ULL);
	pair_of("a", 1, 0x44bd8ad473cd9906ULL, 0x789e3e3a49ce0433ULL);
	pair_of("ext-cache", 9, 0x1d9fff441baa3ab9ULL, 0x338e412bc1cd142bULL);
	pair_of(all, sizeof(all), 0x16d173bdfcdae583ULL, 0x00400b6d136c098aULL);
}

/* as the pool key feeds it: field by field, the same as all at once */
static void test_pair_carries_on(void **state)
{
	static const char text[] = "VIRTUAL_ENV\0/home/u/venv\0";
	struct extc_hash_pair whole, pieces;
	size_t i;

	(void)state;
	extc_hash_pair_init(&whole);
	extc_hash_pair_bytes(&whole, text, sizeof(text));
	extc_hash_pair_init(&pieces);
	for (i = 0; i < sizeof(text); i++)
		extc_hash_pair_bytes(&pieces, text + i, 1);
	assert_true(whole.a == pieces.a);
	assert_true(whole.b == pieces.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a_is_fnv1a),
		cmocka_unit_test(test_fnv1a_from_the_plugins_start_is_pinned),
		cmocka_unit_test(test_fnv1a_carries_on),
		cmocka_unit_test(test_pair_is_pinned),
		cmocka_unit_test(test_pair_carries_on),
	};

	return (cmocka_run_group_tests_name("hash", tests, NULL, NULL));
}
