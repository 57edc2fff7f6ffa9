/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: fs_remove.h (removal of a user-controlled tree as root)
 * and the fs_ident.h checks it relies on. Real directories below a fresh mkdtemp();
 * needs root for the bind mounts, device nodes, foreign owners and chattr +i.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/clock.h"
#include "fs/fs_ident.h"
#include "fs/fs_remove.h"
#include "fsfixture.h"
#include "strassert.h"
#include "testmain.h"

#define USER_UID 4242
#define USER_GID 4243

/* Every test: its own directory and the descriptor count it must end with (struct fsfx). */
static int setup(void **state)
{
	struct fsfx *fx = calloc(1, sizeof(*fx));

	*state = fx;
	return (fx == NULL ? -1 : fsfx_setup(fx, 0700));
}

static int teardown(void **state)
{
	struct fsfx *fx = *state;
	int rv = fsfx_teardown(fx);

	free(fx);
	return (rv);
}

static const char *path_of(struct fsfx *fx, char *buf, const char *rel)
{
	return (fsfx_path(fx, buf, rel));
}

static void assert_no_fd_leak(struct fsfx *fx)
{
	assert_int_equal(fsfx_fd_count(), fx->fds);
}

static void assert_clean_report(const struct extc_rm_report *r, uint64_t removed)
{
	assert_int_equal(r->removed, removed);
	assert_int_equal(r->failed, 0);
	assert_int_equal(r->mounts, 0);
	assert_int_equal(r->first_errno, 0);
	assert_null(r->stopped);
}

static void do_mkdir(struct fsfx *fx, const char *rel, mode_t mode)
{
	char p[PATH_MAX];

	assert_int_equal(mkdir(path_of(fx, p, rel), mode), 0);
	assert_int_equal(chmod(p, mode), 0);	/* whatever the umask */
}

static void do_file(struct fsfx *fx, const char *rel, const char *content, mode_t mode)
{
	assert_int_equal(fsfx_write_at(fx->rootfd, rel, content, mode), 0);
}

static void do_symlink(struct fsfx *fx, const char *target, const char *rel)
{
	assert_int_equal(symlinkat(target, fx->rootfd, rel), 0);
}

static void do_bind(struct fsfx *fx, const char *src_rel, const char *dst_rel)
{
	char src[PATH_MAX], dst[PATH_MAX];

	if (fsfx_bind_at(fx, src_rel, dst_rel) < 0) {
		print_error("mount --bind %s %s: %s (these tests need root)\n",
			    path_of(fx, src, src_rel), path_of(fx, dst, dst_rel), strerror(errno));
		fail();
	}
}

static void do_umount(struct fsfx *fx)
{
	assert_int_equal(fsfx_umount_last(fx), 0);
}

static int rm_at(struct fsfx *fx, const char *name, const struct extc_rm_limits *limits,
		 struct extc_rm_report *report)
{
	memset(report, 0x5a, sizeof(*report));	/* the call must fill every field */
	return (extc_remove_tree_at(fx->rootfd, name, limits, report));
}

/* ---- what is removed, what survives ------------------------------------------------------- */

/*
 * A tree with every kind of entry a user can make, links pointing out of it,
 * and directories whose modes would stop a non-root remover.
 */
static void test_removes_everything_and_follows_nothing(void **state)
{
	struct fsfx *fx = *state;
	struct fsfx_sentinel s_file, s_dir, s_etc, s_hl;
	struct extc_rm_report rep;
	struct sockaddr_un sa;
	char p[PATH_MAX], p2[PATH_MAX], longname[256];
	uint64_t made = 0;
	int sock;

	do_mkdir(fx, "outside", 0755);
	do_mkdir(fx, "outside/etc", 0755);
	assert_int_equal(fsfx_sentinel_file(&s_file, path_of(fx, p, "outside/file"), "precious\n",
					      0640, USER_UID, USER_GID), 0);
	assert_int_equal(fsfx_sentinel_dir(&s_dir, path_of(fx, p, "outside/dir"), 0750, USER_UID,
					     USER_GID), 0);
	assert_int_equal(fsfx_sentinel_file(&s_etc, path_of(fx, p, "outside/etc/passwd"),
					      "root:x:0:0::/root:/bin/sh\n", 0644, 0, 0), 0);
	assert_int_equal(fsfx_sentinel_file(&s_hl, path_of(fx, p, "outside/hl_target"), "linked\n",
					      0600, USER_UID, USER_GID), 0);

	do_mkdir(fx, "tree", 0755), made++;
	do_mkdir(fx, "tree/a", 0755), made++;
	do_mkdir(fx, "tree/a/b", 0700), made++;
	do_file(fx, "tree/a/b/file1", "x", 0644), made++;
	do_symlink(fx, path_of(fx, p, "outside/file"), "tree/a/b/abs_to_file"), made++;
	do_symlink(fx, "../../../outside/file", "tree/a/b/rel_to_file"), made++;
	do_symlink(fx, path_of(fx, p, "outside/dir"), "tree/a/b/to_dir"), made++;
	do_symlink(fx, "../../../outside/dir/", "tree/a/b/to_dir_slash"), made++;
	do_symlink(fx, path_of(fx, p, "outside/etc"), "tree/a/etc"), made++;
	do_symlink(fx, path_of(fx, p, "outside/etc/passwd"), "tree/a/passwd"), made++;
	do_symlink(fx, "/nonexistent/extc-unit/dangling", "tree/a/b/dangling"), made++;
	do_symlink(fx, "loop", "tree/a/b/loop"), made++;
	do_symlink(fx, "ping", "tree/a/b/pong"), made++;
	do_symlink(fx, "pong", "tree/a/b/ping"), made++;
	do_mkdir(fx, "tree/a/c", 0755), made++;	/* empty */
	assert_int_equal(mkfifoat(fx->rootfd, "tree/a/fifo", 0600), 0), made++;
	assert_int_equal(mknodat(fx->rootfd, "tree/a/chr", S_IFCHR | 0600, makedev(1, 3)), 0), made++;
	do_file(fx, "tree/a/setuid", "#!/bin/sh\n", 04755), made++;
	assert_int_equal(linkat(AT_FDCWD, path_of(fx, p, "outside/hl_target"), fx->rootfd,
				"tree/a/hardlink", 0), 0), made++;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	path_of(fx, p, "tree/a/sock");
	assert_true(strlen(p) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, p);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(sock >= 0);
	assert_int_equal(bind(sock, (struct sockaddr *)&sa, sizeof(sa)), 0), made++;
	close(sock);

	/* directories root may empty without ever changing their mode */
	do_mkdir(fx, "tree/ro", 0755), made++;
	do_file(fx, "tree/ro/file", "ro", 0444), made++;
	do_mkdir(fx, "tree/ro/sub", 0555), made++;
	assert_int_equal(chmod(path_of(fx, p, "tree/ro"), 0555), 0);
	do_mkdir(fx, "tree/zero", 0700), made++;
	do_mkdir(fx, "tree/zero/inner", 0700), made++;
	do_file(fx, "tree/zero/inner/f", "z", 0000), made++;
	assert_int_equal(chmod(path_of(fx, p2, "tree/zero/inner"), 0), 0);
	/* the user's own, all the way down: root enters only what the user could empty */
	assert_int_equal(lchown(p2, USER_UID, USER_GID), 0);
	assert_int_equal(chmod(path_of(fx, p, "tree/zero"), 0), 0);
	assert_int_equal(lchown(p, USER_UID, USER_GID), 0);

	/* names that must never be interpreted */
	do_file(fx, "tree/bad\nname", "n", 0644), made++;
	do_file(fx, "tree/%n%s%s", "f", 0644), made++;
	do_file(fx, "tree/-rf", "r", 0644), made++;
	do_file(fx, "tree/\x1b[31mred", "e", 0644), made++;
	do_file(fx, "tree/\xff\xfe", "u", 0644), made++;
	do_mkdir(fx, "tree/ ", 0755), made++;
	memset(longname, 'L', 255);
	longname[255] = '\0';
	snprintf(p, sizeof(p), "tree/%s", longname);
	do_file(fx, p, "255", 0644), made++;

	assert_int_equal(rm_at(fx, "tree", NULL, &rep), 0);
	assert_clean_report(&rep, made);
	assert_false(fsfx_exists_at(fx->rootfd, "tree"));
	assert_true(fsfx_sentinel_intact(&s_file));
	assert_true(fsfx_sentinel_intact(&s_dir));
	assert_true(fsfx_sentinel_intact(&s_etc));
	assert_true(fsfx_sentinel_intact(&s_hl));	/* link count back to 1 */
	assert_int_equal(fsfx_count_entries_at(fx->rootfd, "outside"), 4);
	assert_no_fd_leak(fx);
}

static void test_missing_name_is_success(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;

	assert_int_equal(rm_at(fx, "never-made", NULL, &rep), 0);
	assert_clean_report(&rep, 0);
	/* an empty name is not "missing": it is not a name at all */
	assert_int_equal(rm_at(fx, "", NULL, &rep), -1);
	assert_int_equal(rep.first_errno, EINVAL);
	assert_int_equal(rep.removed, 0);
	assert_no_fd_leak(fx);
}

static void test_top_level_symlink_removes_only_the_link(void **state)
{
	struct fsfx *fx = *state;
	struct fsfx_sentinel s_dir, s_file;
	struct extc_rm_report rep;
	char p[PATH_MAX];

	assert_int_equal(fsfx_sentinel_dir(&s_dir, path_of(fx, p, "target"), 0755, 0, 0), 0);
	assert_int_equal(fsfx_sentinel_file(&s_file, path_of(fx, p, "target_file"), "t\n", 0644,
					      0, 0), 0);
	do_symlink(fx, path_of(fx, p, "target"), "link");
	do_symlink(fx, "target/", "link_slash");
	do_symlink(fx, "target_file", "link_file");

	assert_int_equal(rm_at(fx, "link", NULL, &rep), 0);
	assert_clean_report(&rep, 1);
	assert_int_equal(rm_at(fx, "link_slash", NULL, &rep), 0);
	assert_clean_report(&rep, 1);
	assert_int_equal(rm_at(fx, "link_file", NULL, &rep), 0);
	assert_clean_report(&rep, 1);
	assert_false(fsfx_exists_at(fx->rootfd, "link"));
	assert_false(fsfx_exists_at(fx->rootfd, "link_slash"));
	assert_false(fsfx_exists_at(fx->rootfd, "link_file"));
	assert_true(fsfx_sentinel_intact(&s_dir));
	assert_true(fsfx_sentinel_intact(&s_file));
	assert_no_fd_leak(fx);
}

static void test_top_level_file_and_special_files(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;

	do_file(fx, "plain", "p", 0000);
	assert_int_equal(mkfifoat(fx->rootfd, "fifo", 0600), 0);
	assert_int_equal(rm_at(fx, "plain", NULL, &rep), 0);
	assert_clean_report(&rep, 1);
	/* a FIFO is unlinked, never opened (opening it would block) */
	assert_int_equal(rm_at(fx, "fifo", NULL, &rep), 0);
	assert_clean_report(&rep, 1);
	assert_int_equal(fsfx_count_entries_at(fx->rootfd, "."), 0);
	assert_no_fd_leak(fx);
}

static void test_empty_directory(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;

	do_mkdir(fx, "empty", 0000);
	assert_int_equal(rm_at(fx, "empty", NULL, &rep), 0);
	assert_clean_report(&rep, 1);
	assert_false(fsfx_exists_at(fx->rootfd, "empty"));
	assert_no_fd_leak(fx);
}

/* ---- scale: depth and width ------------------------------------------------------------------ */

#define DEEP 10000ul

static void test_deep_chain_default_budget(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;

	assert_int_equal(fsfx_chain_at(fx->rootfd, "deep", "d", DEEP, "leaf"), 0);
	assert_int_equal(rm_at(fx, "deep", NULL, &rep), 0);
	assert_clean_report(&rep, DEEP + 2);	/* top, DEEP levels, the file */
	assert_false(fsfx_exists_at(fx->rootfd, "deep"));
	assert_no_fd_leak(fx);
}

static void test_deep_chain_two_fds_and_low_rlimit(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_limits lim;
	struct extc_rm_report rep;

	assert_int_equal(fsfx_chain_at(fx->rootfd, "deep", "d", DEEP, "leaf"), 0);
	extc_rm_limits_default(&lim);
	lim.max_fds = 2;
	assert_int_equal(fsfx_set_nofile(64, &fx->old_nofile), 0);
	fx->nofile_changed = true;
	assert_int_equal(rm_at(fx, "deep", &lim, &rep), 0);
	assert_int_equal(fsfx_set_nofile(fx->old_nofile, NULL), 0);
	fx->nofile_changed = false;
	assert_clean_report(&rep, DEEP + 2);
	assert_false(fsfx_exists_at(fx->rootfd, "deep"));
	assert_no_fd_leak(fx);
}

/* The process limit is below the default budget: the walk gives up descriptors, not the tree. */
static void test_deep_chain_rlimit_below_budget(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;

	int lowest_free;

	assert_int_equal(fsfx_chain_at(fx->rootfd, "deep", "d", 2000, "leaf"), 0);
	/*
	 * Room for exactly three more descriptors, far below the default
	 * budget of 32: the level being read, and for the child the path-only
	 * descriptor that lets it be checked for a mount before it is opened.
	 */
	lowest_free = fcntl(0, F_DUPFD_CLOEXEC, 0);
	assert_true(lowest_free >= 0);
	close(lowest_free);
	assert_int_equal(fsfx_set_nofile((unsigned long)lowest_free + 3, &fx->old_nofile), 0);
	fx->nofile_changed = true;
	assert_int_equal(rm_at(fx, "deep", NULL, &rep), 0);
	assert_int_equal(fsfx_set_nofile(fx->old_nofile, NULL), 0);
	fx->nofile_changed = false;
	assert_clean_report(&rep, 2000 + 2);
	assert_false(fsfx_exists_at(fx->rootfd, "deep"));
	assert_no_fd_leak(fx);
}

/* A deep chain whose levels also hold files: every re-opened level is re-read. */
static void test_deep_bushy_tree_two_fds(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_limits lim;
	struct extc_rm_report rep;
	uint64_t made = 1;
	int fd, i;

	assert_int_equal(mkdirat(fx->rootfd, "bushy", 0755), 0);
	fd = openat(fx->rootfd, "bushy", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (i = 0; i < 300; i++) {
		int nfd;

		assert_int_equal(fsfx_write_at(fd, "before", "b", 0644), 0), made++;
		assert_int_equal(mkdirat(fd, "d", 0755), 0), made++;
		assert_int_equal(fsfx_write_at(fd, "zafter", "a", 0644), 0), made++;
		assert_int_equal(mkdirat(fd, "sibling", 0755), 0), made++;
		nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		assert_true(nfd >= 0);
		fd = nfd;
	}
	close(fd);
	extc_rm_limits_default(&lim);
	lim.max_fds = 2;
	assert_int_equal(rm_at(fx, "bushy", &lim, &rep), 0);
	assert_clean_report(&rep, made);
	assert_false(fsfx_exists_at(fx->rootfd, "bushy"));
	assert_no_fd_leak(fx);
}

static void test_wide_directory(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;

	assert_int_equal(fsfx_wide_at(fx->rootfd, "wide", 20000), 0);
	assert_int_equal(rm_at(fx, "wide", NULL, &rep), 0);
	assert_clean_report(&rep, 20001);
	assert_false(fsfx_exists_at(fx->rootfd, "wide"));
	assert_no_fd_leak(fx);
}

/* ---- mount points -------------------------------------------------------------------------------- */

static void test_bind_mount_inside_is_not_entered(void **state)
{
	struct fsfx *fx = *state;
	struct fsfx_sentinel src;
	struct extc_rm_report rep;
	struct stat st_tree, st_mnt;
	char p[PATH_MAX], text[512];

	assert_int_equal(fsfx_sentinel_dir(&src, path_of(fx, p, "bindsrc"), 0755, USER_UID,
					     USER_GID), 0);
	do_mkdir(fx, "tree", 0755);
	do_mkdir(fx, "tree/a", 0755);
	do_mkdir(fx, "tree/a/mnt", 0755);
	do_file(fx, "tree/a/f", "f", 0644);
	do_mkdir(fx, "tree/b", 0755);
	do_file(fx, "tree/b/g", "g", 0644);
	do_bind(fx, "bindsrc", "tree/a/mnt");
	/* same filesystem: st_dev cannot tell, only the mount id can */
	assert_true(fsfx_lstat(path_of(fx, p, "tree"), &st_tree));
	assert_true(fsfx_lstat(path_of(fx, p, "tree/a/mnt"), &st_mnt));
	assert_int_equal(st_tree.st_dev, st_mnt.st_dev);

	assert_int_equal(rm_at(fx, "tree", NULL, &rep), -1);
	assert_int_equal(rep.mounts, 1);
	assert_int_equal(rep.removed, 3);	/* f, g, b */
	assert_int_equal(rep.failed, 3);	/* mnt, and a and tree that still hold it */
	assert_int_equal(rep.first_errno, EBUSY);
	assert_string_equal(rep.first_name, "mnt");
	assert_null(rep.stopped);
	extc_rm_report_text(&rep, text, sizeof(text));
	assert_string_equal(text, "removed 3, could not remove 3, mount points left alone 1; "
			    "first error: mnt: Device or resource busy");
	assert_true(fsfx_exists(path_of(fx, p, "tree/a/mnt/keep")));
	assert_false(fsfx_exists(path_of(fx, p, "tree/b")));
	assert_false(fsfx_exists(path_of(fx, p, "tree/a/f")));
	do_umount(fx);
	assert_true(fsfx_sentinel_intact(&src));
	assert_int_equal(fsfx_count_entries_at(fx->rootfd, "tree/a/mnt"), 0);
	assert_no_fd_leak(fx);
}

static void test_other_filesystem_inside_is_not_entered(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	char p[PATH_MAX], buf[64];
	int fd;

	do_mkdir(fx, "tree", 0755);
	do_mkdir(fx, "tree/t", 0755);
	if (fsfx_mount_tmpfs(path_of(fx, p, "tree/t"), "size=1m,mode=0755") < 0) {
		print_error("mount -t tmpfs %s: %s\n", p, strerror(errno));
		fail();
	}
	assert_int_equal(fsfx_note_mount(fx, p), 0);
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fsfx_write_at(fd, "data", "on tmpfs\n", 0644), 0);
	close(fd);

	assert_int_equal(rm_at(fx, "tree", NULL, &rep), -1);
	assert_int_equal(rep.mounts, 1);
	assert_int_equal(rep.first_errno, EBUSY);
	assert_true(fsfx_read_at(fx->rootfd, "tree/t/data", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "on tmpfs\n");
	do_umount(fx);
	assert_no_fd_leak(fx);
}

static void test_top_level_mount_point_is_not_entered(void **state)
{
	struct fsfx *fx = *state;
	struct fsfx_sentinel src;
	struct extc_rm_report rep;
	char p[PATH_MAX];

	assert_int_equal(fsfx_sentinel_dir(&src, path_of(fx, p, "bindsrc"), 0755, 0, 0), 0);
	do_mkdir(fx, "mp", 0755);
	do_bind(fx, "bindsrc", "mp");
	assert_int_equal(rm_at(fx, "mp", NULL, &rep), -1);
	assert_int_equal(rep.mounts, 1);
	assert_int_equal(rep.removed, 0);
	assert_int_equal(rep.first_errno, EBUSY);
	assert_true(fsfx_exists(path_of(fx, p, "mp/keep")));
	do_umount(fx);
	assert_true(fsfx_sentinel_intact(&src));
	assert_no_fd_leak(fx);
}

/* mount --bind a a/b: the walk must end. */
static void test_bind_mount_cycle_terminates(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	char p[PATH_MAX];

	do_mkdir(fx, "tree", 0755);
	do_mkdir(fx, "tree/a", 0755);
	do_mkdir(fx, "tree/a/b", 0755);
	do_file(fx, "tree/a/f", "f", 0644);
	do_bind(fx, "tree/a", "tree/a/b");
	assert_int_equal(rm_at(fx, "tree", NULL, &rep), -1);
	assert_int_equal(rep.mounts, 1);
	assert_false(fsfx_exists(path_of(fx, p, "tree/a/f")));
	do_umount(fx);
	assert_true(fsfx_exists(path_of(fx, p, "tree/a/b")));
	assert_no_fd_leak(fx);
}

/* ---- limits ------------------------------------------------------------------------------------------ */

static void test_entry_budget_stops(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_limits lim;
	struct extc_rm_report rep;
	char text[512];

	assert_int_equal(fsfx_wide_at(fx->rootfd, "wide", 100), 0);
	extc_rm_limits_default(&lim);
	lim.max_entries = 10;
	assert_int_equal(rm_at(fx, "wide", &lim, &rep), -1);
	assert_non_null(rep.stopped);
	assert_contains(rep.stopped, "entry budget");
	assert_true(rep.removed <= 10);
	assert_true(fsfx_exists_at(fx->rootfd, "wide"));
	assert_int_equal(fsfx_count_entries_at(fx->rootfd, "wide"), 100 - (long)rep.removed);
	extc_rm_report_text(&rep, text, sizeof(text));
	assert_contains(text, "; stopped: entry budget exhausted");
	assert_no_fd_leak(fx);

	/* a budget that suffices changes nothing */
	lim.max_entries = 1000;
	assert_int_equal(rm_at(fx, "wide", &lim, &rep), 0);
	assert_null(rep.stopped);
	assert_false(fsfx_exists_at(fx->rootfd, "wide"));
	assert_no_fd_leak(fx);
}

static void test_deadline_in_the_past_stops(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_limits lim;
	struct extc_rm_report rep;
	char text[512];

	assert_int_equal(fsfx_wide_at(fx->rootfd, "wide", 1000), 0);
	extc_rm_limits_default(&lim);
	lim.deadline_ns = 1;
	assert_int_equal(rm_at(fx, "wide", &lim, &rep), -1);
	assert_non_null(rep.stopped);
	assert_contains(rep.stopped, "time budget");
	assert_true(fsfx_exists_at(fx->rootfd, "wide"));
	assert_true(rep.removed < 1000);
	extc_rm_report_text(&rep, text, sizeof(text));
	assert_contains(text, "; stopped: time budget exhausted");

	/* a deadline well ahead does not stop anything */
	lim.deadline_ns = extc_clock_monotonic_ns() + 60ull * 1000000000ull;
	assert_int_equal(rm_at(fx, "wide", &lim, &rep), 0);
	assert_null(rep.stopped);
	assert_false(fsfx_exists_at(fx->rootfd, "wide"));
	assert_no_fd_leak(fx);
}

static void test_depth_limit_stops(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_limits lim;
	struct extc_rm_report rep;

	assert_int_equal(fsfx_chain_at(fx->rootfd, "deep", "d", 10, "leaf"), 0);
	extc_rm_limits_default(&lim);
	lim.max_depth = 5;
	assert_int_equal(rm_at(fx, "deep", &lim, &rep), -1);
	assert_non_null(rep.stopped);
	assert_contains(rep.stopped, "depth");
	assert_true(rep.failed >= 1);
	assert_int_equal(rep.first_errno, ELOOP);
	assert_true(fsfx_exists_at(fx->rootfd, "deep"));
	assert_no_fd_leak(fx);
}

static void test_monotonic_clock(void **state)
{
	uint64_t a, b;

	(void)state;
	a = extc_clock_monotonic_ns();
	usleep(2000);
	b = extc_clock_monotonic_ns();
	assert_true(a > 0);
	assert_true(b >= a + 1000000ull);
}

static void test_default_limits(void **state)
{
	struct extc_rm_limits lim;

	(void)state;
	memset(&lim, 0xff, sizeof(lim));
	extc_rm_limits_default(&lim);
	assert_true(lim.max_fds >= 2);
	assert_true(lim.max_fds <= 256);
	assert_true(lim.max_depth >= 100000);	/* deep trees complete by default */
	assert_int_equal(lim.max_entries, 0);
	assert_int_equal(lim.deadline_ns, 0);
}

/* ---- failures: counted once, reported escaped, never an endless loop ------------------------------ */

static int open_deepest(int dirfd, const char *top, const char *level, int depth)
{
	int fd = openat(dirfd, top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int i;

	for (i = 0; i < depth && fd >= 0; i++) {
		int nfd = openat(fd, level, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		close(fd);
		fd = nfd;
	}
	return (fd);
}

static void run_immutable_case(struct fsfx *fx, unsigned max_fds)
{
	static const char bad[] = "bad\nname\x1b";
	struct extc_rm_limits lim;
	struct extc_rm_report rep;
	char text[512], rel[PATH_MAX], abs[PATH_MAX];
	int fd, i;

	assert_int_equal(fsfx_chain_at(fx->rootfd, "imm", "d", 20, bad), 0);
	do_file(fx, "imm/ok", "ok", 0644);
	fd = open_deepest(fx->rootfd, "imm", "d", 20);
	assert_true(fd >= 0);
	strcpy(rel, "imm");
	for (i = 0; i < 20; i++)
		strcat(rel, "/d");
	strcat(rel, "/");
	strcat(rel, bad);
	path_of(fx, abs, rel);
	if (fsfx_set_immutable_at(fd, bad, true) < 0) {
		print_error("chattr +i: %s (needs root and a filesystem with attributes)\n",
			    strerror(errno));
		close(fd);
		fail();
	}
	assert_int_equal(fsfx_note_immutable(fx, abs), 0);
	extc_rm_limits_default(&lim);
	lim.max_fds = max_fds;
	assert_int_equal(rm_at(fx, "imm", &lim, &rep), -1);
	assert_int_equal(fsfx_set_immutable_at(fd, bad, false), 0);
	fsfx_forget_immutable(fx, abs);
	close(fd);

	assert_int_equal(rep.removed, 1);		/* imm/ok */
	assert_int_equal(rep.failed, 1 + 20 + 1);	/* the file, each level, the top: once each */
	assert_int_equal(rep.mounts, 0);
	assert_null(rep.stopped);
	assert_int_equal(rep.first_errno, EPERM);
	assert_string_equal(rep.first_name, "bad\\x0aname\\x1b");
	extc_rm_report_text(&rep, text, sizeof(text));
	assert_string_equal(text, "removed 1, could not remove 22, mount points left alone 0; "
			    "first error: bad\\x0aname\\x1b: Operation not permitted");
	assert_no_fd_leak(fx);
}

static void test_unremovable_entry_default_budget(void **state)
{
	run_immutable_case(*state, 32);
}

static void test_unremovable_entry_two_fds(void **state)
{
	run_immutable_case(*state, 2);
}

static void test_report_text(void **state)
{
	struct extc_rm_report r;
	char text[512], small[16];

	(void)state;
	memset(&r, 0, sizeof(r));
	extc_rm_report_text(&r, text, sizeof(text));
	assert_string_equal(text, "removed 0, could not remove 0, mount points left alone 0");

	r.removed = 5;
	r.failed = 2;
	r.mounts = 1;
	r.first_errno = EACCES;
	strcpy(r.first_name, "x\\x0ay");
	r.stopped = "time budget exhausted";
	extc_rm_report_text(&r, text, sizeof(text));
	assert_string_equal(text, "removed 5, could not remove 2, mount points left alone 1; "
			    "first error: x\\x0ay: Permission denied; stopped: time budget exhausted");

	r.removed = UINT64_MAX;
	r.first_errno = 0;
	r.stopped = NULL;
	extc_rm_report_text(&r, text, sizeof(text));
	assert_string_equal(text, "removed 18446744073709551615, could not remove 2, "
			    "mount points left alone 1");

	memset(small, 'Z', sizeof(small));
	extc_rm_report_text(&r, small, 8);	/* truncated, terminated, in bounds */
	assert_true(strlen(small) < 8);
	assert_int_equal(small[8], 'Z');
}

/* ---- names that are not below parentfd (security-cases.md 36: refuse like --preserve-root) ---- */

struct sandbox {
	struct fsfx_sentinel keep;
	int innerfd;
};

/* root/sandbox/{keep, inner/{in, sub/}}; innerfd is the parent the caller passes. */
static void make_sandbox(struct fsfx *fx, struct sandbox *sb)
{
	char p[PATH_MAX];

	do_mkdir(fx, "sandbox", 0755);
	assert_int_equal(fsfx_sentinel_file(&sb->keep, path_of(fx, p, "sandbox/keep"), "keep\n",
					      0644, 0, 0), 0);
	do_mkdir(fx, "sandbox/inner", 0755);
	do_file(fx, "sandbox/inner/in", "in", 0644);
	do_mkdir(fx, "sandbox/inner/sub", 0755);
	sb->innerfd = openat(fx->rootfd, "sandbox/inner", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(sb->innerfd >= 0);
}

/* Nothing in the sandbox is touched, and the call says it refused. */
static void check_sandbox(struct fsfx *fx, struct sandbox *sb, int rv,
			  const struct extc_rm_report *rep)
{
	close(sb->innerfd);
	assert_true(fsfx_sentinel_intact(&sb->keep));
	assert_true(fsfx_exists_at(fx->rootfd, "sandbox/inner/in"));
	assert_true(fsfx_exists_at(fx->rootfd, "sandbox/inner/sub"));
	assert_int_equal(rep->removed, 0);
	assert_int_equal(rv, -1);
	assert_no_fd_leak(fx);
}

static void test_dot_is_refused(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	struct sandbox sb;

	make_sandbox(fx, &sb);
	check_sandbox(fx, &sb, extc_remove_tree_at(sb.innerfd, ".", NULL, &rep), &rep);
}

static void test_dotdot_is_refused(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	struct sandbox sb;

	make_sandbox(fx, &sb);
	check_sandbox(fx, &sb, extc_remove_tree_at(sb.innerfd, "..", NULL, &rep), &rep);
}

static void test_name_with_slash_is_refused(void **state)
{
	struct fsfx *fx = *state;
	struct extc_rm_report rep;
	struct sandbox sb;

	make_sandbox(fx, &sb);
	check_sandbox(fx, &sb, extc_remove_tree_at(sb.innerfd, "sub/../..", NULL, &rep), &rep);
}

/* ---- fs_ident ------------------------------------------------------------------------------------------- */

static void test_ident_and_same_mount(void **state)
{
	struct fsfx *fx = *state;
	struct extc_ident a, b, m;
	struct stat st;
	int fa, fb, fm;

	do_mkdir(fx, "a", 0751);
	do_mkdir(fx, "a/b", 0700);
	do_mkdir(fx, "src", 0755);
	do_mkdir(fx, "mnt", 0755);
	assert_int_equal(fchownat(fx->rootfd, "a/b", USER_UID, USER_GID, AT_SYMLINK_NOFOLLOW), 0);
	do_bind(fx, "src", "mnt");
	fa = openat(fx->rootfd, "a", EXTC_DIR_OPEN_FLAGS);
	fb = openat(fx->rootfd, "a/b", EXTC_DIR_OPEN_FLAGS);
	fm = openat(fx->rootfd, "mnt", EXTC_DIR_OPEN_FLAGS);
	assert_true(fa >= 0 && fb >= 0 && fm >= 0);
	assert_int_equal(extc_ident_fd(fa, &a), 0);
	assert_int_equal(extc_ident_fd(fb, &b), 0);
	assert_int_equal(extc_ident_fd(fm, &m), 0);
	assert_int_equal(fstat(fa, &st), 0);
	assert_int_equal(a.dev, st.st_dev);
	assert_int_equal(a.ino, st.st_ino);
	assert_int_equal(a.mode, st.st_mode);
	assert_int_equal(a.mode & 07777, 0751);
	assert_true(S_ISDIR(a.mode));
	assert_int_equal(a.uid, 0);
	assert_int_equal(a.nlink, 3);
	assert_int_equal(b.uid, USER_UID);
	assert_int_equal(b.gid, USER_GID);
	assert_true(a.mnt_id != 0);	/* Linux >= 5.8 */
	assert_true(extc_ident_same_mount(&a, &b));
	assert_true(extc_ident_same_mount(&a, &a));
	assert_int_equal(a.dev, m.dev);	/* a same-filesystem bind mount ... */
	assert_false(extc_ident_same_mount(&a, &m));	/* ... is still told apart */
	b.dev = a.dev + 1;
	assert_false(extc_ident_same_mount(&a, &b));
	m.mnt_id = 0;			/* no mount id: st_dev decides */
	assert_true(extc_ident_same_mount(&a, &m));
	close(fa);
	close(fb);
	close(fm);
	do_umount(fx);
	/* a regular file has an identity too (O_PATH-free statx on any fd) */
	do_file(fx, "f", "f", 0640);
	fa = openat(fx->rootfd, "f", O_RDONLY | O_CLOEXEC);
	assert_int_equal(extc_ident_fd(fa, &a), 0);
	assert_true(S_ISREG(a.mode));
	close(fa);
	assert_int_equal(extc_ident_fd(-1, &a), -1);
	assert_no_fd_leak(fx);
}

static void test_fs_is_network(void **state)
{
	struct fsfx *fx = *state;
	const char *type = NULL;
	bool network = true;
	char p[PATH_MAX];
	int fd;

	assert_int_equal(extc_ident_is_network_fs(fx->rootfd, &network, &type), 0);
	assert_false(network);
	assert_string_equal(type, "local");
	do_mkdir(fx, "t", 0755);
	if (fsfx_mount_tmpfs(path_of(fx, p, "t"), "size=1m") < 0) {
		print_error("mount -t tmpfs %s: %s\n", p, strerror(errno));
		fail();
	}
	assert_int_equal(fsfx_note_mount(fx, p), 0);
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	network = true;
	assert_int_equal(extc_ident_is_network_fs(fd, &network, &type), 0);
	assert_false(network);
	close(fd);
	do_umount(fx);
	assert_int_equal(extc_ident_is_network_fs(-1, &network, &type), -1);
	assert_no_fd_leak(fx);
}

/*
 * The fixture's own removal, which every teardown relies on: a chain far past
 * PATH_MAX goes, and a bind mount inside is detached, not emptied.
 */
static void test_fixture_removal_deep_and_mounted(void **state)
{
	struct fsfx *fx = *state;
	char other[PATH_MAX], src[PATH_MAX], dst[PATH_MAX];
	int ofd;

	assert_int_equal(fsfx_tmpdir(other, sizeof(other)), 0);
	ofd = open(other, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ofd >= 0);
	/* 3000 levels of "d/": 6000 bytes of path */
	assert_int_equal(fsfx_chain_at(ofd, "deep", "d", 3000, "leaf"), 0);
	assert_int_equal(mkdirat(ofd, "mnt", 0755), 0);
	close(ofd);
	do_mkdir(fx, "keep", 0755);
	do_file(fx, "keep/file", "kept\n", 0644);
	if (fsfx_bind(path_of(fx, src, "keep"), fsfx_join(dst, sizeof(dst), other, "mnt")) < 0) {
		print_error("mount --bind %s %s: %s (these tests need root)\n", src, dst,
			    strerror(errno));
		fail();
	}
	assert_int_equal(fsfx_rmtree(other), 0);
	assert_false(fsfx_exists(other));
	assert_true(fsfx_exists_at(fx->rootfd, "keep/file"));
	assert_no_fd_leak(fx);
}

#define FS_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	/* make check: any uid; plain files and directories of the runner's own */
	const struct CMUnitTest any[] = {
		FS_TEST(test_missing_name_is_success),
		FS_TEST(test_deep_chain_default_budget),
		FS_TEST(test_deep_chain_two_fds_and_low_rlimit),
		FS_TEST(test_deep_chain_rlimit_below_budget),
		FS_TEST(test_deep_bushy_tree_two_fds),
		FS_TEST(test_wide_directory),
		FS_TEST(test_entry_budget_stops),
		FS_TEST(test_deadline_in_the_past_stops),
		FS_TEST(test_depth_limit_stops),
		cmocka_unit_test(test_monotonic_clock),
		cmocka_unit_test(test_default_limits),
		cmocka_unit_test(test_report_text),
	};
	/* make check-root: mounts, device nodes, foreign owners, chattr +i */
	const struct CMUnitTest root[] = {
		FS_TEST(test_removes_everything_and_follows_nothing),
		FS_TEST(test_top_level_symlink_removes_only_the_link),
		FS_TEST(test_top_level_file_and_special_files),
		FS_TEST(test_bind_mount_inside_is_not_entered),
		FS_TEST(test_other_filesystem_inside_is_not_entered),
		FS_TEST(test_top_level_mount_point_is_not_entered),
		FS_TEST(test_bind_mount_cycle_terminates),
		FS_TEST(test_unremovable_entry_default_budget),
		FS_TEST(test_unremovable_entry_two_fds),
		FS_TEST(test_ident_and_same_mount),
		FS_TEST(test_fs_is_network),
		FS_TEST(test_fixture_removal_deep_and_mounted),
		/* (a mode 0000 directory: only root reads it) */
		FS_TEST(test_empty_directory),
		/* (their sentinel file is root's: the refusal must leave another owner's file) */
		FS_TEST(test_dot_is_refused),
		FS_TEST(test_dotdot_is_refused),
		FS_TEST(test_name_with_slash_is_refused),
	};

	return (TESTMAIN_TIERED("fs_remove", "bind mounts, device nodes, chattr", any, root,
				NULL, NULL));
}
