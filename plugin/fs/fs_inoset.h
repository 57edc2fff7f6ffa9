/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a set of inode numbers (the removal walk's failed entries). */
#ifndef EXTC_FS_INOSET_H_
#define EXTC_FS_INOSET_H_

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Inodes that failed once, so a re-scan of an evicted level skips them. */
struct extc_inoset {
	ino_t *slots;		/* 0 marks a free slot; inode 0 is never valid */
	size_t cap;
	size_t count;
};

bool extc_inoset_has(const struct extc_inoset *set, ino_t ino);
/* 0, or -1 when out of memory (the set is unchanged). */
int extc_inoset_add(struct extc_inoset *set, ino_t ino);

#endif /* EXTC_FS_INOSET_H_ */
