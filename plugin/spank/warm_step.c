/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: warm start in slurmstepd: seed the step's directory, publish its builds. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "proc/as_user.h"
#include "base/clock.h"
#include "fs/fs_remove.h"
#include "base/layout.h"
#include "spank/log.h"
#include "warm/manifest.h"
#include "spank/option.h"
#include "base/text.h"
#include "warm/warm_child.h"
#include "warm/warm_copy.h"
#include "warm/warm_data.h"
#include "base/seed_path.h"
#include "warm/warm_publish.h"
#include "warm/warm_report.h"
#include "warm/warm_seed.h"
#include "spank/step_info.h"
#include "spank/warm_step.h"
#include "warm/warm_sweep.h"
#include "spank/warm_tell.h"

#define NOTICES_MAX 4

/* Where the step's seed or publish directory was named. */
enum source {
	SOURCE_OPTION,		/* --ext-cache-seed / --ext-cache-publish */
	SOURCE_ENV,		/* SLURM_EXT_CACHE_SEED / SLURM_EXT_CACHE_PUBLISH */
	SOURCE_ADMIN,		/* the admin's seed= pattern */
};

static struct {
	char seed[EXTC_WARM_PATH_MAX + 1];
	enum source seed_from;
	char publish[EXTC_WARM_PATH_MAX + 1];
	enum source publish_from;
	char key[EXTC_WARM_KEY_MAX + 1];
	char notices[NOTICES_MAX][700];	/* told to the user by task 0 of each node */
	size_t nnotices;
} warm;

static void notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notice(const char *fmt, ...)
{
	va_list ap;

	if (warm.nnotices == NOTICES_MAX)
		return;
	va_start(ap, fmt);
	extc_vfmt(warm.notices[warm.nnotices], sizeof(warm.notices[0]), fmt, ap);
	va_end(ap);
	extc_verbose("%s", warm.notices[warm.nnotices]);
	warm.nnotices++;
}

void extc_warm_step_reset(void)
{
	memset(&warm, 0, sizeof(warm));
}

/* The source as the user wrote it, for messages. */
static const char *source_text(enum source from, bool seed)
{
	switch (from) {
	case SOURCE_OPTION:
		return (seed ? "--ext-cache-seed" : "--ext-cache-publish");
	case SOURCE_ENV:
		return (seed ? EXTC_ENV_SEED : EXTC_ENV_PUBLISH);
	case SOURCE_ADMIN:
		break;
	}
	return ("seed=");
}

static const char *seed_from(void)
{
	return (source_text(warm.seed_from, true));
}

static const char *publish_from(void)
{
	return (source_text(warm.publish_from, false));
}

static const char *shown(const char *value, char *buf, size_t len)
{
	extc_escape(value, 80, buf, len);
	return (buf);
}

/* Option, then environment; 'from' says which. Returns NULL when neither is given. */
static const char *user_value(spank_t sp, const char *option, const char *env, char *buf, int len,
			      enum source *from)
{
	bool in_env = spank_getenv(sp, env, buf, len) == ESPANK_SUCCESS;

	/* sbatch hands SLURM_EXT_CACHE_* on as the option: name it as the user gave it */
	if (option != NULL && !(in_env && strcmp(option, buf) == 0)) {
		*from = SOURCE_OPTION;
		return (option);
	}
	if (in_env) {
		*from = SOURCE_ENV;
		return (buf);
	}
	return (NULL);
}

static void admin_seed(const struct extc_config *cfg, uid_t uid)
{
	char pwbuf[4096], why[EXTC_WHY_MAX];
	struct passwd pw, *res = NULL;

	if (cfg->seed[0] == '\0' || cfg->seed_max == 0)
		return;
	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) != 0)
		res = NULL;
	if (extc_warm_expand_pattern(cfg->seed, uid, res ? res->pw_name : NULL, warm.seed,
				     sizeof(warm.seed), why, sizeof(why)) < 0) {
		extc_verbose("seed=%s: %s; not seeding", cfg->seed, why);
		warm.seed[0] = '\0';
		return;
	}
	warm.seed_from = SOURCE_ADMIN;
}

void extc_warm_step_resolve(spank_t sp, const struct extc_config *cfg, const struct extc_ids *ids,
			    bool has_dir)
{
	char envbuf[EXTC_WARM_PATH_MAX + 2], why[EXTC_WHY_MAX], buf[96];
	const char *v;
	spank_err_t rc;

	extc_warm_step_reset();
	extc_warm_tell_resolve(sp);
	v = user_value(sp, extc_option_seed(), EXTC_ENV_SEED, envbuf, sizeof(envbuf),
		       &warm.seed_from);
	if (v != NULL && extc_warm_check_dir(v, seed_from(), why, sizeof(why)) < 0) {
		notice("%s; not seeded", why);
		extc_warm_report_cold(extc_warm_tell_report(), "%s; not seeded", why);
	} else if (v != NULL && !has_dir) {
		notice("%s=%s: ignored: this step has no private cache directory (ask for one with "
		       "--ext-cache=local or --ext-cache=job)", seed_from(), shown(v, buf, sizeof(buf)));
	} else if (v != NULL && cfg->seed_max == 0) {
		notice("%s=%s: ignored: seeding is disabled on this cluster (seed_max=0)",
		       seed_from(), shown(v, buf, sizeof(buf)));
		extc_warm_report_cold(extc_warm_tell_report(),
				      "seeding is disabled on this cluster (seed_max=0)");
	} else if (v != NULL)
		strcpy(warm.seed, v);
	else if (has_dir)
		admin_seed(cfg, ids->uid);

	v = user_value(sp, extc_option_publish(), EXTC_ENV_PUBLISH, envbuf, sizeof(envbuf),
		       &warm.publish_from);
	if (v != NULL && extc_warm_check_dir(v, publish_from(), why, sizeof(why)) < 0)
		notice("%s; nothing will be published", why);
	else if (v != NULL && !has_dir)
		notice("%s=%s: ignored: this step has no private cache directory (ask for one with "
		       "--ext-cache=local or --ext-cache=job)", publish_from(),
		       shown(v, buf, sizeof(buf)));
	else if (v != NULL)
		strcpy(warm.publish, v);
	if (warm.seed[0] == '\0' && warm.publish[0] == '\0')
		return;

	/* without a valid key nothing could be checked for staleness: no reuse at all */
	rc = spank_getenv(sp, EXTC_ENV_KEY, warm.key, sizeof(warm.key));
	if (rc == ESPANK_NOSPACE) {
		extc_fmt(why, sizeof(why), "%s is longer than %d bytes", EXTC_ENV_KEY, EXTC_WARM_KEY_MAX);
	} else if (rc != ESPANK_SUCCESS) {
		warm.key[0] = '\0';
		why[0] = '\0';
	} else if (extc_warm_check_key(warm.key, why, sizeof(why)) == 0) {
		why[0] = '\0';
	}
	if (why[0] != '\0') {
		notice("%s; neither seeding nor publishing", why);
		if (warm.seed[0] != '\0')
			extc_warm_report_cold(extc_warm_tell_report(), "%s; not seeded", why);
		warm.seed[0] = warm.publish[0] = '\0';
		return;
	}
	extc_step_node(sp);
}

static void fill_arg(struct extc_warm_child_arg *a, const struct extc_config *cfg, const struct extc_ids *ids,
		     const char *leaf, uint32_t timeout_s)
{
	extc_step_child_arg(a, cfg, ids, leaf, timeout_s, warm.key);
	a->seed = warm.seed[0] ? warm.seed : NULL;
	a->publish = warm.publish[0] ? warm.publish : NULL;
}

/*
 * In the task, as the user, before the user's program: a stuck seed holds
 * the user's own tasks only (step_seed.c makes one task of the node seed
 * and the others wait for it).
 */
void extc_warm_step_seed(const struct extc_config *cfg, const struct extc_ids *ids,
			 const char *leaf_path)
{
	static struct extc_warm_child_arg a;
	static struct extc_warm_seed_res r;
	char buf[96];

	if (warm.seed[0] == '\0' && warm.publish[0] == '\0')
		return;
	/* the task runs as the user here; anything else would copy as root */
	if (geteuid() == 0) {
		extc_error("the task runs as root here: not seeding or checking a cache as root");
		return;
	}
	fill_arg(&a, cfg, ids, leaf_path, cfg->seed_timeout);
	extc_warm_seed_child(&a, &r, sizeof(r));
	if (warm.seed[0] != '\0') {
		char size[64], where[sizeof(buf) + 32];

		extc_warm_size_text(r.st.bytes, size, sizeof(size));
		shown(warm.seed, buf, sizeof(buf));
		/* for the --ext-cache-verbose line; the admin's source text already ends in '=' */
		extc_fmt(where, sizeof(where), "%s%s%s", seed_from(),
			 warm.seed_from == SOURCE_ADMIN ? "" : "=", buf);
		extc_warm_report_seeded(extc_warm_tell_report(), where, &r, false);
		if (r.seed == EXTC_SEED_DONE)
			extc_verbose("seeded %s from %s (%s): %llu files, %llu links, %s in %.3f s; "
				     "left out %llu locks, %llu incomplete builds%s", leaf_path, buf,
				     seed_from(), (unsigned long long)r.st.files,
				     (unsigned long long)r.st.links, size, (double)r.ns / 1e9,
				     (unsigned long long)r.st.skipped_locks,
				     (unsigned long long)r.st.skipped_incomplete,
				     r.unchecked ? "; it has no manifest: its key was not checked" : "");
		else if (r.seed == EXTC_SEED_NOT_FRESH)
			extc_verbose("%s already holds files (an earlier step of this job): not seeded "
				     "again", leaf_path);
		else if (r.seed == EXTC_SEED_ABSENT && warm.seed_from == SOURCE_ADMIN)
			extc_verbose("seed=: %s does not exist: starting empty", buf);
		else
			notice("%s=%s: not seeded, the step goes on with an empty cache: %s",
			       seed_from(), buf, r.seed_why);
	}
	if (warm.publish[0] != '\0' && r.publish_rc < 0)
		notice("%s=%s: nothing will be published: %s", publish_from(),
		       shown(warm.publish, buf, sizeof(buf)), r.publish_why);
}

static const char *abandoned_text(uint64_t n, char *buf, size_t len)
{
	buf[0] = '\0';
	if (n > 0)
		extc_fmt(buf, len, "; removed %llu stages left by killed publishers",
			 (unsigned long long)n);
	return (buf);
}

void extc_warm_step_publish(spank_t sp, const struct extc_config *cfg, const struct extc_ids *ids,
			    const char *leaf_path)
{
	static struct extc_warm_child_arg a;
	static struct extc_warm_publish_res r;
	struct extc_creds cr;
	char why[EXTC_WHY_MAX], buf[96];
	struct timespec now;
	enum extc_as_user_result ret;

	if (warm.publish[0] == '\0')
		return;
	if (!extc_step_creds(sp, ids, &cr))
		extc_verbose("the job's supplementary groups are unknown: publishing with its group only");
	fill_arg(&a, cfg, ids, leaf_path, cfg->publish_timeout);
	clock_gettime(CLOCK_REALTIME, &now);
	extc_warm_stale_limit(cfg->publish_timeout, &now, &a.opts.stale_before);
	shown(warm.publish, buf, sizeof(buf));
	ret = extc_as_user(&cr, (uint64_t)cfg->publish_timeout * 1000, extc_warm_publish_child, &a, &r,
			   sizeof(r), why, sizeof(why));
	if (ret == EXTC_AS_USER_FAILED) {
		extc_error("publishing to %s: %s", buf, why);
		return;
	}
	if (ret == EXTC_AS_USER_DONE) {
		char size[64], more[96];

		extc_warm_size_text(r.rep.copy.bytes, size, sizeof(size));
		extc_verbose("published to %s: %llu new entries (%s), %llu already there, %llu "
			     "published first by another node, %llu incomplete builds left out, in %.3f s%s",
			     buf, (unsigned long long)r.rep.published, size,
			     (unsigned long long)r.rep.present, (unsigned long long)r.rep.lost,
			     (unsigned long long)r.rep.incomplete, (double)r.ns / 1e9,
			     abandoned_text(r.rep.abandoned, more, sizeof(more)));
	} else
		extc_error("publishing to %s: %llu entries published, %llu failed: %s", buf,
			   (unsigned long long)r.rep.published, (unsigned long long)r.rep.failed, r.why);
}

bool extc_warm_step_seeds(void)
{
	return (warm.seed[0] != '\0');
}

bool extc_warm_step_publishes(void)
{
	return (warm.publish[0] != '\0');
}

size_t extc_warm_step_notices(void)
{
	return (warm.nnotices);
}

void extc_warm_step_notify(size_t first)
{
	size_t i;

	for (i = first; i < warm.nnotices; i++)
		extc_error("%s", warm.notices[i]);
}
