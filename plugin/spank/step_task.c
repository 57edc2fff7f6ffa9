/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: what each task of a step does before exec: sees the
 * step's directory (task_init_privileged), refuses a noexec one, takes the
 * node's one seeding turn, fails or warns (task_init).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "container/container_env.h"
#include "base/layout.h"
#include "base/noexec.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "fs/fs_tree.h"
#include "spank/log.h"
#include "spank/step.h"
#include "spank/step_env.h"
#include "spank/step_pool.h"
#include "spank/step_task.h"
#include "spank/step_tell.h"
#include "spank/step_warm.h"
#include "container/container_envfile.h"
#include "warm/warm_seed.h"

/* Exit code of a task failed by this plugin (distinct from a shell's 1 and 2). */
#define EXTC_TASK_FAILURE_EXIT 75	/* EX_TEMPFAIL: the cause is on the node, not in the program */

/* ---- where the task sees the step's directory ---------------------------- */

/*
 * In the task's process, as root: is it still in slurmstepd's mount
 * namespace (one stat of /proc/self/ns/mnt)? Then it sees the leaf
 * slurmstepd made, and nothing needs looking at again. The answer is kept
 * for exec_probe in the same process.
 */
static bool task_shares_view(struct extc_step *s)
{
	struct extc_ident ns;

	s->view.task_shares = s->view.mount_ns_known && extc_ident_mount_ns(&ns) == 0 &&
			      ns.dev == s->view.mount_ns.dev && ns.ino == s->view.mount_ns.ino;
	return (s->view.task_shares);
}

/*
 * As the user: the mount flags where this task sees the leaf: slurmstepd's
 * reading for a task that shares its namespace, else this task's own (an
 * open and an fstatvfs: a per-job /tmp can be noexec for one job only).
 */
static enum extc_exec_probe exec_probe(const struct extc_step *s)
{
	return (s->view.task_shares ? s->view.exec_probe : extc_noexec_probe_path(s->leaf_path));
}

void extc_step_task_privileged(spank_t sp, struct extc_step *s)
{
	struct extc_fs_policy pol = s->pol;
	struct extc_ident seen;
	char path[PATH_MAX], why[EXTC_WHY_MAX];
	int hold = -1;
	enum extc_level_result found;

	if (!s->created)
		return;
	if (task_shares_view(s))	/* no walk down from the root per task */
		return;
	found = extc_tree_leaf_ident(&s->tree, &s->ids, s->choice.mode, &seen, why, sizeof(why));
	if (found == EXTC_LEVEL_FOUND && s->leaf_id_known && seen.dev == s->leaf_id.dev &&
	    seen.ino == s->leaf_id.ino)
		return;
	pol.job_private = true;
	pol.job_uid = s->ids.uid;
	hold = extc_tree_create(&(struct extc_tree){ &s->cfg, &pol }, &s->ids, s->choice.mode, path,
				sizeof(path), why, sizeof(why));
	if (hold >= 0) {
		close(hold);
		extc_debug("made %s in the job's own mount namespace", path);
		return;
	}
	/* the variables point nowhere in this task: treat it like a failed creation */
	extc_fmt(s->why, sizeof(s->why), "in the job's mount namespace: %s", why);
	extc_step_fail_or_warn(s);
	if (s->warn_step)
		extc_step_env_unexport(sp, s);
}

/*
 * A tool that loads what it builds (torch extensions, Triton, Inductor)
 * fails on a noexec mount with a message that names neither the mount nor
 * this plugin. Asked where the task sees the directory (exec_probe).
 */
static void refuse_noexec(spank_t sp, struct extc_step *s)
{
	enum extc_noexec_action action;

	/* 'why' is written only for a step that fails or warns */
	action = extc_noexec_decide(exec_probe(s), s->leaf_path, &s->cfg, s->exports.vars,
				    s->choice.user_asked, s->why, sizeof(s->why));
	if (action == EXTC_NOEXEC_FINE)
		return;
	s->fail_step = action == EXTC_NOEXEC_FAIL;
	s->warn_step = !s->fail_step;
	if (s->warn_step)
		extc_step_env_unexport(sp, s);
}

/* ---- the node's one turn on a fresh leaf --------------------------------- */

/* The directories a tool will not make itself (PyTorch's kernel cache), in container/ too. */
static void make_container_dirs(int leaffd, const struct extc_step *s)
{
	int dirfd = openat(leaffd, EXTC_CONTAINER_SUBTREE,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	size_t i;

	if (dirfd < 0)
		return;
	for (i = 0; i < s->cfg.nvars; i++) {
		if (s->cfg.vars[i].make_dir && s->exports.vars[i])
			(void)mkdirat(dirfd, s->cfg.vars[i].subdir, 0700);
	}
	close(dirfd);
}

/*
 * <leaf>/container/env, one NAME=value a line as the cache variables read
 * inside a container, for runtimes that take a file (Podman's --env-file,
 * ch-run --set-env=FILE), and the directories a tool will not make itself,
 * in container/ too. As the user, in the leaf's locked turn; 'leaffd' is
 * the leaf.
 */
static void write_container_envfile(spank_t sp, int leaffd, const struct extc_step *s)
{
	struct extc_cenv_var vars[EXTC_VARS_MAX];
	struct extc_cenv_list lines = { 0 };
	struct extc_cenv_in in;
	char why[EXTC_WHY_MAX];

	extc_step_env_container_input(sp, s, "", vars, &in);
	if (extc_container_env_inside(&in, &lines) != EXTC_CENV_OK)
		extc_error("out of memory: no %s/%s", EXTC_CONTAINER_SUBTREE, EXTC_CONTAINER_ENVFILE);
	else if (extc_container_envfile_write(leaffd, &lines, why, sizeof(why)) != EXTC_ENVFILE_WRITTEN)
		extc_info("no env file for containers in the step's directory: %s", why);
	extc_container_env_list_free(&lines);
	make_container_dirs(leaffd, s);
}

/*
 * Seeding happens here, in a task, as the user, before the user's program:
 * a seed the user stops, or that hangs in the user's own filesystem, holds
 * only the user's own tasks, never slurmstepd or a root process. The seed
 * itself runs in a child of the task that keeps none of the descriptors
 * the task has from slurmstepd (the log, the locked job level, the key's
 * record): the task keeps them for the exec that follows. The first
 * task of the node to lock the leaf seeds it; the others wait on the lock
 * and find its turn marked done (in the page user_init shared, else in a
 * mark file), so no task starts on a leaf being filled. The mark's name is
 * one the seed ignores when it asks whether the leaf is fresh.
 * The same turn writes the env file for container runtimes, after the
 * seed: the seed asks whether the leaf is fresh before anything is in it.
 * 'seeds': there is something to seed from (or a publish directory to
 * check); 'tell': this task tells the user what its own seeding found
 * (task 0 tells everything anyway).
 */
static void seed_once(spank_t sp, struct extc_step *s, bool tell, bool seeds)
{
	char mark[64];
	size_t before = extc_step_warm_notices(s);
	int fd;

	/* the turn is over (its work done before it was marked): nothing to wait for */
	if (s->shared != NULL && __atomic_load_n(&s->shared->turn_done, __ATOMIC_ACQUIRE) != 0)
		return;
	if (extc_fmt(mark, sizeof(mark), "%s%u", EXTC_SEEDED_MARK_PREFIX, s->ids.stepid) < 0)
		return;
	fd = open(s->leaf_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
		;
	if (s->shared != NULL ? s->shared->turn_done == 0
				 : faccessat(fd, mark, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		if (seeds) {
			extc_step_warm_seed(sp, s);
			extc_step_pool_seed(sp, s, extc_step_warm_seeds(s));
		}
		write_container_envfile(sp, fd, s);
		if (s->shared != NULL) {
			__atomic_store_n(&s->shared->turn_done, 1, __ATOMIC_RELEASE);
		} else {
			int markfd = openat(fd, mark, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					    O_CLOEXEC, 0600);

			if (markfd >= 0)
				close(markfd);
		}
		/* the one task of the node that knows how the directory started says it, if asked */
		extc_step_tell_start(sp, s);
		/* task 0 tells everything below; another task tells what its seeding found */
		if (tell)
			extc_step_warm_notify(s, before);
	}
	close(fd);	/* and with it the lock */
}

/* ---- task_init ----------------------------------------------------------- */

void extc_step_task_init(spank_t sp, struct extc_step *s)
{
	int taskid = 0;

	if (spank_get_item(sp, S_TASK_ID, &taskid) != ESPANK_SUCCESS)
		taskid = 0;
	/*
	 * As the user, where the task sees its directory: a FUSE mount the user
	 * put there can hold only the user's own task, never root's hook.
	 */
	if (s->created && !s->fail_step && !s->warn_step)
		refuse_noexec(sp, s);
	/* as the user: the part a known image's caches use, for its seed to fill */
	if (s->created && !s->fail_step && !s->warn_step && s->in_image &&
	    mkdir(s->warm_path, 0700) < 0 && errno != EEXIST)
		extc_info("cannot make %s: %s", s->warm_path, strerror(errno));
	/* a leaf with nothing to seed it from is not seeded; its env file is written all the same */
	if (s->created && !s->fail_step && !s->warn_step)
		seed_once(sp, s, taskid != 0,
			  extc_step_warm_seeds(s) || extc_step_warm_publishes(s) ||
			  extc_step_pool_seeds(s, extc_step_warm_seeds(s)));
	if (taskid == 0)
		extc_step_warm_notify(s, 0);
	if (!s->fail_step && !s->warn_step)
		return;
	if (taskid == 0)
		extc_step_tell_failure(sp, s);
	if (s->fail_step)
		_exit(EXTC_TASK_FAILURE_EXIT);
}
