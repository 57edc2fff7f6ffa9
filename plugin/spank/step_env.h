/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: user_init in slurmstepd: the tasks' environment (the
 * cache variables, FlashInfer's cubins, the bind lists and values for
 * Apptainer and Singularity), and taking it back in a task.
 */
#ifndef EXTC_STEP_ENV_H_
#define EXTC_STEP_ENV_H_

#include <slurm/spank.h>

#include "container/container_env.h"
#include "spank/step.h"

/*
 * user_init, as root, for a step whose leaf was made: each cache variable
 * pointed into the leaf (or the user's value kept, as extc_envvars_decide
 * says), FlashInfer's cubins pinned where they were, SLURM_EXT_CACHE_DIR
 * and SLURM_EXT_CACHE_MODE; and for Apptainer and Singularity, whatever
 * the user's flags (--contain, --cleanenv, --no-mount tmp), the leaf
 * appended to the job's bind lists and the variables through
 * APPTAINERENV_/SINGULARITYENV_, pointing into the leaf's container/
 * sub-tree (container_env.h). s->exports records what was set. -1 (and
 * nothing exported) if the base cannot be a prefix.
 */
int extc_step_env_export(spank_t sp, struct extc_step *s);

/*
 * Take back what extc_step_env_export set, in this task only (task
 * context): the job's bind lists and APPTAINERENV_ values as they were,
 * for a task the leaf is not there for.
 */
void extc_step_env_unexport(spank_t sp, const struct extc_step *s);

/*
 * The step's values for container_env.c: the leaf, the exported cache
 * variables (into 'vars', EXTC_VARS_MAX of them), the job's environment as
 * the lookup; 'prefix' is "<base>/" (a value under it is the plugin's own,
 * and replaced), or "" for what the task writes inside the leaf.
 */
void extc_step_env_container_input(spank_t sp, const struct extc_step *s, const char *prefix,
				   struct extc_cenv_var *vars, struct extc_cenv_in *in);

#endif /* EXTC_STEP_ENV_H_ */
