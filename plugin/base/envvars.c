/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which cache variables a step gets, and what happens to values already set. */
#include <stddef.h>
#include <string.h>

#include "base/envvars.h"
#include "base/text.h"

enum extc_var_action extc_envvars_decide(const char *current, bool user_asked,
					 const char *managed_prefix)
{
	if (current == NULL || current[0] == '\0')
		return (EXTC_VAR_SET);
	if (extc_has_prefix(current, managed_prefix))
		return (EXTC_VAR_REPLACE_OURS);
	if (user_asked)
		return (EXTC_VAR_REPLACE_USER);
	return (EXTC_VAR_KEEP_USER);
}

/*
 * A directory as Python's pathlib spells it: trailing slashes go, "" is the
 * current directory ("."), and a home of "" or "/" is the root
 * (posixpath.expanduser). Returns the length to use of 'dir'.
 */
static size_t pathlib_len(const char *dir, bool is_home, const char **dir_out)
{
	size_t len = strlen(dir);

	while (len > 0 && dir[len - 1] == '/')
		len--;
	if (len == 0) {
		*dir_out = (dir[0] == '/' || is_home) ? "/" : ".";
		return (1);
	}
	*dir_out = dir;
	return (len);
}

enum extc_cubin_action extc_envvars_flashinfer_cubin_dir(const struct extc_config *cfg, bool user_asked,
							 const char *managed_prefix,
							 const struct extc_cubin_env *env,
							 char *out, size_t outlen)
{
	const char *root;
	bool is_home = false;
	size_t len;

	if (extc_config_find_var(cfg, EXTC_FLASHINFER_BASE) == NULL ||
	    extc_envvars_decide(env->base, user_asked, managed_prefix) == EXTC_VAR_KEEP_USER)
		return (EXTC_CUBIN_NOT_MOVED);
	if (extc_config_find_var(cfg, EXTC_FLASHINFER_CUBIN) != NULL)
		return (EXTC_CUBIN_MANAGED);
	/* FlashInfer tests the value for truth: an empty one is no store */
	if (env->cubin != NULL && env->cubin[0] != '\0' &&
	    !extc_has_prefix(env->cubin, managed_prefix))
		return (EXTC_CUBIN_USER);
	/* a base under <base>/ was an enclosing step's: the user's own is not known */
	if (env->base != NULL && !extc_has_prefix(env->base, managed_prefix)) {
		root = env->base;
	} else if (env->home != NULL || env->pw_home != NULL) {
		root = env->home != NULL ? env->home : env->pw_home;
		is_home = true;
	} else {
		return (EXTC_CUBIN_NO_HOME);
	}
	len = pathlib_len(root, is_home, &root);
	if (extc_fmt(out, outlen, "%.*s%s.cache/flashinfer/cubins", (int)len, root,
		     (len == 1 && root[0] == '/') ? "" : "/") < 0)
		return (EXTC_CUBIN_TOO_LONG);
	return (EXTC_CUBIN_PIN);
}
