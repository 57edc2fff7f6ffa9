/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: warm start in slurmstepd: the seed and publish
 * directories a step asks for (init_post_opt), the seed (task_init), and
 * what the user must hear of them.
 */
#ifndef EXTC_STEP_WARM_H_
#define EXTC_STEP_WARM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <slurm/spank.h>

#include "spank/step.h"
#include "warm/warm_child.h"

/*
 * init_post_opt, as root: which seed and publish directories this step
 * asks for (option, environment, the admin's seed= pattern), checked.
 * 'has_dir' says whether the step gets a private directory; without one
 * a user's request is ignored, and the user told so.
 */
void extc_step_warm_resolve(spank_t sp, struct extc_step *s, bool has_dir);

/*
 * A child's argument for 'leaf' (extc_step_child_arg), with the step's
 * seed and publish directories, for the seed here and the publish at the
 * step's end (step_end.c).
 */
void extc_step_warm_child_arg(struct extc_warm_child_arg *a, const struct extc_step *s,
			      const char *leaf, uint32_t timeout_s);

/*
 * task_init, in the task, as the user: seed the fresh leaf (s->warm_path),
 * check the publish directory, in a child holding none of slurmstepd's
 * descriptors. What the user must hear is kept as notices.
 */
void extc_step_warm_seed(spank_t sp, struct extc_step *s);

/* Does this step seed from a directory the user (or the admin's seed=) named? */
bool extc_step_warm_seeds(const struct extc_step *s);

/* Does this step publish to a directory the user named? */
bool extc_step_warm_publishes(const struct extc_step *s);

/* How many notices there are so far (the seeding task tells the user only its own). */
size_t extc_step_warm_notices(const struct extc_step *s);

/* task_init: tell the user notices 'first' and later (local task 0 tells them all). */
void extc_step_warm_notify(const struct extc_step *s, size_t first);

#endif /* EXTC_STEP_WARM_H_ */
