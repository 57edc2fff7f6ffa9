/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: warm start in slurmstepd: seed the step's directory, publish its builds. */
#ifndef EXTC_WARM_STEP_H_
#define EXTC_WARM_STEP_H_

#include <stdbool.h>
#include <stddef.h>

#include <slurm/spank.h>

#include "proc/as_user.h"
#include "base/config.h"
#include "fs/fs_tree.h"
#include "warm/warm_child.h"

/* Forget the previous step's requests. */
void extc_warm_step_reset(void);

/*
 * init_post_opt, as root: which seed and publish directories this step
 * asks for (option, environment, the admin's seed= pattern), checked.
 * 'has_dir' says whether the step gets a private directory; without one
 * a user's request is ignored, and the user told so.
 */
void extc_warm_step_resolve(spank_t sp, const struct extc_config *cfg, const struct extc_ids *ids,
			    bool has_dir);

/*
 * task_init, in the task, as the user: seed the fresh leaf, check the
 * publish directory. What the user must hear is kept as notices.
 */
void extc_warm_step_seed(const struct extc_config *cfg, const struct extc_ids *ids,
			 const char *leaf_path);

/*
 * exit's detached work, as root, before the leaf goes: publish the
 * completed builds (in a child, as the user, bounded by publish_timeout).
 */
void extc_warm_step_publish(spank_t sp, const struct extc_config *cfg, const struct extc_ids *ids,
			    const char *leaf_path);

/* Does this step seed from a directory the user (or the admin's seed=) named? */
bool extc_warm_step_seeds(void);

/* Does this step publish to a directory the user named? */
bool extc_warm_step_publishes(void);

/* How many notices there are so far (the seeding task tells the user only its own). */
size_t extc_warm_step_notices(void);

/* task_init: tell the user notices 'first' and later (local task 0 tells them all). */
void extc_warm_step_notify(size_t first);

#endif /* EXTC_WARM_STEP_H_ */
