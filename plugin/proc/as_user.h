/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: run a function in a child process that is fully the job's user, with a deadline. */
#ifndef EXTC_AS_USER_H_
#define EXTC_AS_USER_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct extc_creds {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;	/* the job's supplementary groups; NULL: just 'gid' */
	size_t ngroups;
};

/* Runs in the child, as the user: fills 'res' (at most 'reslen' bytes), returns 0 or not. */
typedef int (*extc_as_user_fn)(void *arg, void *res, size_t reslen);

#define EXTC_AS_USER_RES_MAX 3072	/* what fits in one atomic pipe write with the header */

/*
 * Fork; in the child drop to cr's uid, gid and groups for good (real,
 * effective and saved ids; no_new_privs), refuse uid 0, run fn, send its
 * result back through a pipe. The parent waits until 'timeout_ms' has
 * passed, then SIGKILLs the child: a hung network filesystem costs at most
 * that. Works from root (slurm_spank_exit) and from a process whose
 * effective ids are already the user's (user_init). Never calls a Slurm
 * function in the child (the parent may be a multi-threaded slurmstepd).
 */
enum extc_as_user_result {
	EXTC_AS_USER_DONE,	/* fn returned 0, 'res' filled */
	EXTC_AS_USER_FN_FAILED,	/* fn returned non-zero, 'res' filled */
	EXTC_AS_USER_FAILED,	/* the child could not become the user, died or ran out of time ('why') */
};

enum extc_as_user_result extc_as_user(const struct extc_creds *cr, uint64_t timeout_ms,
				      extc_as_user_fn fn, void *arg, void *res, size_t reslen,
				      char *why, size_t whylen);

#endif /* EXTC_AS_USER_H_ */
