/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the vars= list of plugstack.conf, parsed and validated. */
#include <ctype.h>
#include <string.h>

#include "base/config_vars.h"
#include "base/fdio.h"
#include "base/layout.h"
#include "base/text.h"

/* Variables whose hijacking would break the job or the plugin itself. */
static const char *const reserved_vars[] = {
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TMPDIR", "TMP", "TEMP",
	"XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
};
static const char *const reserved_prefixes[] = { "SLURM", "SPANK", "LD_", "_SLURM" };

static int check_var_name(const char *name, char *why, size_t whylen)
{
	size_t i;

	if (name[0] == '\0') {
		extc_fmt(why, whylen, "empty variable name");
		return (-1);
	}
	if (!(isalpha((unsigned char)name[0]) || name[0] == '_')) {
		extc_fmt(why, whylen, "a variable name must start with a letter or _");
		return (-1);
	}
	for (i = 0; name[i] != '\0'; i++) {
		if (!(isalnum((unsigned char)name[i]) || name[i] == '_')) {
			extc_fmt(why, whylen, "a variable name may hold only letters, digits and _");
			return (-1);
		}
	}
	if (i > EXTC_VAR_NAME_MAX) {
		extc_fmt(why, whylen, "a variable name is limited to %d bytes", EXTC_VAR_NAME_MAX);
		return (-1);
	}
	for (i = 0; i < sizeof(reserved_vars) / sizeof(reserved_vars[0]); i++) {
		if (strcmp(name, reserved_vars[i]) == 0) {
			extc_fmt(why, whylen, "%s is reserved and cannot be managed", name);
			return (-1);
		}
	}
	for (i = 0; i < sizeof(reserved_prefixes) / sizeof(reserved_prefixes[0]); i++) {
		if (extc_has_prefix(name, reserved_prefixes[i])) {
			extc_fmt(why, whylen, "names starting with %s are reserved", reserved_prefixes[i]);
			return (-1);
		}
	}
	return (0);
}

static int check_subdir(const char *subdir, char *why, size_t whylen)
{
	size_t i;

	if (subdir[0] == '\0' || extc_fdio_is_dot(subdir)) {
		extc_fmt(why, whylen, "a subdirectory must be a plain name");
		return (-1);
	}
	for (i = 0; subdir[i] != '\0'; i++) {
		if (!(isalnum((unsigned char)subdir[i]) || strchr("._-", subdir[i]) != NULL)) {
			extc_fmt(why, whylen,
				 "a subdirectory may hold only letters, digits and . _ -");
			return (-1);
		}
	}
	if (i > EXTC_SUBDIR_MAX) {
		extc_fmt(why, whylen, "a subdirectory is limited to %d bytes", EXTC_SUBDIR_MAX);
		return (-1);
	}
	return (0);
}

int extc_config_vars_parse(const char *list, struct extc_var *vars, size_t *nvars,
			   char *why, size_t whylen)
{
	char item[EXTC_VAR_NAME_MAX + EXTC_SUBDIR_MAX + 4];
	const char *p = list;
	size_t n = 0;
	size_t i;

	if (list[0] == '\0') {
		extc_fmt(why, whylen, "empty list: give NAME[:SUBDIR],... or leave vars= out");
		return (-1);
	}
	while (p != NULL) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char *colon;

		if (n == EXTC_VARS_MAX) {
			extc_fmt(why, whylen, "more than %d variables", EXTC_VARS_MAX);
			return (-1);
		}
		if (len >= sizeof(item)) {
			extc_fmt(why, whylen, "an entry is longer than %zu bytes", sizeof(item) - 1);
			return (-1);
		}
		memcpy(item, p, len);
		item[len] = '\0';
		colon = strchr(item, ':');
		if (colon != NULL)
			*colon = '\0';
		if (check_var_name(item, why, whylen) < 0)
			return (-1);
		strcpy(vars[n].name, item);
		if (colon != NULL) {
			if (check_subdir(colon + 1, why, whylen) < 0)
				return (-1);
			strcpy(vars[n].subdir, colon + 1);
		} else {
			for (i = 0; item[i] != '\0'; i++)
				vars[n].subdir[i] = (char)tolower((unsigned char)item[i]);
			vars[n].subdir[i] = '\0';
		}
		/* where the variables point inside containers, for every step */
		if (strcmp(vars[n].subdir, EXTC_CONTAINER_SUBTREE) == 0) {
			extc_fmt(why, whylen, "%s: the subdirectory %s is the plugin's own (the "
				 "cache's part for containers); name another", vars[n].name,
				 EXTC_CONTAINER_SUBTREE);
			return (-1);
		}
		vars[n].make_dir = extc_vars_builtin_makes_dir(vars[n].name);
		vars[n].loads_code = extc_vars_builtin_loads_code(vars[n].name);
		for (i = 0; i < n; i++) {
			if (strcmp(vars[i].name, vars[n].name) == 0) {
				extc_fmt(why, whylen, "%s is listed twice", vars[n].name);
				return (-1);
			}
		}
		n++;
		p = comma ? comma + 1 : NULL;
	}
	*nvars = n;
	return (0);
}
