/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's work as the job's user: the key's fingerprint, the take and the put-back. */
#ifndef EXTC_POOL_CHILD_H_
#define EXTC_POOL_CHILD_H_

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "pool/pool_key.h"
#include "warm/warm_child.h"

#define EXTC_POOL_IMAGE_ID_MAX 128
#define EXTC_POOL_IMAGE_EDGE 65536	/* bytes of an image file hashed at each end */

struct extc_pool_fp_arg {
	const char *path, *venv, *conda, *cuda_home;	/* the job's values, NULL when unset */
	const char *image;	/* an image file the step runs, or NULL */
};

struct extc_pool_fp_res {
	char fp[EXTC_POOL_FP_LEN + 1];
	/* the image file's identity as the user sees it ("" if it cannot be told) */
	char image_id[EXTC_POOL_IMAGE_ID_MAX];
};

/* The take's and the put-back's argument: the leaf and its walk (w.seed and w.publish unused), the key. */
struct extc_pool_child_arg {
	struct extc_warm_child_arg w;
	const char *key_dir;	/* the held key's directory (extc_pool_hold) */
	/* the put-back: only entries whose inode last changed before 'changed_before' */
	bool only_unchanged;
	struct timespec changed_before;
	/* the put-back: what was taken after 'taken_after' may go back whole (pool_rename.h) */
	bool since_take;
	struct timespec taken_after;
};

/*
 * extc_as_user functions: extc_pool_key_install_fp as the user (and the
 * identity of a->image: its size and a hash of its first and last
 * EXTC_POOL_IMAGE_EDGE bytes, followed as the runtime will open it).
 */
int extc_pool_child_fp(void *varg, void *res, size_t reslen);

/*
 * The take, an extc_as_user function the task runs through
 * extc_warm_child_run_seed (what waits on it is the user's own task): the
 * key's builds renamed into the fresh leaf (extc_pool_rename_take) when
 * its manifest allows, filling an extc_warm_seed_res.
 */
int extc_pool_child_take(void *varg, void *res, size_t reslen);

/*
 * The put-back, an extc_as_user function: the leaf's completed builds
 * renamed into the key (extc_pool_rename_put_back), filling an
 * extc_warm_publish_res; 0 or -1 as extc_pool_rename_put_back.
 */
int extc_pool_child_put_back(void *varg, void *res, size_t reslen);

#endif /* EXTC_POOL_CHILD_H_ */
