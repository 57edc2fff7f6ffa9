/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: user_init's cache variables in the step's tasks, and taking them back. */
#include <limits.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "base/envvars.h"
#include "base/text.h"
#include "spank/log.h"
#include "spank/step.h"
#include "spank/step_exports.h"

void extc_step_export(spank_t sp, const char *name, const char *value)
{
	spank_err_t rc = spank_setenv(sp, name, value, 1);

	if (rc != ESPANK_SUCCESS)
		extc_error("cannot set %s: %s", name, spank_strerror(rc));
}

void extc_step_unexport_vars(spank_t sp, const struct extc_step *s)
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
	action = extc_flashinfer_cubin_dir(cfg, user_asked, prefix, &env, value, sizeof(value));
	if (action == EXTC_CUBIN_USER) {
		extc_verbose("%s: kept the value the user set", EXTC_FLASHINFER_CUBIN);
	} else if (action == EXTC_CUBIN_NO_HOME) {
		extc_info("%s: not set, as neither HOME nor the user's password entry names a home",
			  EXTC_FLASHINFER_CUBIN);
	} else if (action == EXTC_CUBIN_TOO_LONG) {
		extc_info("%s: not set, the path is longer than %d bytes", EXTC_FLASHINFER_CUBIN,
			  PATH_MAX - 1);
	} else if (action == EXTC_CUBIN_PIN) {
		extc_step_export(sp, EXTC_FLASHINFER_CUBIN, value);
		ex->cubin = true;
		extc_escape(value, 120, shown, sizeof(shown));
		extc_verbose("%s=%s: FlashInfer's downloaded cubins stay outside the step directory",
			     EXTC_FLASHINFER_CUBIN, shown);
	}
}

void extc_step_export_vars(spank_t sp, struct extc_step *s, const char *prefix)
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
		enum extc_var_action action = extc_var_decide(cur, choice->user_asked, prefix);

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
		extc_step_export(sp, var->name, value);
		s->exports.vars[i] = true;
	}
	pin_flashinfer_cubins(sp, cfg, choice->user_asked, s->ids.uid, prefix, fi_base_was,
			      &s->exports);
	extc_step_export(sp, EXTC_ENV_DIR, s->leaf_path);
	extc_step_export(sp, EXTC_ENV_MODE, extc_mode_name(choice->mode));
}
