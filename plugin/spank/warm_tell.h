/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: --ext-cache-verbose in slurmstepd: how each node's directory started, told. */
#ifndef EXTC_WARM_TELL_H_
#define EXTC_WARM_TELL_H_

#include <slurm/spank.h>

#include "spank/step.h"
#include "warm/warm_report.h"

/* init_post_opt: does this step want the line (--ext-cache-verbose, else SLURM_EXT_CACHE_VERBOSE)? */
void extc_warm_tell_resolve(spank_t sp, struct extc_step *s);

/*
 * What the step's directory started from on this node: init_post_opt (the
 * node pool's key, a seed refused) and task_init (the seed) record into
 * it, the latest record deciding (warm_report.h).
 */
struct extc_warm_report *extc_warm_tell_report(struct extc_step *s);

/*
 * task_init, in the task that prepared the node's directory: if asked,
 * tell the user in one line how it started (warm, from where and how
 * much; or cold, and why).
 */
void extc_warm_tell(spank_t sp, struct extc_step *s);

#endif /* EXTC_WARM_TELL_H_ */
