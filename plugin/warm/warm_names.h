/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the names the plugin makes in a cache tree, and the locks it never copies. */
#ifndef EXTC_WARM_NAMES_H_
#define EXTC_WARM_NAMES_H_

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

/* The rule that applies these to a name is extc_shape_name_rule (warm_shape.h). */

#endif /* EXTC_WARM_NAMES_H_ */
