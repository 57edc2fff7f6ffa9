/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run in slurmstepd, once per step per node (remote context). */
#include <stdint.h>

#include <slurm/spank.h>

#include "base/config.h"
#include "base/text.h"
#include "spank/log.h"
#include "spank/option.h"
#include "spank/slurmstepd.h"
#include "spank/step.h"
#include "spank/step_tier.h"
#include "spank/step_end.h"
#include "spank/step_env.h"
#include "spank/step_start.h"
#include "spank/step_task.h"

/*
 * The step, as this slurmstepd's hooks (and task_init in the tasks it
 * forks, each on its own copy) see it: a plugin is loaded once per
 * process, and a slurmstepd runs one step on this node. Zero, holding
 * nothing, until init's extc_step_reset.
 */
static struct extc_step step;

int extc_slurmstepd_init(spank_t sp, int ac, char **av)
{
	uint32_t jobid, stepid;
	char why[EXTC_WHY_MAX];

	extc_step_reset(&step);
	if (spank_get_item(sp, S_JOB_ID, &jobid) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS)
		extc_log_scope_job(jobid, stepid);
	if (extc_config_parse(&step.cfg, ac, av, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	step.configured = true;
	extc_step_start_pyxis(sp, &step);
	return (extc_option_register(sp));
}

/*
 * The directory is made here, as root, once per step and before any task
 * exists. This hook must not fail for anything a user can cause: for a
 * batch step that drains the node. Problems are kept for task_init.
 */
int extc_slurmstepd_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (step.configured)
		extc_step_start_prepare(sp, &step);
	return (0);
}

/* user_init's environment changes reach every task of the step. */
int extc_slurmstepd_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!step.created)
		return (0);
	if (extc_step_env_export(sp, &step) < 0)
		return (0);
	extc_step_share_turn(&step);	/* the tasks are forked after this hook */
	return (0);
}

int extc_slurmstepd_task_init_privileged(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	extc_step_task_privileged(sp, &step);
	return (0);
}

/* A task that must fail exits in it (step_task.h): failing the hook would not do for `optional`. */
int extc_slurmstepd_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	extc_step_task_init(sp, &step);
	return (0);
}

/* task_exit runs in slurmstepd once per task of the node as it ends: the site tier's publish asks how. */
int extc_slurmstepd_task_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	extc_step_tier_task_exit(sp, &step);
	return (0);
}

/* exit runs after the last task of the step on this node has ended. */
int extc_slurmstepd_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	extc_step_end_finish(sp, &step);
	extc_step_reset(&step);
	extc_log_scope_clear();
	return (0);
}
