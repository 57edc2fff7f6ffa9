/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: removing what killed publishers left in a publish directory. */
#ifndef EXTC_WARM_SWEEP_H_
#define EXTC_WARM_SWEEP_H_

#include <stdint.h>
#include <time.h>

#include "warm/warm_copy.h"

/*
 * A publisher killed at its deadline leaves its stage (or its manifest
 * draft) where it was working: in 'dirfd' (DIR), each of o->subdirs and
 * torch's pyXY_cu groups. This user's, unchanged (ctime) since before
 * o->stale_before, are removed; {0, 0} removes none. Returns how many went.
 */
uint64_t extc_warm_sweep_abandoned(int dirfd, const struct extc_warm_opts *o);

/*
 * The stale_before for a publish at 'now' (CLOCK_REALTIME) under the
 * admin's publish_timeout: older than any running publisher's stage can be.
 */
void extc_warm_sweep_stale_limit(uint32_t publish_timeout_s, const struct timespec *now,
				 struct timespec *limit);

#endif /* EXTC_WARM_SWEEP_H_ */
