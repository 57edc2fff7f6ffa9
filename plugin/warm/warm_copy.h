/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: walking a JIT cache tree as the job's user: what a seed or a publish copies. */
#ifndef EXTC_WARM_COPY_H_
#define EXTC_WARM_COPY_H_

#include <stddef.h>

#include "warm/warm_opts.h"

#define EXTC_WARM_MAX_DEPTH 64		/* deeper trees are refused, not cut */

/*
 * Copy the contents of directory 'srcfd' into the empty directory 'dstfd'
 * with every rule of the seed (no measuring, no staging); for benchmarks
 * and tests.
 */
int extc_warm_copy_tree(int srcfd, int dstfd, const struct extc_warm_opts *o,
			struct extc_copy_stats *st, char *why, size_t whylen);

/*
 * Copy one entry 'name' of 'srcfd' (file, symlink or directory tree) to
 * 'dname' in 'dstfd', with the same rules; counts add up in 'st'.
 */
int extc_warm_copy_entry(int srcfd, const char *name, int dstfd, const char *dname,
			 const struct extc_warm_opts *o, struct extc_copy_stats *st,
			 char *why, size_t whylen);

/* Walk 'srcfd' as a seed copy would, counting only. */
int extc_warm_copy_measure(int srcfd, const struct extc_warm_opts *o, struct extc_copy_stats *st,
			   char *why, size_t whylen);

#endif /* EXTC_WARM_COPY_H_ */
