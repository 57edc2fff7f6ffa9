/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: shared machinery on top of tests/unit/fsfixture.h.
 *
 * - the shared root fixture (tests/common/fsfixture.h, struct fsfx): a fresh
 *   /tmp/extc-unit-XXXXXX directory, the descriptor count to return to, and
 *   mounts to detach at the end;
 * - sentinels outside the tree under test (security-cases.md section 1): a
 *   file directly in /tmp, a root-owned "/etc-like" directory, and a
 *   directory of another user, each checked for identical content, owner,
 *   mode, link count and mtime;
 * - an attacker: a forked process, optionally running as the job's user,
 *   that loops an action (renameat2(RENAME_EXCHANGE), rename-out, ...) until
 *   told to stop, counting what it achieved in shared memory;
 * - the iteration scale (EXTC_ADV_SCALE, percent; valgrind runs use less).
 *
 * These tests must run as root: each program says so and fails otherwise.
 */
#ifndef EXTC_ADV_H_
#define EXTC_ADV_H_

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fsfixture.h"
#include "strassert.h"

#define ADV_USER_UID 4242	/* the job's user */
#define ADV_USER_GID 4242
#define ADV_OTHER_UID 4343	/* another local user */
#define ADV_OTHER_GID 4343

int adv_setup(void **state);
/* The same on a tmpfs mounted on the fresh directory (no journal: races run fast). */
int adv_setup_tmpfs(void **state);
int adv_teardown(void **state);

/* <root>/<rel> into a PATH_MAX buffer. */
const char *adv_path(const struct fsfx *fx, char *buf, const char *rel);

/* mkdir <root>/<rel> with exactly 'mode', owned by uid:gid. */
void adv_mkdir(struct fsfx *fx, const char *rel, mode_t mode, uid_t uid, gid_t gid);

/* Mounts made through these are detached at teardown (deepest first). */
void adv_mount_tmpfs(struct fsfx *fx, const char *rel, const char *options);
void adv_bind(struct fsfx *fx, const char *src_rel, const char *dst_rel);
void adv_note_mount(struct fsfx *fx, const char *abs_path);

/* Descriptor count back to where setup found it. */
void adv_assert_no_fd_leak(const struct fsfx *fx);

/* ---- sentinels ---------------------------------------------------------------------------- */

#define ADV_NSENTINELS 6

struct adv_sentinels {
	struct fsfx_sentinel s[ADV_NSENTINELS];
	/* targets an attacker points symlinks (and renames) at */
	char tmp_file[PATH_MAX];	/* /tmp/extc-adv-sentinel-<pid>-<n> */
	char etc_dir[PATH_MAX];		/* <root>/etc, root-owned 0755 */
	char etc_file[PATH_MAX];	/* <root>/etc/passwd, root-owned 0644 */
	char other_dir[PATH_MAX];	/* <root>/home-other, uid 4343 0700 */
	char other_file[PATH_MAX];	/* <root>/home-other/data, uid 4343 0600 */
	char tmp_dir[PATH_MAX];		/* /tmp/extc-adv-sentdir-<pid>-<n>, root-owned 0755 */
};

void adv_sentinels_make(struct fsfx *fx, struct adv_sentinels *s);
/* Fails the test (naming every difference) unless all are byte-identical. */
void adv_sentinels_assert(const struct adv_sentinels *s);
/* Removes the two sentinels that live directly in /tmp. */
void adv_sentinels_drop(struct adv_sentinels *s);

/* ---- the attacker --------------------------------------------------------------------------- */

struct adv_shared {
	volatile int stop;
	volatile int ready;
	volatile unsigned long done;	/* successful attacks (swaps, moves, creations) */
	volatile unsigned long tries;
	volatile int last_errno;
};

/* One attack step; returns true when it achieved something. Runs in the attacker. */
typedef bool (*adv_attack_fn)(void *arg);

struct adv_attacker {
	pid_t pid;
	struct adv_shared *sh;
};

/*
 * Fork an attacker that runs 'fn(arg)' in a loop until adv_attacker_stop().
 * uid 0 keeps root (an attacker with root's reach, for races a user could
 * only widen); any other uid drops every group and becomes that user.
 */
void adv_attacker_start(struct adv_attacker *a, adv_attack_fn fn, void *arg, uid_t uid, gid_t gid);
/* Stop, reap (fails the test if it crashed) and return the successful attack count. */
unsigned long adv_attacker_stop(struct adv_attacker *a);

/* Run fn(arg) in a child as uid:gid (groups dropped); its exit status (0 on success). */
int adv_run_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg);

/* How a bounded run went: whether it was still running at its limit (then killed). */
struct adv_bounded {
	bool blocked;
	int status;		/* fn's exit code when it returned, else -1 */
	double took;
};

/*
 * Run fn(arg) in a child (as the caller is); at 'limit_s' seconds call
 * unblock(uarg) (unless NULL: a FUSE daemon's end is what frees a process
 * stuck in its request) and SIGKILL the child.
 */
void adv_run_bounded(int (*fn)(void *), void *arg, double limit_s, void (*unblock)(void *),
		     void *uarg, struct adv_bounded *b);

/* snprintf that fails the test binary (abort) if the text does not fit: a test bug. Returns buf. */
char *adv_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- scale and timing ---------------------------------------------------------------------- */

/* n scaled by EXTC_ADV_SCALE percent (default 100), at least 1. */
unsigned long adv_scaled(unsigned long n);
double adv_now(void);

/* Run fn(arg) in a thread with a stack of 'stack' bytes (proves no deep recursion). */
int adv_run_small_stack(size_t stack, void *(*fn)(void *), void *arg);

/* The sysctl helpers: read / write /proc/sys/fs/<name>; -1 on error. */
int adv_sysctl_get(const char *name);
int adv_sysctl_set(const char *name, int value);

#endif /* EXTC_ADV_H_ */
