/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a key's top level as root saw it when a step held it, and whether it is so again. */
#ifndef EXTC_POOL_SINCE_H_
#define EXTC_POOL_SINCE_H_

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/* A key's top level is its manifest and one directory per variable: a few names. */
#define EXTC_POOL_SINCE_MAX 16
#define EXTC_POOL_SINCE_NAME_MAX 64

struct extc_pool_since_entry {
	char name[EXTC_POOL_SINCE_NAME_MAX];
	dev_t dev;
	ino_t ino;
	mode_t mode;
	struct timespec mtime, ctime;
};

/*
 * What root saw of a key's top level at 'at' (CLOCK_REALTIME_COARSE,
 * the clock filesystems stamp times with, read before the look): each
 * name's inode and times. 'known' false: nothing to compare with (a name
 * too long, too many, a mount, the key unreadable).
 */
struct extc_pool_since {
	bool known;
	struct timespec at;
	size_t n;
	struct extc_pool_since_entry e[EXTC_POOL_SINCE_MAX];
};

/*
 * As root, look at the top level of the key directory 'key' below the
 * user's pool level 'uidfd': the key opened only once known to be on the
 * level's mount (extc_ident_open_below), its names looked at from memory,
 * never followed, nothing below them read.
 */
void extc_pool_since_note(int uidfd, const char *key, struct extc_pool_since *s);

/*
 * Is the key's top level as 's' saw it: the same names, each the same
 * inode on the key's own mount, a directory with the same mtime older than
 * s->at (no name added, removed or renamed in it since, as an untaken
 * directory or one that went and came back whole keeps it), anything else
 * not changed at all (its ctime)? What lies below the top level is not
 * looked at: root counts it at the next full measure.
 */
bool extc_pool_since_same(int uidfd, const char *key, const struct extc_pool_since *s);

#endif /* EXTC_POOL_SINCE_H_ */
