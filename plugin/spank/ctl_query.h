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
enum extc_ctl_verdict extc_ctl_query_ask(uint32_t jobid, uint64_t timeout_ms);

/*
 * One sweep's questions: at most 'max_asks' (0: none at all), and after
 * the first unanswered one the rest are not asked. A job not asked about
 * counts as alive: its leftovers wait for a later sweep.
 */
struct extc_ctl_session {
	uint64_t timeout_ms;
	unsigned max_asks;
	unsigned asked;
	bool gave_up;
};

/*
 * What users leave behind never decides how often slurmctld is asked:
 * a node's sweeps ask at most this many questions, at most once per
 * interval (the epilog's background work; fs_stamp.h keeps the time).
 */
#define EXTC_CTL_ASKS_PER_SWEEP 8
#define EXTC_CTL_SWEEP_INTERVAL_S 60

/* slurmctld's MessageTimeout defaults to 10 s; the child also loads plugins. */
#define EXTC_CTL_TIMEOUT_MS 15000

/*
 * An extc_sweep_alive_fn; 'arg' is a struct extc_ctl_session. False only when
 * slurmctld answers that the job is over; any doubt, an unreachable
 * controller included, is "alive", so nothing of a running job is ever
 * removed.
 */
bool extc_ctl_query_job_alive(uint32_t jobid, void *arg);

#endif /* EXTC_CTL_QUERY_H_ */
