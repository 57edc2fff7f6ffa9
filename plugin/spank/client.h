/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run in srun, sbatch and salloc (local and allocator contexts). */
#ifndef EXTC_CLIENT_H_
#define EXTC_CLIENT_H_

#include <slurm/spank.h>

int extc_client_init(spank_t sp, int ac, char **av);
int extc_client_init_post_opt(spank_t sp, int ac, char **av);

#endif /* EXTC_CLIENT_H_ */
