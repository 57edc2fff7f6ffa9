/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's work as the job's user: the key's fingerprint, the move in. */
#ifndef EXTC_POOL_CHILD_H_
#define EXTC_POOL_CHILD_H_

#include <stdint.h>

#include "pool/pool_key.h"
#include "warm/warm_child.h"

#define EXTC_POOL_IMAGE_ID_MAX 128

struct extc_pool_fp_arg {
	const char *path, *venv, *conda, *cuda_home;	/* the job's values, NULL when unset */
	const char *image;	/* an image file the step runs, or NULL */
};

struct extc_pool_fp_res {
	char fp[EXTC_POOL_FP_LEN + 1];
	/* the image file's identity as the user sees it ("" if it cannot be told) */
	char image_id[EXTC_POOL_IMAGE_ID_MAX];
};

struct extc_pool_publish_res {
	struct extc_warm_publish_res pub;
};

/*
 * extc_as_user functions: extc_pool_install_fp as the user (and the
 * identity of a->image: device, inode, size, modification time, followed
 * as the runtime will open it); the move into a->publish.
 */
int extc_pool_fp_child(void *varg, void *res, size_t reslen);
int extc_pool_publish_child(void *varg, void *res, size_t reslen);

#endif /* EXTC_POOL_CHILD_H_ */
