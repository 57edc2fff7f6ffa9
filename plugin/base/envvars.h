/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which cache variables a step gets, and what happens to values already set. */
#ifndef EXTC_ENVVARS_H_
#define EXTC_ENVVARS_H_

#include <stdbool.h>
#include <stddef.h>

#include "base/config.h"
#include "base/mode.h"

#define EXTC_ENV_DIR "SLURM_EXT_CACHE_DIR"
#define EXTC_ENV_MODE "SLURM_EXT_CACHE_MODE"

enum extc_var_action {
	EXTC_VAR_SET,		/* unset (or empty): set it */
	EXTC_VAR_KEEP_USER,	/* the user's own value, and only the admin default applies */
	EXTC_VAR_REPLACE_USER,	/* the user's own value, but the user asked for a mode */
	EXTC_VAR_REPLACE_OURS,	/* a value this plugin set in an enclosing step */
};

/*
 * Decide what to do with one managed variable. 'current' is its value in
 * the job environment (NULL when unset); 'managed_prefix' is "<base>/",
 * under which every value this plugin ever exports lies.
 * The value is only compared, never used to build a path.
 */
enum extc_var_action extc_envvars_decide(const char *current, bool user_asked,
					 const char *managed_prefix);

#define EXTC_FLASHINFER_BASE "FLASHINFER_WORKSPACE_BASE"
#define EXTC_FLASHINFER_CUBIN "FLASHINFER_CUBIN_DIR"

/* The job environment's values (NULL when unset) that FlashInfer's cubin store depends on. */
struct extc_cubin_env {
	const char *cubin;	/* FLASHINFER_CUBIN_DIR */
	const char *base;	/* FLASHINFER_WORKSPACE_BASE, as it was before this step */
	const char *home;	/* HOME */
	const char *pw_home;	/* the user's home in the password database, for an unset HOME */
};

enum extc_cubin_action {
	EXTC_CUBIN_NOT_MOVED,	/* FLASHINFER_WORKSPACE_BASE is not managed, or the user's is kept */
	EXTC_CUBIN_MANAGED,	/* the admin's vars= names FLASHINFER_CUBIN_DIR itself */
	EXTC_CUBIN_USER,	/* the user set FLASHINFER_CUBIN_DIR: kept */
	EXTC_CUBIN_PIN,		/* export FLASHINFER_CUBIN_DIR, the value in 'out' */
	EXTC_CUBIN_NO_HOME,	/* no base, no HOME, no password entry: no store to point at */
	EXTC_CUBIN_TOO_LONG,	/* the store's path does not fit 'out' */
};

/*
 * FlashInfer (flashinfer/jit/env.py) keeps the cubins it downloads at run
 * time under FLASHINFER_WORKSPACE_BASE (default: the home directory), in
 * <base>/.cache/flashinfer/cubins, unless FLASHINFER_CUBIN_DIR names the
 * store. When this plugin moves the base into the step's directory, that
 * store would start empty in every step: every step downloads again, and
 * an offline node fails. So FLASHINFER_CUBIN_DIR is pinned to the store the
 * user would have had, computed as FlashInfer computes it.
 * 'user_asked' and 'managed_prefix' are as for extc_envvars_decide(). Values
 * are only compared and joined, never opened.
 */
enum extc_cubin_action extc_envvars_flashinfer_cubin_dir(const struct extc_config *cfg, bool user_asked,
							 const char *managed_prefix,
							 const struct extc_cubin_env *env,
							 char *out, size_t outlen);

#endif /* EXTC_ENVVARS_H_ */
