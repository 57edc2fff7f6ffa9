/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool on disk, as root: its levels, a step's hold on a key, eviction. */
#ifndef EXTC_POOL_FS_H_
#define EXTC_POOL_FS_H_

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fs_remove.h"
#include "fs/fs_tree.h"
#include "pool/pool_policy.h"

/*
 * <base>[/<node>]/.pool/<uid>/<key>: .pool and <uid> are skeleton levels
 * (root, 0711); <key> is the user's (0700), so no other user can read or
 * write it, and its name cannot be changed by the user. Beside each key,
 * <key>.use is root's record (0600): its modification time is the key's
 * last use, its text what root measured at the last move into the key
 * (extc_pool_account), and a step holds it locked shared while it runs.
 * The record's text is "bytes=N\ninodes=M\n" (allocated bytes, each inode
 * once, and distinct inodes), or "unmeasurable: <why>\n" when root could
 * not measure the key within its limits: the evictor takes such a key at
 * its next pass once no step holds it. Eviction never trusts the numbers:
 * every pass measures every key again.
 */
#define EXTC_POOL_NAME ".pool"
#define EXTC_POOL_RECORD_SUFFIX ".use"
#define EXTC_POOL_UNMEASURABLE "unmeasurable"
/* a user's keys looked at per pass: what is beyond waits for the next pass, no other user does */
#define EXTC_POOL_USER_SCAN_MAX (2 * EXTC_POOL_MAX_KEYS_MAX)

struct extc_pool_hold {
	int record_fd;		/* locked shared for the step's life; -1: no hold */
	char dir[PATH_MAX];	/* the key directory's path, for the user's child */
	uint64_t bytes;		/* what the record says the key held at its last move (0: nothing yet) */
	uid_t uid;		/* whose key it is */
	char key[EXTC_POOL_KEY_LEN + 1];
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


enum extc_pool_account_result {
	EXTC_POOL_ACCOUNTED,		/* the record holds the key's bytes and inodes */
	EXTC_POOL_ACCOUNT_UNMEASURABLE,	/* marked so: 'why' says why; it goes once released */
	EXTC_POOL_ACCOUNT_FAILED,	/* no record written: 'why' says why */
};

/*
 * Right after builds moved into the held key, as root (in the background:
 * it may take up to EXTC_POOL_MEASURE_BUDGET_NS): measure the key with
 * root's own walk (pool_measure.h, pool_max_inodes names at most) and
 * write the record, "bytes=N\ninodes=M\n" or the unmeasurable mark, and
 * mark the key used now. What the user's processes measured is never
 * asked. The hold must be extc_pool_hold's, still held.
 */
enum extc_pool_account_result extc_pool_account(struct extc_pool_hold *h,
						 const struct extc_config *cfg,
						 const struct extc_fs_policy *pol, char *why,
						 size_t whylen);

/* Let the key go (the evictor may take it once no step holds it). */
void extc_pool_release(struct extc_pool_hold *h);

struct extc_pool_evict_report {
	unsigned users;		/* user levels looked at */
	unsigned keys;		/* key directories looked at */
	unsigned busy;		/* held by a running step */
	unsigned evicted;
	unsigned failed;	/* could not be moved out (a mount on it, ...) */
	unsigned left;		/* beyond EXTC_POOL_USER_SCAN_MAX of a user: for the next pass */
	bool overlapped;	/* another pass was running: this one did nothing */
	uint64_t bytes_kept;	/* allocated, as measured in this pass */
	uint64_t bytes_evicted;	/* of the evicted keys that were measured */
	uint64_t inodes_kept;
	unsigned by_reason[EXTC_POOL_VERDICTS];	/* per enum extc_pool_verdict */
};

/*
 * One eviction pass over the node's pool (in the background, never in a
 * step or an epilog; one pass at a time, a pass that finds another
 * running does nothing). Every user's level is reached, each user's keys
 * are chosen on their own (extc_pool_choose_user), measured by root's walk
 * within a budget of their own (pool_max_inodes names and
 * EXTC_POOL_MEASURE_BUDGET_NS), then the node's (extc_pool_choose_total);
 * those that go are renamed into the trash (the caller empties it). A key
 * directory without its record goes too. Users whose level is being
 * changed are left for next time.
 */
int extc_pool_evict(const struct extc_config *cfg, const struct extc_fs_policy *pol,
		    int64_t now, struct extc_pool_evict_report *rep, char *why, size_t whylen);

/* One log-ready sentence for a pass: keys, users, what went and why, what is kept. */
void extc_pool_evict_report_text(const struct extc_pool_evict_report *rep, char *buf, size_t len);

#endif /* EXTC_POOL_FS_H_ */
