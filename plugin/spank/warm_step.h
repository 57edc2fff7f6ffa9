/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: warm start in slurmstepd: seed the step's directory, publish its builds. */
#ifndef EXTC_WARM_STEP_H_
#define EXTC_WARM_STEP_H_

#include <stdbool.h>
#include <stddef.h>

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * init_post_opt, as root: which seed and publish directories this step
 * asks for (option, environment, the admin's seed= pattern), checked.
 * 'has_dir' says whether the step gets a private directory; without one
 * a user's request is ignored, and the user told so.
 */
void extc_warm_step_resolve(spank_t sp, struct extc_step *s, bool has_dir);

/*
 * task_init, in the task, as the user: seed the fresh leaf (s->warm_path),
 * check the publish directory. What the user must hear is kept as notices.
 */
void extc_warm_step_seed(struct extc_step *s);

/*
 * exit's detached work, as root, before the leaf goes: publish the
 * completed builds of s->warm_path (in a child, as the user, bounded by
 * publish_timeout).
 */
void extc_warm_step_publish(spank_t sp, const struct extc_step *s);

/* Does this step seed from a directory the user (or the admin's seed=) named? */
bool extc_warm_step_seeds(const struct extc_step *s);

/* Does this step publish to a directory the user named? */
bool extc_warm_step_publishes(const struct extc_step *s);

/* How many notices there are so far (the seeding task tells the user only its own). */
size_t extc_warm_step_notices(const struct extc_step *s);

/* task_init: tell the user notices 'first' and later (local task 0 tells them all). */
void extc_warm_step_notify(const struct extc_step *s, size_t first);

#endif /* EXTC_WARM_STEP_H_ */
