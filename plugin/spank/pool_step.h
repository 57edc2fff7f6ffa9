/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool in slurmstepd: the step's key, seeding from it, the move in at the end. */
#ifndef EXTC_POOL_STEP_H_
#define EXTC_POOL_STEP_H_

#include <stdbool.h>

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * init_post_opt, as root, once the leaf exists: derive the step's key from
 * the job's environment and s->image, and hold it (pool=node); in job
 * mode, note it for the epilog. A step in an image the plugin cannot
 * identify gets no key. What the key seeds and takes in is s->warm_path:
 * for a step keyed by its image, <leaf>/container (where the cache
 * variables point inside a container), never the host's part of the leaf.
 */
void extc_pool_step_open(spank_t sp, struct extc_step *s);

/*
 * Will extc_pool_step_seed copy anything: a held key that holds something,
 * and 'seed_named' false (no seed directory named, extc_warm_step_seeds)?
 */
bool extc_pool_step_seeds(const struct extc_step *s, bool seed_named);

/*
 * task_init, in the task, as the user: fill the fresh leaf from the key's
 * builds (unless 'seed_named').
 */
void extc_pool_step_seed(struct extc_step *s, bool seed_named);

/*
 * exit's detached work, as root, before a local-mode leaf goes: move its
 * completed builds into the key (in a child, as the user, bounded by
 * publish_timeout), then record what the key holds.
 */
void extc_pool_step_publish(spank_t sp, struct extc_step *s);

#endif /* EXTC_POOL_STEP_H_ */
