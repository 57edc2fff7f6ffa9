/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the step's directory for container runtimes: the job's
 * bind lists and APPTAINERENV_/SINGULARITYENV_ values (user_init), and
 * <leaf>/container/env with the directories no tool makes (task_init).
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "container/container_env.h"
#include "base/layout.h"
#include "base/text.h"
#include "spank/log.h"
#include "spank/step_container.h"
#include "spank/step_exports.h"
#include "container/container_envfile.h"

/* What user_init exported for container runtimes, with the job's values it replaced. */
static struct extc_cenv_list container_exports;

void extc_step_containers_reset(void)
{
	extc_cenv_list_free(&container_exports);
}

/*
 * The job's value of a variable for container_env.c, read before this step
 * changes it. A bind list can be long: one too long for the buffer is
 * reported as unreadable, never as unset, so it is never replaced.
 */
static enum extc_cenv_lookup job_env_lookup(void *ctx, const char *name, const char **value)
{
	static char buf[65536];	/* slurmstepd's, one lookup at a time */
	spank_err_t rc = spank_getenv((spank_t)ctx, name, buf, sizeof(buf));

	if (rc == ESPANK_NOSPACE)
		return (EXTC_CENV_UNREADABLE);
	if (rc != ESPANK_SUCCESS)
		return (EXTC_CENV_UNSET);
	*value = buf;
	return (EXTC_CENV_SET);
}

/* The step's values for containers; 'vars' holds the exported cache variables. */
static void container_input(spank_t sp, const struct extc_step_leaf *leaf, const char *prefix,
			    struct extc_cenv_var *vars, struct extc_cenv_in *in)
{
	size_t i;

	*in = (struct extc_cenv_in){
		.leaf = leaf->path, .managed_prefix = prefix,
		.mode_name = extc_mode_name(leaf->mode), .vars = vars,
		.lookup = job_env_lookup, .lookup_ctx = sp,
	};
	for (i = 0; i < leaf->cfg->nvars; i++) {
		if (leaf->exported[i])
			vars[in->nvars++] = (struct extc_cenv_var){ leaf->cfg->vars[i].name,
								    leaf->cfg->vars[i].subdir };
	}
}

void extc_step_containers_export(spank_t sp, const struct extc_step_leaf *leaf,
				 const char *prefix)
{
	struct extc_cenv_var vars[EXTC_VARS_MAX];
	struct extc_cenv_in in;
	enum extc_cenv_result rv;
	size_t i;

	container_input(sp, leaf, prefix, vars, &in);
	rv = extc_cenv_build(&in, &container_exports);
	if (rv == EXTC_CENV_NO_MEMORY) {
		extc_error("out of memory: nothing exported for Apptainer or Singularity containers");
		extc_cenv_list_free(&container_exports);
		return;
	}
	if (rv == EXTC_CENV_LEAF_UNBINDABLE) {
		char shown[PATH_MAX];

		extc_escape(leaf->path, 200, shown, sizeof(shown));
		extc_info("%s holds ',', ':', '^' or '\\', which Apptainer's bind list cannot carry: "
			  "it is not bound into Apptainer or Singularity containers", shown);
	} else if (rv == EXTC_CENV_BIND_UNREADABLE) {
		extc_info("%s or %s is longer than this plugin reads: left as the job set it, "
			  "without the step's directory", EXTC_APPTAINER_BIND, EXTC_SINGULARITY_BIND);
	}
	for (i = 0; i < container_exports.npairs; i++)
		extc_step_export(sp, container_exports.pairs[i].name, container_exports.pairs[i].value);
}

void extc_step_containers_unexport(spank_t sp)
{
	size_t i;

	for (i = 0; i < container_exports.npairs; i++) {
		const struct extc_cenv_pair *p = &container_exports.pairs[i];

		if (p->was != NULL)
			spank_setenv(sp, p->name, p->was, 1);
		else
			spank_unsetenv(sp, p->name);
	}
}

/* The directories a tool will not make itself (PyTorch's kernel cache), in container/ too. */
static void make_container_dirs(int leaffd, const struct extc_step_leaf *leaf)
{
	int dirfd = openat(leaffd, EXTC_CONTAINER_SUBTREE,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	size_t i;

	if (dirfd < 0)
		return;
	for (i = 0; i < leaf->cfg->nvars; i++) {
		if (leaf->cfg->vars[i].make_dir && leaf->exported[i])
			(void)mkdirat(dirfd, leaf->cfg->vars[i].subdir, 0700);
	}
	close(dirfd);
}

void extc_step_container_envfile(spank_t sp, int leaffd, const struct extc_step_leaf *leaf)
{
	struct extc_cenv_var vars[EXTC_VARS_MAX];
	struct extc_cenv_list lines = { 0 };
	struct extc_cenv_in in;
	char why[EXTC_WHY_MAX];

	container_input(sp, leaf, "", vars, &in);
	if (extc_cenv_inside(&in, &lines) != EXTC_CENV_OK)
		extc_error("out of memory: no %s/%s", EXTC_CONTAINER_SUBTREE, EXTC_CONTAINER_ENVFILE);
	else if (extc_envfile_write(leaffd, &lines, why, sizeof(why)) != EXTC_ENVFILE_WRITTEN)
		extc_info("no env file for containers in the step's directory: %s", why);
	extc_cenv_list_free(&lines);
	make_container_dirs(leaffd, leaf);
}
