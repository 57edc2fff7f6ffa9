/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: small descriptor chores: a listing that keeps its descriptor, whole writes, "." and "..", a rename that never replaces. */
#ifndef EXTC_FDIO_H_
#define EXTC_FDIO_H_

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A stream over directory 'dirfd' from its first entry. 'dirfd' stays open
 * and usable: the stream has a duplicate of its own, which closedir()
 * closes. NULL with errno when it cannot be had (nothing is left open).
 */
DIR *extc_fdio_opendir(int dirfd);

/* All 'n' bytes of 'buf' to 'fd', through EINTR and short writes; 0, or -1 with errno. */
int extc_fdio_write_all(int fd, const void *buf, size_t n);

/* Whether 'name' is "." or "..", the two entries of a listing that are not its contents. */
bool extc_fdio_is_dot(const char *name);

/*
 * Rename without replacing. renameat2(RENAME_NOREPLACE) where the
 * filesystem has it; NFS and older kernels do not, and then a directory is
 * renamed plainly (which fails on a non-empty one) and anything else is
 * linked (which fails on an existing name) and its old name dropped.
 */
int extc_fdio_rename_noreplace(int sfd, const char *sname, int dfd, const char *dname,
			       bool isdir);

#endif /* EXTC_FDIO_H_ */
