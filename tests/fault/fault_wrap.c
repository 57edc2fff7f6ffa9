/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache fault injection: the --wrap seam (see fault.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "fault.h"

struct fault_plan fault;

const char *const fault_fn_names[FF_COUNT] = {
	[FF_MKDIRAT] = "mkdirat", [FF_OPENAT] = "openat", [FF_OPEN] = "open",
	[FF_FCHOWN] = "fchown", [FF_FCHMOD] = "fchmod", [FF_STATX] = "statx",
	[FF_FSTATAT] = "fstatat", [FF_FSTATFS] = "fstatfs", [FF_UNLINKAT] = "unlinkat",
	[FF_FLOCK] = "flock", [FF_DUP] = "dup", [FF_FDOPENDIR] = "fdopendir",
	[FF_READDIR] = "readdir", [FF_RENAMEAT2] = "renameat2", [FF_FCHMODAT] = "fchmodat",
	[FF_FCHOWNAT] = "fchownat", [FF_CHMOD] = "chmod", [FF_CHOWN] = "chown",
	[FF_LCHOWN] = "lchown",
};

void fault_arm(enum fault_fn fn, unsigned long nth, int err, bool sticky)
{
	fault_hook_fn hook = fault.hook;
	void *hook_arg = fault.hook_arg;

	memset(&fault, 0, sizeof(fault));
	fault.fn = fn;
	fault.nth = nth;
	fault.err = err;
	fault.sticky = sticky;
	fault.hook = hook;
	fault.hook_arg = hook_arg;
	fault.armed = true;
}

void fault_disarm(void)
{
	fault.armed = false;
}

/* Count the call; true if it must fail (errno is then set). */
static bool inject(enum fault_fn fn)
{
	unsigned long n;

	if (!fault.armed)
		return (false);
	n = ++fault.calls[fn];
	if (fault.nth == 0 || fn != fault.fn)
		return (false);
	if (n == fault.nth || (fault.sticky && n > fault.nth)) {
		fault.fired = true;
		errno = fault.err;
		return (true);
	}
	return (false);
}

static void after(enum fault_fn fn, int dirfd, const char *name)
{
	if (fault.armed && fault.hook != NULL) {
		int saved = errno;

		fault.hook(fn, dirfd, name, fault.hook_arg);
		errno = saved;
	}
}

/* The engine opens only directories, and never follows a symlink doing so. */
static void check_open_flags(const char *name, int flags)
{
	const int need = O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC;

	if (!fault.armed || (flags & need) == need)
		return;
	if (fault.unsafe_opens++ == 0)
		snprintf(fault.first_unsafe, sizeof(fault.first_unsafe), "%s (flags 0%o)", name,
			 (unsigned)flags);
}

/* Every wrapper has a prototype here (-Wmissing-prototypes), then its body. */
int __real_mkdirat(int, const char *, mode_t);
int __wrap_mkdirat(int, const char *, mode_t);
int __real_openat(int, const char *, int, ...);
int __wrap_openat(int, const char *, int, ...);
int __real_open(const char *, int, ...);
int __wrap_open(const char *, int, ...);
int __real_fchown(int, uid_t, gid_t);
int __wrap_fchown(int, uid_t, gid_t);
int __real_fchmod(int, mode_t);
int __wrap_fchmod(int, mode_t);
int __real_statx(int, const char *, int, unsigned int, struct statx *);
int __wrap_statx(int, const char *, int, unsigned int, struct statx *);
int __real_fstatat(int, const char *, struct stat *, int);
int __wrap_fstatat(int, const char *, struct stat *, int);
int __real_fstatfs(int, struct statfs *);
int __wrap_fstatfs(int, struct statfs *);
int __real_unlinkat(int, const char *, int);
int __wrap_unlinkat(int, const char *, int);
int __real_flock(int, int);
int __wrap_flock(int, int);
int __real_dup(int);
int __wrap_dup(int);
DIR *__real_fdopendir(int);
DIR *__wrap_fdopendir(int);
struct dirent *__real_readdir(DIR *);
struct dirent *__wrap_readdir(DIR *);
int __real_renameat2(int, const char *, int, const char *, unsigned int);
int __wrap_renameat2(int, const char *, int, const char *, unsigned int);
int __real_fchmodat(int, const char *, mode_t, int);
int __wrap_fchmodat(int, const char *, mode_t, int);
int __real_fchownat(int, const char *, uid_t, gid_t, int);
int __wrap_fchownat(int, const char *, uid_t, gid_t, int);
int __real_chmod(const char *, mode_t);
int __wrap_chmod(const char *, mode_t);
int __real_chown(const char *, uid_t, gid_t);
int __wrap_chown(const char *, uid_t, gid_t);
int __real_lchown(const char *, uid_t, gid_t);
int __wrap_lchown(const char *, uid_t, gid_t);

int __wrap_mkdirat(int dirfd, const char *name, mode_t mode)
{
	int rv;

	if (inject(FF_MKDIRAT))
		return (-1);
	rv = __real_mkdirat(dirfd, name, mode);
	if (rv == 0)
		after(FF_MKDIRAT, dirfd, name);
	return (rv);
}

int __wrap_openat(int dirfd, const char *name, int flags, ...)
{
	mode_t mode = 0;
	int rv;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	check_open_flags(name, flags);
	if (inject(FF_OPENAT))
		return (-1);
	rv = __real_openat(dirfd, name, flags, mode);
	if (rv >= 0)
		after(FF_OPENAT, dirfd, name);
	return (rv);
}

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	check_open_flags(path, flags);
	if (inject(FF_OPEN))
		return (-1);
	return (__real_open(path, flags, mode));
}

int __wrap_fchown(int fd, uid_t uid, gid_t gid)
{
	if (inject(FF_FCHOWN))
		return (-1);
	return (__real_fchown(fd, uid, gid));
}

int __wrap_fchmod(int fd, mode_t mode)
{
	if (inject(FF_FCHMOD))
		return (-1);
	return (__real_fchmod(fd, mode));
}

int __wrap_statx(int dirfd, const char *name, int flags, unsigned int mask, struct statx *stx)
{
	if (inject(FF_STATX))
		return (-1);
	return (__real_statx(dirfd, name, flags, mask, stx));
}

int __wrap_fstatat(int dirfd, const char *name, struct stat *st, int flags)
{
	if (inject(FF_FSTATAT))
		return (-1);
	return (__real_fstatat(dirfd, name, st, flags));
}

int __wrap_fstatfs(int fd, struct statfs *sfs)
{
	if (inject(FF_FSTATFS))
		return (-1);
	return (__real_fstatfs(fd, sfs));
}

int __wrap_unlinkat(int dirfd, const char *name, int flags)
{
	if (inject(FF_UNLINKAT))
		return (-1);
	return (__real_unlinkat(dirfd, name, flags));
}

int __wrap_flock(int fd, int op)
{
	if (inject(FF_FLOCK))
		return (-1);
	return (__real_flock(fd, op));
}

int __wrap_dup(int fd)
{
	if (inject(FF_DUP))
		return (-1);
	return (__real_dup(fd));
}

DIR *__wrap_fdopendir(int fd)
{
	if (inject(FF_FDOPENDIR))
		return (NULL);
	return (__real_fdopendir(fd));
}

struct dirent *__wrap_readdir(DIR *dir)
{
	struct dirent *de;

	/* a getdents failure mid-directory: NULL with errno set */
	if (inject(FF_READDIR))
		return (NULL);
	de = __real_readdir(dir);
	if (de != NULL)
		after(FF_READDIR, dirfd(dir), de->d_name);
	return (de);
}

int __wrap_renameat2(int olddirfd, const char *oldname, int newdirfd, const char *newname,
		     unsigned int flags)
{
	if (inject(FF_RENAMEAT2))
		return (-1);
	return (__real_renameat2(olddirfd, oldname, newdirfd, newname, flags));
}

int __wrap_fchmodat(int dirfd, const char *name, mode_t mode, int flags)
{
	inject(FF_FCHMODAT);
	return (__real_fchmodat(dirfd, name, mode, flags));
}

int __wrap_fchownat(int dirfd, const char *name, uid_t uid, gid_t gid, int flags)
{
	inject(FF_FCHOWNAT);
	return (__real_fchownat(dirfd, name, uid, gid, flags));
}

int __wrap_chmod(const char *path, mode_t mode)
{
	inject(FF_CHMOD);
	return (__real_chmod(path, mode));
}

int __wrap_chown(const char *path, uid_t uid, gid_t gid)
{
	inject(FF_CHOWN);
	return (__real_chown(path, uid, gid));
}

int __wrap_lchown(const char *path, uid_t uid, gid_t gid)
{
	inject(FF_LCHOWN);
	return (__real_lchown(path, uid, gid));
}
