/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the admin's plugstack.conf arguments, parsed and validated. */
#include <ctype.h>
#include <string.h>

#include "config.h"
#include "text.h"
#include "warm_path.h"

/* Variables whose hijacking would break the job or the plugin itself. */
static const char *const reserved_vars[] = {
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TMPDIR", "TMP", "TEMP",
	"XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
};
static const char *const reserved_prefixes[] = { "SLURM", "SPANK", "LD_", "_SLURM" };

static const char *const world_writable_dirs[] = { "/tmp", "/var/tmp", "/dev/shm", "/run/user" };

#define KEYS_HELP "valid arguments are base=, default=, vars=, on_error=, allow_shared_fs=, seed=, seed_max=, seed_timeout=, publish_timeout="

static void set_defaults(struct extc_config *cfg)
{
	const struct extc_var *builtin;

	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->base, EXTC_DEFAULT_BASE);
	cfg->default_mode = EXTC_MODE_OFF;
	cfg->on_error = EXTC_ON_ERROR_AUTO;
	cfg->allow_shared_fs = false;
	cfg->nvars = extc_config_builtin_vars(&builtin);
	memcpy(cfg->vars, builtin, cfg->nvars * sizeof(*builtin));
	cfg->seed_max = EXTC_DEFAULT_SEED_MAX;
	cfg->seed_timeout = EXTC_DEFAULT_SEED_TIMEOUT;
	cfg->publish_timeout = EXTC_DEFAULT_PUBLISH_TIMEOUT;
}

const struct extc_var *extc_config_find_var(const struct extc_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nvars; i++) {
		if (strcmp(cfg->vars[i].name, name) == 0)
			return (&cfg->vars[i]);
	}
	return (NULL);
}

const char *extc_config_torch_subdir(const struct extc_config *cfg)
{
	const struct extc_var *var = extc_config_find_var(cfg, "TORCH_EXTENSIONS_DIR");

	return (var != NULL ? var->subdir : NULL);
}

const char *extc_config_inductor_subdir(const struct extc_config *cfg)
{
	const struct extc_var *var = extc_config_find_var(cfg, "TORCHINDUCTOR_CACHE_DIR");

	return (var != NULL ? var->subdir : NULL);
}

/* A byte count with an optional binary suffix K, M, G or T ("2G"); at most 1P. */
int extc_config_parse_size(const char *value, uint64_t *out, char *why, size_t whylen)
{
	static const char suffixes[] = "KMGT";
	uint64_t v = 0;
	const char *p = value;
	const char *s;
	unsigned shift = 0;

	if (*p < '0' || *p > '9') {
		extc_fmt(why, whylen, "expected a size such as 4G (suffixes K, M, G, T; 0 disables)");
		return (-1);
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > (1ULL << 50)) {
			extc_fmt(why, whylen, "larger than 1P");
			return (-1);
		}
	}
	if (*p != '\0') {
		s = strchr(suffixes, *p);
		if (s == NULL || p[1] != '\0') {
			extc_fmt(why, whylen,
				 "expected a size such as 4G (suffixes K, M, G, T; 0 disables)");
			return (-1);
		}
		shift = 10u * (unsigned)(s - suffixes + 1);
	}
	if (v > ((1ULL << 50) >> shift)) {
		extc_fmt(why, whylen, "larger than 1P");
		return (-1);
	}
	*out = v << shift;
	return (0);
}

static int parse_seconds(const char *value, uint32_t *out, char *why, size_t whylen)
{
	if (extc_parse_u32(value, EXTC_TIMEOUT_MAX, out) < 0 || *out == 0) {
		extc_fmt(why, whylen, "expected a number of seconds from 1 to %d", EXTC_TIMEOUT_MAX);
		return (-1);
	}
	return (0);
}

int extc_config_check_base(const char *base, char *why, size_t whylen)
{
	const char *p;
	size_t i;

	if (base[0] != '/') {
		extc_fmt(why, whylen, "must be an absolute path");
		return (-1);
	}
	if (strlen(base) > EXTC_BASE_MAX) {
		extc_fmt(why, whylen, "longer than %d bytes", EXTC_BASE_MAX);
		return (-1);
	}
	if (strcmp(base, "/") == 0) {
		extc_fmt(why, whylen, "the root directory cannot be the base");
		return (-1);
	}
	for (p = base; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) && strchr("/._+-", *p) == NULL) {
			extc_fmt(why, whylen, "only letters, digits and / . _ + - are allowed");
			return (-1);
		}
	}
	if (base[strlen(base) - 1] == '/' || strstr(base, "//") != NULL) {
		extc_fmt(why, whylen, "empty path component (trailing or doubled /)");
		return (-1);
	}
	for (p = base; p != NULL; p = strchr(p + 1, '/')) {
		if (strncmp(p, "/./", 3) == 0 || strcmp(p, "/.") == 0 ||
		    strncmp(p, "/../", 4) == 0 || strcmp(p, "/..") == 0) {
			extc_fmt(why, whylen, "'.' and '..' components are not allowed");
			return (-1);
		}
	}
	for (i = 0; i < sizeof(world_writable_dirs) / sizeof(world_writable_dirs[0]); i++) {
		if (strcmp(base, world_writable_dirs[i]) == 0) {
			extc_fmt(why, whylen,
				 "a shared world-writable directory; use a directory of its own such as %s/ext-cache",
				 base);
			return (-1);
		}
	}
	return (0);
}

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

	if (subdir[0] == '\0' || strcmp(subdir, ".") == 0 || strcmp(subdir, "..") == 0) {
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

int extc_config_parse_vars(const char *list, struct extc_var *vars, size_t *nvars,
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
		vars[n].make_dir = extc_config_builtin_makes_dir(vars[n].name);
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

static int parse_bool(const char *value, bool *out, char *why, size_t whylen)
{
	if (strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 || strcmp(value, "1") == 0) {
		*out = true;
		return (0);
	}
	if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0 || strcmp(value, "0") == 0) {
		*out = false;
		return (0);
	}
	extc_fmt(why, whylen, "expected yes or no");
	return (-1);
}

int extc_config_parse(struct extc_config *cfg, int ac, char **av, char *why, size_t whylen)
{
	enum {
		SEEN_BASE = 1, SEEN_DEFAULT = 2, SEEN_VARS = 4, SEEN_ON_ERROR = 8, SEEN_SHARED = 16,
		SEEN_SEED = 32, SEEN_SEED_MAX = 64, SEEN_SEED_TIMEOUT = 128, SEEN_PUBLISH_TIMEOUT = 256,
	};
	char reason[256];
	char shown_key[64], shown_value[128];
	unsigned seen = 0;
	int i;

	set_defaults(cfg);
	for (i = 0; i < ac; i++) {
		const char *arg = av[i];
		const char *eq = strchr(arg, '=');
		const char *value = eq ? eq + 1 : "";
		size_t keylen = eq ? (size_t)(eq - arg) : strlen(arg);
		unsigned bit = 0;
		int ret = -1;

		reason[0] = '\0';
		if (eq == NULL) {
			extc_fmt(reason, sizeof(reason), "not of the form key=value; " KEYS_HELP);
		} else if (keylen == 4 && strncmp(arg, "base", 4) == 0) {
			bit = SEEN_BASE;
			ret = extc_config_check_base(value, reason, sizeof(reason));
			if (ret == 0)
				strcpy(cfg->base, value);
		} else if (keylen == 7 && strncmp(arg, "default", 7) == 0) {
			char ignored[8];

			bit = SEEN_DEFAULT;
			ret = extc_mode_parse(value, "default", &cfg->default_mode,
					      ignored, sizeof(ignored));
			if (ret < 0)
				extc_fmt(reason, sizeof(reason), "expected one of " EXTC_MODE_LIST);
		} else if (keylen == 4 && strncmp(arg, "vars", 4) == 0) {
			bit = SEEN_VARS;
			ret = extc_config_parse_vars(value, cfg->vars, &cfg->nvars,
						     reason, sizeof(reason));
		} else if (keylen == 8 && strncmp(arg, "on_error", 8) == 0) {
			bit = SEEN_ON_ERROR;
			if (strcmp(value, "fail") == 0)
				cfg->on_error = EXTC_ON_ERROR_FAIL, ret = 0;
			else if (strcmp(value, "warn") == 0)
				cfg->on_error = EXTC_ON_ERROR_WARN, ret = 0;
			else
				extc_fmt(reason, sizeof(reason), "expected fail or warn");
		} else if (keylen == 15 && strncmp(arg, "allow_shared_fs", 15) == 0) {
			bit = SEEN_SHARED;
			ret = parse_bool(value, &cfg->allow_shared_fs, reason, sizeof(reason));
		} else if (keylen == 4 && strncmp(arg, "seed", 4) == 0) {
			bit = SEEN_SEED;
			ret = extc_warm_check_pattern(value, reason, sizeof(reason));
			if (ret == 0)
				strcpy(cfg->seed, value);
		} else if (keylen == 8 && strncmp(arg, "seed_max", 8) == 0) {
			bit = SEEN_SEED_MAX;
			ret = extc_config_parse_size(value, &cfg->seed_max, reason, sizeof(reason));
		} else if (keylen == 12 && strncmp(arg, "seed_timeout", 12) == 0) {
			bit = SEEN_SEED_TIMEOUT;
			ret = parse_seconds(value, &cfg->seed_timeout, reason, sizeof(reason));
		} else if (keylen == 15 && strncmp(arg, "publish_timeout", 15) == 0) {
			bit = SEEN_PUBLISH_TIMEOUT;
			ret = parse_seconds(value, &cfg->publish_timeout, reason, sizeof(reason));
		} else {
			extc_fmt(reason, sizeof(reason), "unknown argument; " KEYS_HELP);
		}
		if (ret == 0 && (seen & bit)) {
			extc_fmt(reason, sizeof(reason), "given more than once");
			ret = -1;
		}
		if (ret < 0) {
			char keybuf[48];
			size_t n = keylen < sizeof(keybuf) - 1 ? keylen : sizeof(keybuf) - 1;

			memcpy(keybuf, arg, n);
			keybuf[n] = '\0';
			extc_escape(keybuf, 40, shown_key, sizeof(shown_key));
			if (eq != NULL) {
				extc_escape(value, 60, shown_value, sizeof(shown_value));
				extc_fmt(why, whylen, "%s=%s: %s", shown_key, shown_value, reason);
			} else {
				extc_fmt(why, whylen, "%s: %s", shown_key, reason);
			}
			return (-1);
		}
		seen |= bit;
	}
	return (0);
}
