/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: what only root can set up (security-cases.md
 * cases 1-7, 11, 12, 13, 22, 23, 35, 36, 50, 51): squatted, symlinked and
 * special-file levels, a second and a third uid, default ACLs, bind mounts
 * from the same and another filesystem, a read-only remount, hardlinks out
 * of the tree, the kernel's protected_* sysctls at 0 and at their maxima
 * (restored afterwards), and the engine on tmpfs, ext4, xfs, btrfs (with a
 * subvolume) and overlayfs on loop devices.
 *
 * Needs root; a missing mkfs tool fails the test with the package to install.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/btrfs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "advtree.h"
#include "fs/fs_remove.h"
#include "fusesrv.h"
#include "base/layout.h"
#include "pool/pool_evict.h"
#include "pool/pool_hold.h"
#include "testmain.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static int run_cmd(const char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return (-1);
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return (-1);
	return (WEXITSTATUS(status));
}

struct snap {
	char path[PATH_MAX];
	struct stat st;
	long entries;
};

static void snap_take(struct snap *s, const char *path)
{
	adv_fmt(s->path, sizeof(s->path), "%s", path);
	assert_int_equal(lstat(path, &s->st), 0);
	s->entries = S_ISDIR(s->st.st_mode) ? fsfx_count_entries_at(AT_FDCWD, path) : -1;
}

/* Neither replaced, chowned, chmodded, touched nor filled. */
static void snap_assert(const struct snap *s)
{
	struct stat st;

	assert_int_equal(lstat(s->path, &st), 0);
	if (st.st_ino != s->st.st_ino || st.st_uid != s->st.st_uid || st.st_gid != s->st.st_gid ||
	    st.st_mode != s->st.st_mode || st.st_mtim.tv_sec != s->st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != s->st.st_mtim.tv_nsec ||
	    (S_ISDIR(st.st_mode) && fsfx_count_entries_at(AT_FDCWD, s->path) != s->entries)) {
		print_error("%s changed: uid %u->%u mode %o->%o\n", s->path, (unsigned)s->st.st_uid,
			    (unsigned)st.st_uid, (unsigned)s->st.st_mode, (unsigned)st.st_mode);
		fail();
	}
}

static int try_create(struct adv_tree *t, enum extc_mode mode, char *why, size_t len)
{
	char leaf[PATH_MAX];
	int hold = -1, rv;

	hold = extc_tree_create(&t->tree, &t->ids, mode, leaf, sizeof(leaf), why, len);
	rv = hold >= 0 ? 0 : -1;
	if (rv == 0) {
		adv_fmt(t->leaf, sizeof(t->leaf), "%s", leaf);
		close(hold);
	}
	return (rv);
}

static void expect_refused(struct adv_tree *t, const char *reason)
{
	char why[1024];

	alarm(20);	/* a FIFO opened without O_NONBLOCK would hang here */
	assert_int_equal(try_create(t, EXTC_MODE_LOCAL, why, sizeof(why)), -1);
	alarm(0);
	fprintf(stderr, "#   refused: %s\n", why);
	assert_contains(why, reason);
}

static void check_dir_exact(const char *path, uid_t uid, mode_t mode)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, uid);
	assert_int_equal(st.st_mode & 07777, mode);
}

/* ---- sysctls: saved once, restored at exit whatever happens ------------------------------------- */

static const char *const protections[] = { "protected_symlinks", "protected_hardlinks",
					   "protected_regular", "protected_fifos" };
static const int protection_max[] = { 1, 1, 2, 2 };
static int saved_protection[4] = { -1, -1, -1, -1 };

static void restore_protections(void)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (saved_protection[i] >= 0)
			adv_sysctl_set(protections[i], saved_protection[i]);
	}
}

static void set_protections(bool on)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (saved_protection[i] < 0) {
			saved_protection[i] = adv_sysctl_get(protections[i]);
			assert_true(saved_protection[i] >= 0);
		}
		if (adv_sysctl_set(protections[i], on ? protection_max[i] : 0) < 0) {
			print_error("cannot set fs.%s (needs root and a writable /proc/sys)\n",
				    protections[i]);
			fail();
		}
	}
}

/* ---- case 1: a squatted base, checked on every use --------------------------------------------- */

static void test_squatted_base_every_variant(void **state)
{
	struct fsfx *fx = *state;
	static const struct {
		uid_t uid;
		mode_t mode;
		const char *reason;
	} squats[] = {
		{ ADV_USER_UID, 0755, "owned by uid 4242" },
		{ ADV_USER_UID, 0700, "owned by uid 4242" },
		{ ADV_USER_UID, 0777, "owned by uid 4242" },
		{ ADV_USER_UID, 01777, "owned by uid 4242" },
		{ ADV_USER_UID, 02755, "owned by uid 4242" },
		{ 0, 0777, "mode 0777" },
		{ 0, 0775, "mode 0775" },
		{ 0, 02773, "mode 2773" },
		{ 0, 01777, "mode 1777" },
		{ ADV_OTHER_UID, 0711, "owned by uid 4343" },
	};
	struct adv_tree t;
	struct extc_rm_report rep;
	char why[1024];
	size_t i;

	advtree_config(fx, &t, "base");
	for (i = 0; i < sizeof(squats) / sizeof(squats[0]); i++) {
		struct snap s;

		adv_mkdir(fx, "base", squats[i].mode, squats[i].uid, squats[i].uid);
		snap_take(&s, t.base);
		expect_refused(&t, squats[i].reason);
		assert_int_equal(extc_tree_prepare_base(&t.tree, why, sizeof(why)), -1);
		assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep,
						      why, sizeof(why)), -1);
		snap_assert(&s);	/* never chowned, chmodded or filled to "repair" it */
		assert_int_equal(rmdir(t.base), 0);
	}
	/* verified on every use, not only at slurmd start */
	advtree_create(fx, &t);
	advtree_release(&t);
	assert_int_equal(chown(t.base, ADV_USER_UID, ADV_USER_GID), 0);
	t.ids.stepid = 1;
	expect_refused(&t, "owned by uid 4242");
	assert_int_equal(chown(t.base, 0, 0), 0);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	adv_assert_no_fd_leak(fx);
}

/* ---- cases 2 and 50: symlinked base and levels, protected_symlinks 0 and 1 ----------------------- */

static void symlinked_levels(struct fsfx *fx)
{
	struct adv_sentinels sent;
	struct adv_tree t;
	const char *targets[6];
	char up[PATH_MAX], uidlvl[PATH_MAX], joblvl[PATH_MAX], userdir[PATH_MAX];
	size_t i;

	adv_sentinels_make(fx, &sent);
	adv_mkdir(fx, "userdir", 0777, ADV_USER_UID, ADV_USER_GID);
	adv_path(fx, userdir, "userdir");
	targets[0] = "/";
	targets[1] = sent.etc_dir;
	targets[2] = userdir;
	targets[3] = "/nonexistent/dangling";
	targets[4] = sent.other_dir;
	targets[5] = "loop";	/* relative: points at itself */
	advtree_config(fx, &t, "base");
	adv_fmt(uidlvl, sizeof(uidlvl), "%s/%u", t.base, ADV_USER_UID);
	adv_fmt(joblvl, sizeof(joblvl), "%s/%u/%u", t.base, ADV_USER_UID, ADV_JOBID);
	for (i = 0; i < 6; i++) {
		struct snap su;
		const char *tg = (i == 5) ? "base" : targets[i];

		snap_take(&su, userdir);
		/* the base itself */
		assert_int_equal(symlink(tg, t.base), 0);
		assert_int_equal(lchown(t.base, ADV_USER_UID, ADV_USER_GID), 0);
		expect_refused(&t, "is a symbolic link");
		assert_int_equal(unlink(t.base), 0);
		/* the uid level, then the job level, below a good base */
		advtree_create(fx, &t);
		advtree_release(&t);
		{
			struct extc_rm_report rep;
			char why[1024];

			assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID,
							      &rep, why, sizeof(why)), 0);
		}
		assert_int_equal(symlink(i == 5 ? adv_fmt(up, sizeof(up), "%u", ADV_USER_UID) : tg, uidlvl), 0);
		expect_refused(&t, "is a symbolic link");
		assert_int_equal(unlink(uidlvl), 0);
		assert_int_equal(mkdir(uidlvl, 0711), 0);
		assert_int_equal(chmod(uidlvl, 0711), 0);
		assert_int_equal(symlink(i == 5 ? "77" : tg, joblvl), 0);
		expect_refused(&t, "is a symbolic link");
		/* the epilog unlinks a symlinked job level, and only the link (case 35) */
		{
			struct extc_rm_report rep;
			char why[1024];

			assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID,
							      &rep, why, sizeof(why)), 0);
		}
		assert_false(fsfx_exists(joblvl));
		assert_false(fsfx_exists(uidlvl));
		snap_assert(&su);
		adv_sentinels_assert(&sent);
		assert_true(fsfx_exists(t.base));
		assert_int_equal(rmdir(t.base), 0);
	}
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

static void test_symlinked_levels_protected_symlinks_0(void **state)
{
	set_protections(false);
	symlinked_levels(*state);
	restore_protections();
}

static void test_symlinked_levels_protected_symlinks_1(void **state)
{
	set_protections(true);
	symlinked_levels(*state);
	restore_protections();
}

/* ---- case 22 (and 50): hardlinks to files outside the tree ------------------------------------------ */

struct link_arg {
	const char *target;
	const char *name;
};

static int user_links(void *p)
{
	struct link_arg *a = p;

	return (link(a->target, a->name) == 0 ? 0 : 1);
}

static void hardlinks(struct fsfx *fx, bool protected)
{
	struct adv_sentinels sent;
	struct extc_rm_report rep;
	struct adv_tree t;
	struct link_arg la;
	char name[PATH_MAX], why[1024];
	int rv;

	adv_sentinels_make(fx, &sent);
	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	/* made by root: links to a root file, another user's file and a file in /tmp */
	adv_fmt(name, sizeof(name), "%s/l-etc", t.leaf);
	assert_int_equal(link(sent.etc_file, name), 0);
	adv_fmt(name, sizeof(name), "%s/l-other", t.leaf);
	assert_int_equal(link(sent.other_file, name), 0);
	if (access("/tmp", F_OK) == 0 && link(sent.tmp_file, adv_fmt(name, sizeof(name), "%s/l-tmp", t.leaf)) == 0)
		fprintf(stderr, "#   /tmp is on the tree's filesystem: linked its sentinel too\n");
	/* made by the user: allowed only without protected_hardlinks */
	la.target = sent.etc_file;
	adv_fmt(name, sizeof(name), "%s/u-etc", t.leaf);
	la.name = name;
	rv = adv_run_as(ADV_USER_UID, ADV_USER_GID, user_links, &la);
	fprintf(stderr, "#   protected_hardlinks=%d: the user's link to a root file %s\n",
		protected ? 1 : 0, rv == 0 ? "was made" : "was refused");
	assert_int_equal(rv == 0, !protected);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	/* link counts are back, content, owner, mode and mtime unchanged */
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

static void test_hardlinks_out_protected_0(void **state)
{
	set_protections(false);
	hardlinks(*state, false);
	restore_protections();
}

static void test_hardlinks_out_protected_1(void **state)
{
	set_protections(true);
	hardlinks(*state, true);
	restore_protections();
}

/* ---- case 3: a level that is a file, FIFO, socket or device node ---------------------------------- */

static void make_special(const char *path, int kind)
{
	struct sockaddr_un sun;
	int s;

	switch (kind) {
	case 0:
		assert_int_equal(fsfx_write_at(AT_FDCWD, path, "x", 0644), 0);
		break;
	case 1:
		assert_int_equal(mkfifo(path, 0666), 0);
		break;
	case 2:
		assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0);
		break;
	case 3:
		assert_int_equal(mknod(path, S_IFBLK | 0600, makedev(7, 0)), 0);
		break;
	default:
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		assert_true(strlen(path) < sizeof(sun.sun_path));
		memcpy(sun.sun_path, path, strlen(path));
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_int_equal(bind(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
		close(s);
	}
}

static void test_levels_that_are_not_directories(void **state)
{
	struct fsfx *fx = *state;
	struct adv_tree t;
	char lvl[3][PATH_MAX];
	int kind, l;

	/* a short base: the socket's path must fit in sun_path */
	advtree_config(fx, &t, "b");
	adv_fmt(lvl[0], PATH_MAX, "%s", t.base);
	adv_fmt(lvl[1], PATH_MAX, "%s/%u", t.base, ADV_USER_UID);
	adv_fmt(lvl[2], PATH_MAX, "%s/%u/%u", t.base, ADV_USER_UID, ADV_JOBID);
	for (l = 0; l < 3; l++) {
		for (kind = 0; kind < 5; kind++) {
			struct snap s;

			if (l >= 1) {
				adv_mkdir(fx, "b", 0711, 0, 0);
				if (l == 2)
					adv_mkdir(fx, "b/4242", 0711, 0, 0);
			}
			make_special(lvl[l], kind);
			snap_take(&s, lvl[l]);
			expect_refused(&t, "is not a directory");
			snap_assert(&s);	/* not unlinked "to make room", not opened */
			assert_int_equal(unlink(lvl[l]), 0);
			if (l == 2)
				assert_int_equal(rmdir(lvl[1]), 0);
			if (l >= 1)
				assert_int_equal(rmdir(lvl[0]), 0);
		}
	}
	adv_assert_no_fd_leak(fx);
}

/* ---- case 4: a component above the base ---------------------------------------------------------- */

static void test_components_above_the_base(void **state)
{
	struct fsfx *fx = *state;
	struct adv_tree t;
	char why[1024], p[PATH_MAX];

	advtree_config(fx, &t, "parent/base");
	/* owned by a user: refused, whatever its mode */
	adv_mkdir(fx, "parent", 0755, ADV_USER_UID, ADV_USER_GID);
	expect_refused(&t, "must be root-owned");
	assert_false(fsfx_exists(t.base));
	/* root's, but writable by others without the sticky bit */
	assert_int_equal(chown(adv_path(fx, p, "parent"), 0, 0), 0);
	assert_int_equal(chmod(p, 0777), 0);
	expect_refused(&t, "not writable by others");
	assert_int_equal(chmod(p, 0775), 0);
	expect_refused(&t, "not writable by others");
	/* sticky and world-writable, as /tmp: accepted */
	assert_int_equal(chmod(p, 01777), 0);
	assert_int_equal(try_create(&t, EXTC_MODE_LOCAL, why, sizeof(why)), 0);
	check_dir_exact(t.base, 0, 0711);
	{
		struct extc_rm_report rep;

		assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep,
						      why, sizeof(why)), 0);
	}
	assert_int_equal(rmdir(t.base), 0);
	assert_int_equal(rmdir(p), 0);
	/* a symlink in the middle of the path (O_NOFOLLOW guards only the last component) */
	adv_mkdir(fx, "real", 0755, 0, 0);
	assert_int_equal(symlink("real", p), 0);
	expect_refused(&t, "is a symbolic link");
	assert_false(fsfx_exists(adv_path(fx, p, "real/base")));
	adv_assert_no_fd_leak(fx);
}

/* ---- case 5: the uid level planted -------------------------------------------------------------------- */

static void test_uid_level_planted(void **state)
{
	struct fsfx *fx = *state;
	struct adv_tree t;
	char uidlvl[PATH_MAX], p[PATH_MAX], why[1024];
	int variant;

	advtree_config(fx, &t, "base");
	assert_int_equal(extc_tree_prepare_base(&t.tree, why, sizeof(why)), 0);
	adv_fmt(uidlvl, sizeof(uidlvl), "%s/%u", t.base, ADV_USER_UID);
	adv_mkdir(fx, "userdir", 0755, ADV_USER_UID, ADV_USER_GID);
	for (variant = 0; variant < 7; variant++) {
		struct snap s;

		switch (variant) {
		case 0:
			assert_int_equal(symlink(adv_path(fx, p, "userdir"), uidlvl), 0);
			break;
		case 1:
			make_special(uidlvl, 0);
			break;
		case 2:	/* another user's directory */
			assert_int_equal(mkdir(uidlvl, 0755), 0);
			assert_int_equal(chown(uidlvl, ADV_OTHER_UID, ADV_OTHER_GID), 0);
			break;
		case 3:	/* the job user's own directory: planted, as the level is root's */
			assert_int_equal(mkdir(uidlvl, 0700), 0);
			assert_int_equal(chown(uidlvl, ADV_USER_UID, ADV_USER_GID), 0);
			break;
		case 4: /* root's, but group-writable */
			assert_int_equal(mkdir(uidlvl, 0770), 0);
			assert_int_equal(chmod(uidlvl, 0770), 0);
			break;
		default: /* root's and closed (a half-made level under umask 0777, an admin's chmod):
			    no job could pass through it, and the plugin does not repair it */
			assert_int_equal(mkdir(uidlvl, 0), 0);
			assert_int_equal(chmod(uidlvl, variant == 5 ? 0 : 0700), 0);
		}
		snap_take(&s, uidlvl);
		expect_refused(&t, variant == 0 ? "is a symbolic link" :
			       variant == 1 ? "is not a directory" :
			       variant <= 4 ? "refusing to use or repair it" :
			       "does not let users pass through it");
		snap_assert(&s);
		{
			struct snap u;

			snap_take(&u, adv_path(fx, p, "userdir"));
			snap_assert(&u);
		}
		if (variant <= 1)
			assert_int_equal(unlink(uidlvl), 0);
		else
			assert_int_equal(rmdir(uidlvl), 0);
	}
	adv_assert_no_fd_leak(fx);
}

/* ---- cases 6 and 7: job level and leaf pre-existing ---------------------------------------------- */

static void test_job_level_and_leaf_preexisting(void **state)
{
	struct fsfx *fx = *state;
	struct adv_sentinels sent;
	struct extc_rm_report rep;
	struct adv_tree t;
	char joblvl[PATH_MAX], leaf[PATH_MAX], p[PATH_MAX], why[1024];
	int lfd;

	adv_sentinels_make(fx, &sent);
	advtree_config(fx, &t, "base");
	assert_int_equal(extc_tree_prepare_base(&t.tree, why, sizeof(why)), 0);
	adv_fmt(joblvl, sizeof(joblvl), "%s/%u/%u", t.base, ADV_USER_UID, ADV_JOBID);
	adv_fmt(leaf, sizeof(leaf), "%s/0", joblvl);
	/* case 6: a job level planted by the user */
	adv_fmt(p, sizeof(p), "%s/%u", t.base, ADV_USER_UID);
	assert_int_equal(mkdir(p, 0711), 0);
	assert_int_equal(chmod(p, 0711), 0);
	assert_int_equal(mkdir(joblvl, 0755), 0);
	assert_int_equal(chown(joblvl, ADV_USER_UID, ADV_USER_GID), 0);
	expect_refused(&t, "owned by uid 4242");
	assert_int_equal(rmdir(joblvl), 0);
	/* case 6: a stale job tree of an earlier run of the same id (epilog never ran) */
	advtree_create(fx, &t);
	advtree_release(&t);
	lfd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(advtree_file(lfd, "old-run", "stale\n"), 0);
	close(lfd);
	advtree_create(fx, &t);	/* local mode: the stale leaf is replaced, never handed over */
	advtree_release(&t);
	assert_false(fsfx_exists(adv_fmt(p, sizeof(p), "%s/old-run", leaf)));
	check_dir_exact(leaf, ADV_USER_UID, 0700);
	/* case 7: the leaf is a symlink, a file, another user's directory */
	assert_int_equal(extc_tree_remove_leaf(&t.tree, &t.ids, EXTC_MODE_LOCAL, &rep, why,
					       sizeof(why)), 0);
	/* (only root can put them in the root-owned job level: refusing is the safe answer, and
	   the step's exit or the epilog unlinks them, never following them) */
	assert_int_equal(symlink(sent.other_dir, leaf), 0);
	expect_refused(&t, "is a symbolic link");
	assert_int_equal(extc_tree_remove_leaf(&t.tree, &t.ids, EXTC_MODE_LOCAL, &rep, why,
					       sizeof(why)), 0);
	assert_false(fsfx_exists(leaf));
	make_special(leaf, 1);
	expect_refused(&t, "is not a directory");
	assert_int_equal(extc_tree_remove_leaf(&t.tree, &t.ids, EXTC_MODE_LOCAL, &rep, why,
					       sizeof(why)), 0);
	advtree_create(fx, &t);
	advtree_release(&t);
	check_dir_exact(leaf, ADV_USER_UID, 0700);
	/* job mode: the user's leaf is the job's and is kept; another user's is replaced */
	adv_fmt(p, sizeof(p), "%s/job", joblvl);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chown(p, ADV_OTHER_UID, ADV_OTHER_GID), 0);
	assert_int_equal(try_create(&t, EXTC_MODE_JOB, why, sizeof(why)), 0);
	check_dir_exact(p, ADV_USER_UID, 0700);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 11: setgid and a default ACL on the base ---------------------------------------------- */

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

static int other_user_opens(void *p)
{
	int fd = open((const char *)p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return (0);
	}
	return (1);
}

static void test_setgid_and_default_acl_base(void **state)
{
	struct fsfx *fx = *state;
	struct adv_tree t;
	const char *made;
	struct {
		uint32_t version;
		struct acl_entry e[5];
	} acl = { 2, { { 0x01, 7, 0xffffffffu }, { 0x02, 7, ADV_OTHER_UID }, { 0x04, 1, 0xffffffffu },
		       { 0x10, 7, 0xffffffffu }, { 0x20, 1, 0xffffffffu } } };
	char why[1024], p[PATH_MAX];
	size_t i;

	advtree_config(fx, &t, "base");
	adv_mkdir(fx, "base", 02711, 0, 0);
	if (setxattr(t.base, "system.posix_acl_default", &acl, sizeof(acl), 0) < 0) {
		print_error("setting a default ACL on %s: %s\n", t.base, strerror(errno));
		fail();
	}
	assert_int_equal(try_create(&t, EXTC_MODE_LOCAL, why, sizeof(why)), 0);
	/* exact modes whatever the setgid bit and the ACL did */
	adv_fmt(p, sizeof(p), "%s/%u", t.base, ADV_USER_UID);
	check_dir_exact(p, 0, 0711);
	adv_fmt(p, sizeof(p), "%s/%u/%u", t.base, ADV_USER_UID, ADV_JOBID);
	check_dir_exact(p, 0, 0711);
	check_dir_exact(t.leaf, ADV_USER_UID, 0700);
	made = NULL;
	for (i = 0; i < t.cfg.nvars; i++) {
		if (!t.cfg.vars[i].make_dir)
			continue;
		adv_fmt(p, sizeof(p), "%s/%s", t.leaf, t.cfg.vars[i].subdir);
		check_dir_exact(p, ADV_USER_UID, 0700);
		made = t.cfg.vars[i].subdir;
	}
	/* the built-in list has one directory made with the leaf (torch's kernel cache) */
	assert_non_null(made);
	/* the user the default ACL names gets nothing in the leaf: the mask is --- */
	assert_int_equal(adv_run_as(ADV_OTHER_UID, ADV_OTHER_GID, other_user_opens, t.leaf), 1);
	adv_fmt(p, sizeof(p), "%s/%s", t.leaf, made);
	assert_int_equal(adv_run_as(ADV_OTHER_UID, ADV_OTHER_GID, other_user_opens, p), 1);
	assert_int_equal(adv_run_as(ADV_USER_UID, ADV_USER_GID, other_user_opens, p), 0);
	{
		struct extc_rm_report rep;

		assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep,
						      why, sizeof(why)), 0);
	}
	adv_assert_no_fd_leak(fx);
}

/* ---- case 13: a full and a read-only filesystem, for real --------------------------------------- */

static void test_read_only_and_full_filesystem(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	struct adv_tree t;
	char why[1024], p[PATH_MAX];

	adv_mkdir(fx, "fs", 0755, 0, 0);
	adv_mount_tmpfs(fx, "fs", "size=1m,nr_inodes=64,mode=0755");
	advtree_config(fx, &t, "fs/base");
	advtree_create(fx, &t);
	advtree_release(&t);
	/* read-only: the next step's create fails, clearly, and nothing is left */
	/* (strings rather than NULL: valgrind checks every pointer mount(2) takes) */
	assert_int_equal(mount("none", adv_path(fx, p, "fs"), "none",
			       MS_REMOUNT | MS_RDONLY | MS_BIND, ""), 0);
	t.ids.stepid = 1;
	assert_int_equal(try_create(&t, EXTC_MODE_LOCAL, why, sizeof(why)), -1);
	fprintf(stderr, "#   read-only: %s\n", why);
	assert_contains(why, "Read-only file system");
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), -1);
	assert_int_equal(rep.first_errno, EROFS);
	assert_int_equal(mount("none", p, "none", MS_REMOUNT | MS_BIND, ""), 0);
	/* no inodes left: the user filled them; the next create fails and leaves no leaf */
	{
		int lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		unsigned i;

		for (i = 0; i < 200; i++) {
			char n[16];

			adv_fmt(n, sizeof(n), "f%u", i);
			/* the user's, as a job fills its leaf: root enters only what the user owns */
			if (mkdirat(lfd, n, 0755) < 0 ||
			    fchownat(lfd, n, ADV_USER_UID, ADV_USER_GID, AT_SYMLINK_NOFOLLOW) < 0)
				break;
		}
		close(lfd);
	}
	t.ids.stepid = 2;
	assert_int_equal(try_create(&t, EXTC_MODE_LOCAL, why, sizeof(why)), -1);
	fprintf(stderr, "#   full: %s\n", why);
	assert_contains(why, "No space left on device");
	adv_fmt(p, sizeof(p), "%s/%u/%u/2", t.base, ADV_USER_UID, ADV_JOBID);
	assert_false(fsfx_exists(p));
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 23: mounts inside the tree --------------------------------------------------------------- */

static void test_mounts_inside_the_tree_are_left_alone(void **state)
{
	struct fsfx *fx = *state;
	struct adv_sentinels sent;
	struct fsfx_sentinel inner;
	struct extc_rm_report rep;
	struct adv_tree t;
	char p[PATH_MAX], q[PATH_MAX], why[1024];

	adv_sentinels_make(fx, &sent);
	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	/* same filesystem (same st_dev): a bind of the /etc-like directory */
	adv_fmt(p, sizeof(p), "%s/a/bind-same-fs", t.leaf);
	assert_int_equal(mkdir(adv_fmt(q, sizeof(q), "%s/a", t.leaf), 0755), 0);
	assert_int_equal(lchown(q, ADV_USER_UID, ADV_USER_GID), 0);	/* the user's, as in a job */
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(fsfx_bind(sent.etc_dir, p), 0);
	adv_note_mount(fx, p);
	/* another filesystem, with content of its own */
	adv_fmt(p, sizeof(p), "%s/a/tmpfs", t.leaf);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(fsfx_mount_tmpfs(p, "size=1m"), 0);
	adv_note_mount(fx, p);
	assert_int_equal(fsfx_sentinel_file(&inner, adv_fmt(q, sizeof(q), "%s/inside", p),
					      "on the tmpfs\n", 0644, 0, 0), 0);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), -1);
	fprintf(stderr, "#   %s\n", why);
	assert_int_equal(rep.mounts, 2);	/* reported, and left alone */
	assert_contains(why, "mount points left alone 2");
	adv_sentinels_assert(&sent);
	assert_true(fsfx_sentinel_intact(&inner));
	adv_fmt(p, sizeof(p), "%s/a/bind-same-fs/passwd", t.leaf);
	assert_true(fsfx_exists(p));
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 35 and 36: the top tampered with, wrong ids ------------------------------------------- */

static void test_top_tampered_and_wrong_ids(void **state)
{
	struct fsfx *fx = *state;
	struct adv_sentinels sent;
	struct extc_rm_report rep;
	struct adv_tree t;
	char uidlvl[PATH_MAX], p[PATH_MAX], why[1024];

	adv_sentinels_make(fx, &sent);
	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	adv_fmt(uidlvl, sizeof(uidlvl), "%s/%u", t.base, ADV_USER_UID);
	/* <jobid> missing: success */
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, 9999, &rep, why,
					      sizeof(why)), 0);
	/* <uid> swapped for a symlink to a directory holding a job id: refused, target kept */
		assert_int_equal(rename(uidlvl, adv_path(fx, p, "moved-uid")), 0);
	assert_int_equal(symlink(adv_path(fx, p, "moved-uid"), uidlvl), 0);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), -1);
	assert_contains(why, "is a symbolic link");
	assert_true(fsfx_exists(adv_fmt(p, sizeof(p), "%s/moved-uid/%u/0", fx->root, ADV_JOBID)));
	assert_int_equal(unlink(uidlvl), 0);
	assert_int_equal(rename(adv_path(fx, p, "moved-uid"), uidlvl), 0);
	/* uid 0, job 0, ids at or above NO_VAL: nothing is touched, not even a planted tree */
	adv_fmt(p, sizeof(p), "%s/0", t.base);
	assert_int_equal(mkdir(p, 0711), 0);
	assert_int_equal(mkdir(adv_fmt(p, sizeof(p), "%s/0/%u", t.base, ADV_JOBID), 0711), 0);
	assert_int_equal(extc_tree_remove_job(&t.tree, 0, ADV_JOBID, &rep, why, sizeof(why)), 0);
	assert_true(fsfx_exists(p));
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, 0, &rep, why, sizeof(why)),
			 0);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, 0xfffffffeu, &rep, why,
					      sizeof(why)), 0);
	assert_int_equal(extc_tree_remove_job(&t.tree, 0xfffffffeu, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	assert_true(fsfx_exists(t.leaf));
	/* the real job goes; the base stays */
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	assert_true(fsfx_exists(t.base));
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 51: filesystem types ---------------------------------------------------------------------- */

static void need_tool(const char *tool, const char *package)
{
	const char *argv[] = { "sh", "-c", NULL, NULL };
	char cmd[256];

	adv_fmt(cmd, sizeof(cmd), "command -v %s", tool);
	argv[2] = cmd;
	if (run_cmd(argv) != 0) {
		print_error("%s is missing: apt-get install %s (tests/run-hardening.sh does)\n", tool,
			    package);
		fail();
	}
}

/* A loop-mounted image of 'fstype' on <root>/fs. */
static void mount_image(struct fsfx *fx, const char *fstype, const char *mkfs,
			const char *package, const char *size)
{
	char img[PATH_MAX], mnt[PATH_MAX];
	const char *trunc[] = { "truncate", "-s", size, img, NULL };
	const char *mk[] = { mkfs, "-q", img, NULL, NULL };
	const char *mnt_argv[] = { "mount", "-t", fstype, "-o", "loop", img, mnt, NULL };

	need_tool(mkfs, package);
	adv_path(fx, img, "fs.img");
	adv_path(fx, mnt, "fs");
	adv_mkdir(fx, "fs", 0755, 0, 0);
	assert_int_equal(run_cmd(trunc), 0);
	if (strcmp(fstype, "btrfs") == 0)
		mk[1] = "-q";
	else if (strcmp(fstype, "xfs") == 0)
		mk[1] = "-q";
	if (run_cmd(mk) != 0) {
		print_error("%s %s failed\n", mkfs, img);
		fail();
	}
	if (run_cmd(mnt_argv) != 0) {
		print_error("mount -t %s -o loop %s %s failed (loop devices and root needed)\n",
			    fstype, img, mnt);
		fail();
	}
	adv_note_mount(fx, mnt);
	assert_int_equal(chmod(mnt, 0755), 0);
}

static int chain_as_user(void *arg)
{
	return (fsfx_chain_at(*(const int *)arg, "deep", "d", 500, "leaf"));
}

static void exercise_fs(struct fsfx *fx, const char *what)
{
	struct adv_sentinels sent;
	struct extc_rm_report rep;
	struct adv_tree t;
	char why[1024];
	int lfd, dfd;

	adv_sentinels_make(fx, &sent);
	advtree_config(fx, &t, "fs/base");
	advtree_create(fx, &t);
	advtree_release(&t);
	lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(lfd >= 0);
	assert_int_equal(advtree_fill(lfd, 2000), 0);
	/* made by the user: root enters only what the user owns */
	assert_int_equal(adv_run_as(ADV_USER_UID, ADV_USER_GID, chain_as_user, &lfd), 0);
	assert_int_equal(advtree_symlink(sent.etc_dir, lfd, "to-etc"), 0);
	assert_int_equal(advtree_symlink(sent.other_file, lfd, "to-other"), 0);
	assert_int_equal(linkat(lfd, "fill0", lfd, "hardlink", 0), 0);
	assert_int_equal(advtree_dir(lfd, "locked"), 0);
	dfd = openat(lfd, "locked", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(advtree_file(dfd, "secret", "s"), 0);
	assert_int_equal(fchmod(dfd, 0), 0);
	close(dfd);
	close(lfd);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	fprintf(stderr, "#   %s: created, filled and removed %llu entries\n", what,
		(unsigned long long)rep.removed);
	assert_false(fsfx_exists(t.leaf));
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
}

static void test_fs_tmpfs(void **state)
{
	struct fsfx *fx = *state;

	adv_mkdir(fx, "fs", 0755, 0, 0);
	adv_mount_tmpfs(fx, "fs", "size=64m,mode=0755");
	exercise_fs(fx, "tmpfs");
	adv_assert_no_fd_leak(fx);
}

static void test_fs_ext4(void **state)
{
	mount_image(*state, "ext4", "mkfs.ext4", "e2fsprogs", "64M");
	exercise_fs(*state, "ext4");
	adv_assert_no_fd_leak(*state);
}

static void test_fs_xfs(void **state)
{
	mount_image(*state, "xfs", "mkfs.xfs", "xfsprogs", "320M");
	exercise_fs(*state, "xfs");
	adv_assert_no_fd_leak(*state);
}

static void test_fs_btrfs_with_a_subvolume(void **state)
{
	struct fsfx *fx = *state;
	struct btrfs_ioctl_vol_args args;
	struct extc_rm_report rep;
	struct adv_tree t;
	struct stat st, lst;
	char why[1024], p[PATH_MAX];
	int lfd;

	mount_image(fx, "btrfs", "mkfs.btrfs", "btrfs-progs", "256M");
	exercise_fs(fx, "btrfs");
	/* a subvolume made by the user inside the leaf: own st_dev, same mount */
	advtree_config(fx, &t, "fs/base");
	advtree_create(fx, &t);
	advtree_release(&t);
	lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	memset(&args, 0, sizeof(args));
	adv_fmt(args.name, sizeof(args.name), "subvol");
	assert_int_equal(ioctl(lfd, BTRFS_IOC_SUBVOL_CREATE, &args), 0);
	assert_int_equal(fstatat(lfd, "subvol", &st, 0), 0);
	assert_int_equal(fstat(lfd, &lst), 0);
	fprintf(stderr, "#   btrfs subvolume: st_dev %u:%u, its parent %u:%u\n", major(st.st_dev),
		minor(st.st_dev), major(lst.st_dev), minor(lst.st_dev));
	assert_int_equal(fchownat(lfd, "subvol", ADV_USER_UID, ADV_USER_GID, 0), 0);
	adv_fmt(p, sizeof(p), "%s/subvol", t.leaf);
	assert_int_equal(fsfx_write_at(AT_FDCWD, adv_fmt(p, sizeof(p), "%s/subvol/data", t.leaf),
					 "x", 0644), 0);
	close(lfd);
	/*
	 * The walk sees a different st_dev and treats the subvolume as a mount point:
	 * it is left, counted and reported (safe; the user can pin a tree this way).
	 */
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), -1);
	fprintf(stderr, "#   btrfs subvolume in the leaf: %s\n", why);
	assert_int_equal(rep.mounts, 1);
	assert_true(fsfx_exists(p));
	adv_assert_no_fd_leak(fx);
}

static void test_fs_overlayfs(void **state)
{
	struct fsfx *fx = *state;
	char opts[3 * PATH_MAX + 64], lower[PATH_MAX], upper[PATH_MAX], work[PATH_MAX], mnt[PATH_MAX];

	adv_mkdir(fx, "lower", 0755, 0, 0);
	adv_mkdir(fx, "upper", 0755, 0, 0);
	adv_mkdir(fx, "work", 0755, 0, 0);
	adv_mkdir(fx, "fs", 0755, 0, 0);
	/* a base that already exists in the lower layer, as an image would ship it */
	adv_mkdir(fx, "lower/base", 0711, 0, 0);
	adv_fmt(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", adv_path(fx, lower, "lower"),
		adv_path(fx, upper, "upper"), adv_path(fx, work, "work"));
	if (mount("overlay", adv_path(fx, mnt, "fs"), "overlay", 0, opts) < 0) {
		print_error("mount -t overlay: %s\n", strerror(errno));
		fail();
	}
	adv_note_mount(fx, mnt);
	exercise_fs(fx, "overlayfs");
	adv_assert_no_fd_leak(fx);
}

/* ---- case 50: the protections at 0 and at their maxima while the race runs ---------------------- */

struct swap_arg {
	char a[PATH_MAX], b[PATH_MAX];
};

static bool attack_swap(void *p)
{
	struct swap_arg *s = p;

	return (renameat2(AT_FDCWD, s->a, AT_FDCWD, s->b, RENAME_EXCHANGE) == 0);
}

static void swap_under_protections(struct fsfx *fx, bool on)
{
	struct adv_sentinels sent;
	struct adv_attacker att;
	struct swap_arg arg;
	struct adv_tree t;
	unsigned long i, n = adv_scaled(300), swaps;
	char why[1024];

	set_protections(on);
	adv_sentinels_make(fx, &sent);
	advtree_config(fx, &t, "base");
	adv_fmt(arg.a, sizeof(arg.a), "%s/%u/%u/0/d", t.base, ADV_USER_UID, ADV_JOBID);
	adv_fmt(arg.b, sizeof(arg.b), "%s/%u/%u/0/l", t.base, ADV_USER_UID, ADV_JOBID);
	adv_attacker_start(&att, attack_swap, &arg, ADV_USER_UID, ADV_USER_GID);
	for (i = 0; i < n; i++) {
		struct extc_rm_report rep;
		int lfd, dfd;

		if (try_create(&t, EXTC_MODE_LOCAL, why, sizeof(why)) == 0) {
			lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			advtree_fill(lfd, 100);
			advtree_dir(lfd, "d");
			dfd = openat(lfd, "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (dfd >= 0) {
				advtree_fill(dfd, 20);
				close(dfd);
			}
			advtree_symlink(i & 1 ? sent.etc_dir : sent.other_dir, lfd, "l");
			close(lfd);
		}
		extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why, sizeof(why));
		adv_sentinels_assert(&sent);
	}
	swaps = adv_attacker_stop(&att);
	restore_protections();
	{
		struct extc_rm_report rep;

		assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep,
						      why, sizeof(why)), 0);
	}
	fprintf(stderr, "#   protections %s: %lu iterations, %lu swaps, sentinels intact\n",
		on ? "at their maxima" : "all 0", n, swaps);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

static void test_swap_race_protections_off(void **state)
{
	swap_under_protections(*state, false);
}

static void test_swap_race_protections_on(void **state)
{
	swap_under_protections(*state, true);
}

/* ---- cases 12 and 24: FUSE (a minimal daemon on /dev/fuse) -------------------------------------- */

static void start_fuse(struct fsfx *fx, struct fusesrv *srv, const char *mnt, bool hang)
{
	if (fusesrv_start(srv, mnt, hang) < 0) {
		print_error("mounting a FUSE filesystem on %s: %s (/dev/fuse and root needed)\n", mnt,
			    strerror(errno));
		fail();
	}
	(void)fx;
}

static void test_base_on_fuse_is_refused(void **state)
{
	struct fsfx *fx = *state;
	struct fusesrv srv;
	struct adv_tree t;
	char mnt[PATH_MAX];

	adv_mkdir(fx, "fs", 0755, 0, 0);
	start_fuse(fx, &srv, adv_path(fx, mnt, "fs"), false);
	advtree_config(fx, &t, "fs");
	expect_refused(&t, "is on fuse, a network or cluster filesystem");
	fusesrv_stop(&srv);
	adv_assert_no_fd_leak(fx);
}

static void unblock_fusesrv(void *srv)
{
	fusesrv_stop(srv);
}

/* fn(arg) as root in a child, which may block in a FUSE request: killed after 'limit' seconds. */
static int root_in_child(int (*fn)(void *), void *arg, struct fusesrv *srv, double limit,
			 double *took, bool *blocked)
{
	struct adv_bounded b;

	adv_run_bounded(fn, arg, limit, unblock_fusesrv, srv, &b);
	*took = b.took;
	*blocked = b.blocked;
	return (b.status);
}

static int remove_job(void *arg)
{
	struct adv_tree *t = arg;
	struct extc_rm_report rep;
	char why[1024];
	int rv = extc_tree_remove_job(&t->tree, ADV_USER_UID, ADV_JOBID, &rep, why, sizeof(why));

	fprintf(stderr, "#   removal: %s\n", rv == 0 ? "complete" : why);
	return (rv == 0 ? 0 : 1);
}

static int remove_in_child(struct adv_tree *t, struct fusesrv *srv, double limit, double *took,
			   bool *blocked)
{
	return (root_in_child(remove_job, t, srv, limit, took, blocked));
}

static void fuse_inside(struct fsfx *fx, bool hang)
{
	struct adv_sentinels sent;
	struct fusesrv srv;
	struct adv_tree t;
	char mnt[PATH_MAX];
	double took;
	bool blocked;
	int rv;

	adv_sentinels_make(fx, &sent);
	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	adv_fmt(mnt, sizeof(mnt), "%s/fusemnt", t.leaf);
	assert_int_equal(mkdir(mnt, 0755), 0);
	assert_int_equal(chown(mnt, ADV_USER_UID, ADV_USER_GID), 0);
	start_fuse(fx, &srv, mnt, hang);
	rv = remove_in_child(&t, &srv, 10.0, &took, &blocked);
	fusesrv_stop(&srv);
	fprintf(stderr, "#   FUSE daemon %s: the removal %s after %.1f s\n",
		hang ? "that never answers OPENDIR" : "that answers",
		blocked ? "was still blocked (killed)" : "returned", took);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	if (blocked) {
		print_error("ENGINE BUG: a FUSE mount point inside the tree blocked the removal: "
			    "the walk opens an entry before checking whether it is a mount point\n");
		fail();
	}
	assert_int_equal(rv, 1);	/* the mount point is left and reported */
	{
		struct extc_rm_report rep;
		char why[1024];

		assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep,
						      why, sizeof(why)), 0);
	}
	adv_assert_no_fd_leak(fx);
}

static void test_fuse_mount_inside_the_tree(void **state)
{
	fuse_inside(*state, false);
}

static void test_fuse_daemon_that_never_answers(void **state)
{
	fuse_inside(*state, true);
}

/* ---- the node pool: a key is the user's, its level root's ---- */

#define POOL_KEY "0123456789abcdef0123456789abcdef"

struct pool_case {
	struct adv_tree t;
	char pool_uid[PATH_MAX];	/* <base>/.pool/4242 */
	char key[PATH_MAX];		/* its key directory */
};

static void pool_case_make(struct fsfx *fx, struct pool_case *c)
{
	struct extc_pool_hold h;
	char why[1024];

	advtree_config(fx, &c->t, "base");
	c->t.cfg.pool = true;
	assert_int_equal(extc_tree_prepare_base(&c->t.tree, why, sizeof(why)), 0);
	assert_int_equal(extc_pool_hold(&c->t.tree, &c->t.ids, POOL_KEY, &h, why,
					sizeof(why)), EXTC_POOL_HELD);
	extc_pool_hold_release(&h);
	adv_fmt(c->pool_uid, sizeof(c->pool_uid), "%s/.pool/%u", c->t.base, (unsigned)ADV_USER_UID);
	adv_fmt(c->key, sizeof(c->key), "%s/%s", c->pool_uid, POOL_KEY);
}

/* A step's hold: 0 when refused because the key directory is a mount point. */
static int pool_hold_refuses_mount(void *arg)
{
	struct pool_case *c = arg;
	struct extc_pool_hold h;
	char why[1024];

	if (extc_pool_hold(&c->t.tree, &c->t.ids, POOL_KEY, &h, why, sizeof(why)) ==
	    EXTC_POOL_HELD)
		return (7);
	fprintf(stderr, "#   hold refused: %s\n", why);
	return (strstr(why, "is a mount point") != NULL ? 0 : 6);
}

/* An eviction pass a year on: 0 when the key could not be moved and nothing else happened. */
static int pool_evict_leaves_mount(void *arg)
{
	struct pool_case *c = arg;
	struct extc_pool_evict_report rep;
	char why[1024];

	if (extc_pool_evict(&c->t.tree, (int64_t)time(NULL) + 365 * 86400, &rep, why,
			    sizeof(why)) < 0)
		return (9);
	fprintf(stderr, "#   eviction: %u keys, %u evicted, %u could not be\n", rep.keys,
		rep.evicted, rep.failed);
	return (rep.failed == 1 && rep.evicted == 0 ? 0 : 8);
}

/*
 * Case 60: a FUSE filesystem whose daemon answers nothing but INIT, mounted
 * by the user on its own key directory: the next step's hold refuses the
 * key (seen from memory, never asked), and the eviction pass cannot rename
 * a mount point, so the key stays, reported; neither waits.
 */
static void test_pool_fuse_on_a_key_blocks_no_hold_and_no_eviction(void **state)
{
	struct fsfx *fx = *state;
	struct adv_sentinels sent;
	struct pool_case c;
	struct fusesrv srv;
	bool blocked;
	double took;

	adv_sentinels_make(fx, &sent);
	pool_case_make(fx, &c);
	start_fuse(fx, &srv, c.key, true);
	assert_int_equal(root_in_child(pool_hold_refuses_mount, &c, &srv, 10.0, &took, &blocked), 0);
	assert_false(blocked);
	assert_int_equal(root_in_child(pool_evict_leaves_mount, &c, &srv, 10.0, &took, &blocked), 0);
	assert_false(blocked);
	fusesrv_stop(&srv);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

/* Case 61: the user's pool level replaced by a link (a corrupted tree): refused, never followed. */
static void test_pool_linked_level_is_refused_and_never_followed(void **state)
{
	struct fsfx *fx = *state;
	struct extc_pool_evict_report rep;
	struct adv_sentinels sent;
	struct extc_pool_hold h;
	struct pool_case c;
	char moved[PATH_MAX], why[1024];

	adv_sentinels_make(fx, &sent);
	pool_case_make(fx, &c);
	adv_fmt(moved, sizeof(moved), "%s.away", c.pool_uid);
	assert_int_equal(rename(c.pool_uid, moved), 0);
	assert_int_equal(symlink(sent.etc_dir, c.pool_uid), 0);
	assert_int_equal(extc_pool_hold(&c.t.tree, &c.t.ids, POOL_KEY, &h, why, sizeof(why)),
			 EXTC_POOL_REFUSED);
	assert_non_null(strstr(why, "symbolic link"));
	assert_int_equal(extc_pool_evict(&c.t.tree, (int64_t)time(NULL) + 365 * 86400, &rep,
					 why, sizeof(why)), 0);
	assert_int_equal(rep.evicted, 0);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

static int root_teardown(void **state)
{
	restore_protections();
	return (adv_teardown(state));
}

/* the sysctls a case changed are put back however the program ends */
static int protect_until_exit(void)
{
	atexit(restore_protections);
	signal(SIGTERM, (void (*)(int))exit);
	return (0);
}

#define ROOT_TEST(f) cmocka_unit_test_setup_teardown(f, adv_setup, root_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		ROOT_TEST(test_squatted_base_every_variant),
		ROOT_TEST(test_symlinked_levels_protected_symlinks_0),
		ROOT_TEST(test_symlinked_levels_protected_symlinks_1),
		ROOT_TEST(test_hardlinks_out_protected_0),
		ROOT_TEST(test_hardlinks_out_protected_1),
		ROOT_TEST(test_levels_that_are_not_directories),
		ROOT_TEST(test_components_above_the_base),
		ROOT_TEST(test_uid_level_planted),
		ROOT_TEST(test_job_level_and_leaf_preexisting),
		ROOT_TEST(test_setgid_and_default_acl_base),
		ROOT_TEST(test_read_only_and_full_filesystem),
		ROOT_TEST(test_mounts_inside_the_tree_are_left_alone),
		ROOT_TEST(test_top_tampered_and_wrong_ids),
		ROOT_TEST(test_fs_tmpfs),
		ROOT_TEST(test_fs_ext4),
		ROOT_TEST(test_fs_xfs),
		ROOT_TEST(test_fs_btrfs_with_a_subvolume),
		ROOT_TEST(test_fs_overlayfs),
		ROOT_TEST(test_base_on_fuse_is_refused),
		ROOT_TEST(test_fuse_mount_inside_the_tree),
		ROOT_TEST(test_fuse_daemon_that_never_answers),
		ROOT_TEST(test_pool_fuse_on_a_key_blocks_no_hold_and_no_eviction),
		ROOT_TEST(test_pool_linked_level_is_refused_and_never_followed),
		ROOT_TEST(test_swap_race_protections_off),
		ROOT_TEST(test_swap_race_protections_on),
	};
	int rv;

	rv = TESTMAIN_ROOT_ONLY("adv_root", "mounts, sysctls, other uids", tests,
				protect_until_exit);
	restore_protections();
	return (rv);
}
