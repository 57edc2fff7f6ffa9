/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run in slurmstepd, once per step per node (remote context). */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "base/background.h"
#include "base/clock.h"
#include "base/config.h"
#include "base/layout.h"
#include "base/mode.h"
#include "base/noexec.h"
#include "base/text.h"
#include "fs/fs_tree.h"
#include "spank/ctx_step.h"
#include "spank/log.h"
#include "spank/option.h"
#include "spank/pool_step.h"
#include "spank/step_container.h"
#include "spank/step_end.h"
#include "spank/step_exports.h"
#include "spank/step_image.h"
#include "spank/step_info.h"
#include "spank/step_seed.h"
#include "spank/step_view.h"
#include "spank/warm_step.h"

/* The step's detached end, as ps shows it (and the tests look for it). */
#define EXTC_FINISHER_NAME "extc-finisher"

/* Exit code of a task failed by this plugin (distinct from a shell's 1 and 2). */
#define EXTC_TASK_FAILURE_EXIT 75	/* EX_TEMPFAIL: the cause is on the node, not in the program */

/* One slurmstepd per step per node: its hooks (and task_init in its forked children) see this. */
static struct {
	bool configured;	/* init parsed the arguments */
	bool managed;		/* this step has (or should have had) a directory */
	bool created;
	bool fail_step;		/* a problem the tasks must fail on */
	bool warn_step;		/* a problem the user is told about, and the step goes on */
	struct extc_config cfg;
	struct extc_fs_policy pol;
	char node_name[EXTC_NODE_NAME_MAX + 1];
	struct extc_ids ids;
	struct extc_choice choice;
	char leaf_path[PATH_MAX];
	bool in_image;		/* the step runs an image the plugin identified */
	char warm_path[PATH_MAX];	/* what seeds fill and publishes take: the leaf, or its container/ */
	struct extc_ident leaf_id;	/* the leaf as slurmstepd made it */
	bool leaf_id_known;
	struct extc_step_exports exports;	/* what user_init set */
	int hold_fd;		/* the job level, locked shared while this step runs */
	int *turn_done;		/* shared with the tasks: the first one's turn is done (step_seed.c) */
	char why[EXTC_WHY_MAX];
} step = { .hold_fd = -1 };

static void step_reset(void)
{
	if (step.hold_fd >= 0)
		close(step.hold_fd);
	extc_step_seed_turn_unmap(step.turn_done);
	memset(&step, 0, sizeof(step));
	step.hold_fd = -1;
	extc_step_containers_reset();
	extc_pool_step_reset();	/* the pool's hold goes with the step's */
	extc_step_info_reset();
	extc_step_view_reset();
}

int extc_step_init(spank_t sp, int ac, char **av)
{
	uint32_t jobid, stepid;
	char why[EXTC_WHY_MAX];

	step_reset();
	if (spank_get_item(sp, S_JOB_ID, &jobid) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS)
		extc_log_scope_job(jobid, stepid);
	if (extc_config_parse(&step.cfg, ac, av, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	step.configured = true;
	extc_step_image_init(sp);
	return (extc_option_register(sp));
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

/* What the admin chose for a failure, or by default: fail only if the user asked. */
static bool failure_fails_step(void)
{
	return (extc_on_error_fails(step.cfg.on_error, step.choice.user_asked));
}

/*
 * The directory is made here, as root, once per step and before any task
 * exists. This hook must not fail for anything a user can cause: for a
 * batch step that drains the node. Problems are kept for task_init.
 */
int extc_step_init_post_opt(spank_t sp, int ac, char **av)
{
	const struct extc_tree tree = { &step.cfg, &step.pol };
	char leaf[EXTC_NAME_LEN];
	char envbuf[EXTC_MODE_VALUE_MAX + 2];
	struct extc_pool_step_image image;
	bool has_leaf;
	uint64_t t0;

	(void)ac;
	(void)av;
	if (!step.configured)
		return (0);
	if (get_ids(sp, &step.ids) < 0) {
		extc_error("cannot read the job's ids from slurmstepd; leaving this step alone");
		return (0);
	}
	extc_log_scope_job(step.ids.jobid, step.ids.stepid);
	if (extc_mode_resolve(extc_option_value(),
			      extc_step_job_env(sp, EXTC_ENV_REQUEST_NAME, envbuf, sizeof(envbuf)),
			      step.cfg.default_mode, &step.choice, step.why, sizeof(step.why)) < 0) {
		step.managed = true;
		step.fail_step = true;
		extc_error("%s", step.why);
		return (0);
	}
	has_leaf = step.choice.mode != EXTC_MODE_OFF &&
		   extc_layout_leaf_name(step.choice.mode, step.ids.stepid, leaf, sizeof(leaf)) == 0;
	extc_warm_step_resolve(sp, &step.cfg, &step.ids, has_leaf && step.ids.uid != 0);
	if (!has_leaf)
		return (0);
	if (step.ids.uid == 0) {
		extc_verbose("jobs of root get no private cache");
		return (0);
	}
	step.managed = true;
	if (step.cfg.allow_shared_fs &&
	    extc_layout_node_name(step.node_name, sizeof(step.node_name)) < 0) {
		step.fail_step = failure_fails_step();
		step.warn_step = !step.fail_step;
		extc_fmt(step.why, sizeof(step.why),
			 "this node's host name cannot name a directory on a shared base");
		extc_error("%s", step.why);
		return (0);
	}
	extc_fs_policy_root(&step.pol, &step.cfg, step.node_name);
	t0 = extc_monotonic_ns();
	step.hold_fd = extc_tree_create(&tree, &step.ids, step.choice.mode, step.leaf_path,
					sizeof(step.leaf_path), step.why, sizeof(step.why));
	if (step.hold_fd < 0) {
		step.fail_step = failure_fails_step();
		step.warn_step = !step.fail_step;
		extc_error("no private cache for this step (%s): %s",
			   step.fail_step ? "failing it" : "going on without", step.why);
		return (0);
	}
	step.created = true;
	/* the job level is held open: no second walk down from the root */
	step.leaf_id_known = extc_tree_leaf_ident_at(step.hold_fd, step.cfg.base, step.choice.mode,
						     step.ids.stepid, &step.leaf_id, step.why,
						     sizeof(step.why)) == EXTC_LEVEL_FOUND;
	extc_step_view_record(step.hold_fd);	/* for the tasks that will see this leaf */
	extc_verbose("created %s (mode %s from %s) in %.3f ms", step.leaf_path,
		     extc_mode_name(step.choice.mode), step.choice.source,
		     (double)(extc_monotonic_ns() - t0) / 1e6);
	extc_step_image_resolve(sp, &image);
	/* inside a container the caches are below container/: warm start serves that part */
	step.in_image = image.kind == EXTC_CTR_FILE || image.kind == EXTC_CTR_DIGEST;
	if (extc_fmt(step.warm_path, sizeof(step.warm_path), "%s%s", step.leaf_path,
		     step.in_image ? "/" EXTC_CONTAINER_SUBTREE : "") < 0)
		step.in_image = false;	/* cannot be: the leaf is far shorter than PATH_MAX */
	extc_pool_step_open(sp, &step.cfg, &step.pol, &step.ids, step.choice.mode == EXTC_MODE_JOB,
			    step.leaf_path, &image);
	return (0);
}

/* The step's directory, for the modules that work in it. */
static struct extc_step_leaf leaf_view(void)
{
	return ((struct extc_step_leaf){
		.cfg = &step.cfg, .ids = &step.ids, .mode = step.choice.mode,
		.pol = &step.pol, .path = step.leaf_path, .warm_path = step.warm_path,
		.exported = step.exports.vars, .turn_done = step.turn_done,
	});
}

/* user_init's environment changes reach every task of the step. */
int extc_step_user_init(spank_t sp, int ac, char **av)
{
	struct extc_step_leaf leaf = leaf_view();
	char prefix[PATH_MAX];

	(void)ac;
	(void)av;
	if (!step.created)
		return (0);
	/*
	 * Everything below the base is this plugin's: only root can make
	 * anything there. A value under it was exported for an enclosing step
	 * (on this node or, with a shared base, another one) and is replaced.
	 */
	if (extc_fmt(prefix, sizeof(prefix), "%s/", step.cfg.base) < 0)
		return (0);
	extc_step_export_vars(sp, &step.cfg, &step.choice, step.ids.uid, prefix, step.leaf_path,
			      &step.exports);
	extc_step_containers_export(sp, &leaf, prefix);
	step.turn_done = extc_step_seed_turn_map();
	return (0);
}

/* Take back what user_init exported, in this task only (task context). */
static void unexport_vars(spank_t sp)
{
	extc_step_unexport_vars(sp, &step.cfg, &step.exports);
	extc_step_containers_unexport(sp);
}

/*
 * A tool that loads what it builds (torch extensions, Triton, Inductor)
 * fails on a noexec mount with a message that names neither the mount nor
 * this plugin. Asked where the task sees the directory (step_view.h).
 */
static void refuse_noexec(spank_t sp)
{
	enum extc_noexec_action action;

	/* 'why' is written only for a step that fails or warns */
	action = extc_noexec_decide(extc_step_view_exec_probe(step.leaf_path), step.leaf_path, &step.cfg,
				    step.exports.vars, step.choice.user_asked, step.why,
				    sizeof(step.why));
	if (action == EXTC_NOEXEC_FINE)
		return;
	step.fail_step = action == EXTC_NOEXEC_FAIL;
	step.warn_step = !step.fail_step;
	if (step.warn_step)
		unexport_vars(sp);
}

/*
 * Runs as root in each task's process, after Slurm has moved it into the
 * job's mount namespace if there is one (job_container/tmpfs). If the base
 * lies inside what that namespace replaces (a per-job /tmp), the task does
 * not see the directory slurmstepd made; it is made again here, in the
 * job's own view, where only the job can write. Tasks of the step race
 * for it; the first makes it and the others find it.
 */
int extc_step_task_init_privileged(spank_t sp, int ac, char **av)
{
	struct extc_fs_policy pol = step.pol;
	struct extc_tree tree = { &step.cfg, &step.pol };
	struct extc_ident seen;
	char path[PATH_MAX], why[EXTC_WHY_MAX];
	int hold = -1;
	enum extc_level_result found;

	(void)ac;
	(void)av;
	if (!step.created)
		return (0);
	if (extc_step_view_task_shares())	/* no walk down from the root per task */
		return (0);
	found = extc_tree_leaf_ident(&tree, &step.ids, step.choice.mode, &seen, why, sizeof(why));
	if (found == EXTC_LEVEL_FOUND && step.leaf_id_known && seen.dev == step.leaf_id.dev &&
	    seen.ino == step.leaf_id.ino)
		return (0);
	pol.job_private = true;
	pol.job_uid = step.ids.uid;
	tree.pol = &pol;
	hold = extc_tree_create(&tree, &step.ids, step.choice.mode, path, sizeof(path), why,
				sizeof(why));
	if (hold >= 0) {
		close(hold);
		extc_debug("made %s in the job's own mount namespace", path);
		return (0);
	}
	/* the variables point nowhere in this task: treat it like a failed creation */
	extc_fmt(step.why, sizeof(step.why), "in the job's mount namespace: %s", why);
	step.fail_step = failure_fails_step();
	step.warn_step = !step.fail_step;
	if (step.warn_step)
		unexport_vars(sp);
	return (0);
}

/*
 * The first hook where failing fails only the job. It runs in the task's
 * own process, as the user, just before exec. Returning -1 fails the task
 * only for a `required` plugin; Slurm ignores it for an `optional` one,
 * which is how admins load this plugin. So a task that must fail exits
 * here, before exec, which srun reports as any failed task. One line per
 * node (local task 0) is enough.
 *
 * The node is named in the text: 22.05 and 24.11 put "slurmstepd-NODE:"
 * in front of what a task's error log shows the user, 26.05 a timestamp.
 * slurmstepd sets SLURMD_NODENAME in the task's environment before
 * task_init.
 */
static void tell_user(spank_t sp)
{
	char node[EXTC_NODE_NAME_MAX + 1], shown[4 * EXTC_NODE_NAME_MAX + 8];

	if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node)) == ESPANK_SUCCESS)
		extc_escape(node, EXTC_NODE_NAME_MAX, shown, sizeof(shown));
	else
		strcpy(shown, "?");
	extc_error("no private cache on node %s, %s: %s", shown,
		   step.fail_step ? "failing the step" : "going on without one", step.why);
}

int extc_step_task_init(spank_t sp, int ac, char **av)
{
	struct extc_step_leaf leaf = leaf_view();
	int taskid = 0;

	(void)ac;
	(void)av;
	if (spank_get_item(sp, S_TASK_ID, &taskid) != ESPANK_SUCCESS)
		taskid = 0;
	/*
	 * As the user, where the task sees its directory: a FUSE mount the user
	 * put there can hold only the user's own task, never root's hook.
	 */
	if (step.created && !step.fail_step && !step.warn_step)
		refuse_noexec(sp);
	/* as the user: the part a known image's caches use, for its seed to fill */
	if (step.created && !step.fail_step && !step.warn_step && step.in_image &&
	    mkdir(step.warm_path, 0700) < 0 && errno != EEXIST)
		extc_info("cannot make %s: %s", step.warm_path, strerror(errno));
	/* a leaf with nothing to seed it from is not seeded; its env file is written all the same */
	if (step.created && !step.fail_step && !step.warn_step)
		extc_step_seed_once(sp, &leaf, taskid != 0,
				    extc_warm_step_seeds() || extc_warm_step_publishes() ||
				    extc_pool_step_seeds(&step.cfg, extc_warm_step_seeds()));
	if (taskid == 0)
		extc_warm_step_notify(0);
	if (!step.fail_step && !step.warn_step)
		return (0);
	if (taskid == 0)
		tell_user(sp);
	if (step.fail_step)
		_exit(EXTC_TASK_FAILURE_EXIT);
	return (0);
}

/* The step's end, in a detached process: step_end.h. */
static void finish_step(void *arg)
{
	struct extc_step_leaf leaf = leaf_view();

	extc_step_finish(arg, &leaf);
}

/* exit runs after the last task of the step on this node has ended. */
int extc_step_exit(spank_t sp, int ac, char **av)
{
	struct extc_step_leaf leaf = leaf_view();
	const int keep[] = { step.hold_fd };
	const struct extc_detach_opts opts = {
		.name = EXTC_FINISHER_NAME, .keep = keep, .nkeep = 1, .wait_ms = EXTC_HOOK_WAIT_MS,
		.leave_job_cgroups = true,
	};
	bool local = step.choice.mode == EXTC_MODE_LOCAL;
	enum extc_detach_result detached;
	pid_t pid;

	(void)ac;
	(void)av;
	if (!step.created)
		goto out;
	if (!extc_warm_step_publishes() && !(local && extc_pool_step_held())) {
		if (local)
			extc_step_remove_leaf(&leaf);
		goto out;
	}
	detached = extc_detach(finish_step, sp, &opts, &pid);
	if (detached == EXTC_DETACH_RUNNING) {
		extc_verbose("the step's builds are still being published or moved into the node pool "
			     "after %u ms; that goes on in the background (pid %d)", EXTC_HOOK_WAIT_MS,
			     (int)pid);
	} else if (detached == EXTC_DETACH_FAILED) {
		extc_error("cannot start the step's publish and pool move: nothing is published or "
			   "pooled from this step");
		if (local)
			extc_step_remove_leaf(&leaf);
	}
out:
	step_reset();
	extc_warm_step_reset();
	extc_log_scope_clear();
	return (0);
}
