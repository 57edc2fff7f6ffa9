/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool on disk, as root: a step's hold on a key, and its record written. */
#ifndef EXTC_POOL_HOLD_H_
#define EXTC_POOL_HOLD_H_

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fs_remove.h"
#include "fs/fs_tree.h"
#include "pool/pool_policy.h"
#include "pool/pool_since.h"

struct extc_pool_hold {
	int record_fd;		/* locked shared for the step's life; -1: no hold */
	char dir[PATH_MAX];	/* the key directory's path, for the user's child */
	uint64_t bytes;		/* what the record says the key held at its last move (0: nothing yet) */
	uint64_t inodes;
	bool counted;		/* the record holds root's numbers (not unmeasurable, not of an older version) */
	struct extc_pool_since since;	/* the key's top level at the hold, before any take */
	uid_t uid;		/* whose key it is */
	char key[EXTC_POOL_KEY_LEN + 1];
};

enum extc_pool_hold_result {
	EXTC_POOL_HELD,		/* 'h' holds the key; its directory exists */
	EXTC_POOL_EVICTING,	/* the evictor has the key at this moment: start cold */
	EXTC_POOL_REFUSED,	/* 'why' says why */
};

/*
 * Make what is missing of the key's levels and directory, hold it, and
 * mark it used now; h->since notes the key's top level as it is (before
 * any take of the step) for extc_pool_hold_account to compare with.
 */
enum extc_pool_hold_result extc_pool_hold(const struct extc_tree *tree, const struct extc_ids *ids,
					  const char *key, struct extc_pool_hold *h, char *why,
					  size_t whylen);

enum extc_pool_account_result {
	EXTC_POOL_ACCOUNTED,		/* the record holds the key's bytes and inodes */
	EXTC_POOL_ACCOUNT_KEPT,		/* the record's numbers kept: the key is as at the hold */
	EXTC_POOL_ACCOUNT_UNMEASURABLE,	/* marked so: 'why' says why; it goes once released */
	EXTC_POOL_ACCOUNT_FAILED,	/* no record written: 'why' says why */
};

/*
 * Right after builds moved into the held key, as root (in the background:
 * it may take up to EXTC_POOL_MEASURE_BUDGET_NS): measure the key with
 * root's own walk (pool_measure.h, pool_max_inodes names at most) and
 * write the record, "bytes=N\ninodes=M\n" or the unmeasurable mark, and
 * mark the key used now; h->bytes and h->inodes then say it. What the
 * user's processes measured is never asked.
 *
 * With 'whole_only' (the put-back said it moved nothing entry by entry:
 * it can only make root measure, never what root writes), root first
 * looks at the key's top level (pool_since.h): if it is as it was at the
 * hold, every directory taken came back whole, as it went, and the record
 * keeps root's own numbers of before the take (EXTC_POOL_ACCOUNT_KEPT).
 * A change below a directory's top level is not seen so: it is counted at
 * the next end that measures, and eviction measures every key anyway.
 * The hold must be extc_pool_hold's, still held.
 */
enum extc_pool_account_result extc_pool_hold_account(struct extc_pool_hold *h,
						      const struct extc_tree *tree, bool whole_only,
						      char *why, size_t whylen);

/* Let the key go (the evictor may take it once no step holds it). */
void extc_pool_hold_release(struct extc_pool_hold *h);

#endif /* EXTC_POOL_HOLD_H_ */
