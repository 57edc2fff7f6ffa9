/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the per-node tree <base>/<uid>/<job>/<leaf>, made and removed safely as root. */
#ifndef EXTC_FS_TREE_H_
#define EXTC_FS_TREE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_ident.h"
#include "fs/fs_policy.h"
#include "fs/fs_remove.h"
#include "base/mode.h"

/* Make the base (and node level) if missing, verifying it as every step does. */
int extc_tree_prepare_base(const struct extc_tree *tree, char *why, size_t whylen);

/*
 * Make the step's private directory (and the skeleton above it), owned by
 * ids->uid/gid with mode 0700, holding only the variable directories a
 * tool would not make itself (struct extc_var).
 * In job mode an existing leaf of the job's user is reused; in local mode
 * an existing leaf is stale and replaced. 'leaf_path' receives the full
 * path for the environment. Returns the job level, open and locked
 * shared: the caller keeps it open for as long as the step runs, which is
 * how a sweep knows the job is alive here (the kernel drops the lock when
 * the step dies, however it dies). On failure -1: nothing of the leaf is
 * left and 'why' says what was refused and why.
 */
int extc_tree_create(const struct extc_tree *tree, const struct extc_ids *ids, enum extc_mode mode,
		     char *leaf_path, size_t pathlen, char *why, size_t whylen);

/*
 * Identity of the step's leaf as this process sees it, without making
 * anything: found, absent, or refused ('why' says why).
 */
enum extc_level_result extc_tree_leaf_ident(const struct extc_tree *tree,
					    const struct extc_ids *ids, enum extc_mode mode,
					    struct extc_ident *id, char *why, size_t whylen);
/*
 * The same below a job level already open ('job_fd', as extc_tree_create
 * returns it, 'job_path' its path for messages): one stat instead of a
 * walk from the root.
 */
enum extc_level_result extc_tree_leaf_ident_at(int job_fd, const char *job_path,
					       enum extc_mode mode, uint32_t stepid,
					       struct extc_ident *id, char *why, size_t whylen);

/* Remove one step's leaf. 0 when it is gone (or never existed). */
int extc_tree_remove_leaf(const struct extc_tree *tree, const struct extc_ids *ids,
			  enum extc_mode mode, struct extc_rm_report *report, char *why,
			  size_t whylen);

/*
 * A step's late end acts on the directory its step made, not on a path: a
 * requeued run of the job on this node may have made a new job level or
 * leaf of the same path meanwhile, which is that run's. What the leaf
 * below the job level the step holds ('job_fd', from extc_tree_create) is:
 */
enum extc_tree_held_result {
	EXTC_TREE_HELD_OURS,	 /* the directory h->leaf_id names, and the held level is at its path */
	EXTC_TREE_HELD_GONE,	 /* no leaf below the held level: nothing to act on */
	EXTC_TREE_HELD_REPLACED, /* another directory has the path, a later run's ('why' says which) */
	EXTC_TREE_HELD_REFUSED,	 /* cannot tell, or (for the removal) not all removed ('why') */
};

/* The step's end, as it reaches what the step made. */
struct extc_tree_held {
	const struct extc_ids *ids;
	enum extc_mode mode;
	int job_fd;				/* the job level the step holds */
	const struct extc_ident *leaf_id;	/* the leaf as the step made it; NULL: unknown */
};

/* Check, acting on nothing; read from memory, as extc_tree_leaf_ident_at. */
enum extc_tree_held_result extc_tree_held_check(const struct extc_tree *tree,
						const struct extc_tree_held *h, char *why,
						size_t whylen);

/*
 * Remove the step's leaf through the held job level, once the same check
 * finds it the step's own (EXTC_TREE_HELD_OURS: removed). The removal
 * engine compares the identity again on what it opens. Out of time, the
 * rest goes to the trash, the identity looked at once more just before.
 */
enum extc_tree_held_result extc_tree_remove_held_leaf(const struct extc_tree *tree,
						      const struct extc_tree_held *h,
						      struct extc_rm_report *report,
						      char *why, size_t whylen);

/* Remove a job's tree (<base>/<uid>/<jobid>), and the user's level once empty. */
int extc_tree_remove_job(const struct extc_tree *tree, uid_t uid, uint32_t jobid,
			 struct extc_rm_report *report, char *why, size_t whylen);

#endif /* EXTC_FS_TREE_H_ */
