/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a step's directory on a noexec mount, where tools cannot load what they build. */
#ifndef EXTC_NOEXEC_H_
#define EXTC_NOEXEC_H_

#include <stdbool.h>
#include <stddef.h>

#include "base/config.h"

/* What the mount under a directory allows. */
enum extc_exec_probe {
	EXTC_EXEC_ALLOWED,	/* code may be mapped from it */
	EXTC_EXEC_NOEXEC,	/* mounted noexec (ST_NOEXEC) */
	EXTC_EXEC_UNKNOWN,	/* not a directory this process can open, or fstatvfs failed */
};

/* The flags of the mount under the open directory 'fd' (fstatvfs); UNKNOWN for a bad fd. */
enum extc_exec_probe extc_noexec_probe_fd(int fd);

/*
 * Open 'path' (a directory, its last component never followed) and read
 * its mount's flags with fstatvfs(): what this process sees, so in a
 * task's own mount namespace what the task sees.
 */
enum extc_exec_probe extc_noexec_probe_path(const char *path);

/*
 * The first variable of 'cfg' whose tool loads code from its directory,
 * among those 'exported' marks (NULL: every variable); NULL when none does.
 */
const char *extc_noexec_first_loader(const struct extc_config *cfg, const bool *exported);

enum extc_noexec_action {
	EXTC_NOEXEC_FINE,	/* not noexec, unknown, or no exported variable's tool loads code */
	EXTC_NOEXEC_FAIL,	/* the step fails (on_error=, or the user asked for a mode) */
	EXTC_NOEXEC_WARN,	/* the step goes on without the cache variables, and is told why */
};

/*
 * What a step does whose directory 'leaf' the probe found as it did: a
 * tool told to build there would fail when it loads what it built
 * ("failed to map segment from shared object"), naming neither the mount
 * nor this plugin. The decision is on_error='s (extc_config_on_error_fails). For
 * FAIL and WARN, 'why' names the directory (escaped), "noexec" and the
 * first variable concerned.
 */
enum extc_noexec_action extc_noexec_decide(enum extc_exec_probe probe, const char *leaf,
					   const struct extc_config *cfg, const bool *exported,
					   bool user_asked, char *why, size_t whylen);

#endif /* EXTC_NOEXEC_H_ */
