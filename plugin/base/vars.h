/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a cache variable, and the built-in list of them, each read from its tool's source. */
#ifndef EXTC_VARS_H_
#define EXTC_VARS_H_

#include <stdbool.h>
#include <stddef.h>

#define EXTC_VARS_MAX 32
#define EXTC_VAR_NAME_MAX 64
#define EXTC_SUBDIR_MAX 64

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
	/*
	 * The tool loads code it built (dlopen, a Python extension) from its
	 * directory, which a noexec mount refuses (noexec.h). A name an admin
	 * adds in vars= is unknown: assumed to.
	 */
	bool loads_code;
};

/* The built-in variable list (docs/cache-dirs.md). */
size_t extc_vars_builtin(const struct extc_var **vars);
/* Whether the leaf must hold the directory of a variable called 'name' (see struct extc_var). */
bool extc_vars_builtin_makes_dir(const char *name);
/* Whether the tool reading 'name' loads code from its directory (see struct extc_var). */
bool extc_vars_builtin_loads_code(const char *name);

#endif /* EXTC_VARS_H_ */
