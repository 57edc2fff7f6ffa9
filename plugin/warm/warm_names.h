/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which names of a cache tree are never copied, and the names the plugin makes. */
#ifndef EXTC_WARM_NAMES_H_
#define EXTC_WARM_NAMES_H_

#include <stdbool.h>

/* Every name the plugin makes in a cache tree starts so, and no such name is ever copied. */
#define EXTC_OWN_PREFIX ".ext-cache-"
#define EXTC_WARM_STAGE_PREFIX EXTC_OWN_PREFIX "stage."	/* a publisher's entry on its way in */
#define EXTC_WARM_SEED_STAGE EXTC_OWN_PREFIX "seed."	/* a seed on its way into the leaf */

#define EXTC_WARM_LOCK_NAME "lock"	/* torch's FileBaton, and the name many caches use */
/* TorchInductor's lock files, <TORCHINDUCTOR_CACHE_DIR>/locks/<key>.lock (torch/_inductor/codecache.py, get_lock_dir) */
#define EXTC_WARM_INDUCTOR_LOCKS "locks"

enum extc_warm_name {
	EXTC_NAME_COPY,		/* an entry of the cache: copied (seed) or published */
	EXTC_NAME_LOCK,		/* a lock: left out, and counted as one */
	EXTC_NAME_SKIP,		/* "." and "..", or the plugin's own: left out silently */
};

/*
 * The one rule both a seed and a publish apply to every name they meet:
 * locks ("lock" anywhere, Inductor's locks/ in 'inductor_level', the
 * directory TORCHINDUCTOR_CACHE_DIR names) are never copied, nor are the
 * plugin's own EXTC_OWN_PREFIX names (manifest, stages, drafts).
 */
enum extc_warm_name extc_warm_name_rule(const char *name, bool inductor_level);

#endif /* EXTC_WARM_NAMES_H_ */
