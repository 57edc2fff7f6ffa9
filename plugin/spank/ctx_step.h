/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run in slurmstepd, once per step per node (remote context). */
#ifndef EXTC_CTX_STEP_H_
#define EXTC_CTX_STEP_H_

#include <slurm/spank.h>

int extc_step_init(spank_t sp, int ac, char **av);
int extc_step_init_post_opt(spank_t sp, int ac, char **av);
int extc_step_user_init(spank_t sp, int ac, char **av);
int extc_step_task_init_privileged(spank_t sp, int ac, char **av);
int extc_step_task_init(spank_t sp, int ac, char **av);
int extc_step_exit(spank_t sp, int ac, char **av);

#endif /* EXTC_CTX_STEP_H_ */
