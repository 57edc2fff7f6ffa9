/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's levels and records on disk, opened and read as root. */
#ifndef EXTC_POOL_LEVEL_H_
#define EXTC_POOL_LEVEL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_level.h"
#include "fs/fs_policy.h"

/*
 * <base>[/<node>]/.pool/<uid>/<key>: .pool and <uid> are skeleton levels
 * (root, 0711); <key> is the user's (0700), so no other user can read or
 * write it, and its name cannot be changed by the user. Beside each key,
 * <key>.use is root's record (0600): its modification time is the key's
 * last use, its text what root measured at the last move into the key
 * (extc_pool_hold_account; kept as it was when a step's end finds the key's
 * top level as at its hold), and a step holds it locked shared while it runs.
 * The record's text is "bytes=N\ninodes=M\n" (allocated bytes, each inode
 * once, and distinct inodes), or "unmeasurable: <why>\n" when root could
 * not measure the key within its limits: the evictor takes such a key at
 * its next pass once no step holds it. Eviction never trusts the numbers:
 * every pass measures every key again.
 */
#define EXTC_POOL_NAME ".pool"
#define EXTC_POOL_RECORD_SUFFIX ".use"
#define EXTC_POOL_UNMEASURABLE "unmeasurable"

#define EXTC_POOL_RECORD_MAX 256

/* The levels down to one user's: <base>[/<node>]/.pool/<uid>. */
struct extc_pool_fds {
	struct extc_level_walk t;
	int pool, uid;
};

void extc_pool_level_close(struct extc_pool_fds *p);
enum extc_level_result extc_pool_level_open(const struct extc_tree *tree, bool create,
					    struct extc_pool_fds *p, char *why, size_t whylen);
enum extc_level_result extc_pool_level_open_user(struct extc_pool_fds *p, const char *uname, bool create,
						 char *why, size_t whylen);
/* The pool level and the level of uid 'uid' in it (its name from base/layout.h). */
enum extc_level_result extc_pool_level_open_uid(const struct extc_tree *tree, uid_t uid, bool create,
						struct extc_pool_fds *p, char *why, size_t whylen);

/*
 * A note of root's beside the user's keys (a job's key, a key taken, a key
 * that lost builds), in the user's level p->uid: 'text' written whole
 * under a draft name that ends in 'name's suffix, then linked to 'name',
 * so a reader sees all of it or none. EXTC_NOTE_EXISTS when 'name' is
 * there already (left as it is, unless 'replace'); 'why' when it fails.
 */
enum extc_note_result {
	EXTC_NOTE_WRITTEN,
	EXTC_NOTE_EXISTS,
	EXTC_NOTE_FAILED,
};
enum extc_note_result extc_pool_level_write_note(const struct extc_pool_fds *p, const char *name,
						 const char *suffix, const char *text, bool replace,
						 char *why, size_t whylen);

/*
 * The text of the note 'name' (at most 'max' bytes, NUL-terminated) if it
 * is a plain root-owned file; dropped after reading with 'drop'. Its
 * length, or -1.
 */
ssize_t extc_pool_level_read_note(int uidfd, const char *name, const struct extc_fs_policy *pol,
				  char *text, size_t max, bool drop);

/* <key>.use: a plain root-owned file, or -1. */
int extc_pool_level_open_record(int uidfd, const char *key, bool create, const struct extc_fs_policy *pol);

/* What a record says. */
struct extc_pool_record {
	uint64_t bytes;		/* 0 when it says none */
	uint64_t inodes;
	bool unmeasurable;
	bool old_version;	/* it says what it holds, but not under EXTC_POOL_KEY_VERSION */
	int64_t used;		/* its mtime: the key's last use */
};

int extc_pool_level_read_record(int fd, struct extc_pool_record *r);

#endif /* EXTC_POOL_LEVEL_H_ */
