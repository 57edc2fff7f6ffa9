/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: where a task sees the step's directory: slurmstepd's mount namespace or the job's own. */
#ifndef EXTC_STEP_VIEW_H_
#define EXTC_STEP_VIEW_H_

#include <stdbool.h>

#include "base/noexec.h"
#include "spank/step.h"

/*
 * init_post_opt, once the leaf is made below the job level s->hold_fd (held
 * open by slurmstepd): keep slurmstepd's mount namespace, and the flags of
 * the mount under the job level, which are the leaf's (make_leaf refuses a
 * leaf that is a mount). Read through root's own descriptor, never a name.
 */
void extc_step_view_record(struct extc_step *s);

/*
 * task_init_privileged, in the task's process: is it still in slurmstepd's
 * mount namespace (one stat of /proc/self/ns/mnt)? Then it sees the leaf
 * slurmstepd made, and nothing needs looking at again. The answer is kept
 * for extc_step_view_exec_probe in the same process.
 */
bool extc_step_view_task_shares(struct extc_step *s);

/*
 * task_init, as the user: the mount flags where this task sees the leaf:
 * slurmstepd's reading for a task that shares its namespace, else this
 * task's own (an open and an fstatvfs: a per-job /tmp can be noexec for
 * one job only).
 */
enum extc_exec_probe extc_step_view_exec_probe(const struct extc_step *s);

#endif /* EXTC_STEP_VIEW_H_ */
