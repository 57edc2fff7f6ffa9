/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: XXH64, the digest a site tier's manifest keeps of every file. */
#include <endian.h>
#include <string.h>

#include "base/digest.h"

/* The specification's five primes. */
#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

#define STRIPE 32u

static uint64_t rotl(uint64_t x, unsigned r)
{
	return ((x << r) | (x >> (64u - r)));
}

/* Little-endian, whatever the host: the digest of the same bytes is the same on every node. */
static uint64_t read64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));	/* one load, at any alignment */
	return (le64toh(v));
}

static uint32_t read32(const unsigned char *p)
{
	return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static uint64_t round64(uint64_t acc, uint64_t input)
{
	acc += input * P2;
	acc = rotl(acc, 31);
	return (acc * P1);
}

static uint64_t merge(uint64_t acc, uint64_t lane)
{
	acc ^= round64(0, lane);
	return (acc * P1 + P4);
}

static void stripe(struct extc_digest *d, const unsigned char *p)
{
	unsigned i;

	for (i = 0; i < 4; i++)
		d->lane[i] = round64(d->lane[i], read64(p + 8u * i));
}

void extc_digest_init(struct extc_digest *d)
{
	memset(d, 0, sizeof(*d));
	d->lane[0] = P1 + P2;	/* seed 0: wraps, as the specification means it to */
	d->lane[1] = P2;
	d->lane[2] = 0;
	d->lane[3] = 0 - P1;
}

void extc_digest_update(struct extc_digest *d, const void *data, size_t n)
{
	const unsigned char *p = data;

	d->total += n;
	if (d->buffered > 0) {
		size_t take = STRIPE - d->buffered < n ? STRIPE - d->buffered : n;

		memcpy(d->buf + d->buffered, p, take);
		d->buffered += take;
		p += take;
		n -= take;
		if (d->buffered < STRIPE)
			return;
		stripe(d, d->buf);
		d->buffered = 0;
	}
	if (n >= STRIPE) {
		/* the lanes in registers: stored through d they could alias the bytes read */
		uint64_t v0 = d->lane[0], v1 = d->lane[1], v2 = d->lane[2], v3 = d->lane[3];

		for (; n >= STRIPE; p += STRIPE, n -= STRIPE) {
			v0 = round64(v0, read64(p));
			v1 = round64(v1, read64(p + 8));
			v2 = round64(v2, read64(p + 16));
			v3 = round64(v3, read64(p + 24));
		}
		d->lane[0] = v0;
		d->lane[1] = v1;
		d->lane[2] = v2;
		d->lane[3] = v3;
	}
	memcpy(d->buf, p, n);
	d->buffered = n;
}

uint64_t extc_digest_final(const struct extc_digest *d)
{
	const unsigned char *p = d->buf;
	size_t left = d->buffered;
	uint64_t h;

	if (d->total >= STRIPE) {
		h = rotl(d->lane[0], 1) + rotl(d->lane[1], 7) + rotl(d->lane[2], 12) +
		    rotl(d->lane[3], 18);
		h = merge(h, d->lane[0]);
		h = merge(h, d->lane[1]);
		h = merge(h, d->lane[2]);
		h = merge(h, d->lane[3]);
	} else {
		h = P5;	/* the seed, 0, plus P5 */
	}
	h += d->total;
	for (; left >= 8; p += 8, left -= 8)
		h = rotl(h ^ round64(0, read64(p)), 27) * P1 + P4;
	if (left >= 4) {
		h = rotl(h ^ ((uint64_t)read32(p) * P1), 23) * P2 + P3;
		p += 4;
		left -= 4;
	}
	for (; left > 0; p++, left--)
		h = rotl(h ^ ((uint64_t)*p * P5), 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return (h);
}
