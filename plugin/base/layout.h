/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: directory names of the per-node tree, built from integers only. */
#ifndef EXTC_LAYOUT_H_
#define EXTC_LAYOUT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/mode.h"

/*
 * <base>/<uid>/<jobid>/<leaf>
 *
 * Every name is formatted from an integer Slurm gave us; no string a user
 * controls ever becomes part of a path. The restart count is not part of
 * it: slurmstepd knows it for the batch step only (srun steps get 0), so it
 * would split one run of a job across two trees. A requeued run still
 * starts empty, because Slurm runs the epilog on every node of the old run
 * before the job runs again.
 */

/*
 * Inside a container the cache variables point into this sub-tree of the
 * step's directory, never at the host's own subdirectories: a build made
 * against the container's libraries must not be served to the host (the
 * node pool keys host builds by the host's environment).
 */
#define EXTC_CONTAINER_SUBTREE "container"

#define EXTC_NAME_LEN 32	/* enough for any name below, NUL included */

/* Slurm's special step ids (slurm.h), repeated so the pure code needs no Slurm headers. */
#define EXTC_STEP_MAX_NORMAL 0xfffffff0u
#define EXTC_STEP_INTERACTIVE 0xfffffffau
#define EXTC_STEP_BATCH 0xfffffffbu
#define EXTC_STEP_EXTERN 0xfffffffcu
#define EXTC_STEP_PENDING 0xfffffffdu

#define EXTC_LEAF_JOB "job"

int extc_layout_uid_name(uid_t uid, char *buf, size_t len);
int extc_layout_job_name(uint32_t jobid, char *buf, size_t len);

/*
 * Leaf name for a step: the step id, "batch" or "interactive", or "job" in
 * job mode. Returns -1 for steps that get no directory (extern, pending,
 * anything unknown), so the caller does nothing for them.
 */
int extc_layout_leaf_name(enum extc_mode mode, uint32_t stepid, char *buf, size_t len);

/* Strict inverse of extc_layout_job_name, for sweeping leftovers. */
int extc_layout_parse_job_name(const char *name, uint32_t *jobid);
/* Strict inverse of extc_layout_uid_name. */
int extc_layout_parse_uid_name(const char *name, uid_t *uid);

#define EXTC_NODE_NAME_MAX 64

/*
 * This node's name for a shared base: the host name, which only root can
 * set, accepted only if it is a plain DNS-style label sequence.
 */
int extc_layout_node_name(char *buf, size_t len);

#endif /* EXTC_LAYOUT_H_ */
