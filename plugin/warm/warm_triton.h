/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: Triton's group files, which name their kernel's files by absolute path. */
#ifndef EXTC_WARM_TRITON_H_
#define EXTC_WARM_TRITON_H_

#include <stddef.h>

/*
 * Triton 3.x (python/triton/runtime/cache.py, FileCacheManager) keeps each
 * kernel in <TRITON_CACHE_DIR>/<key>/: its files, and for each group a file
 * "__grp__<name>" holding {"child_paths": {"<file>": "<absolute path>"}},
 * written by json.dumps. Its lookup (get_group) keeps only the children
 * whose absolute path exists, and a compile counts as a hit only with the
 * metadata file among them. So an entry copied or renamed elsewhere still
 * points at its old place: every child path is rewritten to the new one,
 * <final>/<file>, as every child lives beside its group file.
 */
#define EXTC_TRITON_GROUP_PREFIX "__grp__"
#define EXTC_TRITON_GROUP_MAX (1024 * 1024)	/* bytes; a larger group file is not one */

enum extc_triton_result {
	EXTC_TRITON_NO_GROUP,	/* no group file: nothing to rewrite */
	EXTC_TRITON_OK,		/* every group file parses, and names files of the entry */
	EXTC_TRITON_BROKEN,	/* a group file does not parse, or a child is missing: not copied */
	EXTC_TRITON_FAILED,	/* a rewrite could not be written ('why') */
};

/*
 * Check the key directory 'keyfd': every group file parses, and each child
 * is a regular file of the directory, named as its path ends.
 */
enum extc_triton_result extc_triton_check(int keyfd);

/*
 * Rewrite every group file of 'keyfd' so that each child's path is
 * '<final_dir>/<file>'. Each file is replaced whole (written under a
 * temporary name, then renamed over it): a reader never sees half of one.
 */
enum extc_triton_result extc_triton_rewrite(int keyfd, const char *final_dir, char *why,
					    size_t whylen);

#endif /* EXTC_WARM_TRITON_H_ */
