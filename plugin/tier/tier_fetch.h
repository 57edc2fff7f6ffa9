/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: copying a key's newest good generation from the site tier into the node pool. */
#ifndef EXTC_TIER_FETCH_H_
#define EXTC_TIER_FETCH_H_

#include <stddef.h>
#include <stdint.h>

#include "tier/tier_gen.h"
#include "tier/tier_unpack.h"
#include "warm/warm_opts.h"

struct extc_tier_fetch_in {
	const char *key;		/* the pool key (extc_pool_key_name_ok) */
	const char *tag;		/* "<node>.<pid>" (extc_tier_gen_tag_ok) */
	unsigned keep;			/* the newest good generations tried (0 is taken as 1) */
	uint64_t max_bytes;		/* a generation of more is not taken; 0: no limit */
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC time to give up at; 0: none */
	const struct extc_warm_opts *o;	/* unused for now: the manifest says what is copied */
	extc_tier_unpack_after_fn after_file;	/* called after each file copied; tests slow a
						   reader with it, NULL in production */
	void *ctx;
};

struct extc_tier_fetch_res {
	char gen[EXTC_TIER_GEN_NAME_MAX];	/* the generation copied */
	uint64_t files, dirs, bytes, entries;	/* of it: copied, and listed in its manifest */
	uint64_t present;	/* its top-level entries the key directory had already: kept */
	unsigned skipped_bad;	/* newer generations not taken (mismatch, unreadable, too large) */
	uint64_t ns;		/* how long it took */
};

enum extc_tier_fetch_result {
	EXTC_TIER_FETCHED,
	EXTC_TIER_EMPTY,		/* no generation for the key */
	EXTC_TIER_NONE_VALID,		/* none of the 'keep' newest could be taken ('why') */
	EXTC_TIER_FETCH_TIMEOUT,	/* past the deadline: nothing was moved in */
	EXTC_TIER_FETCH_FAILED,		/* the node's side failed ('why') */
};

/*
 * Copy the newest good generation of in->key below 'tierfd' into 'keyfd'
 * (the node pool's key directory, node-local, the user's). The 'keep'
 * newest generations without a bad mark are tried newest first: each is
 * copied, as its manifest lists it and nothing else, into a stage
 * .ext-cache-tier.<tag> in 'keyfd', every file checked against its type,
 * size and digest from the read that copies it, every entry given its
 * manifest's mode and mtime. A generation that does not match (a file
 * missing, cut short, altered, not a regular file; a manifest cut short or
 * not one) is marked bad and the next older one tried; one that cannot be
 * read for the moment or holds more than in->max_bytes is passed over
 * without a mark. The copy's top-level entries are then renamed into
 * 'keyfd' where it has no entry of the name (one already there stays).
 * No stage is left on any return; one a killed fetcher left (no process
 * holds its lock) is removed by the next fetch into 'keyfd'.
 */
enum extc_tier_fetch_result extc_tier_fetch(int tierfd, int keyfd,
					    const struct extc_tier_fetch_in *in,
					    struct extc_tier_fetch_res *r, char *why,
					    size_t whylen);

#endif /* EXTC_TIER_FETCH_H_ */
