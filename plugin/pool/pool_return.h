/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a directory's builds returned to their key, as the user, after the step that took them. */
#ifndef EXTC_POOL_RETURN_H_
#define EXTC_POOL_RETURN_H_

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "fs/fs_policy.h"
#include "warm/warm_walk.h"

/* What a return may wait on the user's child: renames take milliseconds, so more is a hung filesystem. */
#define EXTC_POOL_RETURN_TIMEOUT_S 60

enum extc_pool_return_result {
	EXTC_POOL_RETURNED,	/* every completed entry is in the key ('rep' says how) */
	EXTC_POOL_RETURN_PARTIAL,	/* some moved, some did not ('why') */
	EXTC_POOL_RETURN_FAILED,	/* nothing moved: the key not held, or the child failed ('why') */
};

/* What is returned where, and within what. */
struct extc_pool_return_for {
	const char *key;
	const char *dir;	/* the directory the builds are in: a leaf, or its container/ */
	const char *node;	/* the node's name, for the manifest */
	uint32_t timeout_s;	/* the user's child is killed after it */
	/*
	 * NULL: every completed entry. Else only those whose inode last
	 * changed before it (the take renames cache directories, not what is
	 * in them: an entry taken and not touched since keeps its old change
	 * time); the others are counted in rep->changed and left.
	 */
	const struct timespec *changed_before;
};

/*
 * As root, after the step: hold the key, put the completed builds of
 * f->dir back into it as the user (ids->uid, ids->gid) in a child bounded
 * by f->timeout_s, then measure what the key holds (root's numbers, never
 * the child's) and let the key go.
 */
enum extc_pool_return_result extc_pool_return(const struct extc_tree *tree,
					      const struct extc_ids *ids,
					      const struct extc_pool_return_for *f,
					      struct extc_warm_walk_report *rep, char *why,
					      size_t whylen);

#endif /* EXTC_POOL_RETURN_H_ */
