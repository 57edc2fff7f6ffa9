/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run by slurmd itself and by its job epilog (slurmd and job-script contexts). */
#ifndef EXTC_CTX_NODE_H_
#define EXTC_CTX_NODE_H_

#include <slurm/spank.h>

int extc_node_slurmd_init(spank_t sp, int ac, char **av);
int extc_node_job_epilog(spank_t sp, int ac, char **av);

#endif /* EXTC_CTX_NODE_H_ */
