/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the site tier in slurmstepd: read on a node pool miss,
 * in the user's task; published from one node in the step's detached end.
 */
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <slurm/spank.h>

#include "base/clock.h"
#include "base/text.h"
#include "proc/as_user.h"
#include "spank/log.h"
#include "spank/step.h"
#include "spank/step_tell.h"
#include "spank/step_tier.h"
#include "tier/tier_child.h"
#include "tier/tier_mark.h"
#include "warm/warm_data.h"
#include "warm/warm_report.h"

/*
 * A publish removes no generation younger than this past the one that
 * pushed it out of the kept ones: a reader on another node chose it while
 * it was kept, and gives up after tier_timeout= (twice that, and a minute
 * for clocks that differ between nodes).
 */
static uint64_t grace_ns(const struct extc_config *cfg)
{
	return (((uint64_t)cfg->tier_timeout * 2 + 60) * 1000000000ULL);
}

/* A child that failed after 90% of its bound ran out of it (its own deadline is there). */
static bool ran_out(uint64_t t0, uint32_t timeout_s)
{
	return (extc_clock_monotonic_ns() - t0 >= (uint64_t)timeout_s * 900000000ULL);
}

static int64_t now_s(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return ((int64_t)now.tv_sec);
}

/*
 * Root's record of the key says it may hold nothing but directories: no
 * bytes, or no more inodes than the key and its cache directories (a step
 * that built nothing puts its empty directories back). The user's child
 * looks for a file before it reads the tier.
 */
static bool looks_empty(const struct extc_step *s)
{
	const struct extc_pool_hold *h = &s->pool.hold;

	return (h->bytes == 0 || !h->counted || h->inodes <= 1 + 2 * (uint64_t)s->cfg.nvars);
}

void extc_step_tier_open(struct extc_step *s)
{
	const struct extc_config *cfg = &s->cfg;
	struct extc_step_tier *t = &s->tier;
	char why[EXTC_WHY_MAX];

	if (cfg->tier[0] == '\0' || !s->pool.held)
		return;
	if (extc_step_expand_pattern(s, cfg->tier, t->path, sizeof(t->path), why, sizeof(why)) < 0) {
		extc_verbose("tier=%s: %s; the site tier is not used", cfg->tier, why);
		t->path[0] = '\0';
		return;
	}
	if (!looks_empty(s) || cfg->seed_max == 0)
		return;
	if (extc_tier_mark_recent(&s->tree, s->ids.uid, now_s())) {
		extc_verbose("site tier: it did not answer on this node less than %d s ago: not read",
			     EXTC_TIER_UNREACHABLE_S);
		extc_warm_report_cold(extc_step_tell_report(s), "the site tier did not answer on this "
				      "node less than %d s ago: not read", EXTC_TIER_UNREACHABLE_S);
		t->told_cold = true;
		return;
	}
	t->fetch = true;
}

/* The child's argument: the tier, the key and its directory, bounded by 'timeout_s'. */
static void child_arg(struct extc_tier_child_arg *a, const struct extc_step *s, uint32_t timeout_s)
{
	memset(a, 0, sizeof(*a));
	extc_step_child_arg(&a->w, s, s->warm_path, timeout_s, s->pool.key);
	a->tier = s->tier.path;
	a->uid = s->ids.uid;
	a->key = s->pool.key;
	a->key_dir = s->pool.hold.dir;
	a->keep = s->cfg.tier_keep;
	a->max_bytes = s->cfg.pool_max;
	a->grace_ns = grace_ns(&s->cfg);
}

/* Why the tier gave nothing, for the --ext-cache-verbose line and the log. */
static void tell_cold(struct extc_step *s, const struct extc_tier_child_res *r, bool timed_out,
		      const char *why)
{
	struct extc_warm_report *rep = extc_step_tell_report(s);
	char key[16];

	s->tier.told_cold = true;
	extc_warm_report_key(s->pool.key, key, sizeof(key));
	if (timed_out) {
		extc_info("site tier: no answer within tier_timeout=%u s: the step starts cold, and "
			  "this node does not read the tier for %d s", s->cfg.tier_timeout,
			  EXTC_TIER_UNREACHABLE_S);
		extc_warm_report_cold(rep, "the site tier did not answer within %u s: not read on "
				      "this node for %d s", s->cfg.tier_timeout,
				      EXTC_TIER_UNREACHABLE_S);
	} else if (r->path != EXTC_TIER_PATH_OK) {
		extc_warm_report_cold(rep, "the site tier is not used: %s", r->why[0] ? r->why : why);
	} else if (r->fetch == EXTC_TIER_EMPTY) {
		extc_warm_report_cold(rep, "the node pool's key for this environment (%s) holds "
				      "nothing yet, nor does the site tier", key);
	} else {
		extc_info("site tier: nothing read for key %s: %s", s->pool.key,
			  r->why[0] ? r->why : why);
		extc_warm_report_cold(rep, "the site tier gave nothing for key %s: %s", key,
				      r->why[0] ? r->why : why);
	}
}

/*
 * A coarse-clock time after every change the copy made: filesystems stamp
 * with the coarse clock, or (multigrain timestamps, Linux 6.13 and later)
 * with a finer time up to a tick past it, so wait for the coarse clock to
 * pass the real time (a few milliseconds, in the user's own task).
 */
static void after_now(struct timespec *at)
{
	const struct timespec tick = { 0, 1000000 };
	struct timespec real;
	unsigned i;

	clock_gettime(CLOCK_REALTIME, &real);
	for (i = 0; i < 100; i++) {
		clock_gettime(CLOCK_REALTIME_COARSE, at);
		if (at->tv_sec > real.tv_sec || (at->tv_sec == real.tv_sec && at->tv_nsec > real.tv_nsec))
			return;
		nanosleep(&tick, NULL);
	}
}

void extc_step_tier_taken_after(const struct extc_step *s, struct timespec *at)
{
	*at = s->pool.hold.since.at;
	if (s->shared != NULL && __atomic_load_n(&s->shared->tier_fetched, __ATOMIC_ACQUIRE) != 0)
		*at = s->shared->tier_fetched_at;
}

enum extc_step_tier_fetch_result extc_step_tier_fetch(spank_t sp, struct extc_step *s)
{
	static struct extc_tier_child_arg a;
	static struct extc_tier_child_res r;
	const uint32_t timeout_s = s->cfg.tier_timeout;
	char why[EXTC_WHY_MAX] = "", size[64];
	struct extc_creds cr;
	uint64_t t0 = extc_clock_monotonic_ns();
	enum extc_as_user_result ret;
	bool timed_out;

	if (!s->tier.fetch || s->tier.path[0] == '\0')
		return (EXTC_STEP_TIER_COLD);
	child_arg(&a, s, timeout_s);
	memset(&r, 0, sizeof(r));
	extc_step_creds(sp, s, &cr);
	ret = extc_as_user(&cr, (uint64_t)timeout_s * 1000, extc_tier_child_fetch, &a, &r, sizeof(r),
			   why, sizeof(why));
	/* the child was killed at the bound, or gave up at its own deadline just before it */
	timed_out = (ret == EXTC_AS_USER_FAILED && ran_out(t0, timeout_s)) ||
		    (ret != EXTC_AS_USER_FAILED && r.fetch == EXTC_TIER_FETCH_TIMEOUT);
	if (timed_out && s->shared != NULL)
		__atomic_store_n(&s->shared->tier_timed_out, 1, __ATOMIC_RELEASE);
	if (ret != EXTC_AS_USER_FAILED && r.key_holds_builds)
		return (EXTC_STEP_TIER_KEY_HELD);
	if (ret == EXTC_AS_USER_FAILED || r.fetch != EXTC_TIER_FETCHED) {
		if (ret == EXTC_AS_USER_FAILED)
			r.path = EXTC_TIER_PATH_OK;
		tell_cold(s, &r, timed_out, why);
		return (EXTC_STEP_TIER_COLD);
	}
	if (s->shared != NULL) {
		after_now(&s->shared->tier_fetched_at);
		__atomic_store_n(&s->shared->tier_fetched, 1, __ATOMIC_RELEASE);
	}
	extc_warm_data_size_text(r.fetched.bytes, size, sizeof(size));
	extc_verbose("site tier: copied generation %s of key %s into the node pool: %llu files, %s, "
		     "in %.3f s", r.fetched.gen, s->pool.key, (unsigned long long)r.fetched.files,
		     size, (double)r.fetched.ns / 1e9);
	s->tier.fetched_files = r.fetched.files;
	s->tier.fetched_bytes = r.fetched.bytes;
	s->tier.fetched_ns = r.fetched.ns;
	extc_fmt(s->tier.generation, sizeof(s->tier.generation), "%s", r.fetched.gen);
	return (EXTC_STEP_TIER_FETCHED);
}

void extc_step_tier_task_exit(spank_t sp, struct extc_step *s)
{
	int status = 0;

	if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		s->tier.task_failed = true;
}

void extc_step_tier_note(struct extc_step *s)
{
	char why[EXTC_WHY_MAX];

	if (s->shared == NULL || __atomic_load_n(&s->shared->tier_timed_out, __ATOMIC_ACQUIRE) == 0)
		return;
	if (extc_tier_mark_unreachable(&s->tree, s->ids.uid, now_s(), why, sizeof(why)) < 0)
		extc_info("site tier: cannot note that it did not answer: %s", why);
}

/* Node 0 of the step publishes for all of them: one generation per step, not one per node. */
static bool first_node(spank_t sp)
{
	uint32_t nodeid = 1;

	return (spank_get_item(sp, S_JOB_NODEID, &nodeid) == ESPANK_SUCCESS && nodeid == 0);
}

void extc_step_tier_publish(spank_t sp, struct extc_step *s, const struct extc_warm_walk_report *rep)
{
	static struct extc_tier_child_arg a;
	static struct extc_tier_child_res r;
	char why[EXTC_WHY_MAX] = "", size[64];
	struct extc_creds cr;
	enum extc_as_user_result ret;
	uint64_t t0;

	if (s->tier.path[0] == '\0' || !s->pool.held)
		return;
	if (s->tier.task_failed) {
		extc_verbose("site tier: a task of the step did not exit 0 on this node: nothing "
			     "published");
		return;
	}
	if (!first_node(sp))
		return;
	/* known from the put-back: what it moved that holds a file written since the take */
	if (rep->fresh == 0) {
		extc_verbose("site tier: the step put back nothing it did not take: nothing published");
		return;
	}
	/* a tier that just kept a step waiting would keep this child too, for publish_timeout= */
	if (extc_tier_mark_recent(&s->tree, s->ids.uid, now_s())) {
		extc_info("site tier: it did not answer on this node less than %d s ago: key %s not "
			  "published", EXTC_TIER_UNREACHABLE_S, s->pool.key);
		return;
	}
	child_arg(&a, s, s->cfg.publish_timeout);
	memset(&r, 0, sizeof(r));
	extc_step_creds(sp, s, &cr);
	t0 = extc_clock_monotonic_ns();
	ret = extc_as_user(&cr, (uint64_t)s->cfg.publish_timeout * 1000, extc_tier_child_publish, &a,
			   &r, sizeof(r), why, sizeof(why));
	if (ret != EXTC_AS_USER_DONE) {
		extc_info("site tier: key %s not published: %s", s->pool.key,
			  ret == EXTC_AS_USER_FAILED ? why : r.why);
		/* killed at the bound: the next steps on this node neither read nor publish for a while */
		if (ret == EXTC_AS_USER_FAILED && ran_out(t0, s->cfg.publish_timeout) &&
		    extc_tier_mark_unreachable(&s->tree, s->ids.uid, now_s(), why, sizeof(why)) < 0)
			extc_info("site tier: cannot note that it did not answer: %s", why);
		return;
	}
	extc_warm_data_size_text(r.published.bytes, size, sizeof(size));
	extc_verbose("site tier: published generation %s of key %s: %llu files, %s, in %.3f s; "
		     "removed %u older generations", r.published.gen, s->pool.key,
		     (unsigned long long)r.published.files, size, (double)r.published.ns / 1e9,
		     r.published.removed);
}
