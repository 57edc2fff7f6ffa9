/* spank-ext-cache: what the controller says about a job, for the leftover sweep. */
#include <stddef.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "ctl_query.h"

/*
 * libslurm is not linked: slurmd and slurmstepd, the only processes that
 * call this, already carry these symbols, and a second copy of the library
 * would have a second, unconfigured copy of its state.
 */
bool extc_ctl_job_alive(uint32_t jobid, void *arg)
{
	job_info_msg_t *msg = NULL;
	bool alive = true;
	uint32_t state;

	(void)arg;
	if (slurm_load_job(&msg, jobid, SHOW_ALL) != SLURM_SUCCESS) {
		alive = (slurm_get_errno() != ESLURM_INVALID_JOB_ID);
		goto out;
	}
	if (msg == NULL || msg->record_count == 0) {
		alive = false;
		goto out;
	}
	state = msg->job_array[0].job_state;
	alive = (state & JOB_COMPLETING) || (state & JOB_STATE_BASE) < JOB_COMPLETE;
out:
	if (msg != NULL)
		slurm_free_job_info_msg(msg);
	return (alive);
}
