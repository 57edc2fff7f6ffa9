/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: FNV-1a, the one hash of the pool's keys and of the CPU's fingerprint. */
#ifndef EXTC_HASH_H_
#define EXTC_HASH_H_

#include <stddef.h>
#include <stdint.h>

/*
 * Where a hash starts. FNV-1a's offset basis is 14695981039346656037; this
 * is it with its last digit lost, as every pool key and every manifest's
 * CPU fingerprint has been made: the right one would rename them all.
 */
#define EXTC_HASH_START 1469598103934665603ULL

/* 'h' carried on over the 'n' bytes of 'data' (FNV-1a, 64 bits). */
uint64_t extc_hash_fnv1a(uint64_t h, const void *data, size_t n);

/*
 * 128 bits in two lanes over the same bytes, enough to name one user's
 * environments: 'a' is FNV-1a from EXTC_HASH_START; 'b' starts from FNV-1a's
 * offset basis with its two halves swapped (0x84222325cbf29ce4) and folds
 * its high bits down after every byte, so that the lanes do not move
 * together.
 */
struct extc_hash_pair {
	uint64_t a, b;
};

void extc_hash_pair_init(struct extc_hash_pair *h);

void extc_hash_pair_bytes(struct extc_hash_pair *h, const void *data, size_t n);

#endif /* EXTC_HASH_H_ */
