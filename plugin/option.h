/* spank-ext-cache: the --ext-cache option as srun, sbatch, salloc and slurmstepd see it. */
#ifndef EXTC_OPTION_H_
#define EXTC_OPTION_H_

#include <stdbool.h>

#include <slurm/spank.h>

#include "mode.h"

/* Forget any earlier value and register the option; called from init, before options are parsed. */
int extc_option_register(spank_t sp);

/* The value given with --ext-cache in this process, or NULL if none was. */
const char *extc_option_value(void);

#endif /* EXTC_OPTION_H_ */
