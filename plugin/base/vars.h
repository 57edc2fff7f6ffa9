/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the built-in list of cache variables, each read from its tool's source. */
#ifndef EXTC_VARS_H_
#define EXTC_VARS_H_

#include <stdbool.h>
#include <stddef.h>

#include "base/config.h"

/* The built-in variable list (docs/cache-dirs.md). */
size_t extc_config_builtin_vars(const struct extc_var **vars);
/* Whether the leaf must hold the directory of a variable called 'name' (see struct extc_var). */
bool extc_config_builtin_makes_dir(const char *name);
/* Whether the tool reading 'name' loads code from its directory (see struct extc_var). */
bool extc_config_builtin_loads_code(const char *name);

#endif /* EXTC_VARS_H_ */
