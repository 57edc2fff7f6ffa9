/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: digest.h. The values are XXH64's (seed 0), pinned:
 * a site tier's manifests keep these digests on disk, and a reader on
 * another node built from another commit must compute the same ones. They
 * were derived once with xxhsum -H1 (Debian's xxhash); no test runs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/digest.h"

#define MIB (1024u * 1024u)

/* The inputs of the pinned values: byte i is (i * 7 + 3) % 251. */
static unsigned char *pattern(size_t n)
{
	unsigned char *p = malloc(n ? n : 1);
	size_t i;

	assert_non_null(p);
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 7 + 3) % 251);
	return (p);
}

static uint64_t one_shot(const void *data, size_t n)
{
	struct extc_digest d;

	extc_digest_init(&d);
	extc_digest_update(&d, data, n);
	return (extc_digest_final(&d));
}

static void test_digest_is_xxh64(void **state)
{
	(void)state;
	assert_true(one_shot("", 0) == 0xEF46DB3751D8E999ULL);
	assert_true(one_shot("abc", 3) == 0x44BC2CF5AD770999ULL);
}

static void test_digest_pinned_on_a_pattern(void **state)
{
	static const struct {
		size_t n;
		uint64_t want;
	} v[] = {
		{ 0, 0xef46db3751d8e999ULL },
		{ 1, 0x1f25c8d0bc1f4bb6ULL },
		{ 3, 0x31d2363f52e564c9ULL },
		{ 31, 0xa2aa5f33cc4a6119ULL },	/* one byte short of a stripe */
		{ 32, 0x23c3c17ef790fd97ULL },	/* one stripe */
		{ 33, 0x50a7cfc7ba588784ULL },
		{ 100, 0x778e26df8290f456ULL },	/* stripes, 8-, 4- and 1-byte tails */
		{ MIB, 0x56cc6397a0a35d33ULL },
	};
	unsigned char *p = pattern(MIB);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t got = one_shot(p, v[i].n);

		if (got != v[i].want)
			fail_msg("%zu bytes: %016llx, want %016llx", v[i].n,
				 (unsigned long long)got, (unsigned long long)v[i].want);
	}
	free(p);
}

/* A copy digests what each read() returns: any split must give the one-shot value. */
static void test_digest_streamed_in_odd_chunks_equals_one_shot(void **state)
{
	static const size_t chunks[] = { 1, 3, 7, 31, 33, 65, 4099 };
	unsigned char *p = pattern(MIB);
	uint64_t whole = one_shot(p, MIB);
	size_t c;

	(void)state;
	for (c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct extc_digest d;
		size_t off = 0, step = chunks[c];

		extc_digest_init(&d);
		while (off < MIB) {
			size_t n = MIB - off < step ? MIB - off : step;

			extc_digest_update(&d, p + off, n);
			off += n;
			step = step * 3 % 5003 + 1;	/* uneven, and never 0 */
		}
		assert_true(extc_digest_final(&d) == whole);
		/* final leaves the state as it was: asked twice, the same */
		assert_true(extc_digest_final(&d) == whole);
	}
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest_is_xxh64),
		cmocka_unit_test(test_digest_pinned_on_a_pattern),
		cmocka_unit_test(test_digest_streamed_in_odd_chunks_equals_one_shot),
	};

	return (cmocka_run_group_tests_name("digest", tests, NULL, NULL));
}
