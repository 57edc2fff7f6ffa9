/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: a step's end on this node (exit): its builds published
 * and moved into the pool by a detached process, a local leaf removed.
 */
#ifndef EXTC_STEP_END_H_
#define EXTC_STEP_END_H_

#include <slurm/spank.h>

#include "spank/step.h"

/*
 * exit, after the step's last task on this node, as root. Without publish
 * or a pool key, a local-mode leaf is removed here. With them, publish,
 * the move into the pool, root's measurement of the key and the removal
 * go to a detached process (extc-finisher) born outside the job's cgroups,
 * which keeps the job level and the key held until it is done; exit waits
 * for it EXTC_HOOK_WAIT_MS at most. That process holds a slot of the
 * user's and one of the node's (fs/fs_slot.h) for its life: when none is
 * had within EXTC_SLOT_WAIT_MS, nothing is detached, the publish is
 * skipped, and a leaf the pool holds is left for the job epilog. 's' is
 * let go of by the caller (extc_step_reset), the detached process keeping
 * its own copy.
 */
void extc_step_end_finish(spank_t sp, struct extc_step *s);

#endif /* EXTC_STEP_END_H_ */
