/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's work as the job's user: the key's fingerprint, the move in. */
#ifndef EXTC_POOL_CHILD_H_
#define EXTC_POOL_CHILD_H_

#include <stdint.h>

#include "pool_key.h"
#include "warm_child.h"

struct extc_pool_fp_arg {
	const char *path, *venv, *conda, *cuda_home;	/* the job's values, NULL when unset */
};

struct extc_pool_fp_res {
	char fp[EXTC_POOL_FP_LEN + 1];
};

struct extc_pool_publish_res {
	struct extc_warm_publish_res pub;
};

/* extc_as_user functions: extc_pool_install_fp as the user; the move into a->publish and its size. */
int extc_pool_fp_child(void *varg, void *res, size_t reslen);
int extc_pool_publish_child(void *varg, void *res, size_t reslen);

#endif /* EXTC_POOL_CHILD_H_ */
