/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node's one turn on a fresh leaf in task_init: seed it, write its env file, mark the turn done. */
#ifndef EXTC_STEP_SEED_H_
#define EXTC_STEP_SEED_H_

#include <stdbool.h>

#include <slurm/spank.h>

#include "spank/step_info.h"

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
void extc_step_seed_once(spank_t sp, const struct extc_step_leaf *leaf, bool tell, bool seeds);

/*
 * The int the step's tasks share for the turn (extc_step_leaf.turn_done),
 * mapped in user_init: the tasks are forked after it and inherit the page.
 * Marking the turn done there, rather than with a file in the leaf, spares
 * every step an inode made and later removed, on the path of the task that
 * execs first. NULL when it cannot be mapped: the mark file is used then.
 */
int *extc_step_seed_turn_map(void);

/* Unmap it at the step's end (NULL: nothing). */
void extc_step_seed_turn_unmap(int *turn_done);

#endif /* EXTC_STEP_SEED_H_ */
