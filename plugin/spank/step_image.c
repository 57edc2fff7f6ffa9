/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: in slurmstepd, what tells which container image a step runs. */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include <slurm/spank.h>

#include "container/container_id.h"
#include "spank/step_image.h"

/* slurmstepd's names for pyxis' options (src/common/spank.c: the option's environment form) */
#define PYXIS_IMAGE_OPTION "_SLURM_SPANK_OPTION_pyxis_container_image"
#define PYXIS_NAME_OPTION "_SLURM_SPANK_OPTION_pyxis_container_name"
/* pyxis' own environment forms of the same options */
#define PYXIS_IMAGE_ENV "PYXIS_CONTAINER_IMAGE"
#define PYXIS_NAME_ENV "PYXIS_CONTAINER_NAME"

static struct {
	bool image_set, name_set;
	char image[PATH_MAX], name[256];
	char spec[PATH_MAX];
} seen;

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

void extc_step_image_init(spank_t sp)
{
	memset(&seen, 0, sizeof(seen));
	seen.image_set = get(sp, PYXIS_IMAGE_OPTION, seen.image, sizeof(seen.image)) ||
			 get(sp, PYXIS_IMAGE_ENV, seen.image, sizeof(seen.image));
	seen.name_set = get(sp, PYXIS_NAME_OPTION, seen.name, sizeof(seen.name)) ||
			get(sp, PYXIS_NAME_ENV, seen.name, sizeof(seen.name));
}

void extc_step_image_resolve(spank_t sp, struct extc_pool_step_image *img)
{
	char cwd[PATH_MAX], bundle[PATH_MAX], **argv = NULL;
	const char *dir = get(sp, "PWD", cwd, sizeof(cwd)) ? cwd : NULL;
	int argc = 0;

	img->spec = seen.spec;
	img->kind = extc_ctr_from_pyxis(seen.image_set ? seen.image : NULL,
					seen.name_set ? seen.name : NULL, dir, seen.spec,
					sizeof(seen.spec));
	if (img->kind != EXTC_CTR_HOST)
		return;
	/* Slurm's own --container: an OCI bundle, a directory that can change under its path */
	if (get(sp, "SLURM_CONTAINER", bundle, sizeof(bundle))) {
		strcpy(seen.spec, "an OCI bundle (srun --container), which can change under its path");
		img->kind = EXTC_CTR_UNKNOWN;
		return;
	}
	/* the job's argv: slurmstepd's memory, nothing the user can still change or stall */
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS)
		return;
	img->kind = extc_ctr_from_argv(argc, argv, dir, seen.spec, sizeof(seen.spec));
}
