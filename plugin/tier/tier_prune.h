/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what a publish removes from a key's directory on the tier, and when it may. */
#ifndef EXTC_TIER_PRUNE_H_
#define EXTC_TIER_PRUNE_H_

#include <stdint.h>

/*
 * Readers try only the 'keep' newest good generations, and a reader's copy
 * is bounded by its own timeout, which 'grace_ns' exceeds. So a good
 * generation beyond the 'keep' newest is removed only when the one 'keep'
 * places newer than it (the one that pushed it out) was published more
 * than 'grace_ns' ago: no reader can still be copying it. A generation
 * marked bad goes when its mark is older than 'grace_ns' (a reader that
 * began before the mark may still be reading it, and fail on its own).
 * Each goes by a rename to a trash name (it leaves the listing at once,
 * whole), then a removal as the user that follows no link and enters no
 * other mount, bounded by 'deadline_ns'. 'now_ns' is CLOCK_REALTIME's.
 * Returns how many generations went.
 */
unsigned extc_tier_prune(int keyfd, unsigned keep, uint64_t grace_ns, uint64_t now_ns,
			 const char *tag, uint64_t deadline_ns);

/*
 * Remove what killed processes left in 'keyfd': every trash entry (never
 * read: any age), and every publisher's stage unchanged (ctime) for more
 * than 'grace_ns' before 'now_ns' or of this 'tag' (this process's own
 * name, so its earlier owner is gone). A running publisher's stage is
 * younger than its deadline, which 'grace_ns' exceeds.
 */
void extc_tier_prune_sweep(int keyfd, uint64_t grace_ns, uint64_t now_ns, const char *tag,
			   uint64_t deadline_ns);

#endif /* EXTC_TIER_PRUNE_H_ */
