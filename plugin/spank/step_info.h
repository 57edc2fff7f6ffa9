/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: what warm start and the node pool both need of a step in
 * slurmstepd: the job's environment, the job's user, the node's name, a
 * user's child's argument.
 */
#ifndef EXTC_STEP_INFO_H_
#define EXTC_STEP_INFO_H_

#include <stdbool.h>
#include <stdint.h>

#include <slurm/spank.h>

#include "base/config.h"
#include "base/mode.h"
#include "proc/as_user.h"
#include "fs/fs_policy.h"
#include "warm/warm_child.h"

/* The step's directory, as the hooks from user_init on know it. */
struct extc_step_leaf {
	const struct extc_config *cfg;
	const struct extc_ids *ids;
	enum extc_mode mode;
	const struct extc_fs_policy *pol;
	const char *path;	/* the leaf */
	const char *warm_path;	/* what seeds fill and publishes take: the leaf, or its container/ */
	const bool *exported;	/* which of cfg->vars user_init set */
	int *turn_done;		/* shared by the step's tasks: the first one's turn is done; NULL: use the mark file */
};

/* Forget the previous step's node name. */
void extc_step_info_reset(void);

/* The job's value of 'name' in 'buf', or NULL when it is unset or longer than 'len'. */
const char *extc_step_job_env(spank_t sp, const char *name, char *buf, int len);

/*
 * This node's name for manifests and stage names: resolved at the first
 * call of a step (in init_post_opt), and the same for the rest of it.
 */
const char *extc_step_node(spank_t sp);

/* The job's user, with its supplementary groups when slurmstepd has them (then true). */
bool extc_step_creds(spank_t sp, const struct extc_ids *ids, struct extc_creds *cr);

/*
 * A child's argument: the leaf, the variables' subdirectories, a deadline,
 * the manifest for 'key' naming the node extc_step_node resolved.
 */
void extc_step_child_arg(struct extc_warm_child_arg *a, const struct extc_config *cfg,
			 const struct extc_ids *ids, const char *leaf, uint32_t timeout_s,
			 const char *key);

#endif /* EXTC_STEP_INFO_H_ */
