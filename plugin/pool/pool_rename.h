/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's verbs: take a key's builds into a step, put a step's builds back, by rename. */
#ifndef EXTC_POOL_RENAME_H_
#define EXTC_POOL_RENAME_H_

#include <stddef.h>
#include <time.h>

#include "warm/manifest.h"
#include "warm/warm_copy.h"
#include "warm/warm_seed.h"
#include "warm/warm_walk.h"

/*
 * Seed the fresh leaf 'leaffd' from the key directory 'keyfd' (same
 * filesystem) by renaming each variable's directory of the key over the
 * leaf's empty one: the step owns those builds until its end moves them
 * back (extc_pool_rename_put_back), so nothing is copied now and nothing is
 * deleted then. A step of the same key that comes second finds the key
 * without them and starts cold, in a tree of its own. Triton's group
 * files are rewritten to name the leaf (warm_triton.h); a kernel whose
 * group file fails that is removed, as it could only miss. 'st->files'
 * counts the top-level entries taken. EXTC_SEED_DONE also when the key
 * held nothing (another step has its builds).
 */
enum extc_seed_result extc_pool_rename_take(int keyfd, int leaffd, const struct extc_warm_opts *o,
					   struct extc_copy_stats *st, char *why, size_t whylen);

/* What a put-back may assume of the leaf's builds, in time (CLOCK_REALTIME); NULL: nothing. */
struct extc_pool_put_back_limits {
	/*
	 * Only entries whose inode last changed before it move (what a step
	 * took and left as it was); the others stay, counted in rep->changed.
	 */
	const struct timespec *changed_before;
	/*
	 * A time before any take of the step (its hold of the key, read from
	 * the coarse clock the filesystems stamp with): a variable's directory
	 * taken since and unchanged at its top level goes back whole, by one
	 * rename, when the key has none of that name (rep->whole). Not with
	 * 'changed_before'.
	 */
	const struct timespec *taken_after;
};

/*
 * Put the leaf's completed builds back into the key directory 'keyfd'
 * (same filesystem): the entries extc_warm_walk chooses, each renamed
 * whole, never copied; a torch build without its lock file; a Triton
 * kernel moved alone with group files that name the key (o->dest) first
 * (a Triton directory that goes back whole keeps naming the leaf: the
 * next take names its own leaf in every kernel). Directories
 * of a content-addressed cache merge into ones the key has meanwhile.
 * 'lim' as above. The manifest and the result as extc_warm_walk.
 */
int extc_pool_rename_put_back(int leaffd, int keyfd, const struct extc_warm_opts *o,
			      const struct extc_manifest *mf, const struct extc_pool_put_back_limits *lim,
			      struct extc_warm_walk_report *rep, char *why, size_t whylen);

#endif /* EXTC_POOL_RENAME_H_ */
