/* spank-ext-cache: what the controller says about a job, for the leftover sweep. */
#ifndef EXTC_CTL_QUERY_H_
#define EXTC_CTL_QUERY_H_

#include <stdbool.h>
#include <stdint.h>

/*
 * False only when slurmctld answers that the job is over (a final state,
 * not completing) or unknown to it; any doubt, an unreachable controller
 * included, is "alive", so nothing of a running job is ever removed.
 */
bool extc_ctl_job_alive(uint32_t jobid, void *arg);

#endif /* EXTC_CTL_QUERY_H_ */
