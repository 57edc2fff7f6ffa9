/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: user_init's cache variables in the step's tasks, and taking them back. */
#ifndef EXTC_STEP_EXPORTS_H_
#define EXTC_STEP_EXPORTS_H_

#include <stdbool.h>
#include <sys/types.h>

#include <slurm/spank.h>

#include "base/config.h"
#include "base/mode.h"

/* What user_init exported. */
struct extc_step_exports {
	bool vars[EXTC_VARS_MAX];	/* which of the config's variables it set */
	bool cubin;			/* it pinned FLASHINFER_CUBIN_DIR */
};

/* setenv in the job's environment; a failure is logged. */
void extc_step_export(spank_t sp, const char *name, const char *value);

/*
 * user_init, as root: each cache variable pointed into 'leaf_path' (or the
 * user's value kept, as extc_var_decide says), FlashInfer's cubins pinned
 * where they were, SLURM_EXT_CACHE_DIR and SLURM_EXT_CACHE_MODE; 'prefix'
 * is "<base>/". 'ex' records what was set.
 */
void extc_step_export_vars(spank_t sp, const struct extc_config *cfg,
			   const struct extc_choice *choice, uid_t uid, const char *prefix,
			   const char *leaf_path, struct extc_step_exports *ex);

/* Take back what extc_step_export_vars set, in this task only (task context). */
void extc_step_unexport_vars(spank_t sp, const struct extc_config *cfg,
			     const struct extc_step_exports *ex);

#endif /* EXTC_STEP_EXPORTS_H_ */
