/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: a step's start in slurmstepd, as root, before any task
 * (init, init_post_opt): the mode, the step's directory made, the image it
 * runs, where the tasks will see it; warm start's and the pool's requests.
 */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include <slurm/spank.h>

#include "base/clock.h"
#include "base/config.h"
#include "container/container_id.h"
#include "base/layout.h"
#include "base/mode.h"
#include "base/noexec.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "fs/fs_tree.h"
#include "spank/log.h"
#include "spank/option.h"
#include "spank/step.h"
#include "spank/step_pool.h"
#include "spank/step_start.h"
#include "spank/step_tell.h"
#include "spank/step_warm.h"

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

void extc_step_start_pyxis(spank_t sp, struct extc_step *s)
{
	struct extc_step_image *img = &s->image;

	img->image_set = get(sp, PYXIS_IMAGE_OPTION, img->image, sizeof(img->image)) ||
			 get(sp, PYXIS_IMAGE_ENV, img->image, sizeof(img->image));
	img->name_set = get(sp, PYXIS_NAME_OPTION, img->name, sizeof(img->name)) ||
			get(sp, PYXIS_NAME_ENV, img->name, sizeof(img->name));
}

/*
 * The image the step runs (pyxis' option, else the step's own argv), in
 * s->image.kind and s->image.spec, which live as long as the step's
 * slurmstepd.
 */
static void resolve_image(spank_t sp, struct extc_step *s)
{
	struct extc_step_image *img = &s->image;
	char cwd[PATH_MAX], bundle[PATH_MAX], **argv = NULL;
	const char *dir = get(sp, "PWD", cwd, sizeof(cwd)) ? cwd : NULL;
	int argc = 0;

	img->kind = extc_container_id_from_pyxis(img->image_set ? img->image : NULL,
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
	img->kind = extc_container_id_from_argv(argc, argv, dir, img->spec, sizeof(img->spec));
}

/*
 * Once the leaf is made below the job level s->hold_fd: keep slurmstepd's
 * mount namespace, and the flags of the mount under the job level, which
 * are the leaf's (extc_tree_create refuses a leaf that is a mount), for the tasks
 * (step_task.c). Read through root's own descriptor, never a name.
 */
static void record_view(struct extc_step *s)
{
	s->view.mount_ns_known = extc_ident_mount_ns(&s->view.mount_ns) == 0;
	s->view.exec_probe = extc_noexec_probe_fd(s->hold_fd);
}

static int get_ids(spank_t sp, struct extc_ids *ids)
{
	if (spank_get_item(sp, S_JOB_UID, &ids->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &ids->gid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &ids->jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &ids->stepid) != ESPANK_SUCCESS)
		return (-1);
	return (0);
}

/* The leaf of a step that should have one, and what needs it (the image, the pool's key). */
static void create_step_dir(spank_t sp, struct extc_step *s)
{
	uint64_t t0;

	if (s->cfg.allow_shared_fs &&
	    extc_layout_node_name(s->node_name, sizeof(s->node_name)) < 0) {
		extc_step_fail_or_warn(s);
		extc_fmt(s->why, sizeof(s->why),
			 "this node's host name cannot name a directory on a shared base");
		extc_error("%s", s->why);
		return;
	}
	extc_fs_policy_root(&s->pol, &s->cfg, s->node_name);
	t0 = extc_clock_monotonic_ns();
	s->hold_fd = extc_tree_create(&s->tree, &s->ids, s->choice.mode, s->leaf_path,
				      sizeof(s->leaf_path), s->why, sizeof(s->why));
	if (s->hold_fd < 0) {
		extc_step_fail_or_warn(s);
		extc_error("no private cache for this step (%s): %s",
			   s->fail_step ? "failing it" : "going on without", s->why);
		return;
	}
	s->created = true;
	/* the job level is held open: no second walk down from the root */
	s->leaf_id_known = extc_tree_leaf_ident_at(s->hold_fd, s->cfg.base, s->choice.mode,
						   s->ids.stepid, &s->leaf_id, s->why,
						   sizeof(s->why)) == EXTC_LEVEL_FOUND;
	record_view(s);	/* for the tasks that will see this leaf */
	extc_verbose("created %s (mode %s from %s) in %.3f ms", s->leaf_path,
		     extc_mode_name(s->choice.mode), s->choice.source,
		     (double)(extc_clock_monotonic_ns() - t0) / 1e6);
	resolve_image(sp, s);
	/* inside a container the caches are below container/: warm start serves that part */
	s->in_image = s->image.kind == EXTC_CTR_FILE || s->image.kind == EXTC_CTR_DIGEST;
	if (extc_fmt(s->warm_path, sizeof(s->warm_path), "%s%s", s->leaf_path,
		     s->in_image ? "/" EXTC_CONTAINER_SUBTREE : "") < 0)
		s->in_image = false;	/* cannot be: the leaf is far shorter than PATH_MAX */
	extc_step_pool_open(sp, s);
}

void extc_step_start_prepare(spank_t sp, struct extc_step *s)
{
	char leaf[EXTC_NAME_LEN];
	char envbuf[EXTC_MODE_VALUE_MAX + 2];
	bool has_leaf;

	if (get_ids(sp, &s->ids) < 0) {
		extc_error("cannot read the job's ids from slurmstepd; leaving this step alone");
		return;
	}
	extc_log_scope_job(s->ids.jobid, s->ids.stepid);
	if (extc_mode_resolve(extc_option_value(),
			      extc_step_job_env(sp, EXTC_ENV_REQUEST_NAME, envbuf, sizeof(envbuf)),
			      s->cfg.default_mode, &s->choice, s->why, sizeof(s->why)) < 0) {
		s->fail_step = true;
		extc_error("%s", s->why);
		return;
	}
	has_leaf = s->choice.mode != EXTC_MODE_OFF &&
		   extc_layout_leaf_name(s->choice.mode, s->ids.stepid, leaf, sizeof(leaf)) == 0;
	extc_step_tell_resolve(sp, s);
	extc_step_warm_resolve(sp, s, has_leaf && s->ids.uid != 0);
	if (!has_leaf)
		return;
	if (s->ids.uid == 0) {
		extc_verbose("jobs of root get no private cache");
		return;
	}
	create_step_dir(sp, s);
}
