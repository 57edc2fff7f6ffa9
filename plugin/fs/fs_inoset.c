/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a set of inode numbers, open addressing (see fs_inoset.h). */
#include <stdint.h>
#include <stdlib.h>

#include "fs/fs_inoset.h"

static size_t ino_hash(ino_t ino, size_t cap)
{
	uint64_t x = (uint64_t)ino * 0x9e3779b97f4a7c15ull;

	return ((size_t)(x >> 17) & (cap - 1));
}

bool extc_inoset_has(const struct extc_inoset *set, ino_t ino)
{
	size_t i;

	if (set->count == 0 || ino == 0)
		return (false);
	for (i = ino_hash(ino, set->cap); set->slots[i] != 0; i = (i + 1) & (set->cap - 1)) {
		if (set->slots[i] == ino)
			return (true);
	}
	return (false);
}

int extc_inoset_add(struct extc_inoset *set, ino_t ino)
{
	size_t i;

	if (ino == 0 || extc_inoset_has(set, ino))
		return (0);
	if ((set->count + 1) * 2 > set->cap) {
		struct extc_inoset bigger = { NULL, set->cap ? set->cap * 2 : 64, 0 };

		bigger.slots = calloc(bigger.cap, sizeof(ino_t));
		if (bigger.slots == NULL)
			return (-1);
		for (i = 0; i < set->cap; i++) {
			if (set->slots[i] != 0)
				extc_inoset_add(&bigger, set->slots[i]);
		}
		free(set->slots);
		*set = bigger;
	}
	for (i = ino_hash(ino, set->cap); set->slots[i] != 0; i = (i + 1) & (set->cap - 1))
		;
	set->slots[i] = ino;
	set->count++;
	return (0);
}
