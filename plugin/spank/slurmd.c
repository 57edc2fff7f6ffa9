/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run by slurmd itself and by its job epilog (slurmd and job-script contexts). */
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include <slurm/spank.h>

#include "proc/background.h"
#include "base/clock.h"
#include "base/config.h"
#include "spank/ctl_query.h"
#include "spank/slurmd.h"
#include "fs/fs_stamp.h"
#include "fs/fs_sweep.h"
#include "fs/fs_trash.h"
#include "fs/fs_tree.h"
#include "base/layout.h"
#include "spank/log.h"
#include "base/noexec.h"
#include "pool/pool_evict.h"
#include "pool/pool_hold.h"
#include "pool/pool_job.h"
#include "base/text.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"	/* built outside autotools */
#endif

static int node_policy(const struct extc_config *cfg, struct extc_fs_policy *pol, char *node,
		       size_t nodelen)
{
	if (cfg->allow_shared_fs && extc_layout_node_name(node, nodelen) < 0) {
		extc_error("this node's host name cannot name a directory on a shared base");
		return (-1);
	}
	extc_fs_policy_root(pol, cfg, node);
	return (0);
}

#define TRASH_BUDGET_NS (3600ull * 1000000000ull)	/* one emptier, one hour at most */
#define RETIRE_MARGIN_S 30	/* past a step end's own bounds: its children's reaping, a slow disk */
#define SWEEP_STAMP_NAME "sweep"	/* fs_stamp.h: when this node last asked slurmctld */
#define EPILOG_WORK_NAME "extc-epilog"	/* the epilog's detached work, as ps shows it */

struct trash_job {
	struct extc_config cfg;
	struct extc_fs_policy pol;
};

/*
 * The pool's eviction pass: what it moves to the trash goes with the
 * emptying that follows. With pool=off, what an earlier pool=node left is
 * emptied the same way: every key no step holds goes (a pool_ttl of none),
 * a held one at a later pass.
 */
static void evict_pool(struct trash_job *job)
{
	struct extc_config cfg = job->cfg;
	const struct extc_tree tree = { &cfg, &job->pol };
	struct extc_pool_evict_report rep;
	char why[EXTC_WHY_MAX], text[512];

	if (!cfg.pool)
		cfg.pool_ttl = 0;
	if (extc_pool_evict(&tree, (int64_t)time(NULL), &rep, why, sizeof(why)) < 0) {
		extc_error("node pool: eviction: %s", why);
		return;
	}
	if (rep.keys == 0)
		return;
	extc_pool_evict_report_text(&rep, text, sizeof(text));
	if (cfg.pool)
		extc_verbose("node pool: %s", text);
	else
		extc_info("node pool: off on this node (pool=off): emptying what it held: %s", text);
}

/* In the detached grandchild, after the epilog has returned. */
static void empty_trash_now(void *arg)
{
	struct trash_job *job = arg;
	const struct extc_tree tree = { &job->cfg, &job->pol };
	struct extc_rm_limits limits;
	struct extc_rm_report report;
	char why[EXTC_WHY_MAX], text[256];
	uint64_t t0 = extc_clock_monotonic_ns();

	extc_rm_limits_default(&limits);
	limits.deadline_ns = t0 + TRASH_BUDGET_NS;
	job->pol.rm_limits = &limits;
	evict_pool(job);
	if (extc_trash_empty(&tree, &report, why, sizeof(why)) < 0) {
		extc_error("emptying the trash after the epilog: %s (the next epilog goes on)", why);
		return;
	}
	extc_rm_report_text(&report, text, sizeof(text));
	extc_verbose("emptied the trash after the epilog: %s in %.3f ms", text,
		     (double)(extc_clock_monotonic_ns() - t0) / 1e6);
}

/*
 * The trash is emptied after the epilog has returned, so that a huge
 * cache never holds the node in COMPLETING nor risks EpilogTimeout (which
 * drains). Where no background process can be started, it is emptied here
 * with a short budget and the rest waits for the next epilog.
 */
static void empty_trash_later(const struct extc_config *cfg, const struct extc_fs_policy *pol)
{
	struct trash_job job = { .cfg = *cfg, .pol = *pol };
	const struct extc_tree tree = { &job.cfg, &job.pol };
	struct extc_rm_limits limits;
	struct extc_rm_report report;
	char why[EXTC_WHY_MAX];
	pid_t pid;

	pid = extc_background_run_detached(empty_trash_now, &job);
	if (pid > 0) {
		extc_debug("epilog: emptying the trash in the background (pid %d)", (int)pid);
		return;
	}
	extc_rm_limits_default(&limits);
	limits.deadline_ns = extc_clock_monotonic_ns() + 2000000000ull;
	job.pol.rm_limits = &limits;
	if (extc_trash_empty(&tree, &report, why, sizeof(why)) < 0)
		extc_info("epilog: the trash is not empty yet (%s); the next epilog goes on", why);
}

/*
 * Said once at daemon start, for the admin: every step of this node will be
 * failed or run without its cache (noexec.h). A per-job /tmp that is noexec
 * is not seen here; each task looks at its own.
 */
static void warn_noexec_base(const struct extc_config *cfg)
{
	const char *var = extc_noexec_first_loader(cfg, NULL);
	char shown[4 * EXTC_BASE_MAX + 8];

	if (var == NULL || extc_noexec_probe_path(cfg->base) != EXTC_EXEC_NOEXEC)
		return;
	extc_escape(cfg->base, EXTC_BASE_MAX, shown, sizeof(shown));
	extc_error("base %s is on a noexec mount, where %s's tool cannot load the code it builds: "
		   "%s (mount it exec or choose another base=)", shown, var,
		   cfg->on_error == EXTC_ON_ERROR_FAIL ? "steps fail" :
		   cfg->on_error == EXTC_ON_ERROR_WARN ? "steps run without a private cache" :
		   "steps that ask for a cache fail, the others run without one");
}

/*
 * At daemon start the base is made root-owned before any user can squat
 * its name; a bad argument stops here, loudly, long before a job runs.
 */
int extc_slurmd_init(spank_t sp, int ac, char **av)
{
	struct extc_config cfg;
	struct extc_fs_policy pol;
	const struct extc_tree tree = { &cfg, &pol };
	char why[EXTC_WHY_MAX], node[EXTC_NODE_NAME_MAX + 1];

	(void)sp;
	if (extc_config_parse(&cfg, ac, av, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	/* one line at the daemon's start: which plugin, and what it was told */
	extc_config_describe(&cfg, ac, av, why, sizeof(why));
	extc_info("slurmd: version %s loaded: %s", PACKAGE_VERSION, why);
	if (node_policy(&cfg, &pol, node, sizeof(node)) < 0)
		return (0);
	if (extc_tree_prepare_base(&tree, why, sizeof(why)) < 0) {
		extc_error("%s (steps will try again)", why);
		return (0);
	}
	warn_noexec_base(&cfg);
	/* what an emptier interrupted by a crash or reboot left behind */
	if (extc_background_run_detached(empty_trash_now, &(struct trash_job){ .cfg = cfg, .pol = pol }) < 0)
		extc_debug("slurmd: the trash is left for the next epilog");
	return (0);
}

/* What a job's return to the pool did, in the log: 'who' is "epilog" or "sweep". */
static void tell_pool_job(const char *who, enum extc_pool_job_result moved,
			  const struct extc_pool_job_report *rep, const char *why)
{
	const struct extc_pool_taken_report *t = &rep->taken;

	if (moved == EXTC_POOL_JOB_MOVED)
		extc_verbose("%s: node pool: moved %llu entries in, kept %llu already there "
			     "(a directory merged into one counts by what it holds), left out %llu "
			     "incomplete builds", who, (unsigned long long)rep->moved.published,
			     (unsigned long long)rep->moved.present,
			     (unsigned long long)rep->moved.incomplete);
	else if (moved != EXTC_POOL_JOB_NONE)
		extc_info("%s: node pool: %s", who, why);
	if (t->returned > 0)
		extc_verbose("%s: node pool: put back what %u of its steps' directories held (%llu "
			     "%s): their ends had not", who, t->returned, (unsigned long long)t->entries,
			     t->entries == 1 ? "entry" : "entries");
	if (t->lost > 0)
		extc_error("%s: node pool: %u of its steps' directories did not go back whole into "
			   "their keys; each key's next step is told (%s)", who, t->lost, t->first_why);
}

/*
 * Before a job's tree goes: a job-mode job's builds go back into its key,
 * and every key a step took and did not put back returns (pool_job.h).
 * The job's gid is in root's notes, so the sweep of a crashed job, which
 * has none, returns alike.
 */
static void pool_job(const struct extc_tree *tree, uid_t uid, uint32_t jobid, const char *node,
		     const char *who)
{
	const struct extc_ids ids = { .uid = uid, .jobid = jobid };
	struct extc_pool_job_report rep;
	char why[EXTC_WHY_MAX], host[EXTC_NODE_NAME_MAX + 1];
	enum extc_pool_job_result moved;

	if (node[0] == '\0' && extc_layout_node_name(host, sizeof(host)) == 0)
		node = host;
	moved = extc_pool_job_put_back(tree, &ids, node[0] ? node : "node", &rep, why, sizeof(why));
	tell_pool_job(who, moved, &rep, why);
}

/* The sweep, before a crashed job's tree goes (fs_sweep.h). */
static void sweep_returns(uid_t uid, uint32_t jobid, void *arg)
{
	const struct extc_tree *tree = arg;

	pool_job(tree, uid, jobid, "", "sweep");
}

/*
 * Trees of jobs whose epilog never ran (slurmstepd SIGKILLed, node crash)
 * go at a later epilog on the node, in its background work. A tree is left
 * if a step holds it or the controller does not say for sure that its job
 * is over. The controller is asked at most EXTC_CTL_ASKS_PER_SWEEP
 * questions once per EXTC_CTL_SWEEP_INTERVAL_S on a node, whatever users
 * leave behind; a sweep in between removes nothing that needs a question.
 */
static void sweep_leftovers(const struct extc_config *cfg, const struct extc_fs_policy *pol)
{
	const struct extc_tree tree = { cfg, pol };
	struct extc_sweep_report sweep;
	struct extc_ctl_session ctl = { .timeout_ms = EXTC_CTL_TIMEOUT_MS };
	char why[EXTC_WHY_MAX], text[256];
	const struct extc_sweep_calls calls = {
		.alive = extc_ctl_query_job_alive, .alive_arg = &ctl,
		.before_retire = sweep_returns, .retire_arg = (void *)&tree,
	};

	if (extc_stamp_due(&tree, SWEEP_STAMP_NAME, EXTC_CTL_SWEEP_INTERVAL_S, (int64_t)time(NULL)))
		ctl.max_asks = EXTC_CTL_ASKS_PER_SWEEP;
	if (extc_sweep_leftovers(&tree, &calls, &sweep, why, sizeof(why)) < 0) {
		extc_error("epilog: sweeping leftovers: %s", why);
		return;
	}
	if (sweep.jobs_removed == 0 && sweep.jobs_failed == 0 && sweep.refused == 0)
		return;
	extc_rm_report_text(&sweep.rm, text, sizeof(text));
	extc_info("epilog: moved the trees of %u ended %s whose epilog never ran to the trash, "
		  "%u could not be (%s); kept %u running, %u not yet over; %u %s failed "
		  "verification and %s left alone", sweep.jobs_removed,
		  sweep.jobs_removed == 1 ? "job" : "jobs", sweep.jobs_failed, text, sweep.held,
		  sweep.alive, sweep.refused, sweep.refused == 1 ? "level" : "levels",
		  sweep.refused == 1 ? "was" : "were");
}

/* The epilog's work, handed to a detached process (background.h). */
struct epilog_work {
	struct extc_config cfg;
	struct extc_fs_policy pol;
	uid_t uid;
	uint32_t jobid;
	char node[EXTC_NODE_NAME_MAX + 1];
};

/*
 * Once no step's end holds the job level, before the tree goes: what an
 * end could not move into the pool (its note written after the epilog's
 * first return) goes back now.
 */
static void pool_job_late(void *arg)
{
	const struct epilog_work *w = arg;
	const struct extc_tree tree = { &w->cfg, &w->pol };

	pool_job(&tree, w->uid, w->jobid, w->node, "epilog");
}

/*
 * The job's tree goes to the trash once no step's detached end holds it:
 * each of those is bounded by publish_timeout twice (publish, then the
 * pool move), plus the reaping of its children.
 */
static enum extc_trash_retire_result retire_job(const struct epilog_work *w, bool *moved,
						char *why, size_t whylen)
{
	const struct extc_tree tree = { &w->cfg, &w->pol };
	uint64_t deadline = extc_clock_monotonic_ns() +
			    (2ull * w->cfg.publish_timeout + RETIRE_MARGIN_S) * 1000000000ull;
	unsigned wait_ms = 10;

	for (;;) {
		enum extc_trash_retire_result retired =
			extc_trash_retire_job(&tree, w->uid, w->jobid, pool_job_late, (void *)w,
					      moved, why, whylen);

		if (retired != EXTC_TRASH_RETIRE_HELD || extc_clock_monotonic_ns() >= deadline)
			return (retired);
		poll(NULL, 0, (int)wait_ms);
		wait_ms = wait_ms < 1000 ? wait_ms * 2 : 1000;
	}
}

/*
 * After the epilog has returned (or while it waits EXTC_HOOK_WAIT_MS for
 * the first part): the job's builds into the pool, its tree to the trash,
 * then the leftovers of other jobs, the pool's eviction and the emptying.
 */
static void epilog_now(void *arg)
{
	struct epilog_work *w = arg;
	const struct extc_tree tree = { &w->cfg, &w->pol };
	struct extc_rm_report report;
	struct trash_job trash = { .cfg = w->cfg, .pol = w->pol };
	char why[EXTC_WHY_MAX];
	bool moved = false;
	uint64_t t0;
	enum extc_trash_retire_result retired;

	if (extc_background_cgroup_problem() != NULL)
		extc_info("the epilog's background work: still in some of the job's cgroups (%s)",
			  extc_background_cgroup_problem());
	pool_job(&tree, w->uid, w->jobid, w->node, "epilog");
	t0 = extc_clock_monotonic_ns();
	retired = retire_job(w, &moved, why, sizeof(why));
	if (retired == EXTC_TRASH_RETIRE_REFUSED || retired == EXTC_TRASH_RETIRE_HELD) {
		extc_error("epilog: %s", retired == EXTC_TRASH_RETIRE_HELD ?
			   "the job's directory is still held by a step's publish; a later epilog "
			   "takes it" : why);
	} else if (retired == EXTC_TRASH_RETIRE_NO_TRASH) {
		/* no trash to be had: remove in place */
		extc_error("epilog: %s; removing in place", why);
		if (extc_tree_remove_job(&tree, w->uid, w->jobid, &report, why, sizeof(why)) < 0)
			extc_error("epilog: %s", why);
	} else if (moved) {
		extc_verbose("epilog: moved the job's tree to the trash in %.3f ms",
			     (double)(extc_clock_monotonic_ns() - t0) / 1e6);
	}
	extc_background_done();
	sweep_leftovers(&w->cfg, &w->pol);
	empty_trash_now(&trash);
}

/*
 * The epilog removes every run of the job whatever mode was used: it
 * cannot see options given to an inner srun. Only S_JOB_UID and
 * S_JOB_ID are trusted here; nothing from the job's environment is read.
 * It never fails (a failing epilog drains the node) and never waits on
 * the job's user for more than EXTC_HOOK_WAIT_MS: the pool move runs as
 * the user, so it and everything after it run in a detached process.
 */
int extc_slurmd_job_epilog(spank_t sp, int ac, char **av)
{
	static struct epilog_work w;
	const struct extc_detach_opts opts = {
		.name = EPILOG_WORK_NAME, .wait_ms = EXTC_HOOK_WAIT_MS, .leave_job_cgroups = true,
	};
	char why[EXTC_WHY_MAX];
	enum extc_detach_result detached;
	pid_t pid;

	memset(&w, 0, sizeof(w));
	if (extc_config_parse(&w.cfg, ac, av, why, sizeof(why)) < 0) {
		extc_error("epilog: %s", why);
		return (0);
	}
	if (spank_get_item(sp, S_JOB_UID, &w.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &w.jobid) != ESPANK_SUCCESS) {
		extc_error("epilog: cannot read the job's uid and id");
		return (0);
	}
	extc_log_scope_job(w.jobid, EXTC_STEP_PENDING);
	if (node_policy(&w.cfg, &w.pol, w.node, sizeof(w.node)) < 0)
		goto out;
	detached = extc_background_detach(epilog_now, &w, &opts, &pid);
	if (detached == EXTC_DETACH_DONE) {
		extc_debug("epilog: emptying the trash in the background (pid %d)", (int)pid);
	} else if (detached == EXTC_DETACH_RUNNING) {
		extc_verbose("epilog: the job's directory is not retired after %u ms; that goes on in "
			     "the background (pid %d)", EXTC_HOOK_WAIT_MS, (int)pid);
	} else if (detached == EXTC_DETACH_FAILED) {
		/* no process to be had: the tree goes now, unpooled; the rest waits for a later epilog */
		const struct extc_tree tree = { &w.cfg, &w.pol };
		bool moved;

		w.cfg.pool = false;
		if (extc_trash_retire_job(&tree, w.uid, w.jobid, NULL, NULL, &moved, why, sizeof(why)) ==
		    EXTC_TRASH_RETIRE_NO_TRASH)
			extc_error("epilog: %s; the tree is left for a later epilog", why);
		empty_trash_later(&w.cfg, &w.pol);
	}
out:
	extc_log_scope_clear();
	return (0);
}
