/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the site tier in slurmstepd: whether the step reads it
 * (init_post_opt), the read into the node pool (task_init), how the
 * step's tasks ended (task_exit), and the publish (the step's detached end).
 */
#ifndef EXTC_STEP_TIER_H_
#define EXTC_STEP_TIER_H_

#include <stdbool.h>

#include <slurm/spank.h>

#include "spank/step.h"
#include "warm/warm_walk.h"

/*
 * In init_post_opt, as root, once the step holds its node pool key: the
 * user's tier path (tier= expanded), and whether the step's tasks read it:
 * only when root's record of the key counts no more inodes than its cache
 * directories take (the user's child then looks for a file in it), and not
 * while root's note says the tier did not answer on this node a short while
 * ago (tier_mark.h). Root opens nothing on the tier.
 */
void extc_step_tier_open(struct extc_step *s);

enum extc_step_tier_fetch_result {
	EXTC_STEP_TIER_FETCHED,		/* the key holds a generation from the tier now */
	EXTC_STEP_TIER_KEY_HELD,	/* the key held builds already: the tier was not read */
	EXTC_STEP_TIER_COLD,		/* nothing from the tier: the reason told */
};

/*
 * In the task's seeding turn, as the user, before the node pool's take:
 * in a child fully the user's, bounded by tier_timeout=, unless the key
 * holds a file already, the newest whole generation of the key copied into
 * the key directory.
 */
enum extc_step_tier_fetch_result extc_step_tier_fetch(spank_t sp, struct extc_step *s);

/*
 * The put-back's time before any take of the step (pool_rename.h): the
 * hold's, or, when the tasks filled the key from the tier, a time after
 * that copy: the files it made changed then, and are what the step took,
 * not what it built.
 */
void extc_step_tier_taken_after(const struct extc_step *s, struct timespec *at);

/* In task_exit (slurmstepd, as root): a task that did not exit 0 keeps the step from publishing. */
void extc_step_tier_task_exit(spank_t sp, struct extc_step *s);

/* In exit, as root: the tier did not answer the tasks in time: root's note, so the next steps do not wait. */
void extc_step_tier_note(struct extc_step *s);

/*
 * In the step's detached end, after the put-back and before the key is let
 * go: on one node of the step (node 0), when every task there exited 0 and
 * the put-back moved something the key did not have ('rep'), publish a new
 * generation of the key to the tier, as the user, bounded by
 * publish_timeout=. Fails open: a line in the log.
 */
void extc_step_tier_publish(spank_t sp, struct extc_step *s, const struct extc_warm_walk_report *rep);

#endif /* EXTC_STEP_TIER_H_ */
