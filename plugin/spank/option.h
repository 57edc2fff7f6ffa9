/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the --ext-cache* options as srun, sbatch, salloc and slurmstepd see them. */
#ifndef EXTC_OPTION_H_
#define EXTC_OPTION_H_

#include <stdbool.h>
#include <stddef.h>

#include <slurm/spank.h>

#include "base/mode.h"

/* Forget any earlier value and register the options; called from init, before options are parsed. */
int extc_option_register(spank_t sp);

/* The value given with --ext-cache in this process, or NULL if none was. */
const char *extc_option_value(void);

/* The values given with --ext-cache-seed and --ext-cache-publish, or NULL (not checked in stepd). */
const char *extc_option_seed(void);
const char *extc_option_publish(void);

/* Was --ext-cache-verbose given (a flag: its value is empty)? */
bool extc_option_verbose(void);

/*
 * sbatch, salloc: hand SLURM_EXT_CACHE* to Slurm as its own environment
 * form of the options (SLURM_SPANK__SLURM_SPANK_OPTION_...), unless the
 * job already gave that form (a command inside a job), so that Slurm passes
 * them between #SBATCH lines and the command line, as it does for its own
 * options, and forwards the winner. Call after extc_option_register.
 */
void extc_option_map_env_form(void);

/* srun, sbatch, salloc, after the options: -1 ('why' says it) if a bad SLURM_EXT_CACHE* value won. */
int extc_option_check(char *why, size_t whylen);

#endif /* EXTC_OPTION_H_ */
