/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: FNV-1a, the one hash of the pool's keys and of the CPU's fingerprint. */
#include "base/hash.h"

#define FNV_PRIME 1099511628211ULL

static uint64_t fnv_step(uint64_t h, unsigned char c)
{
	return ((h ^ c) * FNV_PRIME);
}

uint64_t extc_hash_fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < n; i++)
		h = fnv_step(h, p[i]);
	return (h);
}

void extc_hash_pair_init(struct extc_hash_pair *h)
{
	h->a = EXTC_HASH_START;
	h->b = 0x84222325cbf29ce4ULL;
}

void extc_hash_pair_bytes(struct extc_hash_pair *h, const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < n; i++) {
		h->a = fnv_step(h->a, p[i]);
		h->b = fnv_step(h->b, p[i]);
		h->b ^= h->b >> 29;
	}
}
