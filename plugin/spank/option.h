/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the --ext-cache* options as srun, sbatch, salloc and slurmstepd see them. */
#ifndef EXTC_OPTION_H_
#define EXTC_OPTION_H_

#include <stdbool.h>

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
 * Where this process's command-line strings lie, instead of reading
 * /proc/self/stat: for the unit tests, whose own command line is not the
 * one they play, and which may run under valgrind (its /proc/self/stat
 * describes valgrind's command line).
 */
void extc_option_set_arg_range(const char *start, const char *end);

#endif /* EXTC_OPTION_H_ */
