/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: one step in slurmstepd, all it holds from init to exit;
 * and what warm start and the node pool both need of it: the job's
 * environment, the job's user, the node's name, a user's child's argument.
 */
#ifndef EXTC_STEP_H_
#define EXTC_STEP_H_

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <slurm/spank.h>

#include "base/config.h"
#include "container/container_env.h"
#include "container/container_id.h"
#include "base/layout.h"
#include "base/mode.h"
#include "base/noexec.h"
#include "base/seed_path.h"
#include "base/text.h"
#include "proc/as_user.h"
#include "fs/fs_ident.h"
#include "fs/fs_policy.h"
#include "pool/pool_child.h"
#include "pool/pool_hold.h"
#include "pool/pool_key.h"
#include "warm/warm_child.h"
#include "warm/warm_report.h"

/*
 * The container image the step runs: pyxis' options as slurm_spank_init
 * found them, and what init_post_opt made of them (container_id.c).
 */
struct extc_step_image {
	bool image_set, name_set;
	char image[PATH_MAX], name[256];
	enum extc_ctr_kind kind;
	char spec[PATH_MAX];	/* the file or reference; for EXTC_CTR_UNKNOWN, why */
};

/*
 * Where a task sees the step's directory. Set in slurmstepd before the
 * tasks are forked; each task reads (and sets task_shares in) its own copy.
 */
struct extc_step_view {
	struct extc_ident mount_ns;	/* slurmstepd's, when it made the leaf */
	bool mount_ns_known;
	enum extc_exec_probe exec_probe;	/* the leaf's mount, as slurmstepd sees it */
	bool task_shares;	/* in a task: its namespace is slurmstepd's */
};

/* What user_init exported, with the job's values the container part replaced. */
struct extc_step_exports {
	bool vars[EXTC_VARS_MAX];	/* which of the config's variables it set */
	bool cubin;			/* it pinned FLASHINFER_CUBIN_DIR */
	struct extc_cenv_list containers;	/* for Apptainer and Singularity */
};

/* Where the step's seed or publish directory was named. */
enum extc_step_source {
	EXTC_STEP_SOURCE_OPTION,	/* --ext-cache-seed / --ext-cache-publish */
	EXTC_STEP_SOURCE_ENV,		/* SLURM_EXT_CACHE_SEED / SLURM_EXT_CACHE_PUBLISH */
	EXTC_STEP_SOURCE_ADMIN,		/* the admin's seed= pattern */
};

#define EXTC_STEP_NOTICES_MAX 4

/* Warm start: the directories the step seeds from and publishes to, checked in init_post_opt. */
struct extc_step_warm {
	char seed[EXTC_WARM_PATH_MAX + 1];
	enum extc_step_source seed_from;
	char publish[EXTC_WARM_PATH_MAX + 1];
	enum extc_step_source publish_from;
	char key[EXTC_WARM_KEY_MAX + 1];
	char notices[EXTC_STEP_NOTICES_MAX][700];	/* told to the user by task 0 of each node */
	size_t nnotices;
};

/* The node pool: the step's key, and root's hold on it. */
struct extc_step_pool {
	bool held;
	bool from_user_key;
	bool in_container;	/* keyed by an image */
	bool may_take;		/* root noted what the take may take (pool_taken.h) */
	struct extc_pool_hold hold;
	char key[EXTC_POOL_KEY_LEN + 1];
};

/*
 * The node pool's two jobs for the user's child, with their argument and
 * result (too large for slurmstepd's stack, and seen by one hook at a time).
 */
struct extc_step_child {
	struct extc_pool_child_arg arg;
	union {
		struct extc_warm_seed_res seed;
		struct extc_warm_publish_res put_back;
	} res;
	char why[EXTC_WHY_MAX];
};

/* The site tier (tier=): the user's tier, and what the step does with it (step_tier.c). */
struct extc_step_tier {
	char path[EXTC_WARM_PATH_MAX + 1];	/* tier= expanded for the user; "" without a tier */
	bool fetch;		/* the key holds nothing: the tasks read the tier */
	bool task_failed;	/* a task of the step on this node did not exit 0: no publish */
	bool told_cold;		/* the user's line says why the tier gave nothing: a take of nothing keeps it */
	char generation[80];	/* the generation the tasks copied in, for the verbose line */
	uint64_t fetched_files, fetched_bytes, fetched_ns;
};

/*
 * The page the step's tasks share with slurmstepd (mapped in user_init,
 * before the tasks are forked): the seeding turn, and whether the tier
 * kept the turn waiting its whole bound (for exit's note, tier_mark.h),
 * or filled the key from it (the put-back's time before any take).
 */
struct extc_step_shared {
	int turn_done;
	int tier_timed_out;
	int tier_fetched;		/* the tasks filled the key from the tier, by then: */
	struct timespec tier_fetched_at;	/* (coarse clock) a time before any take */
};

/* --ext-cache-verbose: is the line wanted, and what the directory started from. */
struct extc_step_tell {
	bool verbose;
	struct extc_warm_report start;
	char lost[EXTC_WHY_MAX + 128];	/* what the node pool's key lost since its last step, or "" */
};

/*
 * One slurmstepd per step per node: its hooks, and task_init in the tasks
 * it forks, see one of these (slurmstepd.c has it). Made by init, let go
 * of by exit; a task works on its own copy of what slurmstepd set.
 */
struct extc_step {
	bool begun;		/* reset at least once: hold_fd and the pool's record_fd are -1 or held */
	bool configured;	/* init parsed the arguments */
	bool created;
	bool fail_step;		/* a problem the tasks must fail on */
	bool warn_step;		/* a problem the user is told about, and the step goes on */
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_tree tree;	/* the node's tree: cfg and pol, as the engine takes them */
	char node_name[EXTC_NODE_NAME_MAX + 1];	/* the host's, for a shared base's node level */
	struct extc_ids ids;
	struct extc_choice choice;
	char leaf_path[PATH_MAX];
	bool in_image;		/* the step runs an image the plugin identified */
	char warm_path[PATH_MAX];	/* what seeds fill and publishes take: the leaf, or its container/ */
	struct extc_ident leaf_id;	/* the leaf as slurmstepd made it */
	bool leaf_id_known;
	int hold_fd;		/* the job level, locked shared while this step runs */
	struct extc_step_shared *shared;	/* with the tasks: the turn, the tier (step_task.c) */
	char why[EXTC_WHY_MAX];
	/* the node's name for manifests and stage names (extc_step_node) */
	char manifest_node[EXTC_NODE_NAME_MAX + 1];
	struct extc_step_image image;
	struct extc_step_view view;
	struct extc_step_exports exports;
	struct extc_step_warm warm;
	struct extc_step_pool pool;
	struct extc_step_tier tier;
	struct extc_step_child child;
	struct extc_step_tell tell;
};

/*
 * Let go of everything 's' holds (the job level's lock, the shared page,
 * the container exports, the pool's key) and make it a step that holds
 * nothing. A zeroed struct holds nothing yet: init resets it first, exit
 * last.
 */
void extc_step_reset(struct extc_step *s);

/*
 * The step's directory failed (the reason is in s->why): fail the step or
 * warn and go on without it, as the admin chose or, by default, fail only
 * if the user asked for a directory (extc_config_on_error_fails).
 */
void extc_step_fail_or_warn(struct extc_step *s);

/*
 * The page the step's tasks share (s->shared): the seeding turn,
 * mapped in user_init: the tasks are forked after it and inherit the page.
 * Marking the turn done there, rather than with a file in the leaf, spares
 * every step an inode made and later removed, on the path of the task that
 * execs first. Left NULL when it cannot be mapped: the mark file is used
 * then. extc_step_reset unmaps it.
 */
void extc_step_share_turn(struct extc_step *s);

/* The job's value of 'name' in 'buf', or NULL when it is unset or longer than 'len'. */
const char *extc_step_job_env(spank_t sp, const char *name, char *buf, int len);

/*
 * An admin's pattern (seed=, tier=) for the job's user: %u its uid, %U its
 * name (extc_seed_path_expand). 0, or -1 and 'why'.
 */
int extc_step_expand_pattern(const struct extc_step *s, const char *pattern, char *out,
			     size_t outlen, char *why, size_t whylen);

/*
 * This node's name for manifests and stage names: resolved at the first
 * call of a step (in init_post_opt), and the same for the rest of it.
 */
const char *extc_step_node(spank_t sp, struct extc_step *s);

/* The job's user, with its supplementary groups when slurmstepd has them (then true). */
bool extc_step_creds(spank_t sp, const struct extc_step *s, struct extc_creds *cr);

/*
 * A child's argument: the leaf, the variables' subdirectories, a deadline,
 * the manifest for 'key' naming the node extc_step_node resolved.
 */
void extc_step_child_arg(struct extc_warm_child_arg *a, const struct extc_step *s,
			 const char *leaf, uint32_t timeout_s, const char *key);

#endif /* EXTC_STEP_H_ */
