/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the warm start's child, as the job's user: seed the leaf, check and publish to DIR. */
#ifndef EXTC_WARM_CHILD_H_
#define EXTC_WARM_CHILD_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/layout.h"
#include "proc/as_user.h"
#include "warm/manifest.h"
#include "warm/warm_copy.h"
#include "warm/warm_publish.h"
#include "warm/warm_seed.h"

/* Both results cross the helper's pipe in one write: see EXTC_AS_USER_RES_MAX. */
#define EXTC_WARM_CHILD_WHY_MAX 600

/* What the copying child is given, and what it sends back. */
struct extc_warm_child_arg {
	const char *leaf;
	const char *seed;
	const char *publish;
	const char *node;
	struct extc_warm_opts opts;
	const char *subdirs[EXTC_VARS_MAX];
	struct extc_manifest want;
	char tag[EXTC_NODE_NAME_MAX + 32];	/* o->tag: "<node>.<pid>", set by extc_warm_child_open */
};

struct extc_warm_seed_res {
	enum extc_seed_result seed;
	bool unchecked;		/* the seed had no manifest */
	bool by_rename;		/* its entries were renamed in (the node pool's take), not copied */
	int publish_rc;		/* 0 usable (or to be made), -1 refused */
	uint64_t ns;
	struct extc_copy_stats st;
	char seed_why[EXTC_WARM_CHILD_WHY_MAX];
	char publish_why[EXTC_WARM_CHILD_WHY_MAX];
};

struct extc_warm_publish_res {
	uint64_t ns;
	struct extc_warm_walk_report rep;
	char why[EXTC_WARM_CHILD_WHY_MAX];
};

/*
 * extc_as_user functions (as_user.h), run in the child as the user.
 * Seed: seed the leaf from a->seed (unless NULL), then check that
 * a->publish (unless NULL) is usable, filling the extc_warm_seed_res.
 * Publish: make a->publish's last component if need be and publish the
 * leaf into it, filling the extc_warm_publish_res; 0 or -1 as extc_warm_publish.
 */
int extc_warm_child_seed(void *varg, void *res, size_t reslen);
int extc_warm_child_publish(void *varg, void *res, size_t reslen);

/* The name ps shows for the process that seeds a step's directory. */
#define EXTC_WARM_SEED_NAME "extc-seed"

/*
 * In the task, before the user's program: run the seed 'fn' (extc_warm_child_seed,
 * extc_pool_child_take) on 'arg' in a child of its own, fully as cr's user,
 * filling 'r'. The child holds none of the task's descriptors, which are
 * slurmstepd's (its log, the job level it holds locked, the pool key's
 * record): only its result pipe and /dev/null (extc_as_user). Waits
 * 'timeout_s', the bound the seed's own deadline stays within, then kills
 * it; when nothing came back, 'r' is a refused seed saying why.
 */
enum extc_as_user_result extc_warm_child_run_seed(const struct extc_creds *cr, uint32_t timeout_s,
						  extc_as_user_fn fn, void *arg,
						  struct extc_warm_seed_res *r);

/*
 * In the child, as the user: open the leaf and 'dir', making dir's last
 * component if need be; o->dest names 'dir', o->tag this node and process. 0, or -1 and 'why';
 * what was opened is closed by extc_warm_child_close either way.
 */
int extc_warm_child_open(struct extc_warm_child_arg *a, const char *dir, int *leaffd,
			 int *dirfd, char *why, size_t whylen);
void extc_warm_child_close(int leaffd, int dirfd);

/* Whose child it is: the step's directory, where and for whom it runs, and its bound. */
struct extc_warm_child_for {
	const char *leaf;
	const char *node;	/* the node's name, for the manifest and the stage names */
	const char *key;	/* the key the manifest names (checked) */
	uint32_t jobid;
	uint32_t timeout_s;	/* what the parent waits for the child, at most */
};

/*
 * A child's argument for f->leaf: the variables' subdirectories, seed_max,
 * a deadline a little before f->timeout_s, and the manifest wanted for
 * f->key on this node and CPU (-1 and 'why' when it cannot be made; the
 * rest is set).
 */
int extc_warm_child_arg_init(struct extc_warm_child_arg *a, const struct extc_config *cfg,
			     const struct extc_warm_child_for *f, char *why, size_t whylen);

#endif /* EXTC_WARM_CHILD_H_ */
