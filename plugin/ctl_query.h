/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what the controller says about a job, for the leftover sweep. */
#ifndef EXTC_CTL_QUERY_H_
#define EXTC_CTL_QUERY_H_

#include <stdbool.h>
#include <stdint.h>

enum extc_ctl_verdict {
	EXTC_CTL_OVER,		/* in a final state and not completing, or unknown to slurmctld */
	EXTC_CTL_ALIVE,		/* pending, running, suspended or completing */
	EXTC_CTL_TIMEOUT,	/* no answer before the deadline (the query was killed) */
	EXTC_CTL_UNKNOWN,	/* the query failed or died: unreachable controller, fatal() in libslurm */
};

/*
 * Ask slurmctld about 'jobid' from a forked child that initialises the
 * Slurm API itself and is SIGKILLed after 'timeout_ms': whatever the
 * Slurm release does with an API call from this process, the caller (the
 * job epilog, whose failure drains the node) only ever gets a verdict.
 */
enum extc_ctl_verdict extc_ctl_ask(uint32_t jobid, uint64_t timeout_ms);

/* One sweep's questions: after the first unanswered one, the rest are not asked. */
struct extc_ctl_session {
	uint64_t timeout_ms;
	bool gave_up;
};

/* slurmctld's MessageTimeout defaults to 10 s; the child also loads plugins. */
#define EXTC_CTL_TIMEOUT_MS 15000

/*
 * An extc_job_alive_fn; 'arg' is a struct extc_ctl_session. False only when
 * slurmctld answers that the job is over; any doubt, an unreachable
 * controller included, is "alive", so nothing of a running job is ever
 * removed.
 */
bool extc_ctl_job_alive(uint32_t jobid, void *arg);

#endif /* EXTC_CTL_QUERY_H_ */
