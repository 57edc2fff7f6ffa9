/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a step's end on this node: its builds published and moved into the pool, a local leaf removed. */
#ifndef EXTC_STEP_END_H_
#define EXTC_STEP_END_H_

#include <slurm/spank.h>

#include "spank/step.h"

/* A local-mode leaf goes at the end of its step; the epilog takes what is left. */
void extc_step_remove_leaf(const struct extc_step *s);

/*
 * The step's end, in a detached process (background.h): it waits on
 * children of the user's (publish_timeout bounds each), so it runs after
 * exit has returned. It holds the job level and the pool key (inherited
 * locks) until it is done, so that neither the epilog's retirement nor an
 * eviction takes the directory or the key from under it. Publishes, and
 * for a local-mode leaf moves its builds into the pool, lets the key go
 * and removes the leaf.
 */
void extc_step_finish(spank_t sp, struct extc_step *s);

#endif /* EXTC_STEP_END_H_ */
