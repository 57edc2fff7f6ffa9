/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: scale and hostile shapes for removal
 * (security-cases.md cases 26, 27, 28, 30, 31, 32, 37, 38, 49): depth 10^5 in a
 * thread with a small stack and `ulimit -n 256`, 10^5 entries in one
 * directory with bounded memory, 255-byte and hostile names far beyond
 * PATH_MAX, permission-hostile and immutable entries, special files that
 * must never be opened, a remover killed mid-way, a time budget, and 10^5
 * failing entries reported in one line. EXTC_ADV_HUGE=1 adds 10^6 levels and
 * 10^6 entries (on a tmpfs). Needs root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "advtree.h"
#include "base/clock.h"
#include "fs/fs_remove.h"
#include "testmain.h"

#ifndef FS_IOC_GETFLAGS
#define FS_IOC_GETFLAGS _IOR('f', 1, long)
#define FS_IOC_SETFLAGS _IOW('f', 2, long)
#endif
#define FL_IMMUTABLE 0x00000010
#define FL_APPEND 0x00000020

static bool huge(void)
{
	const char *h = getenv("EXTC_ADV_HUGE");

	return (h != NULL && strcmp(h, "1") == 0);
}

static long maxrss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_maxrss);
}

static int set_flags_at(int dirfd, const char *name, int add, int del)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int flags, rv = -1;

	if (fd < 0)
		return (-1);
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
		flags = (flags | add) & ~del;
		rv = ioctl(fd, FS_IOC_SETFLAGS, &flags);
	}
	close(fd);
	return (rv);
}

static int get_flags_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int flags = -1;

	if (fd < 0)
		return (-1);
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		flags = -1;
	close(fd);
	return (flags);
}

/* ---- case 26: depth, in a thread with a small stack, with ulimit -n 256 ------------------------ */

struct rm_job {
	int parentfd;
	const char *name;
	const struct extc_rm_limits *limits;
	struct extc_rm_report report;
	int rv;
};

static void *rm_thread(void *p)
{
	struct rm_job *j = p;

	j->rv = extc_remove_tree_at(j->parentfd, j->name, j->limits, &j->report);
	return (NULL);
}

static void deep_removal(struct fsfx *fx, unsigned long depth, unsigned max_fds)
{
	struct extc_rm_limits lim;
	struct rm_job job;
	char text[512];
	double t0;

	t0 = adv_now();
	assert_int_equal(fsfx_chain_at(fx->rootfd, "deep", "d", depth, "leaf"), 0);
	fprintf(stderr, "# depth %lu built in %.1f s\n", depth, adv_now() - t0);
	extc_rm_limits_default(&lim);
	if (max_fds != 0)
		lim.max_fds = max_fds;
	/* ulimit -n 256, as a small slurmd limit would be */
	assert_int_equal(fsfx_set_nofile(256, &fx->old_nofile), 0);
	fx->nofile_changed = true;
	memset(&job, 0, sizeof(job));
	job.parentfd = fx->rootfd;
	job.name = "deep";
	job.limits = &lim;
	t0 = adv_now();
	/* 256 KiB of stack (1 MiB with sanitizers): a recursive walk would need far more */
	assert_int_equal(adv_run_small_stack(getenv("EXTC_ADV_BIG_STACK") ? 1u << 20 : 256u << 10,
					     rm_thread, &job), 0);
	assert_int_equal(fsfx_set_nofile(fx->old_nofile, NULL), 0);
	fx->nofile_changed = false;
	extc_rm_report_text(&job.report, text, sizeof(text));
	fprintf(stderr, "# depth %lu, %u fds: %s in %.1f s\n", depth, lim.max_fds, text,
		adv_now() - t0);
	assert_int_equal(job.rv, 0);
	assert_int_equal(job.report.removed, depth + 2);
	assert_false(fsfx_exists_at(fx->rootfd, "deep"));
	adv_assert_no_fd_leak(fx);
}

/* 10^5 levels (EXTC_ADV_SCALE scales it down for valgrind runs only) */
static void test_depth_100000_small_stack_ulimit_256(void **state)
{
	deep_removal(*state, adv_scaled(100000), 0);
}

/* two descriptors: every level's parent is re-opened through a verified ".." (slow: 2*10^4) */
static void test_depth_20000_budget_of_2_fds(void **state)
{
	deep_removal(*state, adv_scaled(20000), 2);
}

static void test_depth_100000_budget_above_ulimit(void **state)
{
	/* a budget of 1000 descriptors under a limit of 256: the walk adapts (EMFILE) */
	deep_removal(*state, adv_scaled(100000), 1000);
}

static void test_depth_1000000_huge(void **state)
{
	struct fsfx *fx = *state;

	if (!huge()) {
		fprintf(stderr, "# 10^6 levels: set EXTC_ADV_HUGE=1 (tests/run-hardening.sh --huge)\n");
		return;
	}
	adv_mkdir(fx, "t", 0755, 0, 0);
	adv_mount_tmpfs(fx, "t", "size=4g,nr_inodes=3000000");
	{
		char p[PATH_MAX];
		int tfd = open(adv_path(fx, p, "t"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int saved = fx->rootfd;

		assert_true(tfd >= 0);
		fx->rootfd = tfd;
		fx->fds++;
		deep_removal(fx, 1000000, 0);
		fx->rootfd = saved;
		fx->fds--;
		close(tfd);
	}
}

struct chain_arg {
	int dirfd;
	unsigned long depth;
	const char *leaf;
};

static int chain_child(void *p)
{
	const struct chain_arg *c = p;

	return (fsfx_chain_at(c->dirfd, "deep", "d", c->depth, c->leaf));
}

/*
 * A chain in a user's leaf is made by the user, as a job makes it: root's
 * removal enters only what the user owns below a user's directory.
 */
static int chain_as_user(int dirfd, unsigned long depth, const char *leaf)
{
	struct chain_arg c = { dirfd, depth, leaf };

	return (adv_run_as(ADV_USER_UID, ADV_USER_GID, chain_child, &c));
}

/* fsfx_wide_at, the directory then given to the user (its entries need not be). */
static int wide_of_user(int dirfd, const char *name, unsigned long n)
{
	if (fsfx_wide_at(dirfd, name, n) < 0)
		return (-1);
	return (fchownat(dirfd, name, ADV_USER_UID, ADV_USER_GID, AT_SYMLINK_NOFOLLOW));
}

/* The production path at depth: the epilog removes a job whose leaf is 10^5 deep. */
static void test_depth_100000_through_the_epilog(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	struct adv_tree t;
	char why[1024];
	int lfd;

	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(lfd >= 0);
	assert_int_equal(chain_as_user(lfd, adv_scaled(100000), NULL), 0);
	close(lfd);
	assert_int_equal(fsfx_set_nofile(256, &fx->old_nofile), 0);
	fx->nofile_changed = true;
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	assert_int_equal(fsfx_set_nofile(fx->old_nofile, NULL), 0);
	fx->nofile_changed = false;
	assert_false(fsfx_exists(t.leaf));
	adv_assert_no_fd_leak(fx);
}

/* ---- case 28: wide directories, bounded memory ----------------------------------------------- */

static void wide_removal(struct fsfx *fx, int dirfd, unsigned long n)
{
	struct extc_rm_report rep;
	long rss0;
	double t0;

	assert_int_equal(fsfx_wide_at(dirfd, "wide", n), 0);
	rss0 = maxrss_kib();
	t0 = adv_now();
	assert_int_equal(extc_remove_tree_at(dirfd, "wide", NULL, &rep), 0);
	fprintf(stderr, "# %lu entries removed in %.1f s, peak RSS +%ld KiB\n", n, adv_now() - t0,
		maxrss_kib() - rss0);
	assert_int_equal(rep.removed, n + 1);
	assert_true(maxrss_kib() - rss0 < 32 * 1024);	/* no per-entry memory */
	assert_false(fsfx_exists_at(dirfd, "wide"));
	adv_assert_no_fd_leak(fx);
}

static void test_wide_100000_entries(void **state)
{
	struct fsfx *fx = *state;

	wide_removal(fx, fx->rootfd, adv_scaled(100000));
}

static void test_wide_1000000_huge(void **state)
{
	struct fsfx *fx = *state;
	char p[PATH_MAX];
	int tfd;

	if (!huge()) {
		fprintf(stderr, "# 10^6 entries: set EXTC_ADV_HUGE=1 (tests/run-hardening.sh --huge)\n");
		return;
	}
	adv_mkdir(fx, "t", 0755, 0, 0);
	adv_mount_tmpfs(fx, "t", "size=2g,nr_inodes=1100000");
	tfd = open(adv_path(fx, p, "t"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(tfd >= 0);
	fx->fds++;
	wide_removal(fx, tfd, 1000000);
	fx->fds--;
	close(tfd);
}

/* ---- case 27: long and hostile names, paths far beyond PATH_MAX ------------------------------- */

static void test_long_and_hostile_names(void **state)
{
	struct fsfx *fx = *state;
	static const char *const odd[] = {
		"new\nline", "carriage\rreturn", "esc\x1b[31mred", "%n%s%x%p", "\xff\xfe invalid utf-8",
		"-rf", "--no-preserve-root", " leading space", "trailing space ", "back\\slash",
		"*?[glob]", "$(touch pwned)", "`touch pwned`", ";rm -rf ~",
	};
	struct extc_rm_report rep;
	char name255[256], level[201], text[512];
	unsigned i;
	int fd, nfd;

	memset(name255, 'n', 255);
	name255[255] = '\0';
	memset(level, 'L', 200);
	level[200] = '\0';
	adv_mkdir(fx, "odd", 0755, ADV_USER_UID, ADV_USER_GID);
	fd = openat(fx->rootfd, "odd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		assert_int_equal(advtree_file(fd, odd[i], "x"), 0);
	}
	assert_int_equal(advtree_dir(fd, "$(touch pwned)d"), 0);
	assert_int_equal(advtree_file(fd, name255, "x"), 0);
	/* 60 levels of 200 bytes: 12 KB of path, three times PATH_MAX */
	nfd = dup(fd);
	for (i = 0; i < 60; i++) {
		int next;

		assert_int_equal(advtree_dir(nfd, level), 0);
		next = openat(nfd, level, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(nfd);
		assert_true(next >= 0);
		nfd = next;
	}
	assert_int_equal(advtree_file(nfd, name255, "deep"), 0);
	/* one entry that cannot go, with a hostile name: the report shows it escaped */
	assert_int_equal(advtree_file(nfd, "esc\x1b]0;owned\a%n\n", "x"), 0);
	assert_int_equal(set_flags_at(nfd, "esc\x1b]0;owned\a%n\n", FL_IMMUTABLE, 0), 0);
	close(nfd);
	close(fd);

	assert_int_equal(extc_remove_tree_at(fx->rootfd, "odd", NULL, &rep), -1);
	extc_rm_report_text(&rep, text, sizeof(text));
	fprintf(stderr, "# %s\n", text);
	assert_int_equal(rep.first_errno, EPERM);
	for (i = 0; text[i] != '\0'; i++)
		assert_true(text[i] >= 0x20 && text[i] < 0x7f);
	assert_contains(text, "esc\\x1b]0;owned\\x07%n\\x0a");
	assert_false(fsfx_exists_at(fx->rootfd, "pwned"));
	assert_false(fsfx_exists_at(AT_FDCWD, "pwned"));
	/* everything but the immutable file and its 61 ancestors went */
	assert_int_equal(rep.failed, 1 + 61);
	assert_int_equal(rep.removed, sizeof(odd) / sizeof(odd[0]) + 3);

	/* clear the flag (the test's job, never the plugin's) and finish */
	fd = openat(fx->rootfd, "odd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; i < 60; i++) {
		nfd = openat(fd, level, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		assert_true(nfd >= 0);
		fd = nfd;
	}
	assert_int_equal(get_flags_at(fd, "esc\x1b]0;owned\a%n\n") & FL_IMMUTABLE, FL_IMMUTABLE);
	assert_int_equal(set_flags_at(fd, "esc\x1b]0;owned\a%n\n", 0, FL_IMMUTABLE), 0);
	close(fd);
	assert_int_equal(extc_remove_tree_at(fx->rootfd, "odd", NULL, &rep), 0);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 30: permission-hostile trees owned by the user ------------------------------------ */

static void test_mode_000_and_readonly_directories(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	struct adv_tree t;
	char why[1024];
	int lfd, dfd;

	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(lfd >= 0);
	/* ro/ (0500) holding sub/ (0000) holding files 0000 and a 0 dir */
	assert_int_equal(advtree_dir(lfd, "ro"), 0);
	dfd = openat(lfd, "ro", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(advtree_dir(dfd, "sub"), 0);
	{
		int sfd = openat(dfd, "sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		assert_int_equal(advtree_file(sfd, "secret", "x"), 0);
		assert_int_equal(fchmodat(sfd, "secret", 0, 0), 0);
		assert_int_equal(advtree_dir(sfd, "zero"), 0);
		assert_int_equal(fchmodat(sfd, "zero", 0, 0), 0);
		close(sfd);
	}
	assert_int_equal(fchmodat(dfd, "sub", 0, 0), 0);
	close(dfd);
	assert_int_equal(fchmodat(lfd, "ro", 0500, 0), 0);
	/* and the leaf itself read-only and then mode 000 */
	assert_int_equal(fchmod(lfd, 0), 0);
	close(lfd);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	assert_int_equal(rep.failed, 0);
	assert_false(fsfx_exists(t.leaf));
	adv_assert_no_fd_leak(fx);
}

/* ---- case 31: immutable and append-only entries ----------------------------------------------- */

static void test_immutable_and_append_only(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	char text[512];
	double t0;
	int fd, afd;

	adv_mkdir(fx, "tree", 0755, ADV_USER_UID, ADV_USER_GID);
	fd = openat(fx->rootfd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(advtree_fill(fd, 50), 0);
	assert_int_equal(advtree_file(fd, "frozen", "x"), 0);
	assert_int_equal(advtree_dir(fd, "appendonly"), 0);
	afd = openat(fd, "appendonly", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(advtree_fill(afd, 20), 0);
	close(afd);
	assert_int_equal(advtree_dir(fd, "zz"), 0);
	assert_int_equal(set_flags_at(fd, "frozen", FL_IMMUTABLE, 0), 0);
	assert_int_equal(set_flags_at(fd, "appendonly", FL_APPEND, 0), 0);
	close(fd);
	t0 = adv_now();
	assert_int_equal(extc_remove_tree_at(fx->rootfd, "tree", NULL, &rep), -1);
	extc_rm_report_text(&rep, text, sizeof(text));
	fprintf(stderr, "# %s (%.3f s)\n", text, adv_now() - t0);
	assert_int_equal(rep.first_errno, EPERM);
	/* 20 files of the append-only dir, it, the immutable file, and the top */
	assert_int_equal(rep.failed, 20 + 1 + 1 + 1);
	assert_int_equal(rep.removed, 50 + 1);	/* the fill files and zz */
	assert_true(adv_now() - t0 < 5.0);
	/* the flags are not cleared by the plugin */
	fd = openat(fx->rootfd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(get_flags_at(fd, "frozen") & FL_IMMUTABLE, FL_IMMUTABLE);
	assert_int_equal(get_flags_at(fd, "appendonly") & FL_APPEND, FL_APPEND);
	assert_int_equal(set_flags_at(fd, "frozen", 0, FL_IMMUTABLE), 0);
	assert_int_equal(set_flags_at(fd, "appendonly", 0, FL_APPEND), 0);
	close(fd);
	assert_int_equal(extc_remove_tree_at(fx->rootfd, "tree", NULL, &rep), 0);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 49: 10^5 failing entries, one line ------------------------------------------------- */

static void test_100000_failures_are_one_report(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	char text[512];
	unsigned long n = adv_scaled(100000);
	int fd;

	adv_mkdir(fx, "flood", 0755, ADV_USER_UID, ADV_USER_GID);
	fd = openat(fx->rootfd, "flood", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(wide_of_user(fd, "ao", n), 0);
	assert_int_equal(set_flags_at(fd, "ao", FL_APPEND, 0), 0);
	close(fd);
	assert_int_equal(extc_remove_tree_at(fx->rootfd, "flood", NULL, &rep), -1);
	extc_rm_report_text(&rep, text, sizeof(text));
	fprintf(stderr, "# %s\n", text);
	assert_int_equal(rep.failed, n + 2);
	assert_int_equal(rep.first_errno, EPERM);
	assert_true(strlen(text) < 300);
	assert_null(strchr(text, '\n'));
	fd = openat(fx->rootfd, "flood", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(set_flags_at(fd, "ao", 0, FL_APPEND), 0);
	close(fd);
	assert_int_equal(extc_remove_tree_at(fx->rootfd, "flood", NULL, &rep), 0);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 32: special files are unlinked, never opened ---------------------------------------- */

static void test_special_files_never_block(void **state)
{
	struct fsfx *fx = *state;
	struct sockaddr_un sun;
	struct extc_rm_report rep;
	struct adv_tree t;
	char why[1024], p[PATH_MAX];
	int lfd, s;

	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(lfd >= 0);
	assert_int_equal(mkfifoat(lfd, "fifo", 0644), 0);
	assert_int_equal(mknodat(lfd, "null", S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(mknodat(lfd, "sda", S_IFBLK | 0600, makedev(8, 0)), 0);
	assert_int_equal(mknodat(lfd, "tty", S_IFCHR | 0620, makedev(5, 0)), 0);
	assert_int_equal(advtree_file(lfd, "suid", "#!/bin/sh\n"), 0);
	assert_int_equal(fchmodat(lfd, "suid", 04755, 0), 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	adv_fmt(p, sizeof(p), "%s/sock", t.leaf);
	if (strlen(p) < sizeof(sun.sun_path)) {
		memcpy(sun.sun_path, p, strlen(p));
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_int_equal(bind(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
		assert_int_equal(listen(s, 1), 0);
		close(s);
	}
	close(lfd);
	alarm(20);	/* an open() of the FIFO would block forever */
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	alarm(0);
	assert_false(fsfx_exists(t.leaf));
	adv_assert_no_fd_leak(fx);
}

/* ---- case 37: a time budget below the epilog timeout ------------------------------------------- */

static void test_deadline_stops_a_huge_removal(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_limits lim;
	struct extc_rm_report rep;
	double t0, took;
	int fd;
	unsigned i;

	adv_mkdir(fx, "big", 0755, ADV_USER_UID, ADV_USER_GID);
	fd = openat(fx->rootfd, "big", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; i < 40; i++) {
		char d[16];

		adv_fmt(d, sizeof(d), "d%u", i);
		assert_int_equal(wide_of_user(fd, d, 5000), 0);
	}
	close(fd);
	extc_rm_limits_default(&lim);
	lim.deadline_ns = extc_clock_monotonic_ns() + 100000000ull;	/* 0.1 s */
	t0 = adv_now();
	assert_int_equal(extc_remove_tree_at(fx->rootfd, "big", &lim, &rep), -1);
	took = adv_now() - t0;
	fprintf(stderr, "# stopped after %.3f s: %s\n", took, rep.stopped ? rep.stopped : "?");
	assert_non_null(rep.stopped);
	assert_string_equal(rep.stopped, "time budget exhausted");
	assert_true(took < 1.0);
	assert_true(rep.removed > 0 && rep.removed < 200040);
	assert_int_equal(extc_remove_tree_at(fx->rootfd, "big", NULL, &rep), 0);
	adv_assert_no_fd_leak(fx);
}

/*
 * Case 29 on the step's own path: a step's removal out of time moves the
 * rest to the root-only trash in one rename (the job gets its node back),
 * and the epilog's emptier finishes it.
 */
static void test_step_removal_out_of_time_goes_to_the_trash(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_limits lim;
	struct extc_rm_report rep;
	struct adv_tree t;
	char why[1024], trash[PATH_MAX];
	struct stat st;
	int lfd;

	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(lfd >= 0);
	assert_int_equal(wide_of_user(lfd, "w", 3000), 0);
	close(lfd);
	extc_rm_limits_default(&lim);
	lim.deadline_ns = 1;	/* already past: the walk stops at its first clock read */
	t.pol.rm_limits = &lim;
	assert_int_equal(extc_tree_remove_leaf(&t.tree, &t.ids, EXTC_MODE_LOCAL, &rep, why,
					       sizeof(why)), -1);
	fprintf(stderr, "#   %s\n", why);
	assert_contains(why, "time budget exhausted");
	assert_contains(why, "moved what is left to .trash");
	assert_false(fsfx_exists(t.leaf));
	adv_fmt(trash, sizeof(trash), "%s/.trash", t.base);
	assert_int_equal(lstat(trash, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, trash), 1);
	/* the step's hold is untouched: the job level is still there and still held */
	advtree_release(&t);
	t.pol.rm_limits = NULL;
	assert_int_equal(extc_trash_empty(&t.tree, &rep, why, sizeof(why)), 0);
	assert_int_equal(fsfx_count_entries_at(AT_FDCWD, trash), 0);
	assert_true(rep.removed >= 3001);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 38: the remover killed mid-way; the next run finishes ------------------------------- */

static void test_killed_mid_removal_then_rerun(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	struct adv_tree t;
	char why[1024];
	pid_t pid;
	int lfd, status, round;

	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(lfd >= 0);
	assert_int_equal(wide_of_user(lfd, "w1", 30000), 0);
	assert_int_equal(chain_as_user(lfd, 20000, "leaf"), 0);
	assert_int_equal(wide_of_user(lfd, "w2", 30000), 0);
	close(lfd);
	for (round = 0; round < 3; round++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					     sizeof(why));
			_exit(0);
		}
		usleep(30000 + 20000 * round);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
	}
	why[0] = '\0';
	if (extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why, sizeof(why)) != 0)
		fail_msg("the rerun did not finish: %s", why);
	assert_false(fsfx_exists(t.leaf));
	/* and again: nothing left is success */
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	adv_assert_no_fd_leak(fx);
}

#define SCALE_TEST(f) cmocka_unit_test_setup_teardown(f, adv_setup, adv_teardown)
/* the same on a tmpfs: no journal, so the long walks stay within the CI budget */
#define SCALE_TEST_TMPFS(f) cmocka_unit_test_setup_teardown(f, adv_setup_tmpfs, adv_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		SCALE_TEST_TMPFS(test_depth_100000_small_stack_ulimit_256),
		SCALE_TEST_TMPFS(test_depth_20000_budget_of_2_fds),
		SCALE_TEST_TMPFS(test_depth_100000_budget_above_ulimit),
		SCALE_TEST_TMPFS(test_depth_100000_through_the_epilog),
		SCALE_TEST(test_depth_1000000_huge),
		SCALE_TEST(test_wide_100000_entries),
		SCALE_TEST(test_wide_1000000_huge),
		SCALE_TEST(test_long_and_hostile_names),
		SCALE_TEST(test_mode_000_and_readonly_directories),
		SCALE_TEST(test_immutable_and_append_only),
		SCALE_TEST(test_100000_failures_are_one_report),
		SCALE_TEST(test_special_files_never_block),
		SCALE_TEST(test_deadline_stops_a_huge_removal),
		SCALE_TEST(test_step_removal_out_of_time_goes_to_the_trash),
		SCALE_TEST(test_killed_mid_removal_then_rerun),
	};

	return (TESTMAIN_ROOT_ONLY("adv_scale", "chattr, device nodes, foreign owners", tests, NULL));
}
