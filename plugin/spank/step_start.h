/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: a step's start in slurmstepd, as root, before any task
 * (init, init_post_opt): the mode, the step's directory made, the image it
 * runs, where the tasks will see it; warm start's and the pool's requests.
 */
#ifndef EXTC_STEP_START_H_
#define EXTC_STEP_START_H_

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * slurm_spank_init: keep pyxis' --container-image and --container-name.
 * slurmstepd passes every plugin's options to its plugins as
 * _SLURM_SPANK_OPTION_<plugin>_<option> in the job's environment while it
 * loads them, and no longer by init_post_opt.
 */
void extc_step_start_pyxis(spank_t sp, struct extc_step *s);

/*
 * init_post_opt: resolve the mode; walk from / and make the leaf
 * (fs_tree.h), holding the job level in s->hold_fd; keep its identity and
 * slurmstepd's mount namespace for the tasks; read which image the step
 * runs; resolve warm start's directories (step_warm.h) and open the node
 * pool's key (step_pool.h). Never fails: for a batch step a failure here
 * drains the node, so a problem is kept in s (fail_step, warn_step, why)
 * for task_init.
 */
void extc_step_start_prepare(spank_t sp, struct extc_step *s);

#endif /* EXTC_STEP_START_H_ */
