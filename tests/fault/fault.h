/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache fault injection: a link-time seam (-Wl,--wrap=SYMBOL) around
 * every system call the filesystem engine makes. It works under the
 * sanitizers and valgrind (an LD_PRELOAD shim would not: ASan insists on
 * being first), and needs no change to plugin/.
 *
 * While armed, each wrapped call is counted per function; the call whose
 * count equals 'nth' for function 'fn' fails with 'err' instead of running
 * (and every later call of 'fn' too when 'sticky' is set: a disk that stays
 * full, a filesystem that stays read-only). A hook can run right after a
 * real call, as an attacker would between check and use.
 */
#ifndef EXTC_FAULT_H_
#define EXTC_FAULT_H_

#include <stdbool.h>
#include <stddef.h>

enum fault_fn {
	FF_MKDIRAT,
	FF_OPENAT,
	FF_OPEN,
	FF_FCHOWN,
	FF_FCHMOD,
	FF_STATX,
	FF_FSTATAT,
	FF_FSTATFS,
	FF_UNLINKAT,
	FF_FLOCK,
	FF_DUP,
	FF_FDOPENDIR,
	FF_READDIR,
	FF_RENAMEAT2,
	/* counted only: the engine must never call them on a removal */
	FF_FCHMODAT,
	FF_FCHOWNAT,
	FF_CHMOD,
	FF_CHOWN,
	FF_LCHOWN,
	FF_COUNT
};

extern const char *const fault_fn_names[FF_COUNT];

typedef void (*fault_hook_fn)(enum fault_fn fn, int dirfd, const char *name, void *arg);

struct fault_plan {
	bool armed;
	enum fault_fn fn;
	unsigned long nth;	/* 0: count only, inject nothing */
	int err;
	bool sticky;
	bool fired;
	unsigned long calls[FF_COUNT];
	fault_hook_fn hook;	/* after every real call, while armed */
	void *hook_arg;
	/* opens without O_NOFOLLOW, O_DIRECTORY or O_CLOEXEC while armed, and the first one */
	unsigned long unsafe_opens;
	char first_unsafe[256];
};

extern struct fault_plan fault;

/* Arm with a plan (counters reset), or disarm. */
void fault_arm(enum fault_fn fn, unsigned long nth, int err, bool sticky);
void fault_disarm(void);

#endif /* EXTC_FAULT_H_ */
