/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: a bound on work that outlives its hook (a step's
 * detached end): a slot per user and a slot of the node, each a lock on
 * a root-owned file below the base, held for the work's whole life.
 */
#ifndef EXTC_FS_SLOT_H_
#define EXTC_FS_SLOT_H_

#include <stddef.h>
#include <sys/types.h>

#include "fs/fs_policy.h"

/*
 * <base>[/<node>]/.slots: the policy owner's (root's), 0700, on the base's
 * mount. It holds u<uid>.<n> (n below the per-user bound) and node.<n>
 * (below the node's), empty regular files of the owner that only root can
 * reach; a slot is held while a descriptor of its file holds an exclusive
 * flock, and freed by the kernel when the last such descriptor closes,
 * however its holder ends.
 */
#define EXTC_SLOT_DIR_NAME ".slots"

/*
 * A step's end holds a user slot and a node slot while it runs detached:
 * each waits on the user's helpers (a stopped one holds it for up to
 * publish_timeout), so a user's stopped helpers hold at most this many
 * root processes on a node, and all users together the node's number.
 */
#define EXTC_SLOT_PER_USER 4
#define EXTC_SLOT_PER_NODE 16

/*
 * How long a hook waits for a slot: what frees one is the user's own
 * helpers, and a hook waits on what a user controls 5 s at most in all;
 * EXTC_HOOK_WAIT_MS (proc/background.h) follows this wait.
 */
#define EXTC_SLOT_WAIT_MS 1500

struct extc_slot_bound {
	unsigned per_user;	/* 1 .. EXTC_SLOT_MAX each */
	unsigned per_node;
};

#define EXTC_SLOT_MAX 64

/* The locked slot files (-1: none); let go with extc_slot_release. */
struct extc_slot_held {
	int user_fd;
	int node_fd;
};

enum extc_slot_result {
	EXTC_SLOT_TAKEN,	/* both slots held in 'held' */
	EXTC_SLOT_USER_FULL,	/* every slot of the user was held until the wait ran out */
	EXTC_SLOT_NODE_FULL,	/* every slot of the node was held until the wait ran out */
	EXTC_SLOT_REFUSED,	/* the slot directory or a slot file is unusable: 'why' */
};

/*
 * Take one slot of 'uid' and then one of the node, without blocking,
 * trying again (1 ms, doubling to 64 ms between tries) until 'wait_ms'
 * has passed. The directory is made if missing; the base must exist.
 * Nothing is held unless EXTC_SLOT_TAKEN.
 */
enum extc_slot_result extc_slot_take(const struct extc_tree *tree, uid_t uid,
				     const struct extc_slot_bound *bound, unsigned wait_ms,
				     struct extc_slot_held *held, char *why, size_t whylen);

/* Let the slots go (close the descriptors: the work that inherited them keeps them). */
void extc_slot_release(struct extc_slot_held *held);

#endif /* EXTC_FS_SLOT_H_ */
