/* spank-ext-cache: which cache variables a step gets, and what happens to values already set. */
#ifndef EXTC_ENVVARS_H_
#define EXTC_ENVVARS_H_

#include <stdbool.h>

#include "mode.h"

#define EXTC_ENV_DIR "SLURM_EXT_CACHE_DIR"
#define EXTC_ENV_MODE "SLURM_EXT_CACHE_MODE"
#define EXTC_ENV_REQUEST EXTC_ENV_REQUEST_NAME

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
enum extc_var_action extc_var_decide(const char *current, bool user_asked,
				     const char *managed_prefix);

const char *extc_var_action_name(enum extc_var_action action);

#endif /* EXTC_ENVVARS_H_ */
