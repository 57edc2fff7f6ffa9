/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run by slurmd itself and by its job epilog (slurmd and job-script contexts). */
#ifndef EXTC_SLURMD_H_
#define EXTC_SLURMD_H_

#include <slurm/spank.h>

int extc_slurmd_init(spank_t sp, int ac, char **av);
int extc_slurmd_job_epilog(spank_t sp, int ac, char **av);

#endif /* EXTC_SLURMD_H_ */
