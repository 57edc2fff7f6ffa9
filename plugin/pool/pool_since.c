/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a key's top level as root saw it when a step held it, and whether it is so again. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "fs/fs_ident.h"
#include "pool/pool_since.h"

/* From memory, never followed, no automount: a FUSE mount on a name is never asked. */
#define LOOK_FLAGS (AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC)

/* The key directory, as root, only if it lies on its level's mount; -1 otherwise. */
static int open_key(int uidfd, const char *key, struct extc_ident *keyid)
{
	struct extc_ident parent;
	int fd = -1;

	if (extc_ident_fd(uidfd, &parent) < 0 ||
	    extc_ident_open_below(uidfd, &parent, key, &fd, keyid) != EXTC_OPEN_OK)
		return (-1);
	return (fd);
}

/* One name of the key's top level: on the key's own mount, not a mount point, else -1. */
static int look(int keyfd, const struct extc_ident *keyid, const char *name,
		struct extc_pool_since_entry *e)
{
	struct extc_ident id;
	struct statx stx;

	if (strlen(name) >= sizeof(e->name) || extc_ident_at(keyfd, name, &id) < 0 ||
	    id.mount_root || !extc_ident_same_mount(&id, keyid) ||
	    statx(keyfd, name, LOOK_FLAGS, STATX_BASIC_STATS, &stx) < 0)
		return (-1);
	strcpy(e->name, name);
	e->dev = id.dev;
	e->ino = (ino_t)stx.stx_ino;
	e->mode = stx.stx_mode;
	e->mtime = (struct timespec){ stx.stx_mtime.tv_sec, stx.stx_mtime.tv_nsec };
	e->ctime = (struct timespec){ stx.stx_ctime.tv_sec, stx.stx_ctime.tv_nsec };
	return (0);
}

/* The key's top level into 'e' (at most 'max' names); their number, or -1. */
static ssize_t read_top(int uidfd, const char *key, struct extc_pool_since_entry *e, size_t max)
{
	struct extc_ident keyid;
	struct dirent *de;
	ssize_t n = 0;
	int fd = open_key(uidfd, key, &keyid);
	DIR *d = fd >= 0 ? extc_fdio_opendir(fd) : NULL;

	if (d == NULL)
		n = -1;
	while (d != NULL && n >= 0 && (de = readdir(d)) != NULL) {
		if (extc_fdio_is_dot(de->d_name))
			continue;
		if ((size_t)n == max || look(fd, &keyid, de->d_name, &e[n]) < 0)
			n = -1;
		else
			n++;
	}
	if (d != NULL)
		closedir(d);
	if (fd >= 0)
		close(fd);
	return (n);
}

void extc_pool_since_note(int uidfd, const char *key, struct extc_pool_since *s)
{
	ssize_t n;

	memset(s, 0, sizeof(*s));
	/* first the time: whatever changes during or after the look is stamped no earlier */
	clock_gettime(CLOCK_REALTIME_COARSE, &s->at);
	n = read_top(uidfd, key, s->e, EXTC_POOL_SINCE_MAX);
	s->known = n >= 0;
	s->n = n >= 0 ? (size_t)n : 0;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return (a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec);
}

static bool older_than(const struct timespec *t, const struct timespec *limit)
{
	return (t->tv_sec < limit->tv_sec || (t->tv_sec == limit->tv_sec && t->tv_nsec < limit->tv_nsec));
}

/* Is 'now' the entry 'was' as it was? */
static bool same_entry(const struct extc_pool_since_entry *was,
		       const struct extc_pool_since_entry *now, const struct timespec *at)
{
	if (was->dev != now->dev || was->ino != now->ino || was->mode != now->mode)
		return (false);
	if (S_ISDIR(now->mode))
		return (same_time(&was->mtime, &now->mtime) && older_than(&now->mtime, at));
	return (same_time(&was->ctime, &now->ctime));
}

bool extc_pool_since_same(int uidfd, const char *key, const struct extc_pool_since *s)
{
	static struct extc_pool_since_entry now[EXTC_POOL_SINCE_MAX];	/* off slurmstepd's stack */
	size_t i, j;
	ssize_t n;

	if (!s->known)
		return (false);
	n = read_top(uidfd, key, now, EXTC_POOL_SINCE_MAX);
	if (n < 0 || (size_t)n != s->n)
		return (false);
	for (i = 0; i < s->n; i++) {
		for (j = 0; j < s->n && strcmp(s->e[j].name, now[i].name) != 0; j++)
			;
		if (j == s->n || !same_entry(&s->e[j], &now[i], &s->at))
			return (false);
	}
	return (true);
}
