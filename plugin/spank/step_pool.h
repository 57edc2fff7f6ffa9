/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the node pool in slurmstepd: the step's key, derived and
 * held (init_post_opt), and the seed from it (task_init).
 */
#ifndef EXTC_STEP_POOL_H_
#define EXTC_STEP_POOL_H_

#include <stdbool.h>

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * init_post_opt, as root, once the leaf exists: derive the step's key from
 * the job's environment and s->image, and hold it (pool=node); in job
 * mode, note the leaf for the epilog. A step in an image the plugin
 * cannot identify gets no key. What the key seeds and takes in is
 * s->warm_path: for a step keyed by its image, <leaf>/container (where the
 * cache variables point inside a container), never the host's part of the
 * leaf.
 */
void extc_step_pool_open(spank_t sp, struct extc_step *s);

/*
 * Will extc_step_pool_seed copy anything: a held key that holds something,
 * and 'seed_named' false (no seed directory named, extc_step_warm_seeds)?
 */
bool extc_step_pool_seeds(const struct extc_step *s, bool seed_named);

/*
 * task_init, in the task, as the user: fill the fresh leaf from the key's
 * builds (unless 'seed_named'), in a child holding none of slurmstepd's
 * descriptors.
 */
void extc_step_pool_seed(spank_t sp, struct extc_step *s, bool seed_named);

#endif /* EXTC_STEP_POOL_H_ */
