/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: what each task of a step does before exec: sees the
 * step's directory (task_init_privileged), refuses a noexec one, takes the
 * node's one seeding turn, fails or warns (task_init).
 */
#ifndef EXTC_STEP_TASK_H_
#define EXTC_STEP_TASK_H_

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * task_init_privileged: runs as root in each task's process, after Slurm
 * has moved it into the job's mount namespace if there is one
 * (job_container/tmpfs). If the base lies inside what that namespace
 * replaces (a per-job /tmp), the task does not see the directory
 * slurmstepd made; it is made again here, in the job's own view, where
 * only the job can write. Tasks of the step race for it; the first makes
 * it and the others find it.
 */
void extc_step_task_privileged(spank_t sp, struct extc_step *s);

/*
 * task_init, the first hook where failing fails only the job. It runs in
 * the task's own process, as the user, just before exec: the noexec
 * check, the seed and the container env file (one task of the node), the
 * notices and the verbose line. Returning -1 fails the task only for a
 * `required` plugin; Slurm ignores it for an `optional` one, which is how
 * admins load this plugin. So a task that must fail exits here (status
 * 75), before exec, which srun reports as any failed task; local task 0
 * says why (step_tell.h).
 */
void extc_step_task_init(spank_t sp, struct extc_step *s);

#endif /* EXTC_STEP_TASK_H_ */
