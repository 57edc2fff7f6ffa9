/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what one key of the node pool really uses, measured by root's own walk. */
#ifndef EXTC_POOL_MEASURE_H_
#define EXTC_POOL_MEASURE_H_

#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

/*
 * Far below what a walk of held descriptors can afford, far above any
 * compiler or JIT cache (torch's extensions, Triton, Inductor: 3 to 6).
 */
#define EXTC_POOL_MEASURE_DEPTH 64
/* One user's keys in one pass, or one key after a move: a slow disk is not waited on longer. */
#define EXTC_POOL_MEASURE_BUDGET_NS (60ull * 1000000000ull)

struct extc_pool_measure_limits {
	uint32_t max_depth;	/* levels below the key directory */
	uint64_t max_entries;	/* names read (each hard link is one); 0: none */
	uint64_t deadline_ns;	/* extc_clock_monotonic_ns() time to give up at; 0: none */
};

struct extc_pool_usage {
	uint64_t bytes;		/* allocated (st_blocks * 512), each inode once */
	uint64_t inodes;	/* distinct inodes, the key directory's own included */
	uint64_t entries;	/* names read, whether or not they were counted */
	int err;		/* the failed call's error, for EXTC_POOL_MEASURE_ERROR */
};

enum extc_pool_measure_result {
	EXTC_POOL_MEASURED,		/* 'bytes' and 'inodes' are the key's */
	EXTC_POOL_MEASURE_ABSENT,	/* no such key directory */
	EXTC_POOL_MEASURE_TOO_DEEP,	/* a directory below max_depth levels */
	EXTC_POOL_MEASURE_TOO_MANY,	/* more than max_entries names */
	EXTC_POOL_MEASURE_TIMEOUT,	/* the deadline passed */
	EXTC_POOL_MEASURE_MOUNT,	/* the key, or something in it, is a mount point */
	EXTC_POOL_MEASURE_ERROR,	/* a call failed: 'err' */
};

/*
 * Measure the key directory 'key' below the user's pool level 'uidfd', as
 * root, with nothing the user can steer: every name is looked at with
 * statx from memory (no symlink followed, no automount, no request to a
 * filesystem mounted on it), a directory is opened only once it is known
 * to be on the key's own mount (extc_ident_open_below), and only through the
 * descriptor of its parent. A mount anywhere stops the walk: what is under
 * it is not the key's to count. Bytes are the blocks really allocated, so
 * a sparse file counts what it holds, and an inode with several names
 * counts once. Anything but EXTC_POOL_MEASURED leaves 'out' partial.
 */
enum extc_pool_measure_result extc_pool_measure_key(int uidfd, const char *key,
						    const struct extc_pool_measure_limits *lim,
						    struct extc_pool_usage *out);

/* The limits for one key: the depth above, pool_max_inodes names, the budget from now. */
void extc_pool_measure_limits_for(const struct extc_config *cfg,
				  struct extc_pool_measure_limits *lim);

/* Why a key could not be measured, in words (with its error for EXTC_POOL_MEASURE_ERROR). */
void extc_pool_measure_text(enum extc_pool_measure_result r, const struct extc_pool_usage *u,
			    char *buf, size_t len);

#endif /* EXTC_POOL_MEASURE_H_ */
