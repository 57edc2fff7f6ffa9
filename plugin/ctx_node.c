/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run by slurmd itself and by its job epilog (slurmd and job-script contexts). */
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include <slurm/spank.h>

#include "background.h"
#include "clock.h"
#include "config.h"
#include "ctl_query.h"
#include "ctx_node.h"
#include "fs_tree.h"
#include "layout.h"
#include "log.h"
#include "pool_fs.h"
#include "pool_job.h"
#include "text.h"

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

struct trash_job {
	struct extc_config cfg;
	struct extc_fs_policy pol;
};

/* The pool's eviction pass: what it moves to the trash goes with the emptying that follows. */
static void evict_pool(struct trash_job *job)
{
	struct extc_pool_evict_report rep;
	char why[EXTC_WHY_MAX], kept[64], freed[64];

	if (extc_pool_evict(&job->cfg, &job->pol, (int64_t)time(NULL), &rep, why, sizeof(why)) < 0) {
		extc_error("node pool: eviction: %s", why);
		return;
	}
	if (rep.keys == 0)
		return;
	extc_fmt(kept, sizeof(kept), "%llu", (unsigned long long)rep.bytes_kept);
	extc_fmt(freed, sizeof(freed), "%llu", (unsigned long long)rep.bytes_evicted);
	extc_verbose("node pool: %u keys, %u in use; evicted %u (%u unused past pool_ttl, %u over "
		     "pool_max, %u over pool_total_max), %s bytes; %u could not be; %s bytes kept",
		     rep.keys, rep.busy, rep.evicted, rep.by_reason[EXTC_POOL_EVICT_TTL],
		     rep.by_reason[EXTC_POOL_EVICT_USER_MAX], rep.by_reason[EXTC_POOL_EVICT_TOTAL_MAX],
		     freed, rep.failed, kept);
}

/* In the detached grandchild, after the epilog has returned. */
static void empty_trash_now(void *arg)
{
	struct trash_job *job = arg;
	struct extc_rm_limits limits;
	struct extc_rm_report report;
	char why[EXTC_WHY_MAX], text[256];
	uint64_t t0 = extc_monotonic_ns();

	extc_rm_limits_default(&limits);
	limits.deadline_ns = t0 + TRASH_BUDGET_NS;
	job->pol.rm_limits = &limits;
	if (job->cfg.pool)
		evict_pool(job);
	if (extc_tree_empty_trash(&job->cfg, &job->pol, &report, why, sizeof(why)) < 0) {
		extc_error("emptying the trash after the epilog: %s (the next epilog goes on)", why);
		return;
	}
	extc_rm_report_text(&report, text, sizeof(text));
	extc_verbose("emptied the trash after the epilog: %s in %.3f ms", text,
		     (double)(extc_monotonic_ns() - t0) / 1e6);
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
	struct extc_rm_limits limits;
	struct extc_rm_report report;
	char why[EXTC_WHY_MAX];
	pid_t pid;

	pid = extc_run_detached(empty_trash_now, &job);
	if (pid > 0) {
		extc_debug("epilog: emptying the trash in the background (pid %d)", (int)pid);
		return;
	}
	extc_rm_limits_default(&limits);
	limits.deadline_ns = extc_monotonic_ns() + 2000000000ull;
	job.pol.rm_limits = &limits;
	if (extc_tree_empty_trash(&job.cfg, &job.pol, &report, why, sizeof(why)) < 0)
		extc_info("epilog: the trash is not empty yet (%s); the next epilog goes on", why);
}

/*
 * At daemon start the base is made root-owned before any user can squat
 * its name; a bad argument stops here, loudly, long before a job runs.
 */
int extc_node_slurmd_init(spank_t sp, int ac, char **av)
{
	struct extc_config cfg;
	struct extc_fs_policy pol;
	char why[EXTC_WHY_MAX], node[EXTC_NODE_NAME_MAX + 1];

	(void)sp;
	if (extc_config_parse(&cfg, ac, av, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	if (node_policy(&cfg, &pol, node, sizeof(node)) < 0)
		return (0);
	if (extc_tree_prepare_base(&cfg, &pol, why, sizeof(why)) < 0) {
		extc_error("%s (steps will try again)", why);
		return (0);
	}
	/* what an emptier interrupted by a crash or reboot left behind */
	if (extc_run_detached(empty_trash_now, &(struct trash_job){ .cfg = cfg, .pol = pol }) < 0)
		extc_debug("slurmd: the trash is left for the next epilog");
	return (0);
}

/*
 * Trees of jobs whose epilog never ran (slurmstepd SIGKILLed, node crash)
 * go at the next epilog on the node. A tree is left if a step holds it or
 * the controller does not say for sure that its job is over.
 */
static bool sweep_leftovers(const struct extc_config *cfg, const struct extc_fs_policy *pol)
{
	struct extc_sweep_report sweep;
	struct extc_ctl_session ctl = { .timeout_ms = EXTC_CTL_TIMEOUT_MS };
	char why[EXTC_WHY_MAX], text[256];

	if (extc_tree_sweep(cfg, pol, extc_ctl_job_alive, &ctl, &sweep, why, sizeof(why)) < 0) {
		extc_error("epilog: sweeping leftovers: %s", why);
		return (false);
	}
	if (sweep.jobs_removed == 0 && sweep.jobs_failed == 0 && sweep.refused == 0)
		return (false);
	extc_rm_report_text(&sweep.rm, text, sizeof(text));
	extc_info("epilog: moved the trees of %u ended job(s) whose epilog never ran to the trash, "
		  "%u could not be (%s); kept %u running, %u not yet over; %u level(s) failed "
		  "verification and were left alone", sweep.jobs_removed, sweep.jobs_failed, text,
		  sweep.held, sweep.alive, sweep.refused);
	return (sweep.jobs_removed > 0);
}

/* A job-mode job's builds move into its key before its tree goes (pool_job.h). */
static void pool_job(spank_t sp, const struct extc_config *cfg, const struct extc_fs_policy *pol,
		     uid_t uid, uint32_t jobid, const char *node)
{
	struct extc_publish_report rep;
	char why[EXTC_WHY_MAX], host[EXTC_NODE_NAME_MAX + 1];
	enum extc_pool_job_result moved;
	gid_t gid;

	if (spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
		extc_error("epilog: node pool: cannot read the job's gid; its builds are not pooled");
		return;
	}
	if (node[0] == '\0' && extc_layout_node_name(host, sizeof(host)) == 0)
		node = host;
	moved = extc_pool_job_publish(cfg, pol, uid, gid, jobid, node[0] ? node : "node", &rep,
				      why, sizeof(why));
	if (moved == EXTC_POOL_JOB_MOVED)
		extc_verbose("epilog: node pool: moved %llu entries in, kept %llu already there "
			     "(a directory merged into one counts by what it holds), left out %llu "
			     "incomplete builds", (unsigned long long)rep.published,
			     (unsigned long long)rep.present, (unsigned long long)rep.incomplete);
	else if (moved == EXTC_POOL_JOB_FAILED)
		extc_info("epilog: node pool: %s", why);
}

/*
 * The epilog removes every run of the job whatever mode was used: it
 * cannot see options given to an inner srun. Only S_JOB_UID and S_JOB_ID
 * are trusted here; nothing from the job's environment is read. It never
 * fails: a failing epilog drains the node, and what is left behind is the
 * user's own files, which the report names.
 */
int extc_node_job_epilog(spank_t sp, int ac, char **av)
{
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_rm_report report;
	char why[EXTC_WHY_MAX], node[EXTC_NODE_NAME_MAX + 1] = "";
	bool moved = false;
	uint32_t jobid;
	enum extc_retire_result retired;
	uid_t uid;
	uint64_t t0;

	if (extc_config_parse(&cfg, ac, av, why, sizeof(why)) < 0) {
		extc_error("epilog: %s", why);
		return (0);
	}
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS) {
		extc_error("epilog: cannot read the job's uid and id");
		return (0);
	}
	extc_log_scope_job(jobid, EXTC_STEP_PENDING);
	if (node_policy(&cfg, &pol, node, sizeof(node)) < 0)
		goto out;
	if (cfg.pool)
		pool_job(sp, &cfg, &pol, uid, jobid, node);
	t0 = extc_monotonic_ns();
	retired = extc_tree_retire_job(&cfg, &pol, uid, jobid, &moved, why, sizeof(why));
	if (retired == EXTC_RETIRE_REFUSED) {
		extc_error("epilog: %s", why);
		goto out;
	}
	if (retired == EXTC_RETIRE_NO_TRASH) {
		/* no trash to be had: remove in place, within the epilog */
		extc_error("epilog: %s; removing in place", why);
		if (extc_tree_remove_job(&cfg, &pol, uid, jobid, &report, why, sizeof(why)) < 0)
			extc_error("epilog: %s", why);
		goto out;
	}
	if (moved)
		extc_verbose("epilog: moved the job's tree to the trash in %.3f ms",
			     (double)(extc_monotonic_ns() - t0) / 1e6);
	/* with a pool, every epilog is followed by an eviction pass */
	if (sweep_leftovers(&cfg, &pol) || moved || cfg.pool)
		empty_trash_later(&cfg, &pol);
out:
	extc_log_scope_clear();
	return (0);
}
