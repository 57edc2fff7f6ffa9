/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: user_init in slurmstepd: the tasks' environment (the
 * cache variables, FlashInfer's cubins, the bind lists and values for
 * Apptainer and Singularity), and taking it back in a task.
 */
#include <limits.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "container/container_env.h"
#include "base/envvars.h"
#include "base/layout.h"
#include "base/text.h"
#include "spank/log.h"
#include "spank/step.h"
#include "spank/step_env.h"

/* setenv in the job's environment; a failure is logged. */
static void job_setenv(spank_t sp, const char *name, const char *value)
{
	spank_err_t rc = spank_setenv(sp, name, value, 1);

	if (rc != ESPANK_SUCCESS)
		extc_error("cannot set %s: %s", name, spank_strerror(rc));
}

/* Take back the cache variables, in this task only. */
static void unexport_vars(spank_t sp, const struct extc_step *s)
{
	size_t i;

	for (i = 0; i < s->cfg.nvars; i++) {
		if (s->exports.vars[i])
			spank_unsetenv(sp, s->cfg.vars[i].name);
	}
	if (s->exports.cubin)
		spank_unsetenv(sp, EXTC_FLASHINFER_CUBIN);
	spank_unsetenv(sp, EXTC_ENV_DIR);
	spank_unsetenv(sp, EXTC_ENV_MODE);
}

/* The job user's home in the password database, for a job environment without HOME. */
static const char *passwd_home(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;

	if (getpwuid_r(uid, &pw, buf, len, &found) != 0 || found == NULL)
		return (NULL);
	return (found->pw_dir);
}

/* FlashInfer's downloaded cubins stay where the user had them when FLASHINFER_WORKSPACE_BASE
 * moves into the step (else every step downloads them again: an offline node fails). Reads
 * the job's environment as it was before this step's exports. */
static void pin_flashinfer_cubins(spank_t sp, const struct extc_config *cfg, bool user_asked,
				  uid_t uid, const char *prefix, const char *base,
				  struct extc_step_exports *ex)
{
	/* pwbuf holds what env.pw_home points to: it must outlive the call below */
	// cppcheck-suppress variableScope
	char cubin[PATH_MAX], home[PATH_MAX], pwbuf[4096], value[PATH_MAX], shown[160];
	struct extc_cubin_env env = {
		.cubin = extc_step_job_env(sp, EXTC_FLASHINFER_CUBIN, cubin, sizeof(cubin)),
		.base = base,
		.home = extc_step_job_env(sp, "HOME", home, sizeof(home)),
	};
	enum extc_cubin_action action;

	if (env.home == NULL)
		env.pw_home = passwd_home(uid, pwbuf, sizeof(pwbuf));
	action = extc_envvars_flashinfer_cubin_dir(cfg, user_asked, prefix, &env, value, sizeof(value));
	if (action == EXTC_CUBIN_USER) {
		extc_verbose("%s: kept the value the user set", EXTC_FLASHINFER_CUBIN);
	} else if (action == EXTC_CUBIN_NO_HOME) {
		extc_info("%s: not set, as neither HOME nor the user's password entry names a home",
			  EXTC_FLASHINFER_CUBIN);
	} else if (action == EXTC_CUBIN_TOO_LONG) {
		extc_info("%s: not set, the path is longer than %d bytes", EXTC_FLASHINFER_CUBIN,
			  PATH_MAX - 1);
	} else if (action == EXTC_CUBIN_PIN) {
		job_setenv(sp, EXTC_FLASHINFER_CUBIN, value);
		ex->cubin = true;
		extc_escape(value, 120, shown, sizeof(shown));
		extc_verbose("%s=%s: FlashInfer's downloaded cubins stay outside the step directory",
			     EXTC_FLASHINFER_CUBIN, shown);
	}
}

/*
 * Each cache variable pointed into the leaf (or the user's value kept, as
 * extc_envvars_decide says), FlashInfer's cubins pinned where they were,
 * SLURM_EXT_CACHE_DIR and SLURM_EXT_CACHE_MODE; s->exports records what
 * was set.
 */
static void export_vars(spank_t sp, struct extc_step *s, const char *prefix)
{
	const struct extc_config *cfg = &s->cfg;
	const struct extc_choice *choice = &s->choice;
	char value[PATH_MAX], current[PATH_MAX], fi_base[PATH_MAX];
	const char *fi_base_was;
	size_t i;

	/* before the loop below replaces it: the cubin store is computed from the user's */
	fi_base_was = extc_step_job_env(sp, EXTC_FLASHINFER_BASE, fi_base, sizeof(fi_base));
	for (i = 0; i < cfg->nvars; i++) {
		const struct extc_var *var = &cfg->vars[i];
		const char *cur = extc_step_job_env(sp, var->name, current, sizeof(current));
		enum extc_var_action action = extc_envvars_decide(cur, choice->user_asked, prefix);

		if (action == EXTC_VAR_KEEP_USER) {
			extc_verbose("%s: kept the value the user set (only the admin default applies)",
				     var->name);
			continue;
		}
		if (extc_fmt(value, sizeof(value), "%s/%s", s->leaf_path, var->subdir) < 0)
			continue;
		if (action == EXTC_VAR_REPLACE_USER)
			extc_verbose("%s: replaced the value the user set, as %s=%s was asked for",
				     var->name, choice->source, extc_mode_name(choice->mode));
		job_setenv(sp, var->name, value);
		s->exports.vars[i] = true;
	}
	pin_flashinfer_cubins(sp, cfg, choice->user_asked, s->ids.uid, prefix, fi_base_was,
			      &s->exports);
	job_setenv(sp, EXTC_ENV_DIR, s->leaf_path);
	job_setenv(sp, EXTC_ENV_MODE, extc_mode_name(choice->mode));
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

void extc_step_env_container_input(spank_t sp, const struct extc_step *s, const char *prefix,
				   struct extc_cenv_var *vars, struct extc_cenv_in *in)
{
	size_t i;

	*in = (struct extc_cenv_in){
		.leaf = s->leaf_path, .managed_prefix = prefix,
		.mode_name = extc_mode_name(s->choice.mode), .vars = vars,
		.lookup = job_env_lookup, .lookup_ctx = sp,
	};
	for (i = 0; i < s->cfg.nvars; i++) {
		if (s->exports.vars[i])
			vars[in->nvars++] = (struct extc_cenv_var){ s->cfg.vars[i].name,
								    s->cfg.vars[i].subdir };
	}
}

/*
 * Apptainer and Singularity, whatever the user's flags (--contain,
 * --cleanenv, --no-mount tmp): the leaf appended to the job's bind lists,
 * the variables through APPTAINERENV_/SINGULARITYENV_, pointing into the
 * leaf's container/ sub-tree (container_env.h).
 */
static void export_containers(spank_t sp, struct extc_step *s, const char *prefix)
{
	struct extc_cenv_list *exports = &s->exports.containers;
	struct extc_cenv_var vars[EXTC_VARS_MAX];
	struct extc_cenv_in in;
	enum extc_cenv_result rv;
	size_t i;

	extc_step_env_container_input(sp, s, prefix, vars, &in);
	rv = extc_container_env_build(&in, exports);
	if (rv == EXTC_CENV_NO_MEMORY) {
		extc_error("out of memory: nothing exported for Apptainer or Singularity containers");
		extc_container_env_list_free(exports);
		return;
	}
	if (rv == EXTC_CENV_LEAF_UNBINDABLE) {
		char shown[PATH_MAX];

		extc_escape(s->leaf_path, 200, shown, sizeof(shown));
		extc_info("%s holds ',', ':', '^' or '\\', which Apptainer's bind list cannot carry: "
			  "it is not bound into Apptainer or Singularity containers", shown);
	} else if (rv == EXTC_CENV_BIND_UNREADABLE) {
		extc_info("%s or %s is longer than this plugin reads: left as the job set it, "
			  "without the step's directory", EXTC_APPTAINER_BIND, EXTC_SINGULARITY_BIND);
	}
	for (i = 0; i < exports->npairs; i++)
		job_setenv(sp, exports->pairs[i].name, exports->pairs[i].value);
}

/* The job's bind lists and APPTAINERENV_ values back as they were: the leaf is not there to bind. */
static void unexport_containers(spank_t sp, const struct extc_step *s)
{
	size_t i;

	for (i = 0; i < s->exports.containers.npairs; i++) {
		const struct extc_cenv_pair *p = &s->exports.containers.pairs[i];

		if (p->was != NULL)
			spank_setenv(sp, p->name, p->was, 1);
		else
			spank_unsetenv(sp, p->name);
	}
}

int extc_step_env_export(spank_t sp, struct extc_step *s)
{
	char prefix[PATH_MAX];

	/*
	 * Everything below the base is this plugin's: only root can make
	 * anything there. A value under it was exported for an enclosing step
	 * (on this node or, with a shared base, another one) and is replaced.
	 */
	if (extc_fmt(prefix, sizeof(prefix), "%s/", s->cfg.base) < 0)
		return (-1);
	export_vars(sp, s, prefix);
	export_containers(sp, s, prefix);
	return (0);
}

void extc_step_env_unexport(spank_t sp, const struct extc_step *s)
{
	unexport_vars(sp, s);
	unexport_containers(sp, s);
}
