/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what the tree engine is told (the node's tree, its policy, the step's ids) and what a level is found to be. */
#ifndef EXTC_FS_POLICY_H_
#define EXTC_FS_POLICY_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_remove.h"

struct extc_fs_policy {
	uid_t owner;		/* required owner of base and skeleton: root in production */
	gid_t owner_gid;
	const char *node_name;	/* extra level under base when it is shared (allow_shared_fs) */
	const struct extc_rm_limits *rm_limits;	/* NULL: extc_rm_limits_default */
	/*
	 * Making the tree inside a job's private view (job_container/tmpfs:
	 * the job's own /tmp): directories above the base may belong to the
	 * job's user, and an existing leaf of that user is the step's own,
	 * made by a sibling task. Nobody but the job can write there.
	 */
	bool job_private;
	uid_t job_uid;
};

/*
 * The node's tree: where it is (the config's base, and the node level the
 * policy names) and how it is made, checked and removed (the policy). What
 * each walk of the engine starts from; both stay the caller's.
 */
struct extc_tree {
	const struct extc_config *cfg;
	const struct extc_fs_policy *pol;
};

struct extc_ids {
	uid_t uid;
	gid_t gid;
	uint32_t jobid;
	uint32_t stepid;
};

/* What opening (or identifying) a level of the tree found. */
enum extc_level_result {
	EXTC_LEVEL_FOUND,	/* opened (or identified), made first with 'create' */
	EXTC_LEVEL_ABSENT,	/* not there, and not to be made */
	EXTC_LEVEL_REFUSED,	/* unusable or failed: 'why' says why */
};

/* Production policy: root-owned skeleton, node level when the config allows a shared base. */
void extc_fs_policy_root(struct extc_fs_policy *pol, const struct extc_config *cfg,
			 const char *node_name);

#endif /* EXTC_FS_POLICY_H_ */
