/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the step's directory for container runtimes: the job's
 * bind lists and APPTAINERENV_/SINGULARITYENV_ values (user_init), and
 * <leaf>/container/env with the directories no tool makes (task_init).
 */
#ifndef EXTC_STEP_CONTAINER_H_
#define EXTC_STEP_CONTAINER_H_

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * user_init: Apptainer and Singularity, whatever the user's flags
 * (--contain, --cleanenv, --no-mount tmp): the leaf appended to the job's
 * bind lists, the variables through APPTAINERENV_/SINGULARITYENV_,
 * pointing into the leaf's container/ sub-tree (container_env.h). 'prefix'
 * is "<base>/": a value under it is the plugin's own, and replaced.
 */
void extc_step_containers_export(spank_t sp, struct extc_step *s, const char *prefix);

/* The job's bind lists and APPTAINERENV_ values back as they were: the leaf is not there to bind. */
void extc_step_containers_unexport(spank_t sp, const struct extc_step *s);

/*
 * <leaf>/container/env, one NAME=value a line as the cache variables read
 * inside a container, for runtimes that take a file (Podman's --env-file,
 * ch-run --set-env=FILE), and the directories a tool will not make itself,
 * in container/ too. As the user, in the leaf's locked turn; 'leaffd' is
 * the leaf.
 */
void extc_step_container_envfile(spank_t sp, int leaffd, const struct extc_step *s);

#endif /* EXTC_STEP_CONTAINER_H_ */
