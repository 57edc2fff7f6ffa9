/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: the filesystem fixture shared by the unit,
 * adversarial and fault suites that work on real directories.
 *
 * struct fsfx is one test's world: a fresh /tmp/extc-unit-XXXXXX directory,
 * the descriptor count the test must end with, the mounts it made (detached
 * deepest first at teardown), the files it made immutable (cleared at
 * teardown) and the RLIMIT_NOFILE it lowered (restored at teardown).
 * Teardown removes the tree in C (fsfx_rmtree), never through a shell.
 *
 * Every helper works on paths or descriptors the test made itself; none of
 * them is used by the plugin. Helpers return -1 (or false) on failure and
 * never abort, so a test can assert on the result and report a useful line.
 */
#ifndef EXTC_FSFIXTURE_H_
#define EXTC_FSFIXTURE_H_

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#define FSFX_MAX_MOUNTS 16
#define FSFX_MAX_IMMUTABLE 4

struct fsfx {
	char root[PATH_MAX];	/* /tmp/extc-unit-XXXXXX */
	int rootfd;
	int fds;		/* descriptor count at setup */
	int nmounts;
	char mounts[FSFX_MAX_MOUNTS][PATH_MAX];
	int nimmutable;
	char immutable[FSFX_MAX_IMMUTABLE][PATH_MAX];
	unsigned long old_nofile;
	bool nofile_changed;
};

/* A fresh root (chmod'ed to 'mode'), its descriptor and the descriptor count. */
int fsfx_setup(struct fsfx *fx, mode_t mode);
/* The same with a tmpfs mounted on the root (no journal: races and scale runs go fast). */
int fsfx_setup_tmpfs(struct fsfx *fx, const char *options);
/* Undo what the test left (limits, immutable flags, mounts) and remove the root. 0 or -1. */
int fsfx_teardown(struct fsfx *fx);

/* <root>/<rel> into a PATH_MAX buffer (aborts if it does not fit: a test bug). */
const char *fsfx_path(const struct fsfx *fx, char *buf, const char *rel);

/* Mounts made or noted here are detached at teardown, the last one first. */
int fsfx_note_mount(struct fsfx *fx, const char *abs_path);
int fsfx_bind_at(struct fsfx *fx, const char *src_rel, const char *dst_rel);
int fsfx_tmpfs_at(struct fsfx *fx, const char *rel, const char *options);
/* Detach the last mount made (the test checks what is under it). */
int fsfx_umount_last(struct fsfx *fx);

/* An immutable file to clear at teardown if the test does not get that far. */
int fsfx_note_immutable(struct fsfx *fx, const char *abs_path);
/* Forget it (the test cleared the flag itself). */
void fsfx_forget_immutable(struct fsfx *fx, const char *abs_path);

/* Make a fresh private directory /tmp/extc-unit-XXXXXX (root-owned 0700 as root). */
int fsfx_tmpdir(char *buf, size_t len);

/*
 * Remove a test directory and everything left in it: mounts below it are
 * detached first, then the tree is removed with *at() calls on one
 * descriptor at a time, so trees far deeper than PATH_MAX go too, and it
 * never descends into another filesystem (such a directory fails the
 * removal). Only paths fsfx_tmpdir() makes are accepted. 0 when it is gone.
 */
int fsfx_rmtree(const char *path);

/* mkdir -p <root>/<rel> (each level 0755 before the umask). */
int fsfx_mkdirs(const struct fsfx *fx, const char *rel);
int fsfx_mkdirs_path(const char *path);
/* chown -R uid:gid of a tree (symlinks themselves, never followed; one filesystem). */
int fsfx_chown_tree(const char *path, uid_t uid, gid_t gid);

/* Descriptors this process holds now (entries of /proc/self/fd). */
int fsfx_fd_count(void);

/* "<a>/<b>" into buf; aborts the test binary if it does not fit (a test bug). */
const char *fsfx_join(char *buf, size_t len, const char *a, const char *b);

/* Create (O_EXCL) a file holding 'content', then chmod it to 'mode'. */
int fsfx_write_at(int dirfd, const char *name, const char *content, mode_t mode);

/* Read a whole small file; returns its length, or -1. buf is NUL-terminated. */
long fsfx_read_at(int dirfd, const char *name, char *buf, size_t len);

/* Does 'name' exist below 'dirfd' (symlinks not followed)? */
bool fsfx_exists_at(int dirfd, const char *name);
bool fsfx_exists(const char *path);

/* lstat() of 'path'; false if it does not exist. */
bool fsfx_lstat(const char *path, struct stat *st);

/* Number of entries (without . and ..) of the directory 'name' below 'dirfd'; -1 on error. */
long fsfx_count_entries_at(int dirfd, const char *name);

/*
 * Build name/<level>/<level>/... 'depth' levels deep below 'dirfd' with
 * mkdirat/openat only, so no path length limit applies. 'leaf_file', if not
 * NULL, is created in the deepest level. Holds at most two descriptors.
 */
int fsfx_chain_at(int dirfd, const char *name, const char *level, unsigned long depth,
		    const char *leaf_file);

/* Make 'count' empty files name/f<i> below 'dirfd' ('name' is created). */
int fsfx_wide_at(int dirfd, const char *name, unsigned long count);

/* Set the times of 'name' below 'dirfd' (not followed) 'ago' seconds back: made earlier, no sleep. */
int fsfx_made_ago_at(int dirfd, const char *name, long ago);

/*
 * Wait (1 ms naps) until the coarse real-time clock, the one file systems
 * stamp change times with, is past the real time of the call; that coarse
 * time in *t. No change made before the call is stamped at or after *t
 * (the coarse clock lags the real one by up to a tick, and since kernel
 * 6.13 a change time just read is stamped finer, with the real time), and
 * none made after it is stamped before.
 */
void fsfx_coarse_past_now(struct timespec *t);

/* Set or clear the immutable attribute (chattr +i) of a file. */
int fsfx_set_immutable_at(int dirfd, const char *name, bool on);

/* Bind-mount 'src' on 'dst' (both directories), or mount a small tmpfs on 'dst'. */
int fsfx_bind(const char *src, const char *dst);
int fsfx_mount_tmpfs(const char *dst, const char *options);
int fsfx_umount(const char *path);

/* Set the RLIMIT_NOFILE soft limit (the hard limit is kept); the old one in *old_soft. */
int fsfx_set_nofile(unsigned long soft, unsigned long *old_soft);

/*
 * A file or directory outside the tree under test whose identity, owner,
 * mode, link count, mtime and (for a file) content must not change.
 */
struct fsfx_sentinel {
	char path[4096];
	char content[128];
	struct stat st;
	bool is_dir;
};

int fsfx_sentinel_file(struct fsfx_sentinel *s, const char *path, const char *content,
			 mode_t mode, uid_t uid, gid_t gid);
int fsfx_sentinel_dir(struct fsfx_sentinel *s, const char *path, mode_t mode, uid_t uid,
			gid_t gid);
/* true if the sentinel is byte-identical; otherwise prints what differs. */
bool fsfx_sentinel_intact(const struct fsfx_sentinel *s);

#endif /* EXTC_FSFIXTURE_H_ */
