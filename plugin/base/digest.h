/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: XXH64, the digest a site tier's manifest keeps of every file. */
#ifndef EXTC_DIGEST_H_
#define EXTC_DIGEST_H_

#include <stddef.h>
#include <stdint.h>

/*
 * XXH64 with seed 0, written from its public specification, streamed: a
 * file's digest is taken as it is copied, so that it is read once. It is a
 * check against truncation and corruption of the user's own files (a short
 * copy, a flipped block, a file rewritten in place), not against an
 * adversary: only the user can write their tier, and a user who wants
 * other bytes in their builds can put them there directly.
 */
struct extc_digest {
	uint64_t lane[4];	/* the four accumulators, one per 8-byte word of a stripe */
	uint64_t total;		/* bytes taken in so far */
	unsigned char buf[32];	/* the start of a stripe not yet complete */
	size_t buffered;	/* bytes of 'buf' in use, below 32 */
};

void extc_digest_init(struct extc_digest *d);

/* Take in 'n' more bytes of 'data': any split of the input gives the same digest. */
void extc_digest_update(struct extc_digest *d, const void *data, size_t n);

/* The digest of everything taken in; 'd' is left as it was. */
uint64_t extc_digest_final(const struct extc_digest *d);

#endif /* EXTC_DIGEST_H_ */
