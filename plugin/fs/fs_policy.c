/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the tree engine's production policy. */
#include "fs/fs_policy.h"

void extc_fs_policy_root(struct extc_fs_policy *pol, const struct extc_config *cfg,
			 const char *node_name)
{
	pol->owner = 0;
	pol->owner_gid = 0;
	pol->node_name = cfg->allow_shared_fs ? node_name : NULL;
	pol->rm_limits = NULL;
	pol->job_private = false;
	pol->job_uid = 0;
}
