/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: warm start in slurmstepd: the seed and publish
 * directories a step asks for (init_post_opt), the seed (task_init), and
 * what the user must hear of them.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "base/seed_path.h"
#include "base/text.h"
#include "proc/as_user.h"
#include "spank/log.h"
#include "spank/option.h"
#include "spank/step.h"
#include "spank/step_tell.h"
#include "spank/step_warm.h"
#include "warm/warm_child.h"
#include "warm/warm_data.h"
#include "warm/warm_report.h"
#include "warm/warm_seed.h"

static void notice(struct extc_step *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void notice(struct extc_step *s, const char *fmt, ...)
{
	struct extc_step_warm *w = &s->warm;
	va_list ap;

	if (w->nnotices == EXTC_STEP_NOTICES_MAX)
		return;
	va_start(ap, fmt);
	extc_vfmt(w->notices[w->nnotices], sizeof(w->notices[0]), fmt, ap);
	va_end(ap);
	extc_verbose("%s", w->notices[w->nnotices]);
	w->nnotices++;
}

/* The source as the user wrote it, for messages. */
static const char *source_text(enum extc_step_source from, bool seed)
{
	switch (from) {
	case EXTC_STEP_SOURCE_OPTION:
		return (seed ? "--ext-cache-seed" : "--ext-cache-publish");
	case EXTC_STEP_SOURCE_ENV:
		return (seed ? EXTC_ENV_SEED : EXTC_ENV_PUBLISH);
	case EXTC_STEP_SOURCE_ADMIN:
		break;
	}
	return ("seed=");
}

static const char *seed_from(const struct extc_step *s)
{
	return (source_text(s->warm.seed_from, true));
}

static const char *publish_from(const struct extc_step *s)
{
	return (source_text(s->warm.publish_from, false));
}

static const char *shown(const char *value, char *buf, size_t len)
{
	extc_escape(value, 80, buf, len);
	return (buf);
}

/* Option, then environment; 'from' says which. Returns NULL when neither is given. */
static const char *user_value(spank_t sp, const char *option, const char *env, char *buf, int len,
			      enum extc_step_source *from)
{
	bool in_env = spank_getenv(sp, env, buf, len) == ESPANK_SUCCESS;

	/* sbatch hands SLURM_EXT_CACHE_* on as the option: name it as the user gave it */
	if (option != NULL && !(in_env && strcmp(option, buf) == 0)) {
		*from = EXTC_STEP_SOURCE_OPTION;
		return (option);
	}
	if (in_env) {
		*from = EXTC_STEP_SOURCE_ENV;
		return (buf);
	}
	return (NULL);
}

static void admin_seed(struct extc_step *s)
{
	const struct extc_config *cfg = &s->cfg;
	struct extc_step_warm *w = &s->warm;
	char why[EXTC_WHY_MAX];

	if (cfg->seed[0] == '\0' || cfg->seed_max == 0)
		return;
	if (extc_step_expand_pattern(s, cfg->seed, w->seed, sizeof(w->seed), why, sizeof(why)) < 0) {
		extc_verbose("seed=%s: %s; not seeding", cfg->seed, why);
		w->seed[0] = '\0';
		return;
	}
	w->seed_from = EXTC_STEP_SOURCE_ADMIN;
}

void extc_step_warm_resolve(spank_t sp, struct extc_step *s, bool has_dir)
{
	struct extc_step_warm *w = &s->warm;
	char envbuf[EXTC_WARM_PATH_MAX + 2], why[EXTC_WHY_MAX], buf[96];
	const char *v;
	spank_err_t rc;

	v = user_value(sp, extc_option_seed(), EXTC_ENV_SEED, envbuf, sizeof(envbuf),
		       &w->seed_from);
	if (v != NULL && extc_seed_path_check_dir(v, seed_from(s), why, sizeof(why)) < 0) {
		notice(s, "%s; not seeded", why);
		extc_warm_report_cold(extc_step_tell_report(s), "%s; not seeded", why);
	} else if (v != NULL && !has_dir) {
		notice(s, "%s=%s: ignored: this step has no private cache directory (ask for one with "
		       "--ext-cache=local or --ext-cache=job)", seed_from(s), shown(v, buf, sizeof(buf)));
	} else if (v != NULL && s->cfg.seed_max == 0) {
		notice(s, "%s=%s: ignored: seeding is disabled on this cluster (seed_max=0)",
		       seed_from(s), shown(v, buf, sizeof(buf)));
		extc_warm_report_cold(extc_step_tell_report(s),
				      "seeding is disabled on this cluster (seed_max=0)");
	} else if (v != NULL)
		strcpy(w->seed, v);
	else if (has_dir)
		admin_seed(s);

	v = user_value(sp, extc_option_publish(), EXTC_ENV_PUBLISH, envbuf, sizeof(envbuf),
		       &w->publish_from);
	if (v != NULL && extc_seed_path_check_dir(v, publish_from(s), why, sizeof(why)) < 0)
		notice(s, "%s; nothing will be published", why);
	else if (v != NULL && !has_dir)
		notice(s, "%s=%s: ignored: this step has no private cache directory (ask for one with "
		       "--ext-cache=local or --ext-cache=job)", publish_from(s),
		       shown(v, buf, sizeof(buf)));
	else if (v != NULL)
		strcpy(w->publish, v);
	if (w->seed[0] == '\0' && w->publish[0] == '\0')
		return;

	/* without a valid key nothing could be checked for staleness: no reuse at all */
	rc = spank_getenv(sp, EXTC_ENV_KEY, w->key, sizeof(w->key));
	if (rc == ESPANK_NOSPACE) {
		extc_fmt(why, sizeof(why), "%s is longer than %d bytes", EXTC_ENV_KEY, EXTC_WARM_KEY_MAX);
	} else if (rc != ESPANK_SUCCESS) {
		w->key[0] = '\0';
		why[0] = '\0';
	} else if (extc_seed_path_check_key(w->key, why, sizeof(why)) == 0) {
		why[0] = '\0';
	}
	if (why[0] != '\0') {
		notice(s, "%s; neither seeding nor publishing", why);
		if (w->seed[0] != '\0')
			extc_warm_report_cold(extc_step_tell_report(s), "%s; not seeded", why);
		w->seed[0] = w->publish[0] = '\0';
		return;
	}
	extc_step_node(sp, s);
}

void extc_step_warm_child_arg(struct extc_warm_child_arg *a, const struct extc_step *s,
			      const char *leaf, uint32_t timeout_s)
{
	extc_step_child_arg(a, s, leaf, timeout_s, s->warm.key);
	a->seed = s->warm.seed[0] ? s->warm.seed : NULL;
	a->publish = s->warm.publish[0] ? s->warm.publish : NULL;
}

/*
 * In the task, as the user, before the user's program: a stuck seed holds
 * the user's own tasks only (step_task.c makes one task of the node seed
 * and the others wait for it). The copy runs in a child of the task that
 * holds none of slurmstepd's descriptors (extc_warm_child_run_seed).
 */
void extc_step_warm_seed(spank_t sp, struct extc_step *s)
{
	static struct extc_warm_child_arg a;
	static struct extc_warm_seed_res r;
	const struct extc_step_warm *w = &s->warm;
	const char *leaf_path = s->warm_path;
	struct extc_creds cr;
	char buf[96];

	if (w->seed[0] == '\0' && w->publish[0] == '\0')
		return;
	/* the task runs as the user here; anything else would copy as root */
	if (geteuid() == 0) {
		extc_error("the task runs as root here: not seeding or checking a cache as root");
		return;
	}
	extc_step_warm_child_arg(&a, s, leaf_path, s->cfg.seed_timeout);
	extc_step_creds(sp, s, &cr);
	extc_warm_child_run_seed(&cr, s->cfg.seed_timeout, extc_warm_child_seed, &a, &r);
	if (w->seed[0] != '\0') {
		char size[64], where[sizeof(buf) + 32];

		extc_warm_data_size_text(r.st.bytes, size, sizeof(size));
		shown(w->seed, buf, sizeof(buf));
		/* for the --ext-cache-verbose line; the admin's source text already ends in '=' */
		extc_fmt(where, sizeof(where), "%s%s%s", seed_from(s),
			 w->seed_from == EXTC_STEP_SOURCE_ADMIN ? "" : "=", buf);
		extc_warm_report_seeded(extc_step_tell_report(s), where, &r);
		if (r.seed == EXTC_SEED_DONE)
			extc_verbose("seeded %s from %s (%s): %llu files, %llu links, %s in %.3f s; "
				     "left out %llu locks, %llu incomplete builds%s", leaf_path, buf,
				     seed_from(s), (unsigned long long)r.st.files,
				     (unsigned long long)r.st.links, size, (double)r.ns / 1e9,
				     (unsigned long long)r.st.skipped_locks,
				     (unsigned long long)r.st.skipped_incomplete,
				     r.unchecked ? "; it has no manifest: its key was not checked" : "");
		else if (r.seed == EXTC_SEED_NOT_FRESH)
			extc_verbose("%s already holds files (an earlier step of this job): not seeded "
				     "again", leaf_path);
		else if (r.seed == EXTC_SEED_ABSENT && w->seed_from == EXTC_STEP_SOURCE_ADMIN)
			extc_verbose("seed=: %s does not exist: starting empty", buf);
		else
			notice(s, "%s=%s: not seeded, the step goes on with an empty cache: %s",
			       seed_from(s), buf, r.seed_why);
	}
	if (w->publish[0] != '\0' && r.publish_rc < 0)
		notice(s, "%s=%s: nothing will be published: %s", publish_from(s),
		       shown(w->publish, buf, sizeof(buf)), r.publish_why);
}

bool extc_step_warm_seeds(const struct extc_step *s)
{
	return (s->warm.seed[0] != '\0');
}

bool extc_step_warm_publishes(const struct extc_step *s)
{
	return (s->warm.publish[0] != '\0');
}

size_t extc_step_warm_notices(const struct extc_step *s)
{
	return (s->warm.nnotices);
}

void extc_step_warm_notify(const struct extc_step *s, size_t first)
{
	size_t i;

	for (i = first; i < s->warm.nnotices; i++)
		extc_error("%s", s->warm.notices[i]);
}
