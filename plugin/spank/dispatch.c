/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the SPANK entry points, each forwarding to the file of its process. */
/*
 * No dispatch.h: this file defines only the slurm_spank_* functions, which
 * <slurm/spank.h> declares and slurmd, slurmstepd and srun look up by name.
 */
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>

#include "spank/client.h"
#include "spank/slurmd.h"
#include "spank/slurmstepd.h"

SPANK_PLUGIN(ext_cache, 1);

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/*
 * Read by slurmstepd after a failed init. This plugin's init fails there
 * only for a bad plugstack line, which srun, sbatch and salloc already
 * refuse at submission: what reaches a node is a job queued before the
 * line went bad. Failing that job, rather than draining the node and
 * requeueing the job onto the next node to drain, keeps one typo from
 * draining a partition.
 */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return (extc_client_init(sp, ac, av));
	case S_CTX_REMOTE:
		return (extc_slurmstepd_init(sp, ac, av));
	case S_CTX_SLURMD:
		return (extc_slurmd_init(sp, ac, av));
	default:
		return (0);
	}
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return (extc_client_init_post_opt(sp, ac, av));
	case S_CTX_REMOTE:
		return (extc_slurmstepd_init_post_opt(sp, ac, av));
	default:
		return (0);
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return (0);
	return (extc_slurmstepd_user_init(sp, ac, av));
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return (0);
	return (extc_slurmstepd_task_init_privileged(sp, ac, av));
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return (0);
	return (extc_slurmstepd_task_init(sp, ac, av));
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return (0);
	return (extc_slurmstepd_task_exit(sp, ac, av));
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return (0);
	return (extc_slurmstepd_exit(sp, ac, av));
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_JOB_SCRIPT)
		return (0);
	return (extc_slurmd_job_epilog(sp, ac, av));
}
