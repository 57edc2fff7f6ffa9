/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the tree engine's policy: production's, the bound of a
 * removal someone waits for, and what every level must be.
 */
#include <sys/stat.h>

#include "base/clock.h"
#include "base/text.h"
#include "fs/fs_policy.h"

/* removal on a step's or an epilog's own path: the user may re-populate the tree forever */
#define CRITICAL_REMOVE_BUDGET_NS (10ull * 1000000000ull)

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

/*
 * The caller's removal limits, or the default ones with a deadline: no
 * removal may run unbounded where a job or the node waits for it.
 */
const struct extc_rm_limits *extc_fs_policy_rm_limits(const struct extc_fs_policy *pol,
						      struct extc_rm_limits *buf)
{
	if (pol->rm_limits != NULL)
		return (pol->rm_limits);
	extc_rm_limits_default(buf);
	buf->deadline_ns = extc_clock_monotonic_ns() + CRITICAL_REMOVE_BUDGET_NS;
	return (buf);
}

/* A level the plugin owns: a directory, ours, not writable by anyone else. */
int extc_fs_policy_check_skeleton(const struct extc_fs_policy *pol, const struct extc_ident *id,
				  const char *path, char *why, size_t whylen)
{
	if (!S_ISDIR(id->mode)) {
		extc_fmt(why, whylen, "%s: is not a directory; refusing to use it", path);
		return (-1);
	}
	if (id->uid != pol->owner || (id->mode & 022) != 0) {
		extc_fmt(why, whylen,
			 "%s: owned by uid %u with mode %04o, expected uid %u and no group/other write; "
			 "refusing to use or repair it (a user may have created it)",
			 path, (unsigned)id->uid, (unsigned)(id->mode & 07777), (unsigned)pol->owner);
		return (-1);
	}
	/* without search permission for others no job could reach its directory below */
	if ((id->mode & 0111) != 0111) {
		extc_fmt(why, whylen,
			 "%s: mode %04o does not let users pass through it (expected %04o); "
			 "refusing to use it",
			 path, (unsigned)(id->mode & 07777),
			 (unsigned)EXTC_FS_POLICY_SKELETON_MODE);
		return (-1);
	}
	return (0);
}

/* Above the base: owned by root (or the policy owner), writable by others only if sticky. */
int extc_fs_policy_check_ancestor(const struct extc_fs_policy *pol, const struct extc_ident *id,
				  const char *path, char *why, size_t whylen)
{
	if (pol->job_private && id->uid == pol->job_uid)
		return (0);
	if ((id->uid != 0 && id->uid != pol->owner) ||
	    ((id->mode & 022) != 0 && (id->mode & S_ISVTX) == 0)) {
		extc_fmt(why, whylen,
			 "%s: owned by uid %u with mode %04o: a directory above the base must be "
			 "root-owned and not writable by others (sticky excepted)",
			 path[0] ? path : "/", (unsigned)id->uid, (unsigned)(id->mode & 07777));
		return (-1);
	}
	return (0);
}
