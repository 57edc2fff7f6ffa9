/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: an in-memory stand-in for the spank_* and slurm_* calls of slurmstepd. */
#ifndef EXTC_FAKE_SPANK_H_
#define EXTC_FAKE_SPANK_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <slurm/spank.h>

struct fake_job {
	uid_t uid;
	gid_t gid;
	uint32_t jobid;
	uint32_t stepid;
	int taskid;
};

/* Start over: context, items, job environment, captured log, registered option. */
void fake_reset(spank_context_t ctx, const struct fake_job *job);
void fake_set_context(spank_context_t ctx);

/* The job environment seen through spank_getenv/spank_setenv. */
void fake_env_set(const char *name, const char *value);
const char *fake_env_get(const char *name);

/* Run the callback of --ext-cache (or of option 'name'), as Slurm would. */
int fake_option(const char *value, int remote);
int fake_option_named(const char *name, const char *value, int remote);

/* S_JOB_SUPPLEMENTARY_GIDS (not available until set). */
void fake_set_groups(const gid_t *groups, int n);

/* Tell the fake controller about a job (JOB_RUNNING, JOB_COMPLETE, ...); others are unknown. */
void fake_ctl_set_job(uint32_t jobid, uint32_t state);
/* The error slurm_load_job gives for a job it does not know (default ESLURM_INVALID_JOB_ID). */
void fake_ctl_set_error(int err);

/* What slurm_init() does in the process that asks the controller. */
enum fake_ctl_fault {
	FAKE_CTL_ANSWERS,	/* nothing: the query goes on */
	FAKE_CTL_CRASHES,	/* SIGSEGV, as 26.05 */
	FAKE_CTL_FATAL,		/* exit(1), as Slurm's fatal() */
	FAKE_CTL_HANGS,		/* never returns */
};
void fake_ctl_set_fault(enum fake_ctl_fault fault);

/* Captured log: does any line at 'level' ("error", "info", "verbose", "debug") contain 'needle'? */
bool fake_log_has(const char *level, const char *needle);

/*
 * Wait until every process the hooks detached has ended (they are
 * reparented to the test, a child subreaper since fake_reset).
 */
void fake_wait_background(void);
void fake_log_dump(void);

#endif /* EXTC_FAKE_SPANK_H_ */
