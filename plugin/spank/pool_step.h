/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool in slurmstepd: the step's key, seeding from it, the move in at the end. */
#ifndef EXTC_POOL_STEP_H_
#define EXTC_POOL_STEP_H_

#include <stdbool.h>

#include <slurm/spank.h>

#include "base/config.h"
#include "container/container_id.h"
#include "fs/fs_tree.h"

/* The container image a step runs, as container_id.c told it. */
struct extc_pool_step_image {
	enum extc_ctr_kind kind;
	const char *spec;	/* the file or reference; for EXTC_CTR_UNKNOWN, why */
};

/*
 * init_post_opt, as root, once the leaf exists: derive the step's key and
 * hold it (pool=node); in job mode, note it for the epilog. A step in an
 * image the plugin cannot identify gets no key. 'leaf_path' is what the
 * key seeds and takes in: for a step keyed by its image, <leaf>/container
 * (where the cache variables point inside a container), never the host's
 * part of the leaf.
 */
void extc_pool_step_open(spank_t sp, const struct extc_config *cfg, const struct extc_fs_policy *pol,
			 const struct extc_ids *ids, bool job_mode, const char *leaf_path,
			 const struct extc_pool_step_image *img);

/* Does this step hold a key of the node pool? */
bool extc_pool_step_held(void);

/*
 * Will extc_pool_step_seed copy anything: a held key that holds something,
 * and 'seed_named' false (no seed directory named, extc_warm_step_seeds)?
 */
bool extc_pool_step_seeds(const struct extc_config *cfg, bool seed_named);

/*
 * task_init, in the task, as the user: fill the fresh leaf from the key's
 * builds (unless 'seed_named').
 */
void extc_pool_step_seed(const struct extc_config *cfg, const struct extc_ids *ids,
			 const char *leaf_path, bool seed_named);

/*
 * exit's detached work, as root, before a local-mode leaf goes: move its
 * completed builds into the key (in a child, as the user, bounded by
 * publish_timeout), then record what the key holds.
 */
void extc_pool_step_publish(spank_t sp, const struct extc_config *cfg,
			    const struct extc_fs_policy *pol, const struct extc_ids *ids,
			    const char *leaf_path);

/* Let the key go; forget the step. */
void extc_pool_step_reset(void);

#endif /* EXTC_POOL_STEP_H_ */
