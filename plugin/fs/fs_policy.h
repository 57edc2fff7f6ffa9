/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: what the tree engine is told (the node's tree, its
 * policy, the step's ids), what the policy holds every level to, and what
 * a level is found to be.
 */
#ifndef EXTC_FS_POLICY_H_
#define EXTC_FS_POLICY_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_ident.h"
#include "fs/fs_remove.h"

/* The plugin's own levels: traversable, not listable: users cannot see each other's jobs. */
#define EXTC_FS_POLICY_SKELETON_MODE 0711

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

/*
 * The policy's removal limits, or the default ones with a deadline 10 s
 * from now: where a step or an epilog waits, no removal runs unbounded.
 */
const struct extc_rm_limits *extc_fs_policy_rm_limits(const struct extc_fs_policy *pol,
						      struct extc_rm_limits *buf);

/*
 * Is 'id' (at 'path', for the message) a level the plugin owns: a
 * directory of the policy's owner that no one else may write in and
 * everyone may pass through? 0, or -1 with 'why' saying why not.
 */
int extc_fs_policy_check_skeleton(const struct extc_fs_policy *pol, const struct extc_ident *id,
				  const char *path, char *why, size_t whylen);
/*
 * Is 'id' fit to be a directory above the base: root's (or the owner's,
 * or in a job's private view the job user's), writable by others only if
 * sticky? 0, or -1 with 'why' saying why not.
 */
int extc_fs_policy_check_ancestor(const struct extc_fs_policy *pol, const struct extc_ident *id,
				  const char *path, char *why, size_t whylen);

#endif /* EXTC_FS_POLICY_H_ */
