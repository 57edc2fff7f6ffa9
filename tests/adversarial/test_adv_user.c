/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: what a hostile job user can do to root
 * (issue 13, security-cases.md cases 52-57):
 *
 * - mount, as that user, with fusermount3 -o allow_other, a FUSE daemon that
 *   never answers on its own leaf, then let root reach that name at every
 *   entry point: the job-mode leaf re-open, the leaf identity check, the
 *   step's removal, the epilog (retire, in place, sweep) and the emptier;
 * - mount one without allow_other, which root may not even stat (E3.6), and
 *   see it recognised as a mount, detached and never parked in .trash/.kept;
 * - hold a level the way a stuck step would, and see epilogs go on;
 * - move into its leaf another user's directory it may move but not empty,
 *   and see root leave it;
 * - stick the seed helper in that FUSE mount and read its descriptors from
 *   /proc while it is stuck.
 *
 * The job's user and the other user are real accounts (uid 4242 and 4343, both
 * in group 4444), made for the run if missing and removed at its end.
 *
 * Root only. Each root operation runs in a child with a bound: one that is
 * still blocked then is a failure, freed by killing the FUSE daemon.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/as_user.h"
#include "advtree.h"
#include "fs/fs_remove.h"
#include "fuseuser.h"
#include "testmain.h"

#define LIMIT_S 5.0		/* far above what any of these takes when it does not block */
#define SHARED_GID 4444		/* a group of the job's user and the other user */

/* ---- running a root operation with a bound ---------------------------------------------------- */

static void unblock_fuseuser(void *fu)
{
	fuseuser_stop(fu);
}

static void run_bounded(struct fuseuser *fu, int (*fn)(void *), void *arg, struct adv_bounded *b)
{
	adv_run_bounded(fn, arg, LIMIT_S, fu != NULL ? unblock_fuseuser : NULL, fu, b);
}

static void expect_not_blocked(const struct adv_bounded *b, const char *what)
{
	fprintf(stderr, "#   %s: %s after %.2f s (exit %d)\n", what,
		b->blocked ? "STILL BLOCKED, killed" : "returned", b->took, b->status);
	if (b->blocked) {
		print_error("root blocked on the user's FUSE mount in %s\n", what);
		fail();
	}
}

/* What a child reports back: its result and reason, through a shared file. */
struct op {
	struct adv_tree *t;
	enum extc_mode mode;
	uint32_t stepid;
	char why[1024];
};

static void say(const char *what, int rv, const char *why)
{
	fprintf(stderr, "#   %s: %d%s%s\n", what, rv, why[0] ? ": " : "", why);
}

static int op_create(void *arg)
{
	struct op *o = arg;
	struct extc_ids ids = o->t->ids;
	char leaf[PATH_MAX];
	int hold = -1, rv;

	ids.stepid = o->stepid;
	o->why[0] = '\0';
	hold = extc_tree_create(&o->t->tree, &ids, o->mode, leaf, sizeof(leaf), o->why,
				sizeof(o->why));
	rv = hold >= 0 ? 0 : -1;
	say("create", rv, o->why);
	if (rv == 0)
		close(hold);
	return (rv == 0 ? 0 : strstr(o->why, "mount point") != NULL ? 10 : 1);
}

static int op_ident(void *arg)
{
	struct op *o = arg;
	struct extc_ident id;
	enum extc_level_result rv = extc_tree_leaf_ident(&o->t->tree, &o->t->ids, o->mode,
							 &id, o->why, sizeof(o->why));

	say("leaf ident", rv, rv == EXTC_LEVEL_REFUSED ? o->why : "");
	return (rv == EXTC_LEVEL_FOUND ? 0 : rv == EXTC_LEVEL_ABSENT ? 1 :
		strstr(o->why, "mount point") != NULL ? 10 : 2);
}

static int op_remove_leaf(void *arg)
{
	struct op *o = arg;
	struct extc_rm_report rep;
	int rv;

	o->why[0] = '\0';
	rv = extc_tree_remove_leaf(&o->t->tree, &o->t->ids, o->mode, &rep, o->why,
				   sizeof(o->why));
	say("step removal", rv, o->why);
	return (rv == 0 ? 0 : rep.mounts == 1 ? 10 : 1);
}

static int op_retire(void *arg)
{
	struct op *o = arg;
	bool moved = false;
	enum extc_trash_retire_result rv;

	o->why[0] = '\0';
	rv = extc_trash_retire_job(&o->t->tree, o->t->ids.uid, o->t->ids.jobid, NULL, NULL, &moved,
				   o->why, sizeof(o->why));
	say("epilog retire", rv, o->why);
	return (rv == EXTC_TRASH_RETIRE_DONE && moved ? 0 : 1);
}

static int op_remove_job(void *arg)
{
	struct op *o = arg;
	struct extc_rm_report rep;
	int rv;

	o->why[0] = '\0';
	rv = extc_tree_remove_job(&o->t->tree, o->t->ids.uid, o->t->ids.jobid, &rep,
				  o->why, sizeof(o->why));
	say("epilog in place", rv, o->why);
	return (rv == 0 ? 0 : rep.mounts == 1 ? 10 : 1);
}

static bool never_alive(uint32_t jobid, void *arg)
{
	(void)jobid;
	(void)arg;
	return (false);
}

static int op_sweep(void *arg)
{
	struct op *o = arg;
	struct extc_sweep_report rep;
	int rv;

	o->why[0] = '\0';
	rv = extc_sweep_leftovers(&o->t->tree, &(struct extc_sweep_calls){ .alive = never_alive }, &rep, o->why,
				  sizeof(o->why));
	say("epilog sweep", rv, o->why);
	return (rv == 0 ? 0 : 1);
}

/* The emptier: 0 when the trash is empty, 10 when it also detached a mount. */
static int op_empty_trash(void *arg)
{
	struct op *o = arg;
	struct extc_rm_report rep;
	int rv;

	o->why[0] = '\0';
	rv = extc_trash_empty(&o->t->tree, &rep, o->why, sizeof(o->why));
	say("emptier", rv, o->why);
	if (rv != 0)
		return (1);
	return (rep.detached > 0 ? 10 : rep.removed + rep.failed + rep.mounts > 0 ? 11 : 0);
}

/* ---- the FUSE hang at each entry point --------------------------------------------------------- */

static void user_mount(struct fuseuser *fu, const char *path)
{
	if (fuseuser_start(fu, path, ADV_USER_UID, ADV_USER_GID, FUSESRV_HANG_ALL) < 0) {
		print_error("the job's user could not mount FUSE on %s (fuse3, /dev/fuse, "
			    "user_allow_other needed)\n", path);
		fail();
	}
	assert_int_equal(fuseuser_is_mounted(path), 1);
}

static void make_leaf(struct fsfx *fx, struct adv_tree *t, enum extc_mode mode, uint32_t jobid)
{
	struct op o = { .t = t, .mode = mode, .stepid = 0 };

	(void)fx;
	t->ids.jobid = jobid;
	assert_int_equal(op_create(&o), 0);
}

static void leaf_path(const struct adv_tree *t, const char *leaf, char *buf)
{
	adv_fmt(buf, PATH_MAX, "%s/%u/%u/%s", t->base, (unsigned)t->ids.uid,
		(unsigned)t->ids.jobid, leaf);
}

/* Job mode: the next step's make_leaf re-opens the user's leaf under the uid level's lock. */
static void test_fuse_on_the_job_leaf_next_step(void **state)
{
	struct fsfx *fx = *state;
	struct op o = { .mode = EXTC_MODE_JOB, .stepid = 1 };
	char leaf[PATH_MAX], uidlvl[PATH_MAX];
	struct fuseuser fu;
	struct adv_tree t;
	struct adv_bounded b;
	int fd;

	advtree_config(fx, &t, "base");
	make_leaf(fx, &t, EXTC_MODE_JOB, ADV_JOBID);
	leaf_path(&t, "job", leaf);
	user_mount(&fu, leaf);
	o.t = &t;
	run_bounded(&fu, op_create, &o, &b);
	expect_not_blocked(&b, "the next step's creation in job mode");
	assert_int_equal(b.status, 10);	/* refused: "is a mount point" */
	/* and nothing stays locked: an epilog could take the uid level now */
	adv_fmt(uidlvl, sizeof(uidlvl), "%s/%u", t.base, (unsigned)ADV_USER_UID);
	fd = open(uidlvl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
	fuseuser_stop(&fu);
	adv_assert_no_fd_leak(fx);
}

/* a local leaf of job `jobid` with the user's FUSE mount on it, then `op` run bounded */
static void run_on_a_mounted_local_leaf(struct fsfx *fx, struct op *o, uint32_t jobid,
					struct fuseuser *fu, char *leaf, int (*op)(void *),
					struct adv_bounded *b, const char *what)
{
	make_leaf(fx, o->t, EXTC_MODE_LOCAL, jobid);
	leaf_path(o->t, "0", leaf);
	user_mount(fu, leaf);
	run_bounded(fu, op, o, b);
	expect_not_blocked(b, what);
}

/*
 * A user's FUSE daemon that never answers is mounted on a local step's leaf;
 * `op` must come back bounded with 10, and a removal must leave the mount point.
 */
static void fuse_on_the_local_leaf(struct fsfx *fx, int (*op)(void *), const char *what,
				   bool leaves_the_mount)
{
	struct op o = { .mode = EXTC_MODE_LOCAL };
	char leaf[PATH_MAX];
	struct fuseuser fu;
	struct adv_tree t;
	struct adv_bounded b;

	advtree_config(fx, &t, "base");
	o.t = &t;
	run_on_a_mounted_local_leaf(fx, &o, ADV_JOBID, &fu, leaf, op, &b, what);
	assert_int_equal(b.status, 10);	/* refused, or the mount point left and counted */
	if (leaves_the_mount)
		assert_int_equal(fuseuser_is_mounted(leaf), 1);
	fuseuser_stop(&fu);
	adv_assert_no_fd_leak(fx);
}

/* Every task's task_init_privileged and init_post_opt ask for the leaf's identity. */
static void test_fuse_on_the_leaf_identity_check(void **state)
{
	fuse_on_the_local_leaf(*state, op_ident, "the leaf identity check", false);
}

/* slurm_spank_exit of a local step: the top of extc_remove_tree_at is the mounted leaf. */
static void test_fuse_on_the_leaf_step_removal(void **state)
{
	fuse_on_the_local_leaf(*state, op_remove_leaf, "the step's removal", true);
}

/*
 * The epilog of the job (retire into the trash), another job's epilog on
 * the node (sweep), the in-place fallback, then the emptier: none blocks,
 * the emptier detaches the mount and the next one has nothing to report.
 */
static void test_fuse_in_the_epilog_and_the_trash(void **state)
{
	struct fsfx *fx = *state;
	struct op o = { .mode = EXTC_MODE_LOCAL };
	char leaf[PATH_MAX], trash[PATH_MAX];
	struct fuseuser fu[3];
	struct adv_tree t;
	struct adv_bounded b;
	int i;

	advtree_config(fx, &t, "base");
	o.t = &t;
	run_on_a_mounted_local_leaf(fx, &o, ADV_JOBID, &fu[0], leaf, op_retire, &b,
				    "the job's epilog (retire)");
	assert_int_equal(b.status, 0);

	/* a leftover of another job of the user, with the same mount, for the sweep */
	run_on_a_mounted_local_leaf(fx, &o, ADV_JOBID + 1, &fu[1], leaf, op_sweep, &b,
				    "another job's epilog (sweep)");
	assert_int_equal(b.status, 0);

	/* the in-place removal an epilog falls back to */
	run_on_a_mounted_local_leaf(fx, &o, ADV_JOBID + 2, &fu[2], leaf, op_remove_job, &b,
				    "the epilog's in-place removal");
	assert_int_equal(b.status, 10);
	fuseuser_stop(&fu[2]);

	/* two mounts are in the trash; their daemons die: dead FUSE mounts, as a job leaves them */
	fuseuser_kill(&fu[0]);
	fuseuser_kill(&fu[1]);
	run_bounded(&fu[0], op_empty_trash, &o, &b);
	expect_not_blocked(&b, "the trash emptier");
	assert_int_equal(b.status, 10);	/* emptied, mounts detached */
	adv_fmt(trash, sizeof(trash), "%s/.trash", t.base);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, trash), 0);
	for (i = 0; i < 2; i++) {
		run_bounded(&fu[0], op_empty_trash, &o, &b);
		expect_not_blocked(&b, "the next emptier");
		assert_int_equal(b.status, 0);	/* nothing met, nothing reported */
	}
	fuseuser_stop(&fu[0]);
	adv_assert_no_fd_leak(fx);
}

/* How many mounts have their mount point below 'dir' (from /proc/self/mountinfo, no access to them). */
static int mounts_below(const char *dir)
{
	char line[8192], point[4096];
	size_t len = strlen(dir);
	int n = 0;
	FILE *mi = fopen("/proc/self/mountinfo", "re");

	assert_non_null(mi);
	while (fgets(line, sizeof(line), mi) != NULL) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
		    strncmp(point, dir, len) == 0 && point[len] == '/')
			n++;
	}
	fclose(mi);
	return (n);
}

/*
 * security-cases.md E3.6: a FUSE mount made without allow_other, which any
 * user with /dev/fuse may make, answers root's statx with EACCES. The leaf
 * identity check still calls it a mount, the epilog retires it, and the
 * emptier detaches it and removes the tree: nothing goes to .trash/.kept,
 * where the mount would count against fusermount3's mount_max for good,
 * and no mount is left below the base.
 */
static void test_fuse_without_allow_other_is_a_mount_detached_never_kept(void **state)
{
	struct fsfx *fx = *state;
	struct op o = { .mode = EXTC_MODE_LOCAL };
	char leaf[PATH_MAX], parent[PATH_MAX], trash[PATH_MAX];
	struct extc_ident id;
	struct fuseuser fu;
	struct adv_tree t;
	struct adv_bounded b;
	struct stat sb;
	int dfd;

	advtree_config(fx, &t, "base");
	o.t = &t;
	make_leaf(fx, &t, EXTC_MODE_LOCAL, ADV_JOBID);
	leaf_path(&t, "0", leaf);
	if (fuseuser_start_private(&fu, leaf, ADV_USER_UID, ADV_USER_GID, FUSESRV_ANSWER) < 0) {
		print_error("the job's user could not mount FUSE on %s without allow_other\n", leaf);
		fail();
	}
	assert_int_equal(fuseuser_is_mounted(leaf), 1);
	/* the case itself: the kernel refuses root the mount's attributes */
	assert_int_equal(lstat(leaf, &sb), -1);
	assert_int_equal(errno, EACCES);
	/* ... and the VFS still tells root it is a mount, without asking the daemon */
	adv_fmt(parent, sizeof(parent), "%s/%u/%u", t.base, (unsigned)t.ids.uid,
		(unsigned)t.ids.jobid);
	dfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(extc_ident_at(dfd, "0", &id), 0);
	assert_true(id.mount_root);
	assert_true(S_ISDIR(id.mode));
	close(dfd);
	run_bounded(&fu, op_ident, &o, &b);
	expect_not_blocked(&b, "the leaf identity check");
	assert_int_equal(b.status, 10);	/* refused: "is a mount point" */

	run_bounded(&fu, op_retire, &o, &b);
	expect_not_blocked(&b, "the job's epilog (retire)");
	assert_int_equal(b.status, 0);
	run_bounded(&fu, op_empty_trash, &o, &b);
	expect_not_blocked(&b, "the trash emptier");
	assert_int_equal(b.status, 10);	/* emptied, the mount detached */
	adv_fmt(trash, sizeof(trash), "%s/.trash", t.base);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, trash), 0);	/* no .kept at all */
	assert_int_equal(mounts_below(t.base), 0);
	fuseuser_stop(&fu);
	adv_assert_no_fd_leak(fx);
}

/* A step holding the uid level (as a stuck creator did): epilogs go on, a new step is refused in time. */
static void test_busy_uid_level_never_blocks(void **state)
{
	struct fsfx *fx = *state;
	struct op o = { .mode = EXTC_MODE_LOCAL, .stepid = 1 };
	char uidlvl[PATH_MAX];
	struct adv_tree t;
	struct adv_bounded b;
	int fd;

	advtree_config(fx, &t, "base");
	o.t = &t;
	make_leaf(fx, &t, EXTC_MODE_LOCAL, ADV_JOBID);
	make_leaf(fx, &t, EXTC_MODE_LOCAL, ADV_JOBID + 1);
	adv_fmt(uidlvl, sizeof(uidlvl), "%s/%u", t.base, (unsigned)ADV_USER_UID);
	fd = open(uidlvl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	t.ids.jobid = ADV_JOBID;
	run_bounded(NULL, op_retire, &o, &b);
	expect_not_blocked(&b, "an epilog while the uid level is held");
	assert_int_equal(b.status, 0);
	run_bounded(NULL, op_sweep, &o, &b);
	expect_not_blocked(&b, "a sweep while the uid level is held");
	run_bounded(NULL, op_create, &o, &b);
	expect_not_blocked(&b, "a creation while the uid level is held");
	assert_int_not_equal(b.status, 0);
	close(fd);
	adv_assert_no_fd_leak(fx);
}

/* ---- another user's directory moved into the leaf ------------------------------------------------ */

struct mover {
	char from[PATH_MAX], to[PATH_MAX], precious[PATH_MAX];
};

/* As the job's user with the shared group: move the directory in, then fail to empty it. */
static int move_in_as_user(void *arg)
{
	struct mover *m = arg;
	gid_t groups[1] = { SHARED_GID };

	if (setgroups(1, groups) < 0 || setresgid(ADV_USER_GID, ADV_USER_GID, ADV_USER_GID) < 0 ||
	    setresuid(ADV_USER_UID, ADV_USER_UID, ADV_USER_UID) < 0)
		return (2);
	if (rename(m->from, m->to) < 0) {
		fprintf(stderr, "#   the user could not move the directory: %s\n", strerror(errno));
		return (3);
	}
	if (unlink(m->precious) == 0 || errno != EACCES) {
		fprintf(stderr, "#   the user's own rm of the other user's file: %s\n", strerror(errno));
		return (4);
	}
	return (0);
}

static void assert_precious(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		print_error("root removed the other user's file %s: %s\n", path, strerror(errno));
		fail();
	}
	assert_int_equal(st.st_uid, ADV_OTHER_UID);
}

static int op_remove_leaf_foreign(void *arg)
{
	struct op *o = arg;
	struct extc_rm_report rep;
	int rv;

	rv = extc_tree_remove_leaf(&o->t->tree, &o->t->ids, o->mode, &rep, o->why,
				   sizeof(o->why));
	say("step removal", rv, o->why);
	return (rv == 0 ? 0 : rep.foreign == 1 && strstr(o->why, "0/d") != NULL ? 10 : 1);
}

static void test_foreign_directory_moved_in(void **state)
{
	struct fsfx *fx = *state;
	struct op o = { .mode = EXTC_MODE_LOCAL };
	char p[PATH_MAX], kept[PATH_MAX];
	struct adv_tree t;
	struct adv_bounded b;
	struct mover m;
	int i;

	/* group-writable, not sticky: a member of the group may move d, not empty d/e */
	adv_mkdir(fx, "shared", 0770, ADV_OTHER_UID, SHARED_GID);
	adv_mkdir(fx, "shared/d", 0770, ADV_OTHER_UID, SHARED_GID);
	adv_mkdir(fx, "shared/d/e", 0755, ADV_OTHER_UID, ADV_OTHER_GID);
	adv_path(fx, p, "shared/d/e/precious");
	assert_int_equal(fsfx_write_at(AT_FDCWD, p, "theirs", 0644), 0);
	assert_int_equal(lchown(p, ADV_OTHER_UID, ADV_OTHER_GID), 0);
	advtree_config(fx, &t, "base");
	o.t = &t;
	make_leaf(fx, &t, EXTC_MODE_LOCAL, ADV_JOBID);
	adv_path(fx, m.from, "shared/d");
	adv_fmt(m.to, sizeof(m.to), "%s/%u/%u/0/d", t.base, (unsigned)ADV_USER_UID, ADV_JOBID);
	adv_fmt(m.precious, sizeof(m.precious), "%s/e/precious", m.to);
	assert_int_equal(adv_run_as(0, 0, move_in_as_user, &m), 0);

	run_bounded(NULL, op_remove_leaf_foreign, &o, &b);
	expect_not_blocked(&b, "the step's removal");
	assert_int_equal(b.status, 10);
	assert_precious(m.precious);

	/* the epilog moves the job to the trash; the emptier keeps the entry once */
	run_bounded(NULL, op_retire, &o, &b);
	assert_int_equal(b.status, 0);
	for (i = 0; i < 2; i++) {
		run_bounded(NULL, op_empty_trash, &o, &b);
		expect_not_blocked(&b, "the trash emptier");
		/* first run: kept and reported (1); second: nothing to do, nothing said (0) */
		assert_int_equal(b.status, i == 0 ? 1 : 0);
	}
	adv_fmt(kept, sizeof(kept), "%s/.trash/.kept", t.base);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, kept), 1);
	{
		DIR *d = opendir(kept);
		struct dirent *de;

		assert_non_null(d);
		while ((de = readdir(d)) != NULL && de->d_name[0] == '.')
			;
		assert_non_null(de);
		adv_fmt(p, sizeof(p), "%s/%s/0/d/e/precious", kept, de->d_name);
		closedir(d);
	}
	assert_precious(p);
	adv_assert_no_fd_leak(fx);
}

/* ---- the helper child stuck in the user's FUSE mount ---------------------------------------------- */

struct stuck {
	char mnt[PATH_MAX];
	char marker[PATH_MAX];
	int rv;
	char why[512];
	double took;
};

/* In the helper, as the user: say where we are, then open the never-answering mount. */
static int open_the_mount(void *arg, void *res, size_t reslen)
{
	const struct stuck *s = arg;
	int fd = open(s->marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	(void)res;
	(void)reslen;
	if (fd >= 0)
		close(fd);
	return (open(s->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC) < 0 ? 1 : 0);
}

static void *helper_thread(void *arg)
{
	struct stuck *s = arg;
	struct extc_creds cr = { ADV_USER_UID, ADV_USER_GID, NULL, 0 };
	char res[8];
	double t0 = adv_now();

	s->rv = extc_as_user(&cr, 1500, open_the_mount, s, res, sizeof(res), s->why, sizeof(s->why));
	s->took = adv_now() - t0;
	return (NULL);
}

/* A child of ours running as the user that is not the FUSE daemon: the helper. */
static pid_t find_helper(pid_t daemon)
{
	char path[64], line[256];
	struct dirent *de;
	pid_t found = -1;
	DIR *d = opendir("/proc");

	while (d != NULL && found < 0 && (de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atoi(de->d_name);
		int ppid = -1, uid = -1;
		FILE *f;

		if (pid <= 0 || pid == daemon)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		f = fopen(path, "re");
		while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
			sscanf(line, "PPid: %d", &ppid);
			sscanf(line, "Uid: %d", &uid);
		}
		if (f != NULL)
			fclose(f);
		if (ppid == (int)getpid() && uid == ADV_USER_UID)
			found = pid;
	}
	if (d != NULL)
		closedir(d);
	return (found);
}

/* Every descriptor of 'pid' but stdio on /dev/null and one pipe is a leak of slurmstepd's. */
static void assert_helper_fds(pid_t pid)
{
	char dir[64], path[384], target[PATH_MAX];
	struct dirent *de;
	int pipes = 0, others = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		fprintf(stderr, "#   helper fd %s -> %s\n", de->d_name, target);
		if (atoi(de->d_name) <= 2 && strcmp(target, "/dev/null") == 0)
			continue;
		if (strncmp(target, "pipe:", 5) == 0 && pipes == 0)
			pipes++;
		else
			others++;
	}
	closedir(d);
	if (others != 0) {
		print_error("the helper holds %d descriptor(s) of its parent\n", others);
		fail();
	}
}

static void test_stuck_helper_holds_no_descriptor(void **state)
{
	struct fsfx *fx = *state;
	char lockpath[PATH_MAX], logpath[PATH_MAX], procdir[64];
	struct stuck s;
	struct fuseuser fu;
	struct stat st;
	pthread_t th;
	pid_t helper = -1;
	int lockfd, logfd, pipefd[2], fd, i;

	memset(&s, 0, sizeof(s));
	adv_mkdir(fx, "mnt", 0755, ADV_USER_UID, ADV_USER_GID);
	adv_mkdir(fx, "marks", 0777, 0, 0);
	adv_path(fx, s.mnt, "mnt");
	adv_path(fx, s.marker, "marks/about-to-open");
	user_mount(&fu, s.mnt);
	/* what slurmstepd holds: its log, the locked job level, a task's I/O pipe */
	logfd = open(adv_path(fx, logpath, "slurmd.log"), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	lockfd = open(adv_path(fx, lockpath, "joblevel"), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(logfd >= 0 && lockfd >= 0);
	assert_int_equal(flock(lockfd, LOCK_SH), 0);
	assert_int_equal(pipe(pipefd), 0);
	assert_int_equal(pthread_create(&th, NULL, helper_thread, &s), 0);
	/* a bound, not a pause: the helper is about to block in OPENDIR */
	for (i = 0; i < 500 && (helper < 0 || access(s.marker, F_OK) < 0); i++) {
		poll(NULL, 0, 10);
		if (helper < 0)
			helper = find_helper(fu.pid);
	}
	assert_true(helper > 0);
	assert_int_equal(access(s.marker, F_OK), 0);
	assert_helper_fds(helper);
	/* non-dumpable: its /proc entries are root's, not the user's */
	snprintf(procdir, sizeof(procdir), "/proc/%d/status", (int)helper);
	assert_int_equal(stat(procdir, &st), 0);
	assert_int_equal(st.st_uid, 0);
	pthread_join(th, NULL);
	fprintf(stderr, "#   extc_as_user: %d after %.2f s: %s\n", s.rv, s.took, s.why);
	assert_int_equal(s.rv, EXTC_AS_USER_FAILED);
	assert_true(s.took < 1.5 + 3.0);
	assert_contains(s.why, "gave up");
	/* stuck or not, it holds no lock of ours: the job level can be taken once we let go */
	close(lockfd);
	fd = open(lockpath, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
	fuseuser_stop(&fu);
	waitpid(helper, NULL, 0);
	close(logfd);
	close(pipefd[0]);
	close(pipefd[1]);
	adv_assert_no_fd_leak(fx);
}

/* ---- real accounts: fusermount3 wants a user name; the kernel checks the group ------------------ */

struct account {
	const char *kind;	/* "group" or "user" */
	const char *name;
	unsigned id, gid;
	bool made;
};

static struct account accounts[] = {
	{ "group", "extc-adv-user", ADV_USER_GID, 0, false },
	{ "group", "extc-adv-other", ADV_OTHER_GID, 0, false },
	{ "group", "extc-adv-shared", SHARED_GID, 0, false },
	{ "user", "extc-adv-user", ADV_USER_UID, ADV_USER_GID, false },
	{ "user", "extc-adv-other", ADV_OTHER_UID, ADV_OTHER_GID, false },
};

static int run_quiet(const char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, 1);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return (-1);
	return (WEXITSTATUS(status));
}

static void drop_accounts(void)
{
	size_t i;

	for (i = sizeof(accounts) / sizeof(accounts[0]); i-- > 0;) {
		bool user = strcmp(accounts[i].kind, "user") == 0;
		/* -f: another suite may still run processes under the same uid */
		const char *del[] = { user ? "userdel" : "groupdel", user ? "-f" : accounts[i].name,
				      user ? accounts[i].name : NULL, NULL };

		if (accounts[i].made && run_quiet(del) == 0)
			accounts[i].made = false;
	}
}

/* Make the accounts that do not exist yet (removed at exit); -1 if one cannot be had. */
static int make_accounts(void)
{
	char id[16], gid[16], groups[64];
	size_t i;

	atexit(drop_accounts);
	for (i = 0; i < sizeof(accounts) / sizeof(accounts[0]); i++) {
		struct account *a = &accounts[i];
		bool user = strcmp(a->kind, "user") == 0;
		const char *add[] = { user ? "useradd" : "groupadd", user ? "-u" : "-g", id, NULL,
				      NULL, NULL, NULL, NULL, NULL };

		if (user ? getpwuid(a->id) != NULL : getgrgid(a->id) != NULL)
			continue;
		snprintf(id, sizeof(id), "%u", a->id);
		snprintf(gid, sizeof(gid), "%u", a->gid);
		snprintf(groups, sizeof(groups), "%u", SHARED_GID);
		if (user) {
			add[3] = "-g";
			add[4] = gid;
			add[5] = "-G";
			add[6] = groups;
			add[7] = a->name;
		} else {
			add[3] = a->name;
		}
		if (run_quiet(add) != 0) {
			fprintf(stderr, "test_adv_user: %s %s (id %u) could not be made\n", a->kind,
				a->name, a->id);
			return (-1);
		}
		a->made = true;
	}
	return (0);
}

static int user_teardown(void **state)
{
	const struct fsfx *fx = *state;

	fuseuser_detach_all(fx->root);
	return (adv_teardown(state));
}

#define USER_TEST(f) cmocka_unit_test_setup_teardown(f, adv_setup, user_teardown)

/* the accounts and fuse.conf every case needs, made once before the cases */
static int prepare_accounts_and_fuse(void)
{
	if (make_accounts() < 0)
		return (-1);
	if (fuseuser_allow_other() < 0) {
		fprintf(stderr, "test_adv_user: cannot add user_allow_other to /etc/fuse.conf: %s\n",
			strerror(errno));
		return (-1);
	}
	signal(SIGTERM, (void (*)(int))exit);
	return (0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		USER_TEST(test_fuse_on_the_job_leaf_next_step),
		USER_TEST(test_fuse_on_the_leaf_identity_check),
		USER_TEST(test_fuse_on_the_leaf_step_removal),
		USER_TEST(test_fuse_in_the_epilog_and_the_trash),
		USER_TEST(test_fuse_without_allow_other_is_a_mount_detached_never_kept),
		USER_TEST(test_busy_uid_level_never_blocks),
		USER_TEST(test_foreign_directory_moved_in),
		USER_TEST(test_stuck_helper_holds_no_descriptor),
	};

	return (TESTMAIN_ROOT_ONLY("adv_user", "FUSE as another user, other uids", tests,
				   prepare_accounts_and_fuse));
}
