/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: a SPANK plugin whose init fails in slurmstepd, to
 * see what Slurm does with each slurm_spank_init_failure_mode (25.05+):
 * argument "mode=job" asks for ESPANK_JOB_FAILURE, anything else keeps
 * Slurm's default (ESPANK_NODE_FAILURE). Built by test_init_failure.bats.
 */
#include <string.h>

#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>

SPANK_PLUGIN(init_fail, 1);

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
int slurm_spank_init_failure_mode = ESPANK_NODE_FAILURE;
#endif

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	int i;

	(void)sp;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return (0);
	for (i = 0; i < ac; i++) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
		if (strcmp(av[i], "mode=job") == 0)
			slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif
	}
	slurm_error("init_fail: failing init in slurmstepd on purpose");
	return (-1);
}
