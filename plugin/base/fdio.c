/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: small descriptor chores: a listing that keeps its descriptor, whole writes, "." and "..", a rename that never replaces. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <unistd.h>

#include "base/fdio.h"

/*
 * fdopendir() takes the descriptor it is given: the stream gets a duplicate,
 * so that the caller's stays open for the *at() calls on the entries.
 * dup(), as the removal engine always did (the fault suite fails its calls
 * one by one); fdopendir() marks the duplicate close-on-exec itself. The
 * duplicate shares the file offset with 'dirfd': without the rewind a
 * second listing of the same directory would find it already read.
 */
DIR *extc_fdio_opendir(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d;

	if (fd < 0)
		return (NULL);
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);	/* succeeds on a descriptor of ours: fdopendir's errno stays */
		return (NULL);
	}
	rewinddir(d);
	return (d);
}

int extc_fdio_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	size_t off = 0;

	while (off < n) {
		ssize_t m = write(fd, p + off, n - off);

		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)	/* 0 for a non-empty write: no progress, never a loop */
			return (-1);
		off += (size_t)m;
	}
	return (0);
}

bool extc_fdio_is_dot(const char *name)
{
	return (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')));
}

int extc_fdio_rename_noreplace(int sfd, const char *sname, int dfd, const char *dname,
			       bool isdir)
{
	if (renameat2(sfd, sname, dfd, dname, RENAME_NOREPLACE) == 0)
		return (0);
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return (-1);
	if (isdir)
		return (renameat(sfd, sname, dfd, dname));
	if (linkat(sfd, sname, dfd, dname, 0) < 0)
		return (-1);
	unlinkat(sfd, sname, 0);
	return (0);
}
