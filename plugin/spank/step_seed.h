/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node's one turn on a fresh leaf in task_init: seed it, write its env file, mark the turn done. */
#ifndef EXTC_STEP_SEED_H_
#define EXTC_STEP_SEED_H_

#include <stdbool.h>

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * Seeding happens here, in a task, as the user, before the user's program:
 * a seed the user stops, or that hangs in the user's own filesystem, holds
 * only the user's own tasks, never slurmstepd or a root process. The first
 * task of the node to lock the leaf seeds it; the others wait on the lock
 * and find its turn marked done (in the page user_init shared, else in a
 * mark file), so no task starts on a leaf being filled. The mark's name is
 * one the seed ignores when it asks whether the leaf is fresh.
 * The same turn writes the env file for container runtimes, after the
 * seed: the seed asks whether the leaf is fresh before anything is in it.
 * 'seeds': there is something to seed from (or a publish directory to
 * check); 'tell': this task tells the user what its own seeding found
 * (task 0 tells everything anyway).
 */
void extc_step_seed_once(spank_t sp, struct extc_step *s, bool tell, bool seeds);

#endif /* EXTC_STEP_SEED_H_ */
