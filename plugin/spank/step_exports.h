/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: user_init's cache variables in the step's tasks, and taking them back. */
#ifndef EXTC_STEP_EXPORTS_H_
#define EXTC_STEP_EXPORTS_H_

#include <slurm/spank.h>

#include "spank/step.h"

/* setenv in the job's environment; a failure is logged. */
void extc_step_export(spank_t sp, const char *name, const char *value);

/*
 * user_init, as root: each cache variable pointed into the leaf (or the
 * user's value kept, as extc_var_decide says), FlashInfer's cubins pinned
 * where they were, SLURM_EXT_CACHE_DIR and SLURM_EXT_CACHE_MODE; 'prefix'
 * is "<base>/". s->exports records what was set.
 */
void extc_step_export_vars(spank_t sp, struct extc_step *s, const char *prefix);

/* Take back what extc_step_export_vars set, in this task only (task context). */
void extc_step_unexport_vars(spank_t sp, const struct extc_step *s);

#endif /* EXTC_STEP_EXPORTS_H_ */
