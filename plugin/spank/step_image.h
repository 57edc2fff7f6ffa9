/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: in slurmstepd, what tells which container image a step runs. */
#ifndef EXTC_STEP_IMAGE_H_
#define EXTC_STEP_IMAGE_H_

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * slurm_spank_init (remote): keep pyxis' --container-image and
 * --container-name. slurmstepd passes every plugin's options to its
 * plugins as _SLURM_SPANK_OPTION_<plugin>_<option> in the job's
 * environment while it loads them, and no longer by init_post_opt.
 */
void extc_step_image_init(spank_t sp, struct extc_step *s);

/*
 * init_post_opt: the image the step runs (pyxis' option, else the step's
 * own argv), in s->image.kind and s->image.spec.
 */
void extc_step_image_resolve(spank_t sp, struct extc_step *s);

#endif /* EXTC_STEP_IMAGE_H_ */
