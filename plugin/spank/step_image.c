/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: in slurmstepd, what tells which container image a step runs. */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include <slurm/spank.h>

#include "base/container_id.h"
#include "spank/step_image.h"

/* slurmstepd's names for pyxis' options (src/common/spank.c: the option's environment form) */
#define PYXIS_IMAGE_OPTION "_SLURM_SPANK_OPTION_pyxis_container_image"
#define PYXIS_NAME_OPTION "_SLURM_SPANK_OPTION_pyxis_container_name"
/* pyxis' own environment forms of the same options */
#define PYXIS_IMAGE_ENV "PYXIS_CONTAINER_IMAGE"
#define PYXIS_NAME_ENV "PYXIS_CONTAINER_NAME"

/* A value, or none: one too long to keep is kept as a marker that says so. */
static bool get(spank_t sp, const char *name, char *buf, int len)
{
	spank_err_t rc = spank_getenv(sp, name, buf, len);

	if (rc == ESPANK_NOSPACE) {
		strcpy(buf, "?");	/* neither a file nor a pinned reference: unknown */
		return (true);
	}
	return (rc == ESPANK_SUCCESS);
}

void extc_step_image_init(spank_t sp, struct extc_step *s)
{
	struct extc_step_image *img = &s->image;

	img->image_set = get(sp, PYXIS_IMAGE_OPTION, img->image, sizeof(img->image)) ||
			 get(sp, PYXIS_IMAGE_ENV, img->image, sizeof(img->image));
	img->name_set = get(sp, PYXIS_NAME_OPTION, img->name, sizeof(img->name)) ||
			get(sp, PYXIS_NAME_ENV, img->name, sizeof(img->name));
}

void extc_step_image_resolve(spank_t sp, struct extc_step *s)
{
	struct extc_step_image *img = &s->image;
	char cwd[PATH_MAX], bundle[PATH_MAX], **argv = NULL;
	const char *dir = get(sp, "PWD", cwd, sizeof(cwd)) ? cwd : NULL;
	int argc = 0;

	img->kind = extc_ctr_from_pyxis(img->image_set ? img->image : NULL,
					img->name_set ? img->name : NULL, dir, img->spec,
					sizeof(img->spec));
	if (img->kind != EXTC_CTR_HOST)
		return;
	/* Slurm's own --container: an OCI bundle, a directory that can change under its path */
	if (get(sp, "SLURM_CONTAINER", bundle, sizeof(bundle))) {
		strcpy(img->spec, "an OCI bundle (srun --container), which can change under its path");
		img->kind = EXTC_CTR_UNKNOWN;
		return;
	}
	/* the job's argv: slurmstepd's memory, nothing the user can still change or stall */
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS)
		return;
	img->kind = extc_ctr_from_argv(argc, argv, dir, img->spec, sizeof(img->spec));
}
