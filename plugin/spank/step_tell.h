/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: what a step's tasks tell the user: how each node's
 * directory started (--ext-cache-verbose, for warm start and the node
 * pool alike), and why a node has none.
 */
#ifndef EXTC_STEP_TELL_H_
#define EXTC_STEP_TELL_H_

#include <slurm/spank.h>

#include "spank/step.h"
#include "warm/warm_report.h"

/* init_post_opt: does this step want the line (--ext-cache-verbose, else SLURM_EXT_CACHE_VERBOSE)? */
void extc_step_tell_resolve(spank_t sp, struct extc_step *s);

/*
 * What the step's directory started from on this node: init_post_opt (the
 * node pool's key, a seed refused) and task_init (the seed) record into
 * it, the latest record deciding (warm_report.h).
 */
struct extc_warm_report *extc_step_tell_report(struct extc_step *s);

/*
 * task_init, in the task that prepared the node's directory: if asked,
 * tell the user in one line how it started (warm, from where and how
 * much; or cold, and why).
 */
void extc_step_tell_start(spank_t sp, struct extc_step *s);

/*
 * task_init, in local task 0 of a step that fails or warns: one line
 * naming the node, whether the step fails, and s->why.
 */
void extc_step_tell_failure(spank_t sp, const struct extc_step *s);

#endif /* EXTC_STEP_TELL_H_ */
