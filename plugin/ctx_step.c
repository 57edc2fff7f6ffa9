/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run in slurmstepd, once per step per node (remote context). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "background.h"
#include "clock.h"
#include "config.h"
#include "container_env.h"
#include "container_envfile.h"
#include "ctx_step.h"
#include "envvars.h"
#include "fs_tree.h"
#include "layout.h"
#include "log.h"
#include "mode.h"
#include "noexec.h"
#include "option.h"
#include "pool_step.h"
#include "step_image.h"
#include "text.h"
#include "warm_seed.h"
#include "warm_step.h"
#include "warm_tell.h"

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
	bool exported[EXTC_VARS_MAX];	/* which variables user_init set */
	bool exported_cubin;	/* user_init pinned FLASHINFER_CUBIN_DIR */
	int hold_fd;		/* the job level, locked shared while this step runs */
	int *turn_done;		/* shared with the tasks: the first one's turn is done (seed_once) */
	char why[EXTC_WHY_MAX];
} step = { .hold_fd = -1 };

/* What user_init exported for container runtimes, with the job's values it replaced. */
static struct extc_cenv_list container_exports;

static void step_reset(void)
{
	if (step.hold_fd >= 0)
		close(step.hold_fd);
	if (step.turn_done != NULL)
		munmap(step.turn_done, sizeof(int));
	memset(&step, 0, sizeof(step));
	step.hold_fd = -1;
	extc_cenv_list_free(&container_exports);
	extc_pool_step_reset();	/* the pool's hold goes with the step's */
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

static const char *job_env(spank_t sp, const char *name, char *buf, int len)
{
	return (spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? buf : NULL);
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
			      job_env(sp, EXTC_ENV_REQUEST_NAME, envbuf, sizeof(envbuf)),
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
	if (extc_tree_create(&step.cfg, &step.pol, &step.ids, step.choice.mode, step.leaf_path,
			     sizeof(step.leaf_path), &step.hold_fd, step.why, sizeof(step.why)) < 0) {
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

static void export_var(spank_t sp, const char *name, const char *value)
{
	spank_err_t rc = spank_setenv(sp, name, value, 1);

	if (rc != ESPANK_SUCCESS)
		extc_error("cannot set %s: %s", name, spank_strerror(rc));
}

/* The job's bind lists and APPTAINERENV_ values back as they were: the leaf is not there to bind. */
static void unexport_for_containers(spank_t sp)
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

/* Take back what user_init exported, in this task only (task context). */
static void unexport_vars(spank_t sp)
{
	size_t i;

	for (i = 0; i < step.cfg.nvars; i++) {
		if (step.exported[i])
			spank_unsetenv(sp, step.cfg.vars[i].name);
	}
	if (step.exported_cubin)
		spank_unsetenv(sp, EXTC_FLASHINFER_CUBIN);
	spank_unsetenv(sp, EXTC_ENV_DIR);
	spank_unsetenv(sp, EXTC_ENV_MODE);
	unexport_for_containers(sp);
}

/* The job user's home in the password database, for a job environment without HOME. */
static const char *passwd_home(char *buf, size_t len)
{
	struct passwd pw, *found = NULL;

	if (getpwuid_r(step.ids.uid, &pw, buf, len, &found) != 0 || found == NULL)
		return (NULL);
	return (found->pw_dir);
}

/* FlashInfer's downloaded cubins stay where the user had them when FLASHINFER_WORKSPACE_BASE
 * moves into the step (else every step downloads them again: an offline node fails). Reads
 * the job's environment as it was before this step's exports. */
static void pin_flashinfer_cubins(spank_t sp, const char *prefix, const char *base)
{
	/* pwbuf holds what env.pw_home points to: it must outlive the call below */
	// cppcheck-suppress variableScope
	char cubin[PATH_MAX], home[PATH_MAX], pwbuf[4096], value[PATH_MAX], shown[160];
	struct extc_cubin_env env = {
		.cubin = job_env(sp, EXTC_FLASHINFER_CUBIN, cubin, sizeof(cubin)),
		.base = base,
		.home = job_env(sp, "HOME", home, sizeof(home)),
	};
	enum extc_cubin_action action;

	if (env.home == NULL)
		env.pw_home = passwd_home(pwbuf, sizeof(pwbuf));
	action = extc_flashinfer_cubin_dir(&step.cfg, step.choice.user_asked, prefix, &env,
					   value, sizeof(value));
	if (action == EXTC_CUBIN_USER) {
		extc_verbose("%s: kept the value the user set", EXTC_FLASHINFER_CUBIN);
	} else if (action == EXTC_CUBIN_NO_HOME) {
		extc_info("%s: not set, as neither HOME nor the user's password entry names a home",
			  EXTC_FLASHINFER_CUBIN);
	} else if (action == EXTC_CUBIN_TOO_LONG) {
		extc_info("%s: not set, the path is longer than %d bytes", EXTC_FLASHINFER_CUBIN,
			  PATH_MAX - 1);
	} else if (action == EXTC_CUBIN_PIN) {
		export_var(sp, EXTC_FLASHINFER_CUBIN, value);
		step.exported_cubin = true;
		extc_escape(value, 120, shown, sizeof(shown));
		extc_verbose("%s=%s: FlashInfer's downloaded cubins stay outside the step directory",
			     EXTC_FLASHINFER_CUBIN, shown);
	}
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
static void container_input(spank_t sp, const char *prefix, struct extc_cenv_var *vars,
			    struct extc_cenv_in *in)
{
	size_t i;

	*in = (struct extc_cenv_in){
		.leaf = step.leaf_path, .managed_prefix = prefix,
		.mode_name = extc_mode_name(step.choice.mode), .vars = vars,
		.lookup = job_env_lookup, .lookup_ctx = sp,
	};
	for (i = 0; i < step.cfg.nvars; i++) {
		if (step.exported[i])
			vars[in->nvars++] = (struct extc_cenv_var){ step.cfg.vars[i].name,
								    step.cfg.vars[i].subdir };
	}
}

/*
 * Apptainer and Singularity, whatever the user's flags (--contain,
 * --cleanenv, --no-mount tmp): the leaf appended to the job's bind lists,
 * the variables through APPTAINERENV_/SINGULARITYENV_, pointing into the
 * leaf's container/ sub-tree (container_env.h).
 */
static void export_for_containers(spank_t sp, const char *prefix)
{
	struct extc_cenv_var vars[EXTC_VARS_MAX];
	struct extc_cenv_in in;
	enum extc_cenv_result rv;
	size_t i;

	container_input(sp, prefix, vars, &in);
	rv = extc_cenv_build(&in, &container_exports);
	if (rv == EXTC_CENV_NO_MEMORY) {
		extc_error("out of memory: nothing exported for Apptainer or Singularity containers");
		extc_cenv_list_free(&container_exports);
		return;
	}
	if (rv == EXTC_CENV_LEAF_UNBINDABLE) {
		char shown[PATH_MAX];

		extc_escape(step.leaf_path, 200, shown, sizeof(shown));
		extc_info("%s holds ',', ':', '^' or '\\', which Apptainer's bind list cannot carry: "
			  "it is not bound into Apptainer or Singularity containers", shown);
	} else if (rv == EXTC_CENV_BIND_UNREADABLE) {
		extc_info("%s or %s is longer than this plugin reads: left as the job set it, "
			  "without the step's directory", EXTC_APPTAINER_BIND, EXTC_SINGULARITY_BIND);
	}
	for (i = 0; i < container_exports.npairs; i++)
		export_var(sp, container_exports.pairs[i].name, container_exports.pairs[i].value);
}

/* user_init's environment changes reach every task of the step. */
int extc_step_user_init(spank_t sp, int ac, char **av)
{
	char prefix[PATH_MAX], value[PATH_MAX], current[PATH_MAX], fi_base[PATH_MAX];
	const char *fi_base_was;
	void *page;
	size_t i;

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
	/* before the loop below replaces it: the cubin store is computed from the user's */
	fi_base_was = job_env(sp, EXTC_FLASHINFER_BASE, fi_base, sizeof(fi_base));
	for (i = 0; i < step.cfg.nvars; i++) {
		const struct extc_var *var = &step.cfg.vars[i];
		const char *cur = job_env(sp, var->name, current, sizeof(current));
		enum extc_var_action action = extc_var_decide(cur, step.choice.user_asked, prefix);

		if (action == EXTC_VAR_KEEP_USER) {
			extc_verbose("%s: kept the value the user set (only the admin default applies)",
				     var->name);
			continue;
		}
		if (extc_fmt(value, sizeof(value), "%s/%s", step.leaf_path, var->subdir) < 0)
			continue;
		if (action == EXTC_VAR_REPLACE_USER)
			extc_verbose("%s: replaced the value the user set, as %s=%s was asked for",
				     var->name, step.choice.source, extc_mode_name(step.choice.mode));
		export_var(sp, var->name, value);
		step.exported[i] = true;
	}
	pin_flashinfer_cubins(sp, prefix, fi_base_was);
	export_var(sp, EXTC_ENV_DIR, step.leaf_path);
	export_var(sp, EXTC_ENV_MODE, extc_mode_name(step.choice.mode));
	export_for_containers(sp, prefix);
	/*
	 * The tasks are forked after this hook and inherit the page. Marking
	 * the first task's turn done there, rather than with a file in the
	 * leaf, spares every step an inode made and later removed, on the path
	 * of the task that execs first. Without the page: the file.
	 */
	/* fd -1: what MAP_ANONYMOUS asks for (cppcheck checks mmap against a file) */
	// cppcheck-suppress invalidFunctionArg
	page = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	step.turn_done = page != MAP_FAILED ? page : NULL;
	return (0);
}

/*
 * A tool that loads what it builds (torch extensions, Triton, Inductor)
 * fails on a noexec mount with a message that names neither the mount nor
 * this plugin. Asked where the task sees the directory: a per-job /tmp
 * (namespace/linux, job_container/tmpfs) can be noexec for one job only.
 * Each task asks for itself (an open and an fstatvfs), in task_init as
 * the user, as what it decides must hold in its own process.
 */
static void refuse_noexec(spank_t sp)
{
	enum extc_noexec_action action;

	/* 'why' is written only for a step that fails or warns */
	action = extc_noexec_decide(extc_exec_probe_path(step.leaf_path), step.leaf_path, &step.cfg,
				    step.exported, step.choice.user_asked, step.why,
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
	struct extc_ident seen;
	char path[PATH_MAX], why[EXTC_WHY_MAX];
	int hold = -1;
	enum extc_level_result found;

	(void)ac;
	(void)av;
	if (!step.created)
		return (0);
	found = extc_tree_leaf_ident(&step.cfg, &step.pol, &step.ids, step.choice.mode, &seen, why,
				     sizeof(why));
	if (found == EXTC_LEVEL_FOUND && step.leaf_id_known && seen.dev == step.leaf_id.dev &&
	    seen.ino == step.leaf_id.ino)
		return (0);
	pol.job_private = true;
	pol.job_uid = step.ids.uid;
	if (extc_tree_create(&step.cfg, &pol, &step.ids, step.choice.mode, path, sizeof(path),
			     &hold, why, sizeof(why)) == 0) {
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

/*
 * <leaf>/container/env, one NAME=value a line as the cache variables read
 * inside a container, for runtimes that take a file (Podman's --env-file,
 * ch-run --set-env=FILE). Written as the user, in the leaf's locked turn.
 */
/* The directories a tool will not make itself (PyTorch's kernel cache), in container/ too. */
static void make_container_dirs(int leaffd)
{
	int dirfd = openat(leaffd, EXTC_CONTAINER_SUBTREE,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	size_t i;

	if (dirfd < 0)
		return;
	for (i = 0; i < step.cfg.nvars; i++) {
		if (step.cfg.vars[i].make_dir && step.exported[i])
			(void)mkdirat(dirfd, step.cfg.vars[i].subdir, 0700);
	}
	close(dirfd);
}

static void write_container_envfile(spank_t sp, int leaffd)
{
	struct extc_cenv_var vars[EXTC_VARS_MAX];
	struct extc_cenv_list lines = { 0 };
	struct extc_cenv_in in;
	char why[EXTC_WHY_MAX];

	container_input(sp, "", vars, &in);
	if (extc_cenv_inside(&in, &lines) != EXTC_CENV_OK)
		extc_error("out of memory: no %s/%s", EXTC_CONTAINER_SUBTREE, EXTC_CONTAINER_ENVFILE);
	else if (extc_envfile_write(leaffd, &lines, why, sizeof(why)) != EXTC_ENVFILE_WRITTEN)
		extc_info("no env file for containers in the step's directory: %s", why);
	extc_cenv_list_free(&lines);
	make_container_dirs(leaffd);
}

/*
 * Seeding happens here, in a task, as the user, before the user's program:
 * a seed the user stops, or that hangs in the user's own filesystem, holds
 * only the user's own tasks, never slurmstepd or a root process. The first
 * task of the node to lock the leaf seeds it; the others wait on the lock
 * and find its turn marked done (in the page user_init shared, else in a
 * mark file), so no task starts on a leaf being filled. The mark's name is
 * one the seed ignores when it asks whether the leaf is fresh.
 * The same turn writes the env file for container runtimes, after the
 * seed: the seed asks whether the leaf is fresh before anything is in it.
 */
static void seed_once(spank_t sp, uint32_t stepid, bool tell, bool seeds)
{
	char mark[64];
	size_t before = extc_warm_step_notices();
	int fd;

	if (extc_fmt(mark, sizeof(mark), "%s%u", EXTC_SEEDED_MARK_PREFIX, stepid) < 0)
		return;
	fd = open(step.leaf_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
		;
	if (step.turn_done != NULL ? *step.turn_done == 0
				   : faccessat(fd, mark, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		if (seeds) {
			extc_warm_step_seed(&step.cfg, &step.ids, step.warm_path);
			extc_pool_step_seed(&step.cfg, &step.ids, step.warm_path);
		}
		write_container_envfile(sp, fd);
		if (step.turn_done != NULL) {
			*step.turn_done = 1;
		} else {
			int markfd = openat(fd, mark, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					    O_CLOEXEC, 0600);

			if (markfd >= 0)
				close(markfd);
		}
		/* the one task of the node that knows how the directory started says it, if asked */
		extc_warm_tell(sp);
		/* task 0 tells everything below; another task tells what its seeding found */
		if (tell)
			extc_warm_step_notify(before);
	}
	close(fd);	/* and with it the lock */
}

int extc_step_task_init(spank_t sp, int ac, char **av)
{
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
		seed_once(sp, step.ids.stepid, taskid != 0,
			  extc_warm_step_seeds() || extc_warm_step_publishes() ||
			  extc_pool_step_seeds(&step.cfg));
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

/* A local-mode leaf goes at the end of its step; the epilog takes what is left. */
static void remove_leaf(void)
{
	struct extc_rm_report report;
	char why[EXTC_WHY_MAX], text[256];
	uint64_t t0 = extc_monotonic_ns();

	if (extc_tree_remove_leaf(&step.cfg, &step.pol, &step.ids, step.choice.mode, &report, why,
				  sizeof(why)) < 0) {
		extc_error("removing %s: %s (the job epilog tries again)", step.leaf_path, why);
		return;
	}
	extc_rm_report_text(&report, text, sizeof(text));
	extc_verbose("removed %s: %s in %.3f ms", step.leaf_path, text,
		     (double)(extc_monotonic_ns() - t0) / 1e6);
}

/*
 * The step's end, in a detached process (background.h): it waits on
 * children of the user's (publish_timeout bounds each), so it runs after
 * exit has returned. It holds the job level and the pool key (inherited
 * locks) until it is done, so that neither the epilog's retirement nor an
 * eviction takes the directory or the key from under it.
 */
static void finish_step(void *arg)
{
	spank_t sp = arg;

	if (extc_background_cgroup_problem() != NULL)
		extc_info("the step's publish and pool move: still in some of the job's cgroups (%s)",
			  extc_background_cgroup_problem());
	extc_warm_step_publish(sp, &step.cfg, &step.ids, step.warm_path);
	if (step.choice.mode != EXTC_MODE_LOCAL)
		return;
	extc_pool_step_publish(sp, &step.cfg, &step.pol, &step.ids, step.warm_path);
	extc_pool_step_reset();	/* the key may be evicted from here on */
	remove_leaf();
}

/* exit runs after the last task of the step on this node has ended. */
int extc_step_exit(spank_t sp, int ac, char **av)
{
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
			remove_leaf();
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
			remove_leaf();
	}
out:
	step_reset();
	extc_warm_step_reset();
	extc_log_scope_clear();
	return (0);
}
