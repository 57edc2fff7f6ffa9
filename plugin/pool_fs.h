/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool on disk, as root: its levels, a step's hold on a key, eviction. */
#ifndef EXTC_POOL_FS_H_
#define EXTC_POOL_FS_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "fs_remove.h"
#include "fs_tree.h"
#include "pool_policy.h"

/*
 * <base>[/<node>]/.pool/<uid>/<key>: .pool and <uid> are skeleton levels
 * (root, 0711); <key> is the user's (0700), so no other user can read or
 * write it, and its name cannot be changed by the user. Beside each key,
 * <key>.use is root's record (0600): its modification time is the key's
 * last use, its text the size measured at the last publish, and a step
 * holds it locked shared while it runs.
 */
#define EXTC_POOL_NAME ".pool"
#define EXTC_POOL_RECORD_SUFFIX ".use"
#define EXTC_POOL_MAX_ENTRIES 4096	/* keys looked at per eviction pass */

struct extc_pool_hold {
	int record_fd;		/* locked shared for the step's life; -1: no hold */
	char dir[PATH_MAX];	/* the key directory's path, for the user's child */
	uint64_t bytes;		/* what the record says the key held at its last move (0: nothing yet) */
};

enum extc_pool_hold_result {
	EXTC_POOL_HELD,		/* 'h' holds the key; its directory exists */
	EXTC_POOL_EVICTING,	/* the evictor has the key at this moment: start cold */
	EXTC_POOL_REFUSED,	/* 'why' says why */
};

/* Make what is missing of the key's levels and directory, hold it, and mark it used now. */
enum extc_pool_hold_result extc_pool_hold(const struct extc_config *cfg,
					  const struct extc_fs_policy *pol,
					  const struct extc_ids *ids, const char *key,
					  struct extc_pool_hold *h, char *why, size_t whylen);

/* After a publish: record the key's size and mark it used now. */
int extc_pool_record_size(struct extc_pool_hold *h, uint64_t bytes);

/* Let the key go (the evictor may take it once no step holds it). */
void extc_pool_release(struct extc_pool_hold *h);

struct extc_pool_evict_report {
	unsigned keys;		/* key directories looked at */
	unsigned busy;		/* held by a running step */
	unsigned evicted;
	unsigned failed;	/* could not be moved out (a mount on it, ...) */
	uint64_t bytes_kept;
	uint64_t bytes_evicted;
	unsigned by_reason[4];	/* per enum extc_pool_verdict */
};

/*
 * One eviction pass over the node's pool (in the background, never in a
 * step or an epilog): every key's verdict by extc_pool_choose, and those
 * that go are renamed into the trash (the caller empties it). A key
 * directory without its record goes too; a record without its directory
 * is dropped. Users whose level is being changed are left for next time.
 */
int extc_pool_evict(const struct extc_config *cfg, const struct extc_fs_policy *pol,
		    int64_t now, struct extc_pool_evict_report *rep, char *why, size_t whylen);

#endif /* EXTC_POOL_FS_H_ */
