/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: filesystem fixtures shared by the tests that
 * work on real directories (test_fs_remove, test_fs_tree, test_lifecycle).
 *
 * Every helper works on paths or descriptors the test made itself below a
 * fresh mkdtemp() directory; none of them is used by the plugin. Helpers
 * return -1 (or false) on failure and never abort, so a test can assert on
 * the result and report a useful line.
 */
#ifndef EXTC_FSTEST_H_
#define EXTC_FSTEST_H_

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Make a fresh private directory /tmp/extc-unit-XXXXXX (root-owned 0700 as root). */
int fstest_tmpdir(char *buf, size_t len);

/*
 * Remove a test directory and everything left in it: mounts below it are
 * detached first, then "rm -rf --one-file-system" (which copes with trees
 * far deeper than PATH_MAX). Only paths fstest_tmpdir() makes are accepted.
 * 0 when it is gone. A test that sets an immutable flag clears it itself.
 */
int fstest_rmrf(const char *path);

/* Descriptors this process holds now (entries of /proc/self/fd). */
int fstest_fd_count(void);

/* "<a>/<b>" into buf; aborts the test binary if it does not fit (a test bug). */
const char *fstest_join(char *buf, size_t len, const char *a, const char *b);

/* Create (O_EXCL) a file holding 'content', then chmod it to 'mode'. */
int fstest_write_at(int dirfd, const char *name, const char *content, mode_t mode);

/* Read a whole small file; returns its length, or -1. buf is NUL-terminated. */
long fstest_read_at(int dirfd, const char *name, char *buf, size_t len);

/* Does 'name' exist below 'dirfd' (symlinks not followed)? */
bool fstest_exists_at(int dirfd, const char *name);
bool fstest_exists(const char *path);

/* lstat() of 'path'; false if it does not exist. */
bool fstest_lstat(const char *path, struct stat *st);

/* Number of entries (without . and ..) of the directory 'name' below 'dirfd'; -1 on error. */
long fstest_count_entries_at(int dirfd, const char *name);

/*
 * Build name/<level>/<level>/... 'depth' levels deep below 'dirfd' with
 * mkdirat/openat only, so no path length limit applies. 'leaf_file', if not
 * NULL, is created in the deepest level. Holds at most two descriptors.
 */
int fstest_chain_at(int dirfd, const char *name, const char *level, unsigned long depth,
		    const char *leaf_file);

/* Make 'count' empty files name/f<i> below 'dirfd' ('name' is created). */
int fstest_wide_at(int dirfd, const char *name, unsigned long count);

/* Set or clear the immutable attribute (chattr +i) of a file. */
int fstest_set_immutable_at(int dirfd, const char *name, bool on);

/* Bind-mount 'src' on 'dst' (both directories), or mount a small tmpfs on 'dst'. */
int fstest_bind(const char *src, const char *dst);
int fstest_mount_tmpfs(const char *dst, const char *options);
int fstest_umount(const char *path);

/* Set the RLIMIT_NOFILE soft limit (the hard limit is kept); the old one in *old_soft. */
int fstest_set_nofile(unsigned long soft, unsigned long *old_soft);

/*
 * A file or directory outside the tree under test whose identity, owner,
 * mode, link count, mtime and (for a file) content must not change.
 */
struct fstest_sentinel {
	char path[4096];
	char content[128];
	struct stat st;
	bool is_dir;
};

int fstest_sentinel_file(struct fstest_sentinel *s, const char *path, const char *content,
			 mode_t mode, uid_t uid, gid_t gid);
int fstest_sentinel_dir(struct fstest_sentinel *s, const char *path, mode_t mode, uid_t uid,
			gid_t gid);
/* true if the sentinel is byte-identical; otherwise prints what differs. */
bool fstest_sentinel_intact(const struct fstest_sentinel *s);

#endif /* EXTC_FSTEST_H_ */
