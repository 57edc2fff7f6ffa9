/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the seed and publish directories and the cache key as users and admins name them, checked. */
#ifndef EXTC_SEED_PATH_H_
#define EXTC_SEED_PATH_H_

#include <stddef.h>
#include <sys/types.h>

#define EXTC_ENV_SEED "SLURM_EXT_CACHE_SEED"
#define EXTC_ENV_PUBLISH "SLURM_EXT_CACHE_PUBLISH"
#define EXTC_ENV_KEY "SLURM_EXT_CACHE_KEY"

/* Longest seed or publish directory accepted (well below PATH_MAX: names are added below it). */
#define EXTC_WARM_PATH_MAX 1024
/* Longest SLURM_EXT_CACHE_KEY accepted. */
#define EXTC_WARM_KEY_MAX 256

/*
 * A directory a user names for --ext-cache-seed / --ext-cache-publish: an
 * absolute path, no control characters, at most EXTC_WARM_PATH_MAX bytes.
 * Nothing else is decided from the text: the path is only ever opened as
 * the job's user, so it cannot reach anything that user could not.
 * 'what' names the source ("--ext-cache-seed"); on failure 'why' is a
 * sentence naming the (escaped) value and what is allowed.
 */
int extc_seed_path_check_dir(const char *value, const char *what, char *why, size_t whylen);

/* SLURM_EXT_CACHE_KEY: printable ASCII, at most EXTC_WARM_KEY_MAX bytes (may be empty). */
int extc_seed_path_check_key(const char *value, char *why, size_t whylen);

/* The admin's seed= pattern: absolute, only %u, %U and %% as escapes. */
int extc_seed_path_check_pattern(const char *pattern, char *why, size_t whylen);

/*
 * Expand a checked pattern: %u the uid, %U the user name, %% a '%'. The
 * user name must be a plain name (no '/', not "." or "..", printable).
 */
int extc_seed_path_expand(const char *pattern, uid_t uid, const char *user,
			  char *out, size_t outlen, char *why, size_t whylen);

#endif /* EXTC_SEED_PATH_H_ */
