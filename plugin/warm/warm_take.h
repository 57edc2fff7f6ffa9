/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a warm start from the node pool by rename: no copy, whatever the cache's size. */
#ifndef EXTC_WARM_TAKE_H_
#define EXTC_WARM_TAKE_H_

#include <stddef.h>

#include "warm/warm_copy.h"
#include "warm/warm_seed.h"

/*
 * Seed the fresh leaf 'leaffd' from the key directory 'keyfd' (same
 * filesystem) by renaming each variable's directory of the key over the
 * leaf's empty one: the step owns those builds until its end moves them
 * back (warm_publish.c, o->move), so nothing is copied now and nothing is
 * deleted then. A step of the same key that comes second finds the key
 * without them and starts cold, in a tree of its own. Triton's group
 * files are rewritten to name the leaf (warm_triton.h); a kernel whose
 * group file fails that is removed, as it could only miss. 'st->files'
 * counts the top-level entries taken. EXTC_SEED_DONE also when the key
 * held nothing (another step has its builds).
 */
enum extc_seed_result extc_warm_take(int keyfd, int leaffd, const struct extc_warm_opts *o,
				    struct extc_copy_stats *st, char *why, size_t whylen);

#endif /* EXTC_WARM_TAKE_H_ */
