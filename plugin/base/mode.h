/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the cache modes a job can ask for, and their validation. */
#ifndef EXTC_MODE_H_
#define EXTC_MODE_H_

#include <stdbool.h>
#include <stddef.h>

enum extc_mode {
	EXTC_MODE_OFF = 0,
	EXTC_MODE_LOCAL,	/* one directory per step per node */
	EXTC_MODE_JOB,		/* one directory per job per node */
};

#define EXTC_MODE_LIST "local, job, off"
#define EXTC_ENV_REQUEST_NAME "SLURM_EXT_CACHE"

/* Longest value worth looking at; anything longer is rejected unread. */
#define EXTC_MODE_VALUE_MAX 32

const char *extc_mode_name(enum extc_mode mode);

/*
 * Parse a user-supplied mode. On failure, 'why' gets a complete sentence
 * naming the (escaped) value, the valid modes and, for a near miss such as
 * "lcoal", the mode that was probably meant. 'what' names where the value
 * came from ("--ext-cache", "SLURM_EXT_CACHE", "default").
 */
int extc_mode_parse(const char *value, const char *what, enum extc_mode *mode,
		    char *why, size_t whylen);


/* Where a job's mode came from, decided once per step. */
struct extc_choice {
	enum extc_mode mode;
	bool user_asked;	/* the user named a mode (option or SLURM_EXT_CACHE) */
	const char *source;	/* "--ext-cache", "SLURM_EXT_CACHE" or "default" */
};

/*
 * The option the step got wins over SLURM_EXT_CACHE, which wins over the
 * admin's default: the client already ranked the command line, the
 * environment and #SBATCH lines (option.c). An option equal to
 * SLURM_EXT_CACHE is named SLURM_EXT_CACHE. A NULL value means "not given".
 * An invalid value that wins is an error ('why' explains), never silently
 * replaced by the default.
 */
int extc_mode_resolve(const char *option_value, const char *env_value,
		      enum extc_mode default_mode, struct extc_choice *choice,
		      char *why, size_t whylen);

#endif /* EXTC_MODE_H_ */
