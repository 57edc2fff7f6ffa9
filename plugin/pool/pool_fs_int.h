/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: internals shared by pool_fs.c and pool_evict.c. Not an API of the plugin. */
#ifndef EXTC_POOL_FS_INT_H_
#define EXTC_POOL_FS_INT_H_

#include <stdbool.h>

#include "fs/fs_level.h"
#include "pool/pool_fs.h"

#define EXTC_POOL_RECORD_MAX 256

/* The levels down to one user's: <base>[/<node>]/.pool/<uid>. */
struct extc_pool_fds {
	struct tree_fds t;
	int pool, uid;
};

void extc_pool_fds_close(struct extc_pool_fds *p);
enum extc_level_result extc_pool_open_levels(const struct extc_config *cfg,
					     const struct extc_fs_policy *pol, bool create,
					     struct extc_pool_fds *p, char *why, size_t whylen);
enum extc_level_result extc_pool_open_user(struct extc_pool_fds *p, const struct extc_fs_policy *pol,
					   const char *uname, bool create, char *why, size_t whylen);
/* <key>.use: a plain root-owned file, or -1. */
int extc_pool_open_record(int uidfd, const char *key, bool create, const struct extc_fs_policy *pol);

/* What a record says. */
struct extc_pool_record {
	uint64_t bytes;		/* 0 when it says none */
	uint64_t inodes;
	bool unmeasurable;
	bool old_version;	/* it says what it holds, but not under EXTC_POOL_KEY_VERSION */
	int64_t used;		/* its mtime: the key's last use */
};

int extc_pool_read_record(int fd, struct extc_pool_record *r);

#endif /* EXTC_POOL_FS_INT_H_ */
