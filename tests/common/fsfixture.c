/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: filesystem fixtures (see fsfixture.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsfixture.h"

/* linux/fs.h clashes with sys/mount.h on some glibc versions; the values are ABI. */
#ifndef FS_IOC_GETFLAGS
#define FS_IOC_GETFLAGS _IOR('f', 1, long)
#define FS_IOC_SETFLAGS _IOW('f', 2, long)
#endif
#ifndef FS_IMMUTABLE_FL
#define FS_IMMUTABLE_FL 0x00000010
#endif

#define TMP_PREFIX "/tmp/extc-unit-"
#define SENTINEL_MTIME 1000000000	/* 2001-09-09: anything that touches a sentinel shows */

int fsfx_tmpdir(char *buf, size_t len)
{
	if (snprintf(buf, len, "%sXXXXXX", TMP_PREFIX) >= (int)len)
		return (-1);
	if (mkdtemp(buf) == NULL)
		return (-1);
	return (0);
}

const char *fsfx_join(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s/%s", a, b);

	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "fsfx_join: path too long: %s/%s\n", a, b);
		abort();
	}
	return (buf);
}

/* Mount points at or below 'path', deepest (longest) first, detached one pass at a time. */
static int detach_mounts_below(const char *path)
{
	size_t plen = strlen(path);
	int pass;

	for (pass = 0; pass < 64; pass++) {
		char line[8192], best[4096] = "";
		FILE *mi = fopen("/proc/self/mountinfo", "re");
		bool any = false;

		if (mi == NULL)
			return (-1);
		while (fgets(line, sizeof(line), mi) != NULL) {
			char mnt[4096];

			/* id parent major:minor root mount-point ... */
			if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
				continue;
			if (strncmp(mnt, path, plen) != 0 || (mnt[plen] != '\0' && mnt[plen] != '/'))
				continue;
			if (strlen(mnt) >= strlen(best)) {
				strcpy(best, mnt);
				any = true;
			}
		}
		fclose(mi);
		if (!any)
			return (0);
		if (umount2(best, MNT_DETACH) < 0)
			return (-1);
	}
	return (-1);
}

/* ---- removal of a test tree ---------------------------------------------------------------- */

/*
 * Not nftw(): it works on whole paths, and the deep-chain tests build trees
 * far longer than PATH_MAX. This walk holds one descriptor, goes down by
 * name and back up by "..", checking that ".." is the directory it came
 * from, and remembers on the heap the names it went down through.
 */
struct rm_level {
	char *name;		/* the directory entered, below its parent */
	dev_t parent_dev;
	ino_t parent_ino;
};

struct rm_walk {
	struct rm_level *levels;
	size_t depth, cap;
	dev_t dev;		/* the filesystem of the tree: nothing else is entered */
};

/* Remove the non-directories of 'dirfd' until a subdirectory shows: 1 (its name in sub), 0, -1. */
static int rm_clear_level(int dirfd, dev_t dev, char *sub, size_t sublen)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	struct stat st;
	int rv = 0;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* ENOENT: something else (an emptier the test started) removed it first */
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			rv = -1;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if (st.st_dev != dev) {
				fprintf(stderr, "fsfx_rmtree: %s is on another filesystem\n",
					de->d_name);
				errno = EXDEV;
				rv = -1;
			} else {
				rv = snprintf(sub, sublen, "%s", de->d_name) < (int)sublen ? 1 : -1;
			}
			break;
		}
		if (unlinkat(dirfd, de->d_name, 0) < 0 && errno != ENOENT) {
			rv = -1;
			break;
		}
	}
	closedir(d);
	return (rv);
}

/* Go down into 'sub' of *cur; 0, or -1 with *cur unchanged. */
static int rm_down(struct rm_walk *w, int *cur, const char *sub)
{
	struct rm_level *lv;
	struct stat st;
	int next;

	if (w->depth == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct rm_level *grown = realloc(w->levels, cap * sizeof(*grown));

		if (grown == NULL)
			return (-1);
		w->levels = grown;
		w->cap = cap;
	}
	if (fstat(*cur, &st) < 0)
		return (-1);
	next = openat(*cur, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (next < 0)
		return (errno == ENOENT ? 0 : -1);	/* removed meanwhile: scan again */
	lv = &w->levels[w->depth];
	lv->name = strdup(sub);
	if (lv->name == NULL) {
		close(next);
		return (-1);
	}
	lv->parent_dev = st.st_dev;
	lv->parent_ino = st.st_ino;
	w->depth++;
	close(*cur);
	*cur = next;
	return (0);
}

/* Back up from the emptied *cur to its parent, and remove it there; 0 or -1. */
static int rm_up(struct rm_walk *w, int *cur)
{
	struct rm_level *lv = &w->levels[w->depth - 1];
	int up = openat(*cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (up < 0)
		return (-1);
	if (fstat(up, &st) < 0 || st.st_dev != lv->parent_dev || st.st_ino != lv->parent_ino) {
		fprintf(stderr, "fsfx_rmtree: the parent of %s changed under the walk\n", lv->name);
		close(up);
		return (-1);
	}
	close(*cur);
	*cur = up;
	/* gone already, or refilled by a process the test started: the next scan sees which */
	if (unlinkat(up, lv->name, AT_REMOVEDIR) < 0 && errno != ENOENT && errno != ENOTEMPTY)
		return (-1);
	free(lv->name);
	w->depth--;
	return (0);
}

/* Everything below 'topfd' (not the directory itself); 0 or -1. */
static int rm_below(int topfd)
{
	struct rm_walk w = { NULL, 0, 0, 0 };
	char sub[NAME_MAX + 1];
	struct stat st;
	int cur = openat(topfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rv = -1;

	if (cur < 0 || fstat(cur, &st) < 0)
		goto out;
	w.dev = st.st_dev;
	for (;;) {
		int found = rm_clear_level(cur, w.dev, sub, sizeof(sub));

		if (found < 0)
			goto out;
		if (found == 1) {
			if (rm_down(&w, &cur, sub) < 0)
				goto out;
		} else if (w.depth == 0) {
			break;
		} else if (rm_up(&w, &cur) < 0) {
			goto out;
		}
	}
	rv = 0;
out:
	if (cur >= 0)
		close(cur);
	while (w.depth > 0)
		free(w.levels[--w.depth].name);
	free(w.levels);
	return (rv);
}

int fsfx_rmtree(const char *path)
{
	int fd;
	int rv;

	/* never remove anything but a directory fsfx_tmpdir made */
	if (strncmp(path, TMP_PREFIX, strlen(TMP_PREFIX)) != 0 || strstr(path, "..") != NULL ||
	    strchr(path + strlen(TMP_PREFIX), '/') != NULL) {
		fprintf(stderr, "fsfx_rmtree: refusing %s\n", path);
		return (-1);
	}
	if (!fsfx_exists(path))
		return (0);
	if (detach_mounts_below(path) < 0)
		fprintf(stderr, "fsfx_rmtree: could not detach mounts below %s\n", path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return (-1);
	rv = rm_below(fd);
	close(fd);
	if (rv < 0 || (rmdir(path) < 0 && errno != ENOENT)) {
		fprintf(stderr, "fsfx_rmtree: %s: %s\n", path, strerror(errno));
		return (-1);
	}
	return (0);
}

int fsfx_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	}
	closedir(d);
	return (n - 1);		/* the descriptor opendir itself held */
}

int fsfx_write_at(int dirfd, const char *name, const char *content, mode_t mode)
{
	size_t len = strlen(content), done = 0;
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return (-1);
	while (done < len) {
		ssize_t n = write(fd, content + done, len - done);

		if (n <= 0) {
			close(fd);
			return (-1);
		}
		done += (size_t)n;
	}
	if (fchmod(fd, mode) < 0) {
		close(fd);
		return (-1);
	}
	return (close(fd));
}

long fsfx_read_at(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	size_t done = 0;

	if (fd < 0 || len == 0) {
		if (fd >= 0)
			close(fd);
		return (-1);
	}
	while (done + 1 < len) {
		ssize_t n = read(fd, buf + done, len - 1 - done);

		if (n < 0) {
			close(fd);
			return (-1);
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	buf[done] = '\0';
	close(fd);
	return ((long)done);
}

bool fsfx_exists_at(int dirfd, const char *name)
{
	struct stat st;

	return (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0);
}

bool fsfx_exists(const char *path)
{
	struct stat st;

	return (lstat(path, &st) == 0);
}

bool fsfx_lstat(const char *path, struct stat *st)
{
	return (lstat(path, st) == 0);
}

long fsfx_count_entries_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	long n = 0;
	DIR *d;

	if (fd < 0)
		return (-1);
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	}
	closedir(d);
	return (n);
}

static int open_dir_at(int dirfd, const char *name)
{
	return (openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

/* A new directory 'name' (0755) below 'dirfd', opened; -1 if either step fails. */
static int make_dir_at(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0755) < 0)
		return (-1);
	return (open_dir_at(dirfd, name));
}

int fsfx_chain_at(int dirfd, const char *name, const char *level, unsigned long depth,
		    const char *leaf_file)
{
	unsigned long i;
	int fd;

	fd = make_dir_at(dirfd, name);
	if (fd < 0)
		return (-1);
	for (i = 0; i < depth; i++) {
		int nfd = make_dir_at(fd, level);

		close(fd);
		if (nfd < 0)
			return (-1);
		fd = nfd;
	}
	if (leaf_file != NULL && fsfx_write_at(fd, leaf_file, "deep\n", 0644) < 0) {
		close(fd);
		return (-1);
	}
	return (close(fd));
}

int fsfx_wide_at(int dirfd, const char *name, unsigned long count)
{
	unsigned long i;
	int fd;

	fd = make_dir_at(dirfd, name);
	if (fd < 0)
		return (-1);
	for (i = 0; i < count; i++) {
		char fname[32];
		int ffd;

		snprintf(fname, sizeof(fname), "f%lu", i);
		ffd = openat(fd, fname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (ffd < 0) {
			close(fd);
			return (-1);
		}
		close(ffd);
	}
	return (close(fd));
}

int fsfx_set_immutable_at(int dirfd, const char *name, bool on)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int flags;
	int rv = -1;

	if (fd < 0)
		return (-1);
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
		if (on)
			flags |= FS_IMMUTABLE_FL;
		else
			flags &= ~FS_IMMUTABLE_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0)
			rv = 0;
	}
	close(fd);
	return (rv);
}

int fsfx_bind(const char *src, const char *dst)
{
	/* the type is ignored for MS_BIND; a string rather than NULL keeps valgrind quiet */
	return (mount(src, dst, "none", MS_BIND, NULL));
}

int fsfx_mount_tmpfs(const char *dst, const char *options)
{
	return (mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV, options));
}

int fsfx_umount(const char *path)
{
	return (umount2(path, MNT_DETACH));
}

int fsfx_set_nofile(unsigned long soft, unsigned long *old_soft)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return (-1);
	if (old_soft != NULL)
		*old_soft = (unsigned long)rl.rlim_cur;
	/* only the soft limit: valgrind refuses any change of the hard one */
	rl.rlim_cur = (rlim_t)soft;
	return (setrlimit(RLIMIT_NOFILE, &rl));
}

static int sentinel_set(struct fsfx_sentinel *s, const char *path, uid_t uid, gid_t gid,
			mode_t mode)
{
	const struct timespec times[2] = {
		{ .tv_sec = SENTINEL_MTIME, .tv_nsec = 0 },
		{ .tv_sec = SENTINEL_MTIME, .tv_nsec = 0 },
	};

	if (lchown(path, uid, gid) < 0 || chmod(path, mode) < 0 ||
	    utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW) < 0)
		return (-1);
	if (snprintf(s->path, sizeof(s->path), "%s", path) >= (int)sizeof(s->path))
		return (-1);
	return (lstat(path, &s->st));
}

int fsfx_sentinel_file(struct fsfx_sentinel *s, const char *path, const char *content,
			 mode_t mode, uid_t uid, gid_t gid)
{
	memset(s, 0, sizeof(*s));
	if (snprintf(s->content, sizeof(s->content), "%s", content) >= (int)sizeof(s->content))
		return (-1);
	if (fsfx_write_at(AT_FDCWD, path, content, 0600) < 0)
		return (-1);
	s->is_dir = false;
	return (sentinel_set(s, path, uid, gid, mode));
}

int fsfx_sentinel_dir(struct fsfx_sentinel *s, const char *path, mode_t mode, uid_t uid,
			gid_t gid)
{
	int fd;

	memset(s, 0, sizeof(*s));
	snprintf(s->content, sizeof(s->content), "sentinel directory %s\n", "keep");
	if (mkdir(path, 0700) < 0)
		return (-1);
	fd = open_dir_at(AT_FDCWD, path);
	if (fd < 0)
		return (-1);
	if (fsfx_write_at(fd, "keep", s->content, 0644) < 0) {
		close(fd);
		return (-1);
	}
	close(fd);
	s->is_dir = true;
	return (sentinel_set(s, path, uid, gid, mode));
}

bool fsfx_sentinel_intact(const struct fsfx_sentinel *s)
{
	char buf[sizeof(s->content) + 16];
	struct stat st;
	bool ok = true;

	if (lstat(s->path, &st) < 0) {
		fprintf(stderr, "sentinel %s: %s\n", s->path, strerror(errno));
		return (false);
	}
	if (st.st_dev != s->st.st_dev || st.st_ino != s->st.st_ino) {
		fprintf(stderr, "sentinel %s: replaced by another inode\n", s->path);
		ok = false;
	}
	if (st.st_mode != s->st.st_mode || st.st_uid != s->st.st_uid || st.st_gid != s->st.st_gid) {
		fprintf(stderr, "sentinel %s: mode/owner %o %u:%u, was %o %u:%u\n", s->path,
			(unsigned)st.st_mode, (unsigned)st.st_uid, (unsigned)st.st_gid,
			(unsigned)s->st.st_mode, (unsigned)s->st.st_uid, (unsigned)s->st.st_gid);
		ok = false;
	}
	if (st.st_nlink != s->st.st_nlink || st.st_size != s->st.st_size) {
		fprintf(stderr, "sentinel %s: links %lu size %lld, was %lu %lld\n", s->path,
			(unsigned long)st.st_nlink, (long long)st.st_size,
			(unsigned long)s->st.st_nlink, (long long)s->st.st_size);
		ok = false;
	}
	if (st.st_mtim.tv_sec != s->st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != s->st.st_mtim.tv_nsec) {
		fprintf(stderr, "sentinel %s: mtime changed\n", s->path);
		ok = false;
	}
	if (s->is_dir) {
		int fd = open_dir_at(AT_FDCWD, s->path);

		if (fd < 0 || fsfx_read_at(fd, "keep", buf, sizeof(buf)) < 0 ||
		    strcmp(buf, s->content) != 0) {
			fprintf(stderr, "sentinel %s: its file 'keep' is gone or changed\n", s->path);
			ok = false;
		}
		if (fd >= 0)
			close(fd);
		if (fsfx_count_entries_at(AT_FDCWD, s->path) != 1) {
			fprintf(stderr, "sentinel %s: entries added or removed\n", s->path);
			ok = false;
		}
	} else if (fsfx_read_at(AT_FDCWD, s->path, buf, sizeof(buf)) < 0 ||
		   strcmp(buf, s->content) != 0) {
		fprintf(stderr, "sentinel %s: content changed\n", s->path);
		ok = false;
	}
	return (ok);
}

/* ---- making and handing over trees ------------------------------------------------------- */

int fsfx_mkdirs_path(const char *path)
{
	char buf[PATH_MAX];
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return (-1);
	for (p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		{
			char c = *p;

			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return (-1);
			*p = c;
		}
		if (*p == '\0')
			break;
	}
	return (0);
}

int fsfx_mkdirs(const struct fsfx *fx, const char *rel)
{
	char p[PATH_MAX];

	return (fsfx_mkdirs_path(fsfx_path(fx, p, rel)));
}

/* nftw() passes no argument to its callback: the owner fsfx_chown_tree hands out */
static uid_t chown_uid;
static gid_t chown_gid;

static int chown_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_NS || type == FTW_DNR)
		return (-1);
	return (lchown(path, chown_uid, chown_gid) < 0 ? -1 : 0);
}

int fsfx_chown_tree(const char *path, uid_t uid, gid_t gid)
{
	chown_uid = uid;
	chown_gid = gid;
	return (nftw(path, chown_one, 16, FTW_PHYS | FTW_MOUNT) == 0 ? 0 : -1);
}

/* ---- the fixture --------------------------------------------------------------------------- */

int fsfx_setup(struct fsfx *fx, mode_t mode)
{
	memset(fx, 0, sizeof(*fx));
	fx->rootfd = -1;
	if (fsfx_tmpdir(fx->root, sizeof(fx->root)) < 0 || chmod(fx->root, mode) < 0)
		return (-1);
	fx->rootfd = open(fx->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fx->rootfd < 0)
		return (-1);
	fx->fds = fsfx_fd_count();
	return (0);
}

int fsfx_setup_tmpfs(struct fsfx *fx, const char *options)
{
	if (fsfx_setup(fx, 0755) < 0)
		return (-1);
	close(fx->rootfd);
	fx->rootfd = -1;
	if (fsfx_mount_tmpfs(fx->root, options) < 0) {
		fprintf(stderr, "mount -t tmpfs on %s: %s (these tests need root)\n", fx->root,
			strerror(errno));
		return (-1);
	}
	if (fsfx_note_mount(fx, fx->root) < 0)
		return (-1);
	fx->rootfd = open(fx->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fx->rootfd < 0)
		return (-1);
	fx->fds = fsfx_fd_count();
	return (0);
}

int fsfx_teardown(struct fsfx *fx)
{
	int rv = 0;
	int i;

	if (fx->nofile_changed && fsfx_set_nofile(fx->old_nofile, NULL) < 0)
		rv = -1;
	for (i = 0; i < fx->nimmutable; i++)
		fsfx_set_immutable_at(AT_FDCWD, fx->immutable[i], false);
	for (i = fx->nmounts - 1; i >= 0; i--)
		fsfx_umount(fx->mounts[i]);
	if (fx->rootfd >= 0)
		close(fx->rootfd);
	fx->rootfd = -1;
	if (fx->root[0] != '\0' && fsfx_rmtree(fx->root) < 0) {
		fprintf(stderr, "could not clean up %s\n", fx->root);
		rv = -1;
	}
	return (rv);
}

const char *fsfx_path(const struct fsfx *fx, char *buf, const char *rel)
{
	return (fsfx_join(buf, PATH_MAX, fx->root, rel));
}

/* A copy into a fixed slot; memmove, as 'src' may be a field of the fixture (its root). */
static int note_path(char (*slots)[PATH_MAX], int *n, int max, const char *src)
{
	size_t len = strlen(src);

	if (*n >= max || len >= PATH_MAX) {
		errno = ENOSPC;
		return (-1);
	}
	memmove(slots[*n], src, len + 1);
	(*n)++;
	return (0);
}

int fsfx_note_mount(struct fsfx *fx, const char *abs_path)
{
	return (note_path(fx->mounts, &fx->nmounts, FSFX_MAX_MOUNTS, abs_path));
}

int fsfx_bind_at(struct fsfx *fx, const char *src_rel, const char *dst_rel)
{
	char src[PATH_MAX], dst[PATH_MAX];

	if (fsfx_bind(fsfx_path(fx, src, src_rel), fsfx_path(fx, dst, dst_rel)) < 0)
		return (-1);
	return (fsfx_note_mount(fx, dst));
}

int fsfx_tmpfs_at(struct fsfx *fx, const char *rel, const char *options)
{
	char p[PATH_MAX];

	if (fsfx_mount_tmpfs(fsfx_path(fx, p, rel), options) < 0)
		return (-1);
	return (fsfx_note_mount(fx, p));
}

int fsfx_umount_last(struct fsfx *fx)
{
	if (fx->nmounts == 0) {
		errno = EINVAL;
		return (-1);
	}
	if (fsfx_umount(fx->mounts[fx->nmounts - 1]) < 0)
		return (-1);
	fx->nmounts--;
	return (0);
}

int fsfx_note_immutable(struct fsfx *fx, const char *abs_path)
{
	return (note_path(fx->immutable, &fx->nimmutable, FSFX_MAX_IMMUTABLE, abs_path));
}

void fsfx_forget_immutable(struct fsfx *fx, const char *abs_path)
{
	int i;

	for (i = 0; i < fx->nimmutable; i++) {
		if (strcmp(fx->immutable[i], abs_path) != 0)
			continue;
		memmove(fx->immutable[i], fx->immutable[i + 1],
			(size_t)(fx->nimmutable - i - 1) * sizeof(fx->immutable[0]));
		fx->nimmutable--;
		return;
	}
}

void fsfx_coarse_past_now(struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	do {
		struct timespec pause = { 0, 1000000 };

		nanosleep(&pause, NULL);
		clock_gettime(CLOCK_REALTIME_COARSE, t);
	} while (t->tv_sec < now.tv_sec || (t->tv_sec == now.tv_sec && t->tv_nsec <= now.tv_nsec));
}

int fsfx_made_ago_at(int dirfd, const char *name, long ago)
{
	struct timespec ts[2];

	ts[0].tv_sec = ts[1].tv_sec = time(NULL) - ago;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	return (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW));
}
