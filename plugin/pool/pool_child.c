/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's work as the job's user: the key's fingerprint, the move in. */
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "proc/as_user.h"
#include "pool/pool_child.h"
#include "base/text.h"

_Static_assert(sizeof(struct extc_pool_publish_res) <= EXTC_AS_USER_RES_MAX,
	       "the pool's publish result must cross the helper's pipe in one write");

int extc_pool_fp_child(void *varg, void *res, size_t reslen)
{
	const struct extc_pool_fp_arg *a = varg;
	struct extc_pool_fp_res *r = res;

	struct stat sb;

	memset(r, 0, reslen);
	/* a regular file only: a directory image (a sandbox, a rootfs) changes under one name */
	if (a->image != NULL && stat(a->image, &sb) == 0 && S_ISREG(sb.st_mode))
		extc_fmt(r->image_id, sizeof(r->image_id),
			 "file:%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64 ".%09ld",
			 (uint64_t)sb.st_dev, (uint64_t)sb.st_ino, (uint64_t)sb.st_size,
			 (int64_t)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
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
