/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: filesystem fixtures (see fstest.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fstest.h"

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

extern char **environ;

int fstest_tmpdir(char *buf, size_t len)
{
	if (snprintf(buf, len, "%sXXXXXX", TMP_PREFIX) >= (int)len)
		return (-1);
	if (mkdtemp(buf) == NULL)
		return (-1);
	return (0);
}

const char *fstest_join(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s/%s", a, b);

	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "fstest_join: path too long: %s/%s\n", a, b);
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

int fstest_rmrf(const char *path)
{
	char *argv[] = { "rm", "-rf", "--one-file-system", "--", (char *)path, NULL };
	pid_t pid;
	int status;

	/* never point rm at anything but a directory fstest_tmpdir made */
	if (strncmp(path, TMP_PREFIX, strlen(TMP_PREFIX)) != 0 || strstr(path, "..") != NULL) {
		fprintf(stderr, "fstest_rmrf: refusing %s\n", path);
		return (-1);
	}
	if (!fstest_exists(path))
		return (0);
	if (detach_mounts_below(path) < 0)
		fprintf(stderr, "fstest_rmrf: could not detach mounts below %s\n", path);
	if (posix_spawn(&pid, "/bin/rm", NULL, NULL, argv, environ) != 0)
		return (-1);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return (-1);
	return (fstest_exists(path) ? -1 : 0);
}

int fstest_fd_count(void)
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

int fstest_write_at(int dirfd, const char *name, const char *content, mode_t mode)
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

long fstest_read_at(int dirfd, const char *name, char *buf, size_t len)
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

bool fstest_exists_at(int dirfd, const char *name)
{
	struct stat st;

	return (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0);
}

bool fstest_exists(const char *path)
{
	struct stat st;

	return (lstat(path, &st) == 0);
}

bool fstest_lstat(const char *path, struct stat *st)
{
	return (lstat(path, st) == 0);
}

long fstest_count_entries_at(int dirfd, const char *name)
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

int fstest_chain_at(int dirfd, const char *name, const char *level, unsigned long depth,
		    const char *leaf_file)
{
	unsigned long i;
	int fd;

	if (mkdirat(dirfd, name, 0755) < 0)
		return (-1);
	fd = open_dir_at(dirfd, name);
	if (fd < 0)
		return (-1);
	for (i = 0; i < depth; i++) {
		int nfd;

		if (mkdirat(fd, level, 0755) < 0) {
			close(fd);
			return (-1);
		}
		nfd = open_dir_at(fd, level);
		close(fd);
		if (nfd < 0)
			return (-1);
		fd = nfd;
	}
	if (leaf_file != NULL && fstest_write_at(fd, leaf_file, "deep\n", 0644) < 0) {
		close(fd);
		return (-1);
	}
	return (close(fd));
}

int fstest_wide_at(int dirfd, const char *name, unsigned long count)
{
	unsigned long i;
	int fd;

	if (mkdirat(dirfd, name, 0755) < 0)
		return (-1);
	fd = open_dir_at(dirfd, name);
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

int fstest_set_immutable_at(int dirfd, const char *name, bool on)
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

int fstest_bind(const char *src, const char *dst)
{
	/* the type is ignored for MS_BIND; a string rather than NULL keeps valgrind quiet */
	return (mount(src, dst, "none", MS_BIND, NULL));
}

int fstest_mount_tmpfs(const char *dst, const char *options)
{
	return (mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV, options));
}

int fstest_umount(const char *path)
{
	return (umount2(path, MNT_DETACH));
}

int fstest_set_nofile(unsigned long soft, unsigned long *old_soft)
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

static int sentinel_set(struct fstest_sentinel *s, const char *path, uid_t uid, gid_t gid,
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

int fstest_sentinel_file(struct fstest_sentinel *s, const char *path, const char *content,
			 mode_t mode, uid_t uid, gid_t gid)
{
	memset(s, 0, sizeof(*s));
	if (snprintf(s->content, sizeof(s->content), "%s", content) >= (int)sizeof(s->content))
		return (-1);
	if (fstest_write_at(AT_FDCWD, path, content, 0600) < 0)
		return (-1);
	s->is_dir = false;
	return (sentinel_set(s, path, uid, gid, mode));
}

int fstest_sentinel_dir(struct fstest_sentinel *s, const char *path, mode_t mode, uid_t uid,
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
	if (fstest_write_at(fd, "keep", s->content, 0644) < 0) {
		close(fd);
		return (-1);
	}
	close(fd);
	s->is_dir = true;
	return (sentinel_set(s, path, uid, gid, mode));
}

bool fstest_sentinel_intact(const struct fstest_sentinel *s)
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

		if (fd < 0 || fstest_read_at(fd, "keep", buf, sizeof(buf)) < 0 ||
		    strcmp(buf, s->content) != 0) {
			fprintf(stderr, "sentinel %s: its file 'keep' is gone or changed\n", s->path);
			ok = false;
		}
		if (fd >= 0)
			close(fd);
		if (fstest_count_entries_at(AT_FDCWD, s->path) != 1) {
			fprintf(stderr, "sentinel %s: entries added or removed\n", s->path);
			ok = false;
		}
	} else if (fstest_read_at(AT_FDCWD, s->path, buf, sizeof(buf)) < 0 ||
		   strcmp(buf, s->content) != 0) {
		fprintf(stderr, "sentinel %s: content changed\n", s->path);
		ok = false;
	}
	return (ok);
}
