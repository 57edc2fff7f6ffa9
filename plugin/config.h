/* spank-ext-cache: the admin's plugstack.conf arguments, parsed and validated. */
#ifndef EXTC_CONFIG_H_
#define EXTC_CONFIG_H_

#include <stdbool.h>
#include <stddef.h>

#include "mode.h"

#define EXTC_BASE_MAX 512	/* leaves room below PATH_MAX for the levels */
#define EXTC_VARS_MAX 32
#define EXTC_VAR_NAME_MAX 64
#define EXTC_SUBDIR_MAX 64
#define EXTC_DEFAULT_BASE "/tmp/ext-cache"

enum extc_on_error {
	EXTC_ON_ERROR_AUTO = 0,	/* fail if the user asked for a mode, else warn */
	EXTC_ON_ERROR_FAIL,
	EXTC_ON_ERROR_WARN,
};

struct extc_var {
	char name[EXTC_VAR_NAME_MAX + 1];
	char subdir[EXTC_SUBDIR_MAX + 1];
	/*
	 * Made with the leaf. Most tools make their own directory, and a mkdir
	 * per variable was most of the step launch cost; a few (PyTorch's
	 * kernel cache) silently run uncached if it is missing, and a tool an
	 * admin names in vars= is unknown, so it gets one.
	 */
	bool make_dir;
};

struct extc_config {
	char base[EXTC_BASE_MAX + 1];
	enum extc_mode default_mode;
	enum extc_on_error on_error;
	bool allow_shared_fs;
	size_t nvars;
	struct extc_var vars[EXTC_VARS_MAX];
};

/*
 * Fill 'cfg' with the defaults, then apply every "key=value" in av.
 * On error, 'why' reads "<key>=<value>: <reason>" (value escaped) and the
 * return value is -1; 'cfg' is then unusable.
 */
int extc_config_parse(struct extc_config *cfg, int ac, char **av, char *why, size_t whylen);

/* The built-in variable list (SPEC.md, jit-caches.md). */
size_t extc_config_builtin_vars(const struct extc_var **vars);

/* Validation of single values, shared with the option parser and fuzzers. */
int extc_config_check_base(const char *base, char *why, size_t whylen);
int extc_config_parse_vars(const char *list, struct extc_var *vars, size_t *nvars,
			   char *why, size_t whylen);

#endif /* EXTC_CONFIG_H_ */
