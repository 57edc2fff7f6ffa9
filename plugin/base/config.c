/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the admin's plugstack.conf arguments, parsed and validated. */
#include <ctype.h>
#include <string.h>

#include "base/config.h"
#include "base/config_tier.h"
#include "base/config_vars.h"
#include "base/text.h"
#include "base/seed_path.h"

static const char *const world_writable_dirs[] = { "/tmp", "/var/tmp", "/dev/shm", "/run/user" };

static void set_defaults(struct extc_config *cfg)
{
	const struct extc_var *builtin;

	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->base, EXTC_DEFAULT_BASE);
	cfg->default_mode = EXTC_MODE_OFF;
	cfg->on_error = EXTC_ON_ERROR_AUTO;
	cfg->allow_shared_fs = false;
	cfg->nvars = extc_vars_builtin(&builtin);
	memcpy(cfg->vars, builtin, cfg->nvars * sizeof(*builtin));
	cfg->seed_max = EXTC_DEFAULT_SEED_MAX;
	cfg->seed_timeout = EXTC_DEFAULT_SEED_TIMEOUT;
	cfg->publish_timeout = EXTC_DEFAULT_PUBLISH_TIMEOUT;
	cfg->pool = false;
	cfg->pool_max = EXTC_DEFAULT_POOL_MAX;
	cfg->pool_total_max = EXTC_DEFAULT_POOL_TOTAL_MAX;
	cfg->pool_ttl = EXTC_DEFAULT_POOL_TTL;
	cfg->pool_max_keys = EXTC_DEFAULT_POOL_MAX_KEYS;
	cfg->pool_max_inodes = EXTC_DEFAULT_POOL_MAX_INODES;
	cfg->tier_timeout = EXTC_DEFAULT_TIER_TIMEOUT;
	cfg->tier_keep = EXTC_DEFAULT_TIER_KEEP;
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

const char *extc_config_triton_subdir(const struct extc_config *cfg)
{
	const struct extc_var *var = extc_config_find_var(cfg, "TRITON_CACHE_DIR");

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
		const char *s = strchr(suffixes, *p);

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

static int parse_base(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	if (extc_config_check_base(value, why, whylen) < 0)
		return (-1);
	strcpy(cfg->base, value);
	return (0);
}

static int parse_default(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	char ignored[8];

	if (extc_mode_parse(value, "default", &cfg->default_mode, ignored, sizeof(ignored)) < 0) {
		extc_fmt(why, whylen, "expected one of " EXTC_MODE_LIST);
		return (-1);
	}
	return (0);
}

static int parse_vars(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	return (extc_config_vars_parse(value, cfg->vars, &cfg->nvars, why, whylen));
}

static int parse_on_error(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	if (strcmp(value, "fail") == 0) {
		cfg->on_error = EXTC_ON_ERROR_FAIL;
		return (0);
	}
	if (strcmp(value, "warn") == 0) {
		cfg->on_error = EXTC_ON_ERROR_WARN;
		return (0);
	}
	extc_fmt(why, whylen, "expected fail or warn");
	return (-1);
}

/* By default a step fails only when its user asked for the cache it cannot have. */
bool extc_config_on_error_fails(enum extc_on_error on_error, bool user_asked)
{
	if (on_error == EXTC_ON_ERROR_FAIL)
		return (true);
	if (on_error == EXTC_ON_ERROR_WARN)
		return (false);
	return (user_asked);
}

static int parse_shared(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	return (parse_bool(value, &cfg->allow_shared_fs, why, whylen));
}

static int parse_seed(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	if (extc_seed_path_check_pattern(value, why, whylen) < 0)
		return (-1);
	strcpy(cfg->seed, value);
	return (0);
}

static int parse_seed_max(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	return (extc_config_parse_size(value, &cfg->seed_max, why, whylen));
}

static int parse_seed_timeout(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	return (parse_seconds(value, &cfg->seed_timeout, why, whylen));
}

static int parse_publish_timeout(struct extc_config *cfg, const char *value, char *why,
				 size_t whylen)
{
	return (parse_seconds(value, &cfg->publish_timeout, why, whylen));
}

static int parse_pool(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	if (strcmp(value, "off") != 0 && strcmp(value, "node") != 0) {
		extc_fmt(why, whylen, "expected off or node");
		return (-1);
	}
	cfg->pool = strcmp(value, "node") == 0;
	return (0);
}

/* A pool limit of 0 would evict every build as soon as it is published: pool=off says that. */
static int parse_pool_size(const char *value, uint64_t *out, char *why, size_t whylen)
{
	if (extc_config_parse_size(value, out, why, whylen) < 0)
		return (-1);
	if (*out == 0) {
		extc_fmt(why, whylen, "expected a size of at least 1 such as 20G (pool=off turns "
			 "the pool off)");
		return (-1);
	}
	return (0);
}

static int parse_pool_max(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	return (parse_pool_size(value, &cfg->pool_max, why, whylen));
}

static int parse_pool_total_max(struct extc_config *cfg, const char *value, char *why,
				size_t whylen)
{
	return (parse_pool_size(value, &cfg->pool_total_max, why, whylen));
}

static int parse_pool_ttl(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	if (extc_parse_u32(value, EXTC_POOL_TTL_MAX, &cfg->pool_ttl) < 0 || cfg->pool_ttl == 0) {
		extc_fmt(why, whylen, "expected a number of days from 1 to %d", EXTC_POOL_TTL_MAX);
		return (-1);
	}
	return (0);
}

/* A count limit of 0 would keep nothing: pool=off says that. */
static int parse_pool_count(const char *value, uint32_t max, const char *what, uint32_t *out,
			    char *why, size_t whylen)
{
	if (extc_parse_u32(value, max, out) < 0 || *out == 0) {
		extc_fmt(why, whylen, "expected a number of %s from 1 to %lu (pool=off turns the "
			 "pool off)", what, (unsigned long)max);
		return (-1);
	}
	return (0);
}

static int parse_pool_max_keys(struct extc_config *cfg, const char *value, char *why,
			       size_t whylen)
{
	return (parse_pool_count(value, EXTC_POOL_MAX_KEYS_MAX, "keys", &cfg->pool_max_keys, why,
				 whylen));
}

static int parse_pool_max_inodes(struct extc_config *cfg, const char *value, char *why,
				 size_t whylen)
{
	return (parse_pool_count(value, EXTC_POOL_MAX_INODES_MAX, "inodes", &cfg->pool_max_inodes,
				 why, whylen));
}

static int parse_tier(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	return (extc_config_tier_pattern(value, cfg->tier, why, whylen));
}

static int parse_tier_timeout(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	return (extc_config_tier_timeout(value, &cfg->tier_timeout, why, whylen));
}

static int parse_tier_keep(struct extc_config *cfg, const char *value, char *why, size_t whylen)
{
	return (extc_config_tier_keep(value, &cfg->tier_keep, why, whylen));
}

/* Every plugstack.conf key, in the order the help text lists them; a key's index is its "seen" bit. */
static const struct config_key {
	const char *name;
	int (*parse)(struct extc_config *cfg, const char *value, char *why, size_t whylen);
} config_keys[] = {
	{ "base", parse_base },
	{ "default", parse_default },
	{ "vars", parse_vars },
	{ "on_error", parse_on_error },
	{ "allow_shared_fs", parse_shared },
	{ "seed", parse_seed },
	{ "seed_max", parse_seed_max },
	{ "seed_timeout", parse_seed_timeout },
	{ "publish_timeout", parse_publish_timeout },
	{ "pool", parse_pool },
	{ "pool_max", parse_pool_max },
	{ "pool_total_max", parse_pool_total_max },
	{ "pool_ttl", parse_pool_ttl },
	{ "pool_max_keys", parse_pool_max_keys },
	{ "pool_max_inodes", parse_pool_max_inodes },
	{ "tier", parse_tier },
	{ "tier_timeout", parse_tier_timeout },
	{ "tier_keep", parse_tier_keep },
};
#define CONFIG_KEY_COUNT (sizeof(config_keys) / sizeof(config_keys[0]))
_Static_assert(CONFIG_KEY_COUNT <= 32, "a key's seen bit must fit in an unsigned");

/* "<lead>; valid arguments are base=, default=, ..." with every key of the table. */
static void explain_keys(const char *lead, char *why, size_t whylen)
{
	size_t i;

	extc_fmt(why, whylen, "%s; valid arguments are ", lead);
	for (i = 0; i < CONFIG_KEY_COUNT; i++) {
		size_t len = strlen(why);

		extc_fmt(why + len, whylen - len, "%s%s=", i > 0 ? ", " : "", config_keys[i].name);
	}
}

/*
 * "unknown argument (did you mean 'default='?); valid arguments are ..."
 * for a key one or two edits from one of the table's, as for a mode.
 */
static void explain_unknown(const char *arg, size_t keylen, char *why, size_t whylen)
{
	char lead[96];
	const char *hint = NULL;

	if (keylen > 0 && keylen <= EXTC_TEXT_DISTANCE_MAX) {
		char key[EXTC_TEXT_DISTANCE_MAX + 1];
		size_t i, best = 3;

		memcpy(key, arg, keylen);
		key[keylen] = '\0';
		for (i = 0; i < CONFIG_KEY_COUNT; i++) {
			size_t dist = extc_text_edit_distance(key, config_keys[i].name);

			if (dist < best) {
				best = dist;
				hint = config_keys[i].name;
			}
		}
	}
	if (hint != NULL)
		extc_fmt(lead, sizeof(lead), "unknown argument (did you mean '%s='?)", hint);
	else
		extc_fmt(lead, sizeof(lead), "unknown argument");
	explain_keys(lead, why, whylen);
}

/* The table entry for the key of length 'keylen' at the start of 'arg', or NULL. */
static const struct config_key *find_key(const char *arg, size_t keylen)
{
	size_t i;

	for (i = 0; i < CONFIG_KEY_COUNT; i++) {
		if (strlen(config_keys[i].name) == keylen &&
		    strncmp(arg, config_keys[i].name, keylen) == 0)
			return (&config_keys[i]);
	}
	return (NULL);
}

/* One "key=value": 0 once applied, or -1 with 'reason' saying why (the key is not in it). */
static int apply_arg(struct extc_config *cfg, const char *arg, unsigned *seen,
		     char *reason, size_t reasonlen)
{
	const char *eq = strchr(arg, '=');
	const struct config_key *key;
	unsigned bit;

	if (eq == NULL) {
		explain_keys("not of the form key=value", reason, reasonlen);
		return (-1);
	}
	key = find_key(arg, (size_t)(eq - arg));
	if (key == NULL) {
		explain_unknown(arg, (size_t)(eq - arg), reason, reasonlen);
		return (-1);
	}
	if (key->parse(cfg, eq + 1, reason, reasonlen) < 0)
		return (-1);
	bit = 1u << (unsigned)(key - config_keys);
	if (*seen & bit) {
		extc_fmt(reason, reasonlen, "given more than once");
		return (-1);
	}
	*seen |= bit;
	return (0);
}

int extc_config_parse(struct extc_config *cfg, int ac, char **av, char *why, size_t whylen)
{
	char reason[EXTC_WHY_MAX];
	char shown_key[64], shown_value[128], keybuf[48];
	unsigned seen = 0;
	int i;

	set_defaults(cfg);
	for (i = 0; i < ac; i++) {
		const char *arg = av[i];
		const char *eq = strchr(arg, '=');
		size_t keylen = eq ? (size_t)(eq - arg) : strlen(arg);
		size_t n = keylen < sizeof(keybuf) - 1 ? keylen : sizeof(keybuf) - 1;

		reason[0] = '\0';
		if (apply_arg(cfg, arg, &seen, reason, sizeof(reason)) == 0)
			continue;
		memcpy(keybuf, arg, n);
		keybuf[n] = '\0';
		extc_escape(keybuf, 40, shown_key, sizeof(shown_key));
		if (eq != NULL) {
			extc_escape(eq + 1, 60, shown_value, sizeof(shown_value));
			extc_fmt(why, whylen, "%s=%s: %s", shown_key, shown_value, reason);
		} else {
			extc_fmt(why, whylen, "%s: %s", shown_key, reason);
		}
		return (-1);
	}
	if (cfg->pool_max > cfg->pool_total_max) {
		extc_fmt(why, whylen, "pool_max=%llu bytes: larger than pool_total_max=%llu bytes; "
			 "one user's pool cannot be larger than the node's",
			 (unsigned long long)cfg->pool_max, (unsigned long long)cfg->pool_total_max);
		return (-1);
	}
	if (cfg->tier[0] != '\0' && !cfg->pool) {
		/* the tier fills the node pool, and is filled from it */
		extc_fmt(why, whylen, "tier=%s: needs pool=node (the site tier fills the node pool "
			 "and is filled from it)", cfg->tier);
		return (-1);
	}
	return (0);
}

/* Whether 'arg', applied alone to the defaults, leaves them as they are ("seed_max=4G"). */
static bool is_default(const char *arg)
{
	static struct extc_config defaults, one;
	char reason[EXTC_WHY_MAX];
	unsigned seen = 0;

	set_defaults(&defaults);
	set_defaults(&one);
	if (apply_arg(&one, arg, &seen, reason, sizeof(reason)) < 0)
		return (false);
	return (memcmp(&defaults, &one, sizeof(one)) == 0);
}

void extc_config_describe(const struct extc_config *cfg, int ac, char **av, char *buf,
			  size_t len)
{
	char shown[4 * EXTC_BASE_MAX + 1];
	int i;

	extc_escape(cfg->base, EXTC_BASE_MAX, shown, sizeof(shown));
	extc_fmt(buf, len, "base=%s default=%s pool=%s", shown, extc_mode_name(cfg->default_mode),
		 cfg->pool ? "node" : "off");
	for (i = 0; i < ac; i++) {
		size_t used = strlen(buf);

		if (extc_has_prefix(av[i], "base=") || extc_has_prefix(av[i], "default=") ||
		    extc_has_prefix(av[i], "pool=") || is_default(av[i]))
			continue;
		extc_escape(av[i], 200, shown, sizeof(shown));
		extc_fmt(buf + used, len - used, " %s", shown);
	}
}
