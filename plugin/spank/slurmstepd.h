/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run in slurmstepd, once per step per node (remote context). */
#ifndef EXTC_SLURMSTEPD_H_
#define EXTC_SLURMSTEPD_H_

#include <slurm/spank.h>

int extc_slurmstepd_init(spank_t sp, int ac, char **av);
int extc_slurmstepd_init_post_opt(spank_t sp, int ac, char **av);
int extc_slurmstepd_user_init(spank_t sp, int ac, char **av);
int extc_slurmstepd_task_init_privileged(spank_t sp, int ac, char **av);
int extc_slurmstepd_task_init(spank_t sp, int ac, char **av);
int extc_slurmstepd_task_exit(spank_t sp, int ac, char **av);
int extc_slurmstepd_exit(spank_t sp, int ac, char **av);

#endif /* EXTC_SLURMSTEPD_H_ */
