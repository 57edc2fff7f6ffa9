/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: fs_tree.h (<base>[/<node>]/<uid>/<job>/<leaf>, made and
 * removed as root). Real directories below a fresh mkdtemp(); needs root (the leaf is
 * handed to uid 4242, squatted levels belong to other uids, tmpfs is mounted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/config.h"
#include "fs/fs_ident.h"
#include "fs/fs_stamp.h"
#include "fs/fs_remove.h"
#include "fs/fs_sweep.h"
#include "fs/fs_trash.h"
#include "fs/fs_tree.h"
#include "fsfixture.h"
#include "base/layout.h"
#include "strassert.h"
#include "testmain.h"

#define USER_UID 4242
#define USER_GID 4242
#define OTHER_UID 4343
#define JOBID 77

/* Format a path into a PATH_MAX buffer; a test bug if it does not fit. */
static void pathf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pathf(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && n < PATH_MAX);
}

struct fx {
	struct fsfx fs;		/* root, descriptor count, mounts */
	char base[PATH_MAX];
	mode_t umask;
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_tree tree;	/* cfg and pol */
	struct extc_ids ids;
};

static void make_cfg(struct fx *fx, const char *base, const char *vars)
{
	char base_arg[PATH_MAX + 8], vars_arg[256], why[512];
	char *av[2];
	int ac = 0;

	snprintf(base_arg, sizeof(base_arg), "base=%s", base);
	av[ac++] = base_arg;
	if (vars != NULL) {
		snprintf(vars_arg, sizeof(vars_arg), "vars=%s", vars);
		av[ac++] = vars_arg;
	}
	if (extc_config_parse(&fx->cfg, ac, av, why, sizeof(why)) != 0) {
		print_error("config: %s\n", why);
		fail();
	}
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char why[512];
	char *av[2];

	*state = fx;
	if (fx == NULL || fsfx_setup(&fx->fs, 0700) < 0)
		return (-1);
	fsfx_join(fx->base, sizeof(fx->base), fx->fs.root, "base");
	/* base=<root>/base vars=A:a,B:b; tests that need more make their own */
	{
		char base_arg[PATH_MAX + 8];

		snprintf(base_arg, sizeof(base_arg), "base=%s", fx->base);
		av[0] = base_arg;
		av[1] = (char *)"vars=A:a,B:b";
		if (extc_config_parse(&fx->cfg, 2, av, why, sizeof(why)) != 0)
			return (-1);
	}
	fx->pol.owner = 0;
	fx->pol.owner_gid = 0;
	fx->pol.node_name = NULL;
	fx->pol.rm_limits = NULL;
	fx->tree = (struct extc_tree){ &fx->cfg, &fx->pol };
	fx->ids.uid = USER_UID;
	fx->ids.gid = USER_GID;
	fx->ids.jobid = JOBID;
	fx->ids.stepid = 0;
	fx->umask = umask(022);
	umask(fx->umask);
	fx->fs.fds = fsfx_fd_count();
	*state = fx;
	return (0);
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	int rv;

	umask(fx->umask);
	rv = fsfx_teardown(&fx->fs);
	free(fx);
	return (rv);
}

static const char *path_of(struct fx *fx, char *buf, const char *rel)
{
	return (fsfx_path(&fx->fs, buf, rel));
}

/* ---- calls, each checked for a descriptor leak ------------------------------------------------ */

static void assert_no_fd_leak(struct fx *fx)
{
	assert_int_equal(fsfx_fd_count(), fx->fs.fds);
}

/*
 * What a successful create hands back besides the path: the job level,
 * open close-on-exec and locked shared (a sweep cannot take it), one
 * descriptor more than before the call.
 */
static void check_hold(struct fx *fx, int hold, const char *leaf)
{
	char job[PATH_MAX];
	struct stat held, st;
	int other;

	assert_true(hold >= 0);
	assert_int_equal(fsfx_fd_count(), fx->fs.fds + 1);
	assert_true((fcntl(hold, F_GETFD) & FD_CLOEXEC) != 0);
	pathf(job, "%s", leaf);
	*strrchr(job, '/') = '\0';
	assert_int_equal(fstat(hold, &held), 0);
	assert_int_equal(lstat(job, &st), 0);
	assert_int_equal(held.st_dev, st.st_dev);
	assert_int_equal(held.st_ino, st.st_ino);
	other = open(job, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), -1);
	assert_int_equal(errno, EWOULDBLOCK);
	assert_int_equal(flock(other, LOCK_SH | LOCK_NB), 0);	/* other steps may hold it too */
	close(other);
}

/* Create; on success the hold descriptor is checked and returned in *hold (or closed). */
static int create_hold(struct fx *fx, const struct extc_ids *ids, enum extc_mode mode, char *leaf,
		       char *why, int *hold)
{
	int fd;
	int rv;

	leaf[0] = why[0] = '\0';
	fd = extc_tree_create(&fx->tree, ids, mode, leaf, PATH_MAX, why, 1024);
	rv = fd >= 0 ? 0 : -1;
	if (rv == 0) {
		check_hold(fx, fd, leaf);
		if (hold != NULL) {
			*hold = fd;
			return (rv);
		}
		close(fd);
	} else {
		assert_int_equal(fd, -1);	/* nothing handed back on failure */
	}
	assert_no_fd_leak(fx);
	return (rv);
}

static int create(struct fx *fx, const struct extc_ids *ids, enum extc_mode mode, char *leaf,
		  char *why)
{
	return (create_hold(fx, ids, mode, leaf, why, NULL));
}

/* Create and require success. */
static void create_ok(struct fx *fx, const struct extc_ids *ids, enum extc_mode mode, char *leaf)
{
	char why[1024];

	if (create(fx, ids, mode, leaf, why) != 0) {
		print_error("extc_tree_create: %s\n", why);
		fail();
	}
}

static int remove_leaf(struct fx *fx, const struct extc_ids *ids, enum extc_mode mode,
		       struct extc_rm_report *rep, char *why)
{
	int rv;

	why[0] = '\0';
	rv = extc_tree_remove_leaf(&fx->tree, ids, mode, rep, why, 1024);
	assert_no_fd_leak(fx);
	return (rv);
}

static int remove_job(struct fx *fx, uid_t uid, uint32_t jobid, struct extc_rm_report *rep,
		      char *why)
{
	int rv;

	why[0] = '\0';
	memset(rep, 0x5a, sizeof(*rep));
	rv = extc_tree_remove_job(&fx->tree, uid, jobid, rep, why, 1024);
	assert_no_fd_leak(fx);
	return (rv);
}

static int prepare_base(struct fx *fx, char *why)
{
	int rv;

	why[0] = '\0';
	rv = extc_tree_prepare_base(&fx->tree, why, 1024);
	assert_no_fd_leak(fx);
	return (rv);
}

/* ---- checks ------------------------------------------------------------------------------------------- */

static void check_dir(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		print_error("%s: %s\n", path, strerror(errno));
		fail();
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != uid || st.st_gid != gid ||
	    (st.st_mode & 07777) != mode) {
		print_error("%s: mode %04o owner %u:%u, expected a directory %04o %u:%u\n", path,
			    (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
			    (unsigned)st.st_gid, (unsigned)mode, (unsigned)uid, (unsigned)gid);
		fail();
	}
}

/*
 * The whole documented layout of one leaf: skeleton root 0711, leaf the
 * user's 0700 holding exactly the directories of the variables with
 * make_dir (the user's 0700 too); the others are left to their tools.
 */
static void check_tree(struct fx *fx, const char *leaf, const char *node, const char *job,
		       const char *leafname)
{
	char want[PATH_MAX], p[PATH_MAX];
	long made = 0;
	size_t i;

	if (node != NULL)
		pathf(want, "%s/%s/%u/%s/%s", fx->base, node, USER_UID, job, leafname);
	else
		pathf(want, "%s/%u/%s/%s", fx->base, USER_UID, job, leafname);
	assert_string_equal(leaf, want);

	check_dir(fx->base, 0, 0, 0711);
	if (node != NULL) {
		pathf(p, "%s/%s", fx->base, node);
		check_dir(p, 0, 0, 0711);
		pathf(p, "%s/%s/%u", fx->base, node, USER_UID);
	} else {
		pathf(p, "%s/%u", fx->base, USER_UID);
	}
	check_dir(p, 0, 0, 0711);
	strcat(p, "/");
	strcat(p, job);
	check_dir(p, 0, 0, 0711);
	check_dir(leaf, USER_UID, USER_GID, 0700);
	for (i = 0; i < fx->cfg.nvars; i++) {
		pathf(p, "%s/%s", leaf, fx->cfg.vars[i].subdir);
		if (fx->cfg.vars[i].make_dir) {
			check_dir(p, USER_UID, USER_GID, 0700);
			made++;
		} else if (fsfx_exists(p)) {
			print_error("%s exists; its tool makes it\n", p);
			fail();
		}
	}
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, leaf), made);
}

static void put_file(const char *dir, const char *name, uid_t uid)
{
	char p[PATH_MAX];

	fsfx_join(p, sizeof(p), dir, name);
	assert_int_equal(fsfx_write_at(AT_FDCWD, p, "user data\n", 0600), 0);
	assert_int_equal(lchown(p, uid, uid), 0);
}

static void make_dir(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(lchown(path, uid, gid), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* A squatted level must be left exactly as it was. */
struct snapshot {
	char path[PATH_MAX];
	struct stat st;
	long entries;
};

static void snap(struct snapshot *s, const char *path)
{
	snprintf(s->path, sizeof(s->path), "%s", path);
	assert_int_equal(lstat(path, &s->st), 0);
	s->entries = S_ISDIR(s->st.st_mode) ? fsfx_count_entries_at(AT_FDCWD, path) : 0;
}

static void assert_unchanged(const struct snapshot *s)
{
	struct stat st;

	assert_int_equal(lstat(s->path, &st), 0);
	assert_int_equal(st.st_ino, s->st.st_ino);
	assert_int_equal(st.st_mode, s->st.st_mode);
	assert_int_equal(st.st_uid, s->st.st_uid);
	assert_int_equal(st.st_gid, s->st.st_gid);
	assert_int_equal(st.st_mtim.tv_sec, s->st.st_mtim.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, s->st.st_mtim.tv_nsec);
	if (S_ISDIR(st.st_mode))
		assert_int_equal(fsfx_count_entries_at(AT_FDCWD, s->path), s->entries);
}

/* ---- creation: layout, owners and modes -------------------------------------------------------------- */

static void test_create_local_layout_any_umask(void **state)
{
	static const mode_t masks[] = { 0, 0777, 022, 0277 };
	struct fx *fx = *state;
	size_t i;

	for (i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		struct extc_ids ids = fx->ids;
		char leaf[PATH_MAX], job[16];

		ids.jobid = JOBID + (uint32_t)i;
		umask(masks[i]);
		create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
		umask(fx->umask);
		snprintf(job, sizeof(job), "%u", ids.jobid);
		check_tree(fx, leaf, NULL, job, "0");
	}
}

/* With the built-in list the leaf holds torch_kernels alone (docs/cache-dirs.md). */
static void test_create_builtin_vars(void **state)
{
	struct fx *fx = *state;
	const struct extc_var *builtin;
	struct extc_rm_report rep;
	char leaf[PATH_MAX], p[PATH_MAX], why[1024];
	size_t n;

	make_cfg(fx, fx->base, NULL);
	n = extc_vars_builtin(&builtin);
	assert_int_equal(fx->cfg.nvars, n);
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "0");
	fsfx_join(p, sizeof(p), leaf, "torch_kernels");
	check_dir(p, USER_UID, USER_GID, 0700);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, leaf), 1);
	fsfx_join(p, sizeof(p), leaf, "torch_extensions");
	assert_false(fsfx_exists(p));

	assert_int_equal(remove_leaf(fx, &fx->ids, EXTC_MODE_LOCAL, &rep, why), 0);
	assert_int_equal(rep.removed, 2);	/* leaf, torch_kernels */
	assert_false(fsfx_exists(leaf));
}

/*
 * vars= naming built-ins and tools the plugin does not know: the unknown
 * ones get their directory, the built-ins keep their own flag whatever
 * subdirectory the admin gives them.
 */
static void test_create_admin_vars(void **state)
{
	static const char *const made[] = { "kernels", "mytool_cache", "other" };
	static const char *const left[] = { "torch_extensions", "nb" };
	struct fx *fx = *state;
	char leaf[PATH_MAX], p[PATH_MAX];
	size_t i;

	make_cfg(fx, fx->base,
		 "TORCH_EXTENSIONS_DIR,PYTORCH_KERNEL_CACHE_PATH:kernels,MYTOOL_CACHE,"
		 "NUMBA_CACHE_DIR:nb,OTHER_JIT:other");
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "0");
	for (i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		fsfx_join(p, sizeof(p), leaf, made[i]);
		check_dir(p, USER_UID, USER_GID, 0700);
	}
	for (i = 0; i < sizeof(left) / sizeof(left[0]); i++)
		assert_false(fsfx_exists(fsfx_join(p, sizeof(p), leaf, left[i])));
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, leaf), 3);
}

static void test_create_batch_and_interactive(void **state)
{
	struct fx *fx = *state;
	struct extc_ids ids = fx->ids;
	char leaf[PATH_MAX];

	ids.stepid = EXTC_STEP_BATCH;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "batch");
	ids.stepid = EXTC_STEP_INTERACTIVE;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "interactive");
	ids.stepid = 12;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "12");
}

/*
 * The batch step and the srun steps of one run share the one job level <jobid>; a
 * <jobid>.<restart> level an older version left is neither used nor touched.
 */
static void test_create_every_step_shares_the_job_level(void **state)
{
	struct fx *fx = *state;
	struct extc_ids ids = fx->ids;
	struct snapshot old;
	char leaf[PATH_MAX], p[PATH_MAX];

	ids.jobid = 5;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);	/* makes the uid level */
	make_dir(path_of(fx, p, "base/4242/77.3"), 0, 0, 0711);
	snap(&old, p);
	ids.jobid = JOBID;
	ids.stepid = EXTC_STEP_BATCH;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "batch");
	ids.stepid = 0;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "0");
	ids.stepid = 1;
	create_ok(fx, &ids, EXTC_MODE_JOB, leaf);
	check_tree(fx, leaf, NULL, "77", "job");
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, path_of(fx, p, "base/4242/77")), 3);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, path_of(fx, p, "base/4242")), 3);
	assert_unchanged(&old);
}

static void test_steps_without_directory_are_refused(void **state)
{
	static const uint32_t steps[] = { EXTC_STEP_EXTERN, EXTC_STEP_PENDING, 0xfffffffeu };
	struct fx *fx = *state;
	char leaf[PATH_MAX], why[1024], p[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct extc_ids ids = fx->ids;

		ids.stepid = steps[i];
		assert_int_equal(create(fx, &ids, EXTC_MODE_LOCAL, leaf, why), -1);
		assert_contains(why, "gets no directory");
		assert_int_equal(create(fx, &ids, EXTC_MODE_JOB, leaf, why), -1);
	}
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_OFF, leaf, why), -1);
	assert_contains(why, "gets no directory");
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/77")));
}

static void test_ids_root_and_zero_job_are_refused(void **state)
{
	struct fx *fx = *state;
	struct extc_ids ids = fx->ids;
	char leaf[PATH_MAX], why[1024], p[PATH_MAX];

	ids.uid = 0;
	assert_int_equal(create(fx, &ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, "uid 0");
	assert_false(fsfx_exists(path_of(fx, p, "base/0")));
	ids = fx->ids;
	ids.jobid = 0;
	assert_int_equal(create(fx, &ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, "job 0");
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/0")));
}

static void test_job_mode_reuses_the_users_leaf(void **state)
{
	struct fx *fx = *state;
	struct extc_ids ids = fx->ids;
	char leaf[PATH_MAX], leaf2[PATH_MAX], p[PATH_MAX], buf[64];

	create_ok(fx, &ids, EXTC_MODE_JOB, leaf);
	check_tree(fx, leaf, NULL, "77", "job");
	put_file(leaf, "compiled.so", USER_UID);
	put_file(fsfx_join(p, sizeof(p), leaf, "a"), "kernel.bin", USER_UID);

	ids.stepid = 1;
	create_ok(fx, &ids, EXTC_MODE_JOB, leaf2);
	assert_string_equal(leaf2, leaf);
	ids.stepid = EXTC_STEP_BATCH;
	create_ok(fx, &ids, EXTC_MODE_JOB, leaf2);
	assert_string_equal(leaf2, leaf);
	assert_true(fsfx_read_at(AT_FDCWD, fsfx_join(p, sizeof(p), leaf, "compiled.so"), buf,
				   sizeof(buf)) > 0);
	assert_string_equal(buf, "user data\n");
	assert_true(fsfx_exists(fsfx_join(p, sizeof(p), leaf, "a/kernel.bin")));
	check_dir(leaf, USER_UID, USER_GID, 0700);
}

/* A job-mode leaf the user does not own (a half-made one, say) is never handed over as is. */
static void test_job_mode_replaces_a_leaf_not_owned_by_the_user(void **state)
{
	struct fx *fx = *state;
	char leaf[PATH_MAX], p[PATH_MAX];

	create_ok(fx, &fx->ids, EXTC_MODE_JOB, leaf);
	assert_int_equal(lchown(leaf, 0, 0), 0);
	put_file(leaf, "planted", 0);
	create_ok(fx, &fx->ids, EXTC_MODE_JOB, leaf);
	assert_false(fsfx_exists(fsfx_join(p, sizeof(p), leaf, "planted")));
	check_tree(fx, leaf, NULL, "77", "job");
}

static void test_local_mode_replaces_a_stale_leaf(void **state)
{
	struct fx *fx = *state;
	struct fsfx_sentinel outside;
	char leaf[PATH_MAX], leaf2[PATH_MAX], p[PATH_MAX];

	assert_int_equal(fsfx_sentinel_dir(&outside, path_of(fx, p, "outside"), 0755, 0, 0), 0);
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	put_file(leaf, "stale", USER_UID);
	assert_int_equal(symlink(outside.path, fsfx_join(p, sizeof(p), leaf, "escape")), 0);
	assert_int_equal(chmod(leaf, 0777), 0);

	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf2);
	assert_string_equal(leaf2, leaf);
	assert_false(fsfx_exists(fsfx_join(p, sizeof(p), leaf, "stale")));
	assert_false(fsfx_exists(fsfx_join(p, sizeof(p), leaf, "escape")));
	check_tree(fx, leaf, NULL, "77", "0");
	assert_true(fsfx_sentinel_intact(&outside));
}

/* ---- the base and the levels above it --------------------------------------------------------------------- */

static void test_missing_base_is_created_root_owned(void **state)
{
	struct fx *fx = *state;
	char why[1024];

	assert_false(fsfx_exists(fx->base));
	assert_int_equal(prepare_base(fx, why), 0);
	check_dir(fx->base, 0, 0, 0711);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, fx->base), 0);
	assert_int_equal(prepare_base(fx, why), 0);	/* idempotent */
	check_dir(fx->base, 0, 0, 0711);

	/* an existing root-owned base keeps the mode the admin gave it */
	assert_int_equal(chmod(fx->base, 0755), 0);
	assert_int_equal(prepare_base(fx, why), 0);
	check_dir(fx->base, 0, 0, 0755);
}

static void test_base_created_whatever_the_umask(void **state)
{
	struct fx *fx = *state;
	char leaf[PATH_MAX];

	umask(0777);
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	umask(fx->umask);
	check_tree(fx, leaf, NULL, "77", "0");
}

static void expect_base_refused(struct fx *fx, const char *reason)
{
	struct snapshot s;
	char leaf[PATH_MAX], why[1024];

	char why2[1024];

	snap(&s, fx->base);
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, fx->base);
	assert_unchanged(&s);
	assert_int_equal(prepare_base(fx, why2), -1);
	assert_contains(why2, fx->base);
	assert_unchanged(&s);
	/* last, so that a failure here is about the message only */
	assert_contains(why, reason);
	assert_contains(why2, reason);
}

static void test_base_squatted_by_a_user(void **state)
{
	struct fx *fx = *state;

	make_dir(fx->base, USER_UID, USER_GID, 0755);
	expect_base_refused(fx, "uid 4242");
}

static void test_base_squatted_by_another_user_private(void **state)
{
	struct fx *fx = *state;

	make_dir(fx->base, OTHER_UID, OTHER_UID, 0700);
	expect_base_refused(fx, "uid 4343");
}

static void test_base_world_writable(void **state)
{
	static const mode_t modes[] = { 0777, 01777, 0775, 0757, 03777 };
	struct fx *fx = *state;
	size_t i;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char mode[16];

		make_dir(fx->base, 0, 0, modes[i]);
		snprintf(mode, sizeof(mode), "mode %04o", (unsigned)modes[i]);
		expect_base_refused(fx, mode);
		assert_int_equal(rmdir(fx->base), 0);
	}
}

static void test_base_is_a_symlink(void **state)
{
	static const char *const targets[] = { "real", "/nonexistent/extc-unit", "base" };
	struct fx *fx = *state;
	char p[PATH_MAX];
	size_t i;

	make_dir(path_of(fx, p, "real"), 0, 0, 0711);
	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		assert_int_equal(symlink(targets[i], fx->base), 0);
		expect_base_refused(fx, "symbolic link");
		assert_int_equal(unlink(fx->base), 0);
	}
	assert_int_equal(fsfx_count_entries_at(fx->fs.rootfd, "real"), 0);
}

static void test_base_is_a_regular_file(void **state)
{
	struct fx *fx = *state;
	char buf[64];

	assert_int_equal(fsfx_write_at(AT_FDCWD, fx->base, "not a dir\n", 0644), 0);
	expect_base_refused(fx, "not a directory");
	assert_true(fsfx_read_at(AT_FDCWD, fx->base, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "not a dir\n");
}

static void test_base_is_a_fifo_never_blocks(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(mkfifo(fx->base, 0600), 0);
	expect_base_refused(fx, "not a directory");
}

static void test_component_above_base_is_a_symlink(void **state)
{
	struct fx *fx = *state;
	char p[PATH_MAX], base[PATH_MAX], leaf[PATH_MAX], why[1024], why2[1024];

	make_dir(path_of(fx, p, "real"), 0, 0, 0755);
	assert_int_equal(symlink("real", path_of(fx, p, "link")), 0);
	fsfx_join(base, sizeof(base), p, "base");
	make_cfg(fx, base, "A:a");
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, p);
	assert_int_equal(prepare_base(fx, why2), -1);
	assert_contains(why2, p);
	assert_int_equal(fsfx_count_entries_at(fx->fs.rootfd, "real"), 0);
	assert_true(fsfx_exists(p));
	/* last, so that a failure here is about the message only */
	assert_contains(why, "symbolic link");
	assert_contains(why2, "symbolic link");
}

static void test_component_above_base_must_be_root_owned_and_closed(void **state)
{
	static const struct {
		uid_t uid;
		mode_t mode;
		bool ok;
	} cases[] = {
		{ 0, 0777, false },		/* writable by all, not sticky */
		{ 0, 0775, false },
		{ 0, 0757, false },
		{ USER_UID, 0755, false },	/* a user's directory */
		{ USER_UID, 01777, false },
		{ 0, 01777, true },		/* like /tmp */
		{ 0, 0755, true },
		{ 0, 0700, true },
	};
	struct fx *fx = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char dir[PATH_MAX], base[PATH_MAX], name[32], leaf[PATH_MAX], why[1024];

		snprintf(name, sizeof(name), "up%zu", i);
		make_dir(path_of(fx, dir, name), cases[i].uid, cases[i].uid, cases[i].mode);
		fsfx_join(base, sizeof(base), dir, "base");
		make_cfg(fx, base, "A:a");
		if (cases[i].ok) {
			create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
			continue;
		}
		assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
		assert_contains(why, dir);
		assert_false(fsfx_exists(base));
		check_dir(dir, cases[i].uid, cases[i].uid, cases[i].mode);
	}
}

/* An admin's setgid base: what the plugin makes below it has exact owners and modes anyway. */
static void test_setgid_base(void **state)
{
	struct fx *fx = *state;
	char leaf[PATH_MAX];

	make_dir(fx->base, 0, 4244, 02755);
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	check_dir(fx->base, 0, 4244, 02755);
	assert_string_equal(strrchr(leaf, '/'), "/0");
	{
		char p[PATH_MAX];

		pathf(p, "%s/4242", fx->base);
		check_dir(p, 0, 0, 0711);
		pathf(p, "%s/4242/77", fx->base);
		check_dir(p, 0, 0, 0711);
	}
	check_dir(leaf, USER_UID, USER_GID, 0700);
}

/* ---- levels below the base ------------------------------------------------------------------------------------------ */

static void test_uid_level_owned_by_the_user_is_refused(void **state)
{
	struct fx *fx = *state;
	struct extc_rm_report rep;
	struct snapshot s;
	char p[PATH_MAX], leaf[PATH_MAX], why[1024];

	assert_int_equal(prepare_base(fx, why), 0);
	make_dir(path_of(fx, p, "base/4242"), USER_UID, USER_GID, 0700);
	put_file(p, "mine", USER_UID);
	snap(&s, p);
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, p);
	assert_contains(why, "uid 4242");
	assert_unchanged(&s);
	assert_int_equal(remove_job(fx, USER_UID, JOBID, &rep, why), -1);
	assert_contains(why, p);
	assert_unchanged(&s);
	assert_int_equal(remove_leaf(fx, &fx->ids, EXTC_MODE_LOCAL, &rep, why), -1);
	assert_unchanged(&s);
	assert_true(fsfx_exists(fsfx_join(leaf, sizeof(leaf), p, "mine")));
}

static void test_uid_level_wrong_mode_or_symlink_is_refused(void **state)
{
	struct fx *fx = *state;
	struct snapshot s;
	char p[PATH_MAX], leaf[PATH_MAX], why[1024], other[PATH_MAX];

	assert_int_equal(prepare_base(fx, why), 0);
	make_dir(path_of(fx, p, "base/4242"), 0, 0, 0777);
	snap(&s, p);
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, "mode 0777");
	assert_unchanged(&s);
	assert_int_equal(rmdir(p), 0);

	make_dir(path_of(fx, other, "elsewhere"), 0, 0, 0711);
	assert_int_equal(symlink(other, p), 0);
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, p);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, other), 0);
	/* last, so that a failure here is about the message only */
	assert_contains(why, "symbolic link");
}

static void test_job_level_owned_by_the_user_is_refused(void **state)
{
	struct fx *fx = *state;
	struct extc_ids other = fx->ids;
	struct snapshot s;
	char p[PATH_MAX], leaf[PATH_MAX], why[1024];

	other.jobid = 5;
	create_ok(fx, &other, EXTC_MODE_LOCAL, leaf);
	make_dir(path_of(fx, p, "base/4242/77"), USER_UID, USER_GID, 0755);
	snap(&s, p);
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, p);
	assert_unchanged(&s);
}

/* ---- failures roll the leaf back ------------------------------------------------------------------------------------ */

static void test_failure_after_mkdir_leaves_no_leaf(void **state)
{
	struct fx *fx = *state;
	char leaf[PATH_MAX], why[1024], p[PATH_MAX];

	/*
	 * A subdirectory name validation would refuse makes mkdirat fail (fault
	 * injection); only a variable whose directory is made reaches mkdirat.
	 */
	assert_true(fx->cfg.vars[1].make_dir);
	strcpy(fx->cfg.vars[1].subdir, "no/such");
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, "cannot create");
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/77/0")));
	check_dir(path_of(fx, p, "base/4242/77"), 0, 0, 0711);

	/* the built-in list: the one directory made is PYTORCH_KERNEL_CACHE_PATH's */
	make_cfg(fx, fx->base, NULL);
	assert_string_equal(fx->cfg.vars[2].name, "PYTORCH_KERNEL_CACHE_PATH");
	assert_true(fx->cfg.vars[2].make_dir);
	strcpy(fx->cfg.vars[2].subdir, "no/such");
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, "no/such: cannot create");
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/77/0")));
}

static void test_inode_exhaustion_leaves_no_leaf(void **state)
{
	struct fx *fx = *state;
	char dir[PATH_MAX], base[PATH_MAX], leaf[PATH_MAX], why[1024], p[PATH_MAX];

	make_dir(path_of(fx, dir, "small"), 0, 0, 0755);
	/* the root, base, uid, job, leaf and one subdirectory fit; the second does not */
	if (fsfx_mount_tmpfs(dir, "size=1m,nr_inodes=6,mode=0755") < 0) {
		print_error("mount -t tmpfs %s: %s\n", dir, strerror(errno));
		fail();
	}
	assert_int_equal(fsfx_note_mount(&fx->fs, dir), 0);
	fsfx_join(base, sizeof(base), dir, "base");
	make_cfg(fx, base, "A:a,B:b");
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, "No space left on device");
	pathf(p, "%s/4242/77/0", base);
	assert_false(fsfx_exists(p));
	/* with one variable it fits: the failed attempt left nothing in the way */
	make_cfg(fx, base, "A:a");
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), 0);
	assert_string_equal(leaf, p);
}

/* extc_tree_create documents "on failure nothing of the leaf is left". */
static void test_leaf_path_buffer_too_small_leaves_no_leaf(void **state)
{
	struct fx *fx = *state;
	char leaf[16], why[1024], p[PATH_MAX];
	int hold;

	hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf), why,
				sizeof(why));
	assert_no_fd_leak(fx);
	assert_int_equal(hold, -1);
	assert_contains(why, "too long");
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/77/0")));
}

/* ---- removal ---------------------------------------------------------------------------------------------------------- */

static void test_remove_leaf_removes_only_that_leaf(void **state)
{
	struct fx *fx = *state;
	struct extc_ids ids = fx->ids;
	struct extc_rm_report rep;
	char leaf0[PATH_MAX], leaf1[PATH_MAX], batch[PATH_MAX], why[1024], p[PATH_MAX];

	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf0);
	put_file(leaf0, "f", USER_UID);
	ids.stepid = 1;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf1);
	ids.stepid = EXTC_STEP_BATCH;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, batch);

	assert_int_equal(remove_leaf(fx, &fx->ids, EXTC_MODE_LOCAL, &rep, why), 0);
	assert_int_equal(rep.removed, 4);	/* leaf, a, b, f */
	assert_int_equal(rep.failed, 0);
	assert_false(fsfx_exists(leaf0));
	check_tree(fx, leaf1, NULL, "77", "1");
	check_tree(fx, batch, NULL, "77", "batch");
	check_dir(path_of(fx, p, "base/4242/77"), 0, 0, 0711);

	/* again: already gone is success */
	assert_int_equal(remove_leaf(fx, &fx->ids, EXTC_MODE_LOCAL, &rep, why), 0);
	assert_int_equal(rep.removed, 0);

	/* job mode removes the job leaf only */
	create_ok(fx, &fx->ids, EXTC_MODE_JOB, leaf0);
	assert_int_equal(remove_leaf(fx, &fx->ids, EXTC_MODE_JOB, &rep, why), 0);
	assert_false(fsfx_exists(leaf0));
	assert_true(fsfx_exists(leaf1));
}

/* A step's leaf made, its job level held and the leaf's identity recorded, as slurmstepd does. */
static int held_step(struct fx *fx, uint32_t stepid, char *leaf, struct extc_ident *id)
{
	struct extc_ids ids = fx->ids;
	char why[1024];
	int hold = -1;

	ids.stepid = stepid;
	assert_int_equal(create_hold(fx, &ids, EXTC_MODE_LOCAL, leaf, why, &hold), 0);
	assert_int_equal(extc_tree_leaf_ident_at(hold, fx->base, EXTC_MODE_LOCAL, stepid, id, why,
						 sizeof(why)), EXTC_LEVEL_FOUND);
	return (hold);
}

/* A new directory at 'path' with a file of the user's, as a requeued run makes it. */
static void make_new_run_dir(const char *path, mode_t mode, uid_t uid, const char *file)
{
	char f[PATH_MAX];

	assert_int_equal(mkdir(path, mode), 0);
	assert_int_equal(chown(path, uid, uid == 0 ? 0 : USER_GID), 0);
	if (file != NULL) {
		pathf(f, "%s/%s", path, file);
		assert_int_equal(fsfx_write_at(AT_FDCWD, f, "new run\n", 0600), 0);
	}
}

/*
 * A step's late end removes, through the job level it holds, the leaf it
 * made and nothing else: a leaf (or a job level) a requeued run made at
 * the same path is left whole; the engine compares the identity on what
 * it opens too.
 */
static void test_remove_held_leaf_only_the_step_made(void **state)
{
	struct fx *fx = *state;
	struct extc_rm_report rep;
	struct extc_ident id;
	char leaf[PATH_MAX], away[PATH_MAX], job[PATH_MAX], f[PATH_MAX], why[1024];
	struct extc_ids ids = fx->ids;
	struct extc_tree_held h = { .ids = &ids, .mode = EXTC_MODE_LOCAL, .leaf_id = &id };

	/* the leaf replaced below the same job level */
	h.job_fd = held_step(fx, 0, leaf, &id);
	assert_int_equal(extc_tree_held_check(&fx->tree, &h, why, sizeof(why)), EXTC_TREE_HELD_OURS);
	h.leaf_id = NULL;
	assert_int_equal(extc_tree_held_check(&fx->tree, &h, why, sizeof(why)),
			 EXTC_TREE_HELD_REFUSED);
	h.leaf_id = &id;
	assert_int_equal(rename(leaf, path_of(fx, away, "away0")), 0);
	make_new_run_dir(leaf, 0700, USER_UID, "second_run");
	assert_int_equal(extc_tree_held_check(&fx->tree, &h, why, sizeof(why)),
			 EXTC_TREE_HELD_REPLACED);
	assert_non_null(strstr(why, "another directory has its path"));
	assert_int_equal(extc_tree_remove_held_leaf(&fx->tree, &h, &rep, why, sizeof(why)),
			 EXTC_TREE_HELD_REPLACED);
	assert_int_equal(rep.removed, 0);
	pathf(f, "%s/second_run", leaf);
	assert_true(fsfx_exists(f));
	/* the engine's own look, for a name replaced after the check */
	assert_int_equal(extc_remove_tree_at_ident(h.job_fd, "0", &id, NULL, &rep), -1);
	assert_ptr_equal(rep.stopped, extc_rm_not_expected);
	assert_int_equal(rep.removed, 0);
	assert_true(fsfx_exists(f));
	close(h.job_fd);

	/* nothing replaced: removed, and a second end finds nothing to do */
	h.job_fd = held_step(fx, 1, leaf, &id);
	ids.stepid = 1;
	pathf(f, "%s/a/built", leaf);
	assert_int_equal(fsfx_write_at(AT_FDCWD, f, "x\n", 0600), 0);
	assert_int_equal(extc_tree_remove_held_leaf(&fx->tree, &h, &rep, why, sizeof(why)), EXTC_TREE_HELD_OURS);
	assert_false(fsfx_exists(leaf));
	assert_int_equal(extc_tree_remove_held_leaf(&fx->tree, &h, &rep, why, sizeof(why)), EXTC_TREE_HELD_GONE);
	close(h.job_fd);

	/* the job level replaced, with a leaf of the same name below the new one */
	h.job_fd = held_step(fx, 2, leaf, &id);
	ids.stepid = 2;
	pathf(job, "%s", leaf);
	*strrchr(job, '/') = '\0';
	assert_int_equal(rename(job, path_of(fx, away, "away1")), 0);
	make_new_run_dir(job, 0711, 0, NULL);
	make_new_run_dir(leaf, 0700, USER_UID, "second_run");
	assert_int_equal(extc_tree_remove_held_leaf(&fx->tree, &h, &rep, why, sizeof(why)),
			 EXTC_TREE_HELD_REPLACED);
	assert_non_null(strstr(why, "another job level has its path"));
	pathf(f, "%s/second_run", leaf);
	assert_true(fsfx_exists(f));
	pathf(f, "%s/2", away);
	assert_true(fsfx_exists(f));	/* the step's own, moved away with its level: the epilog's */
	close(h.job_fd);
	assert_no_fd_leak(fx);
}

static void test_remove_leaf_when_nothing_exists(void **state)
{
	struct fx *fx = *state;
	struct extc_ids ids = fx->ids;
	struct extc_rm_report rep;
	char why[1024], leaf[PATH_MAX];

	assert_int_equal(remove_leaf(fx, &ids, EXTC_MODE_LOCAL, &rep, why), 0);	/* no base */
	assert_int_equal(rep.removed, 0);
	assert_false(fsfx_exists(fx->base));		/* removal never creates */
	assert_int_equal(prepare_base(fx, why), 0);
	assert_int_equal(remove_leaf(fx, &ids, EXTC_MODE_LOCAL, &rep, why), 0);	/* no uid level */
	ids.jobid = 5;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	ids.jobid = JOBID;
	assert_int_equal(remove_leaf(fx, &ids, EXTC_MODE_LOCAL, &rep, why), 0);	/* no job level */
	ids.stepid = EXTC_STEP_EXTERN;
	assert_int_equal(remove_leaf(fx, &ids, EXTC_MODE_LOCAL, &rep, why), 0);	/* no leaf name */
	assert_int_equal(rep.removed, 0);
	assert_true(fsfx_exists(leaf));
}

static void test_remove_job_removes_that_job_only(void **state)
{
	static const char *const keep[] = { "78", "77x", "077", "77.0", "77.2", "777", "7" };
	static const uint32_t not_jobs[] = { 0, 0xfffffff0u, 0xfffffffeu, 0xffffffffu };
	struct fx *fx = *state;
	struct extc_ids ids = fx->ids;
	struct extc_rm_report rep;
	struct snapshot kept[sizeof(keep) / sizeof(keep[0])], dotted_leaf;
	char leaf[PATH_MAX], why[1024], p[PATH_MAX], uidlevel[PATH_MAX];
	size_t i;

	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	ids.stepid = 1;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	ids.stepid = 2;
	create_ok(fx, &ids, EXTC_MODE_JOB, leaf);
	ids.stepid = 0;
	ids.jobid = 78;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	path_of(fx, uidlevel, "base/4242");
	for (i = 1; i < sizeof(keep) / sizeof(keep[0]); i++) {
		make_dir(fsfx_join(p, sizeof(p), uidlevel, keep[i]), 0, 0, 0711);
		put_file(p, "f", 0);
	}
	/* a dotted run level an older version made, leaf and all: not this job's any more */
	make_dir(path_of(fx, p, "base/4242/77.2/job"), USER_UID, USER_GID, 0700);
	put_file(p, "f", USER_UID);
	snap(&dotted_leaf, p);
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		snap(&kept[i], fsfx_join(p, sizeof(p), uidlevel, keep[i]));

	/* ids this plugin never makes a tree for remove nothing */
	for (i = 0; i < sizeof(not_jobs) / sizeof(not_jobs[0]); i++) {
		assert_int_equal(remove_job(fx, USER_UID, not_jobs[i], &rep, why), 0);
		assert_int_equal(rep.removed, 0);
		assert_true(fsfx_exists(path_of(fx, p, "base/4242/77/0/a")));
	}

	assert_int_equal(remove_job(fx, USER_UID, JOBID, &rep, why), 0);
	assert_int_equal(rep.removed, 1 + 3 * 3);	/* 77, then 77/{0,1,job} with subdirs */
	assert_int_equal(rep.failed, 0);
	assert_int_equal(rep.mounts, 0);
	assert_null(rep.stopped);
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/77")));
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		if (!fsfx_exists(fsfx_join(p, sizeof(p), uidlevel, keep[i]))) {
			print_error("%s was removed\n", p);
			fail();
		}
		assert_unchanged(&kept[i]);
	}
	assert_unchanged(&dotted_leaf);
	assert_true(fsfx_exists(path_of(fx, p, "base/4242/77.2/job/f")));
	check_tree(fx, leaf, NULL, "78", "0");
	check_dir(uidlevel, 0, 0, 0711);	/* not empty: kept */
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, uidlevel),
			 (long)(sizeof(keep) / sizeof(keep[0])));
}

static void test_remove_job_drops_the_empty_uid_level(void **state)
{
	struct fx *fx = *state;
	struct extc_ids ids = fx->ids;
	struct extc_rm_report rep;
	char leaf[PATH_MAX], why[1024], p[PATH_MAX];

	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	ids.stepid = EXTC_STEP_BATCH;
	create_ok(fx, &ids, EXTC_MODE_LOCAL, leaf);
	assert_int_equal(remove_job(fx, USER_UID, JOBID, &rep, why), 0);
	assert_int_equal(rep.removed, 1 + 3 + 3 + 1);	/* 77, 77/{0,batch}, then the uid level */
	assert_int_equal(rep.failed, 0);
	assert_false(fsfx_exists(path_of(fx, p, "base/4242")));
	check_dir(fx->base, 0, 0, 0711);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, fx->base), 0);

	/* and the next job of that user gets a fresh uid level */
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "0");
}

static void test_remove_job_when_nothing_exists(void **state)
{
	struct fx *fx = *state;
	struct extc_rm_report rep;
	char why[1024];

	assert_int_equal(remove_job(fx, USER_UID, JOBID, &rep, why), 0);	/* no base */
	assert_int_equal(rep.removed, 0);
	assert_int_equal(rep.failed, 0);
	assert_false(fsfx_exists(fx->base));
	assert_int_equal(prepare_base(fx, why), 0);
	assert_int_equal(remove_job(fx, USER_UID, JOBID, &rep, why), 0);	/* no uid level */
	assert_int_equal(rep.removed, 0);
	assert_int_equal(remove_job(fx, 0, JOBID, &rep, why), 0);		/* root: never made */
	assert_int_equal(rep.removed, 0);
	check_dir(fx->base, 0, 0, 0711);
}

static void test_remove_job_reports_a_mount_inside(void **state)
{
	struct fx *fx = *state;
	struct fsfx_sentinel src;
	struct extc_rm_report rep;
	char leaf[PATH_MAX], why[1024], p[PATH_MAX], mnt[PATH_MAX];

	assert_int_equal(fsfx_sentinel_dir(&src, path_of(fx, p, "src"), 0755, 0, 0), 0);
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	fsfx_join(mnt, sizeof(mnt), leaf, "a");
	if (fsfx_bind(src.path, mnt) < 0) {
		print_error("mount --bind: %s\n", strerror(errno));
		fail();
	}
	assert_int_equal(fsfx_note_mount(&fx->fs, mnt), 0);
	assert_int_equal(remove_job(fx, USER_UID, JOBID, &rep, why), -1);
	assert_int_equal(rep.mounts, 1);
	assert_contains(why, "mount points left alone 1");
	assert_true(fsfx_exists(fsfx_join(p, sizeof(p), mnt, "keep")));
	assert_int_equal(fsfx_umount(mnt), 0);
	fx->fs.nmounts--;
	assert_true(fsfx_sentinel_intact(&src));
}

/* ---- shared base: the node level ------------------------------------------------------------------------------------- */

static void test_node_level(void **state)
{
	struct fx *fx = *state;
	struct extc_rm_report rep;
	char leaf[PATH_MAX], why[1024], p[PATH_MAX];

	fx->pol.node_name = "node01";
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, "node01", "77", "0");
	assert_false(fsfx_exists(path_of(fx, p, "base/4242")));
	assert_int_equal(remove_job(fx, USER_UID, JOBID, &rep, why), 0);
	assert_false(fsfx_exists(path_of(fx, p, "base/node01/4242")));
	check_dir(path_of(fx, p, "base/node01"), 0, 0, 0711);

	/* another node's level is a different tree */
	fx->pol.node_name = "node02";
	assert_int_equal(prepare_base(fx, why), 0);
	check_dir(path_of(fx, p, "base/node02"), 0, 0, 0711);

	/* a squatted node level is refused like any skeleton level */
	make_dir(path_of(fx, p, "base/node03"), USER_UID, USER_GID, 0755);
	fx->pol.node_name = "node03";
	assert_int_equal(create(fx, &fx->ids, EXTC_MODE_LOCAL, leaf, why), -1);
	assert_contains(why, p);
}

static void test_policy_root(void **state)
{
	struct fx *fx = *state;
	struct extc_fs_policy pol;
	char leaf[PATH_MAX];

	memset(&pol, 0x5a, sizeof(pol));
	fx->cfg.allow_shared_fs = false;
	extc_fs_policy_root(&pol, &fx->cfg, "node01");
	assert_int_equal(pol.owner, 0);
	assert_int_equal(pol.owner_gid, 0);
	assert_null(pol.node_name);
	assert_null(pol.rm_limits);
	fx->pol = pol;
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, NULL, "77", "0");

	fx->cfg.allow_shared_fs = true;
	extc_fs_policy_root(&pol, &fx->cfg, "node01");
	assert_non_null(pol.node_name);
	assert_string_equal(pol.node_name, "node01");
	assert_int_equal(pol.owner, 0);
	fx->pol = pol;
	create_ok(fx, &fx->ids, EXTC_MODE_LOCAL, leaf);
	check_tree(fx, leaf, "node01", "77", "0");
}

/* ---- sweeping leftovers of jobs whose epilog never ran ----------------------------------------------------------- */

struct alive_log {
	uint32_t alive_job;	/* the one job the controller still knows as running */
	unsigned calls;
	uint32_t asked[32];
};

static bool alive_cb(uint32_t jobid, void *arg)
{
	struct alive_log *log = arg;

	if (log->calls < 32)
		log->asked[log->calls] = jobid;
	log->calls++;
	return (jobid == log->alive_job);
}

static bool was_asked(const struct alive_log *log, uint32_t jobid)
{
	unsigned i;

	for (i = 0; i < log->calls && i < 32; i++) {
		if (log->asked[i] == jobid)
			return (true);
	}
	return (false);
}

static int sweep(struct fx *fx, extc_sweep_alive_fn alive, void *arg, struct extc_sweep_report *rep,
		 char *why)
{
	int rv;

	why[0] = '\0';
	memset(rep, 0x5a, sizeof(*rep));
	rv = extc_sweep_leftovers(&fx->tree, &(struct extc_sweep_calls){ .alive = alive, .alive_arg = arg }, rep, why, 1024);
	assert_no_fd_leak(fx);
	return (rv);
}

/* A create whose step "died": the hold descriptor is closed at once. */
static void make_job(struct fx *fx, uid_t uid, uint32_t jobid, int *hold)
{
	struct extc_ids ids = fx->ids;
	char leaf[PATH_MAX], why[1024];

	ids.uid = uid;
	ids.gid = uid;
	ids.jobid = jobid;
	if (create_hold(fx, &ids, EXTC_MODE_LOCAL, leaf, why, hold) != 0) {
		print_error("extc_tree_create: %s\n", why);
		fail();
	}
	if (hold != NULL)
		fx->fs.fds++;	/* the caller keeps it open for a while */
}

/* What the sweep told before a tree went: whose, and whether the tree was still whole then. */
struct retire_log {
	struct fx *fx;
	unsigned calls;
	uid_t uid[8];
	uint32_t jobid[8];
	bool whole[8];
};

static void retire_cb(uid_t uid, uint32_t jobid, void *arg)
{
	struct retire_log *log = arg;
	char p[PATH_MAX], rel[64];

	if (log->calls >= 8)
		return;
	snprintf(rel, sizeof(rel), "base/%u/%u/0/a", (unsigned)uid, jobid);
	log->uid[log->calls] = uid;
	log->jobid[log->calls] = jobid;
	log->whole[log->calls] = fsfx_exists(path_of(log->fx, p, rel));
	log->calls++;
}

/*
 * Before a crashed job's tree goes, the sweep says whose it is, while the
 * tree is whole (the node pool returns what the job took); never for a
 * tree it keeps.
 */
static void test_sweep_tells_before_a_tree_goes(void **state)
{
	struct fx *fx = *state;
	struct retire_log log = { .fx = fx };
	struct alive_log alive = { .alive_job = 79 };
	struct extc_sweep_report rep;
	char why[1024], p[PATH_MAX];

	make_job(fx, USER_UID, 77, NULL);
	make_job(fx, USER_UID, 79, NULL);	/* still running elsewhere */
	why[0] = '\0';
	assert_int_equal(extc_sweep_leftovers(&fx->tree, &(struct extc_sweep_calls){
		.alive = alive_cb, .alive_arg = &alive, .before_retire = retire_cb, .retire_arg = &log,
	}, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.jobs_removed, 1);
	assert_int_equal(log.calls, 1);
	assert_int_equal(log.uid[0], USER_UID);
	assert_int_equal(log.jobid[0], 77);
	assert_true(log.whole[0]);
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/77")));
	assert_true(fsfx_exists(path_of(fx, p, "base/4242/79/0/a")));
}

static void test_sweep_removes_only_unheld_finished_jobs(void **state)
{
	struct fx *fx = *state;
	struct alive_log log = { .alive_job = 79 };
	struct extc_sweep_report rep;
	struct snapshot dotted, dotted_leaf;
	char why[1024], p[PATH_MAX];
	int hold78;

	make_job(fx, USER_UID, 77, NULL);
	make_job(fx, USER_UID, 78, &hold78);	/* its step still runs here */
	make_job(fx, USER_UID, 79, NULL);		/* still running elsewhere */
	make_job(fx, OTHER_UID, 80, NULL);
	/* a <jobid>.<restart> level an older version left: not a job level any more */
	make_dir(path_of(fx, p, "base/4242/77.2"), 0, 0, 0711);
	make_dir(path_of(fx, p, "base/4242/77.2/0"), USER_UID, USER_GID, 0700);
	put_file(p, "f", USER_UID);
	snap(&dotted_leaf, p);
	snap(&dotted, path_of(fx, p, "base/4242/77.2"));

	assert_int_equal(sweep(fx, alive_cb, &log, &rep, why), 0);
	assert_int_equal(rep.jobs_removed, 2);
	assert_int_equal(rep.held, 1);
	assert_int_equal(rep.alive, 1);
	assert_int_equal(rep.refused, 0);
	assert_int_equal(rep.rm.failed, 0);
	assert_true(was_asked(&log, 77));
	assert_true(was_asked(&log, 79));
	assert_true(was_asked(&log, 80));
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/77")));
	assert_false(fsfx_exists(path_of(fx, p, "base/4343")));	/* emptied, then dropped */
	assert_true(fsfx_exists(path_of(fx, p, "base/4242/78/0/a")));
	assert_true(fsfx_exists(path_of(fx, p, "base/4242/79/0/a")));
	check_dir(path_of(fx, p, "base/4242"), 0, 0, 0711);
	assert_unchanged(&dotted);
	assert_unchanged(&dotted_leaf);

	/* the step ends (its descriptor closes): now nothing keeps either job */
	close(hold78);
	fx->fs.fds--;
	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), 0);
	assert_int_equal(rep.jobs_removed, 2);
	assert_int_equal(rep.held, 0);
	assert_int_equal(rep.alive, 0);
	assert_int_equal(rep.refused, 0);
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/78")));
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/79")));
	/* the dotted level is still there, so the uid level is not empty and stays */
	assert_unchanged(&dotted);
	assert_unchanged(&dotted_leaf);
	assert_true(fsfx_exists(path_of(fx, p, "base/4242/77.2/0/f")));
	check_dir(path_of(fx, p, "base/4242"), 0, 0, 0711);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, p), 1);
	check_dir(fx->base, 0, 0, 0711);
	/* the uid level and the trash the leftovers were moved to */
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, fx->base), 2);
	check_dir(path_of(fx, p, "base/.trash"), 0, 0, 0700);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, p), 4);
}

/* Every step of a job holds its level; the level is free only once the last one ends. */
static void test_sweep_respects_every_step_holding_the_job(void **state)
{
	struct fx *fx = *state;
	struct extc_sweep_report rep;
	struct extc_ids ids = fx->ids;
	char leaf[PATH_MAX], why[1024], p[PATH_MAX];
	int hold0, hold1;

	assert_int_equal(create_hold(fx, &ids, EXTC_MODE_JOB, leaf, why, &hold0), 0);
	fx->fs.fds++;
	ids.stepid = 1;
	assert_int_equal(create_hold(fx, &ids, EXTC_MODE_JOB, leaf, why, &hold1), 0);
	fx->fs.fds++;
	close(hold0);
	fx->fs.fds--;
	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), 0);
	assert_int_equal(rep.held, 1);
	assert_int_equal(rep.jobs_removed, 0);
	assert_true(fsfx_exists(leaf));
	close(hold1);
	fx->fs.fds--;
	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), 0);
	assert_int_equal(rep.jobs_removed, 1);
	assert_false(fsfx_exists(path_of(fx, p, "base/4242")));
}

static void test_sweep_leaves_unverified_levels_alone(void **state)
{
	struct fx *fx = *state;
	struct extc_sweep_report rep;
	struct fsfx_sentinel outside;
	struct snapshot user_uid, user_job, odd[4];
	char why[1024], p[PATH_MAX];
	size_t i;

	assert_int_equal(fsfx_sentinel_dir(&outside, path_of(fx, p, "outside"), 0755, 0, 0), 0);
	make_job(fx, USER_UID, 5, NULL);		/* a genuine leftover */
	/* a user-owned <uid> level and a user-owned <job> level: planted */
	make_dir(path_of(fx, p, "base/4343"), OTHER_UID, OTHER_UID, 0755);
	put_file(p, "mine", OTHER_UID);
	snap(&user_uid, p);
	make_dir(path_of(fx, p, "base/4242/77"), USER_UID, USER_GID, 0700);
	put_file(p, "mine", USER_UID);
	snap(&user_job, p);
	assert_int_equal(symlink(outside.path, path_of(fx, p, "base/4242/81")), 0);
	/* names that are not this plugin's are not even looked at */
	make_dir(path_of(fx, p, "base/root"), 0, 0, 0700);
	put_file(p, "f", 0);
	snap(&odd[0], p);
	make_dir(path_of(fx, p, "base/0"), 0, 0, 0711);
	snap(&odd[1], p);
	make_dir(path_of(fx, p, "base/4242/notajob"), 0, 0, 0711);
	snap(&odd[2], p);
	make_dir(path_of(fx, p, "base/4242/077"), 0, 0, 0711);
	snap(&odd[3], p);

	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), 0);
	assert_int_equal(rep.jobs_removed, 1);
	assert_int_equal(rep.refused, 3);		/* 4343, 4242/77, 4242/81 */
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/5")));
	assert_unchanged(&user_uid);
	assert_unchanged(&user_job);
	for (i = 0; i < 4; i++)
		assert_unchanged(&odd[i]);
	assert_true(fsfx_exists(path_of(fx, p, "base/4242/81")));
	assert_true(fsfx_sentinel_intact(&outside));
}

static void test_sweep_when_nothing_exists(void **state)
{
	struct fx *fx = *state;
	struct extc_sweep_report rep;
	char why[1024];

	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), 0);
	assert_int_equal(rep.jobs_removed, 0);
	assert_int_equal(rep.held, 0);
	assert_int_equal(rep.alive, 0);
	assert_int_equal(rep.refused, 0);
	assert_int_equal(rep.rm.removed, 0);
	assert_false(fsfx_exists(fx->base));		/* a sweep never creates */
	assert_int_equal(prepare_base(fx, why), 0);
	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), 0);
	assert_int_equal(rep.jobs_removed, 0);
	check_dir(fx->base, 0, 0, 0711);
}

static void test_sweep_refuses_a_squatted_base(void **state)
{
	struct fx *fx = *state;
	struct extc_sweep_report rep;
	struct snapshot s;
	char why[1024], p[PATH_MAX];

	make_dir(fx->base, USER_UID, USER_GID, 0755);
	make_dir(path_of(fx, p, "base/4242"), USER_UID, USER_GID, 0755);
	snap(&s, fx->base);
	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), -1);
	assert_contains(why, fx->base);
	assert_unchanged(&s);
	assert_true(fsfx_exists(p));
}

static void test_sweep_node_level(void **state)
{
	struct fx *fx = *state;
	struct extc_sweep_report rep;
	char why[1024], p[PATH_MAX];

	fx->pol.node_name = "n1";
	make_job(fx, USER_UID, 77, NULL);
	fx->pol.node_name = "n2";
	make_job(fx, USER_UID, 77, NULL);
	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), 0);	/* n2 sweeps its own tree */
	assert_int_equal(rep.jobs_removed, 1);
	assert_false(fsfx_exists(path_of(fx, p, "base/n2/4242")));
	assert_true(fsfx_exists(path_of(fx, p, "base/n1/4242/77/0")));
}

/* A leftover that cannot be removed (a mount inside it) is reported, not counted as removed. */
static void test_sweep_counts_only_what_it_removed(void **state)
{
	struct fx *fx = *state;
	struct fsfx_sentinel src;
	struct extc_sweep_report rep;
	char why[1024], p[PATH_MAX], mnt[PATH_MAX];

	assert_int_equal(fsfx_sentinel_dir(&src, path_of(fx, p, "src"), 0755, 0, 0), 0);
	make_job(fx, USER_UID, 77, NULL);
	path_of(fx, mnt, "base/4242/77/0/a");
	if (fsfx_bind(src.path, mnt) < 0) {
		print_error("mount --bind: %s\n", strerror(errno));
		fail();
	}
	assert_int_equal(fsfx_note_mount(&fx->fs, mnt), 0);
	/* the sweep moves the leftover, mount and all, out of reach in one rename */
	assert_int_equal(sweep(fx, NULL, NULL, &rep, why), 0);
	assert_int_equal(rep.jobs_removed, 1);
	assert_int_equal(rep.jobs_failed, 0);
	assert_false(fsfx_exists(path_of(fx, p, "base/4242/77")));
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, path_of(fx, p, "base/.trash")), 1);

	/*
	 * Emptying the trash never enters the mount: it detaches it (nobody
	 * reaches the trash by path) and removes what was under it, so the
	 * next emptier does not meet it again (issue 13, finding 5). The bind
	 * source keeps its content.
	 */
	{
		struct extc_rm_report trash;

		why[0] = '\0';
		assert_int_equal(extc_trash_empty(&fx->tree, &trash, why, 1024), 0);
		assert_no_fd_leak(fx);
		assert_int_equal(trash.mounts, 0);
		assert_int_equal(trash.detached, 1);
		assert_int_equal(trash.failed, 0);
		fx->fs.nmounts--;
		assert_true(fsfx_sentinel_intact(&src));
		assert_int_equal(fsfx_count_entries_at(AT_FDCWD, path_of(fx, p, "base/.trash")), 0);
		/* a second emptier has nothing to say */
		assert_int_equal(extc_trash_empty(&fx->tree, &trash, why, 1024), 0);
		assert_int_equal(trash.removed + trash.failed + trash.mounts + trash.detached, 0);
	}
}

/* ---- the sweep's stamp (fs_stamp.h) ----------------------------------------------------------------------------------- */

#define STAMP_NAME "test"
#define STAMP_INTERVAL_S 60

/* A descriptor of 'rel' (below the fixture's root) locked LOCK_EX, as an emptier or a stamp holds it. */
static int hold_lock(struct fx *fx, const char *rel)
{
	char p[PATH_MAX];
	int fd = open(path_of(fx, p, rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	return (fd);
}

static long long stamp_value(struct fx *fx)
{
	char p[PATH_MAX], text[32];
	ssize_t n = getxattr(path_of(fx, p, "base/.trash"), "trusted.ext-cache." STAMP_NAME, text,
			     sizeof(text) - 1);

	assert_true(n > 0);
	text[n] = '\0';
	return (strtoll(text, NULL, 10));
}

/*
 * Review 4: an emptier holds the trash's lock for its whole run; the
 * stamp, which took the same lock, was never due meanwhile, and no sweep
 * asked slurmctld anything. Now the stamp has a lock of its own.
 */
static void test_stamp_due_while_an_emptier_holds_the_trash(void **state)
{
	struct fx *fx = *state;
	char why[1024];
	int emptier, stamper;

	assert_int_equal(prepare_base(fx, why), 0);
	assert_true(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1000));
	assert_no_fd_leak(fx);
	emptier = hold_lock(fx, "base/.trash");
	/* the emptier's run: the trash is busy, the stamp is not */
	assert_false(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1030));
	assert_true(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1060));
	assert_false(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1061));
	assert_int_equal(stamp_value(fx), 1060);
	/* a second emptier still finds the trash taken: the stamp left the emptier's lock alone */
	{
		struct extc_rm_report rep;

		assert_int_equal(extc_trash_empty(&fx->tree, &rep, why, sizeof(why)), 0);
		assert_int_equal(rep.removed + rep.failed, 0);
	}
	close(emptier);
	/* another caller in the middle of its stamp holds the stamp's lock: not due, on doubt */
	stamper = hold_lock(fx, "base");
	assert_false(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 2000));
	assert_int_equal(stamp_value(fx), 1060);
	close(stamper);
	assert_true(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 2000));
	assert_no_fd_leak(fx);
}

/*
 * A base its group or others may read (an admin's 0755) could be opened
 * and locked by any user: the stamp takes the trash's lock there, as
 * before, never the base's.
 */
static void test_stamp_on_a_readable_base_takes_the_trashs_lock(void **state)
{
	struct fx *fx = *state;
	char why[1024];
	int fd;

	assert_int_equal(prepare_base(fx, why), 0);
	assert_int_equal(chmod(fx->base, 0755), 0);
	assert_true(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1000));
	fd = hold_lock(fx, "base");	/* a user's hold on the base changes nothing */
	assert_true(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1060));
	close(fd);
	fd = hold_lock(fx, "base/.trash");
	assert_false(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1120));
	close(fd);
	assert_int_equal(stamp_value(fx), 1060);
}

/* Epilogs of one node racing for a stamp that is due: one of them takes it, once. */
static void test_racing_callers_take_the_stamp_once(void **state)
{
	struct fx *fx = *state;
	enum { RACERS = 8 };
	pid_t pids[RACERS];
	char why[1024], go;
	int gate[2], i, taken = 0;

	assert_int_equal(prepare_base(fx, why), 0);
	assert_true(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1000));
	assert_int_equal(pipe(gate), 0);
	for (i = 0; i < RACERS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			close(gate[1]);
			if (read(gate[0], &go, 1) != 0)	/* EOF: all start together */
				_exit(2);
			_exit(extc_stamp_due(&fx->tree, STAMP_NAME, STAMP_INTERVAL_S, 1100) ? 0 : 1);
		}
	}
	close(gate[0]);
	close(gate[1]);
	for (i = 0; i < RACERS; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
		taken += WEXITSTATUS(status) == 0;
	}
	assert_int_equal(taken, 1);
	assert_int_equal(stamp_value(fx), 1100);
	assert_no_fd_leak(fx);
}

/* ---- concurrency ------------------------------------------------------------------------------------------------------ */

/* Many tasks of one job start at once in job mode: all get the one directory. */
static void test_concurrent_job_mode_creates(void **state)
{
	struct fx *fx = *state;
	char leaf[PATH_MAX], first[PATH_MAX];
	pid_t pids[8];
	int i, ok = 0;

	for (i = 0; i < 8; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			struct extc_ids ids = fx->ids;
			char why[1024];
			int hold;

			int rv;

			ids.stepid = (uint32_t)i;
			hold = extc_tree_create(&fx->tree, &ids, EXTC_MODE_JOB, leaf, sizeof(leaf),
						why, sizeof(why));
			rv = hold >= 0 ? 0 : -1;
			if (rv == 0)
				close(hold);	/* the step ends */
			close(fx->fs.rootfd);
			_exit(rv == 0 ? 0 : 1);
		}
	}
	for (i = 0; i < 8; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			ok++;
	}
	assert_int_equal(ok, 8);
	create_ok(fx, &fx->ids, EXTC_MODE_JOB, first);
	check_tree(fx, first, NULL, "77", "job");
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, path_of(fx, leaf, "base/4242/77")), 1);
}

/*
 * Epilogs of the same user's other jobs empty and drop the <uid> level
 * while a step of this user is being created: the create must still work.
 */
static void test_create_races_epilogs_of_other_jobs(void **state)
{
	struct fx *fx = *state;
	pid_t removers[2];
	int i, failures = 0;
	char why[1024], first_why[1024] = "";

	assert_int_equal(prepare_base(fx, why), 0);
	for (i = 0; i < 2; i++) {
		removers[i] = fork();
		assert_true(removers[i] >= 0);
		if (removers[i] == 0) {
			struct extc_rm_report rep;
			int n;

			for (n = 0; n < 200000; n++) {
				if (getppid() == 1)
					break;
				extc_tree_remove_job(&fx->tree, USER_UID, 1000 + (uint32_t)i,
						     &rep, why, sizeof(why));
			}
			close(fx->fs.rootfd);
			_exit(0);
		}
	}
	for (i = 0; i < 1000; i++) {
		struct extc_rm_report rep;
		char leaf[PATH_MAX];
		int hold = -1;

		hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf),
					why, sizeof(why));
		if (hold < 0) {
			if (failures++ == 0)
				strcpy(first_why, why);
			if (getenv("EXTC_RACE_DEBUG"))
				fprintf(stderr, "race: %s\n", why);
		} else {
			close(hold);
		}
		extc_tree_remove_job(&fx->tree, USER_UID, JOBID, &rep, why, sizeof(why));
	}
	for (i = 0; i < 2; i++) {
		kill(removers[i], SIGKILL);
		waitpid(removers[i], NULL, 0);
	}
	if (failures != 0) {
		print_error("%d of 1000 creates failed; first: %s\n", failures, first_why);
		fail();
	}
	assert_no_fd_leak(fx);
}

/*
 * A task that Slurm left in slurmstepd's mount namespace skips the walk to
 * its leaf; one in a namespace of its own (job_container/tmpfs) must not.
 */
static void test_mount_namespace_identity(void **state)
{
	struct extc_ident here, again;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(extc_ident_mount_ns(&here), 0);
	assert_int_equal(extc_ident_mount_ns(&again), 0);
	assert_true(here.dev == again.dev && here.ino == again.ino);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct extc_ident child;

		if (extc_ident_mount_ns(&child) != 0 || child.ino != here.ino)
			_exit(1);	/* a forked child shares its parent's */
		if (unshare(CLONE_NEWNS) != 0 || extc_ident_mount_ns(&child) != 0)
			_exit(2);
		_exit(child.dev == here.dev && child.ino == here.ino ? 3 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

#define FS_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		FS_TEST(test_create_local_layout_any_umask),
		FS_TEST(test_create_builtin_vars),
		FS_TEST(test_create_admin_vars),
		FS_TEST(test_create_batch_and_interactive),
		FS_TEST(test_create_every_step_shares_the_job_level),
		FS_TEST(test_steps_without_directory_are_refused),
		FS_TEST(test_ids_root_and_zero_job_are_refused),
		FS_TEST(test_job_mode_reuses_the_users_leaf),
		FS_TEST(test_job_mode_replaces_a_leaf_not_owned_by_the_user),
		FS_TEST(test_local_mode_replaces_a_stale_leaf),
		FS_TEST(test_missing_base_is_created_root_owned),
		FS_TEST(test_base_created_whatever_the_umask),
		FS_TEST(test_base_squatted_by_a_user),
		FS_TEST(test_base_squatted_by_another_user_private),
		FS_TEST(test_base_world_writable),
		FS_TEST(test_base_is_a_symlink),
		FS_TEST(test_base_is_a_regular_file),
		FS_TEST(test_base_is_a_fifo_never_blocks),
		FS_TEST(test_component_above_base_is_a_symlink),
		FS_TEST(test_component_above_base_must_be_root_owned_and_closed),
		FS_TEST(test_setgid_base),
		FS_TEST(test_uid_level_owned_by_the_user_is_refused),
		FS_TEST(test_uid_level_wrong_mode_or_symlink_is_refused),
		FS_TEST(test_job_level_owned_by_the_user_is_refused),
		FS_TEST(test_failure_after_mkdir_leaves_no_leaf),
		FS_TEST(test_inode_exhaustion_leaves_no_leaf),
		FS_TEST(test_leaf_path_buffer_too_small_leaves_no_leaf),
		FS_TEST(test_remove_leaf_removes_only_that_leaf),
		FS_TEST(test_remove_leaf_when_nothing_exists),
		FS_TEST(test_remove_held_leaf_only_the_step_made),
		FS_TEST(test_remove_job_removes_that_job_only),
		FS_TEST(test_remove_job_drops_the_empty_uid_level),
		FS_TEST(test_remove_job_when_nothing_exists),
		FS_TEST(test_remove_job_reports_a_mount_inside),
		FS_TEST(test_node_level),
		FS_TEST(test_policy_root),
		FS_TEST(test_sweep_removes_only_unheld_finished_jobs),
		FS_TEST(test_sweep_tells_before_a_tree_goes),
		FS_TEST(test_sweep_respects_every_step_holding_the_job),
		FS_TEST(test_sweep_leaves_unverified_levels_alone),
		FS_TEST(test_sweep_when_nothing_exists),
		FS_TEST(test_sweep_refuses_a_squatted_base),
		FS_TEST(test_sweep_node_level),
		FS_TEST(test_sweep_counts_only_what_it_removed),
		FS_TEST(test_stamp_due_while_an_emptier_holds_the_trash),
		FS_TEST(test_stamp_on_a_readable_base_takes_the_trashs_lock),
		FS_TEST(test_racing_callers_take_the_stamp_once),
		FS_TEST(test_concurrent_job_mode_creates),
		FS_TEST(test_create_races_epilogs_of_other_jobs),
		FS_TEST(test_mount_namespace_identity),
	};

	return (TESTMAIN_ROOT_ONLY("fs_tree", "foreign owners, tmpfs mounts", tests, NULL));
}
