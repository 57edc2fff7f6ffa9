/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: root's note that a user's site tier did not answer in time, so the next steps do not wait on it. */
#ifndef EXTC_TIER_MARK_H_
#define EXTC_TIER_MARK_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/fs_tree.h"

/*
 * <base>/.pool/<uid>/tier.unreachable, root's own note beside the user's
 * keys (pool_level.h): "at=<seconds since the epoch>". A step whose tasks
 * waited the whole tier_timeout= on the tier (an NFS server that stopped
 * answering) leaves it; for EXTC_TIER_UNREACHABLE_S after, the user's steps
 * on this node do not read the tier, and start cold at once.
 */
#define EXTC_TIER_MARK_NAME "tier.unreachable"
#define EXTC_TIER_MARK_SUFFIX ".unreachable"
#define EXTC_TIER_UNREACHABLE_S 600

/* Write (or renew) the note for 'uid', at 'now'. 0, or -1 and 'why'. */
int extc_tier_mark_unreachable(const struct extc_tree *tree, uid_t uid, int64_t now, char *why,
			       size_t whylen);

/* Whether a note for 'uid' says the tier did not answer less than EXTC_TIER_UNREACHABLE_S before 'now'. */
bool extc_tier_mark_recent(const struct extc_tree *tree, uid_t uid, int64_t now);

#endif /* EXTC_TIER_MARK_H_ */
