/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the admin's plugstack.conf arguments, parsed and validated. */
#ifndef EXTC_CONFIG_H_
#define EXTC_CONFIG_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config_tier.h"
#include "base/mode.h"
#include "base/vars.h"

#define EXTC_BASE_MAX 512	/* leaves room below PATH_MAX for the levels */
#define EXTC_DEFAULT_BASE "/tmp/ext-cache"
#define EXTC_SEED_PATTERN_MAX 512
#define EXTC_DEFAULT_SEED_MAX (4ULL << 30)	/* 4G */
#define EXTC_DEFAULT_SEED_TIMEOUT 300		/* seconds */
#define EXTC_DEFAULT_PUBLISH_TIMEOUT 300	/* seconds */
#define EXTC_TIMEOUT_MAX 86400
#define EXTC_DEFAULT_POOL_MAX (20ULL << 30)		/* 20G per user per node */
#define EXTC_DEFAULT_POOL_TOTAL_MAX (100ULL << 30)	/* 100G per node */
#define EXTC_DEFAULT_POOL_TTL 14			/* days */
#define EXTC_POOL_TTL_MAX 3650
#define EXTC_DEFAULT_POOL_MAX_KEYS 256			/* keys per user per node */
#define EXTC_POOL_MAX_KEYS_MAX 65536
#define EXTC_DEFAULT_POOL_MAX_INODES 1000000		/* inodes per user per node */
#define EXTC_POOL_MAX_INODES_MAX 4294967295u

enum extc_on_error {
	EXTC_ON_ERROR_AUTO = 0,	/* fail if the user asked for a mode, else warn */
	EXTC_ON_ERROR_FAIL,
	EXTC_ON_ERROR_WARN,
};

/* Whether a failure fails the step: on_error=, or by default whether the user asked for a mode. */
bool extc_config_on_error_fails(enum extc_on_error on_error, bool user_asked);

struct extc_config {
	char base[EXTC_BASE_MAX + 1];
	enum extc_mode default_mode;
	enum extc_on_error on_error;
	bool allow_shared_fs;
	size_t nvars;
	struct extc_var vars[EXTC_VARS_MAX];
	char seed[EXTC_SEED_PATTERN_MAX + 1];	/* seed= pattern, "" when not given */
	uint64_t seed_max;		/* bytes; 0: seeding disabled */
	uint32_t seed_timeout;		/* seconds */
	uint32_t publish_timeout;	/* seconds */
	bool pool;			/* pool=node: the node-local pool of earlier builds */
	uint64_t pool_max;		/* bytes per user per node */
	uint64_t pool_total_max;	/* bytes per node */
	uint32_t pool_ttl;		/* days */
	uint32_t pool_max_keys;		/* keys per user per node */
	uint32_t pool_max_inodes;	/* inodes (and names read to count them) per user per node */
	char tier[EXTC_TIER_PATTERN_MAX + 1];	/* tier= pattern, "" when there is no site tier */
	uint32_t tier_timeout;		/* seconds a step's tasks may spend reading the tier */
	uint32_t tier_keep;		/* generations kept per key */
};

/*
 * Fill 'cfg' with the defaults, then apply every "key=value" in av.
 * On error, 'why' reads "<key>=<value>: <reason>" (value escaped) and the
 * return value is -1; 'cfg' is then unusable.
 */
int extc_config_parse(struct extc_config *cfg, int ac, char **av, char *why, size_t whylen);

/*
 * The arguments in effect, for the line slurmd logs at its start: base=,
 * default= and pool= always, then every other argument of av that differs
 * from its default, as given (escaped).
 */
void extc_config_describe(const struct extc_config *cfg, int ac, char **av, char *buf,
			  size_t len);

/* Validation of single values, shared with the option parser and fuzzers. */
int extc_config_check_base(const char *base, char *why, size_t whylen);
int extc_config_parse_size(const char *value, uint64_t *out, char *why, size_t whylen);
/* The managed variable called 'name', or NULL if it is not in the list. */
const struct extc_var *extc_config_find_var(const struct extc_config *cfg, const char *name);
/* The variable named TORCH_EXTENSIONS_DIR's subdirectory, or NULL if it is not managed. */
const char *extc_config_torch_subdir(const struct extc_config *cfg);
/* TORCHINDUCTOR_CACHE_DIR's subdirectory, or NULL when it is not in the list. */
const char *extc_config_inductor_subdir(const struct extc_config *cfg);
/* TRITON_CACHE_DIR's subdirectory, or NULL when it is not in the list. */
const char *extc_config_triton_subdir(const struct extc_config *cfg);

#endif /* EXTC_CONFIG_H_ */
