/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: log lines, all prefixed "ext-cache:" and naming the job and step. */
#include <stdarg.h>
#include <stdio.h>

#include <slurm/spank.h>

#include "base/layout.h"
#include "spank/log.h"
#include "base/text.h"

static char scope[64];

void extc_log_scope_job(uint32_t jobid, uint32_t stepid)
{
	if (stepid == EXTC_STEP_BATCH)
		extc_fmt(scope, sizeof(scope), "job %u batch: ", jobid);
	else if (stepid == EXTC_STEP_INTERACTIVE)
		extc_fmt(scope, sizeof(scope), "job %u interactive: ", jobid);
	else if (stepid == EXTC_STEP_EXTERN)
		extc_fmt(scope, sizeof(scope), "job %u extern: ", jobid);
	else if (stepid > EXTC_STEP_MAX_NORMAL)
		extc_fmt(scope, sizeof(scope), "job %u: ", jobid);
	else
		extc_fmt(scope, sizeof(scope), "job %u step %u: ", jobid, stepid);
}

void extc_log_scope_clear(void)
{
	scope[0] = '\0';
}

/*
 * Slurm's log functions take a format; ours is rendered first so user text
 * is never one. User text is escaped where it is put in a message
 * (extc_escape); sanitizing the whole line besides keeps a missed one from
 * carrying terminal escapes into slurmd.log.
 */
#define EXTC_LOG_BODY(fn)                                         \
	do {                                                      \
		char line[1024];                                  \
		va_list ap;                                       \
		va_start(ap, fmt);                                \
		vsnprintf(line, sizeof(line), fmt, ap);           \
		va_end(ap);                                       \
		extc_sanitize(line);                              \
		fn("ext-cache: %s%s", scope, line);               \
	} while (0)

void extc_error(const char *fmt, ...)
{
	EXTC_LOG_BODY(slurm_error);
}

void extc_info(const char *fmt, ...)
{
	EXTC_LOG_BODY(slurm_info);
}

void extc_verbose(const char *fmt, ...)
{
	EXTC_LOG_BODY(slurm_verbose);
}

void extc_debug(const char *fmt, ...)
{
	EXTC_LOG_BODY(slurm_debug);
}

void extc_user(const char *fmt, ...)
{
	EXTC_LOG_BODY(slurm_spank_log);
}
