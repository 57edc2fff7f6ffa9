/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's work as the job's user: the key's fingerprint, the move in. */
#include <string.h>

#include "as_user.h"
#include "pool_child.h"

_Static_assert(sizeof(struct extc_pool_publish_res) <= EXTC_AS_USER_RES_MAX,
	       "the pool's publish result must cross the helper's pipe in one write");

int extc_pool_fp_child(void *varg, void *res, size_t reslen)
{
	const struct extc_pool_fp_arg *a = varg;
	struct extc_pool_fp_res *r = res;

	memset(r, 0, reslen);
	return (extc_pool_install_fp(a->path, a->venv, a->conda, a->cuda_home, r->fp,
				     sizeof(r->fp)));
}

int extc_pool_publish_child(void *varg, void *res, size_t reslen)
{
	struct extc_warm_child_arg *a = varg;
	struct extc_pool_publish_res *r = res;

	memset(r, 0, reslen);
	a->opts.move = true;
	/* what the key holds afterwards is root's to measure (extc_pool_account), never ours */
	return (extc_warm_publish_child(a, &r->pub, sizeof(r->pub)));
}
