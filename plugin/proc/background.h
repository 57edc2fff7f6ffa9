/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: run slow work (a step's publish and pool move, the epilog's) after the hook has returned. */
#ifndef EXTC_BACKGROUND_H_
#define EXTC_BACKGROUND_H_

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * How long a hook waits for its detached work before returning: the work
 * may wait on the job's user (a helper the user can stop, a FUSE mount),
 * and no hook waits on anything the user controls for more than 5 s in
 * all. Quick work (the common case) is over well within it, so what the
 * hook logged and what the next step sees are as if it had been done in
 * the hook.
 */
#define EXTC_HOOK_WAIT_MS 3000

struct extc_detach_opts {
	const char *name;	/* the work's process name (comm): ps and the tests tell it by this */
	const int *keep;	/* descriptors kept besides regular files: the locks the work holds */
	size_t nkeep;
	unsigned wait_ms;	/* the caller waits this long for extc_background_done() or the end */
	bool leave_job_cgroups;	/* born outside a Slurm job's cgroups (cgroup_escape.h) */
};

enum extc_detach_result {
	EXTC_DETACH_DONE,	/* the work said it was done, or ended, within wait_ms */
	EXTC_DETACH_RUNNING,	/* started, and still going when wait_ms ran out */
	EXTC_DETACH_FAILED,	/* not started: the caller decides */
};

/*
 * Run fn(arg) in a grandchild in its own session, named o->name once the
 * intermediate child that forked it is gone (until then it keeps the
 * caller's name: proctrack/linuxproc signals slurmstepd's descendants by
 * name), at the lowest CPU and I/O priority, with every signal at its
 * default but SIGPIPE (ignored), no descriptor but regular files (the
 * log) and o->keep left open, and stdio on /dev/null (unless a regular
 * file), so that neither the caller, nor slurmd waiting for an epilog, nor
 * a timeout's kill of the caller's process group waits for or reaches it.
 * With o->leave_job_cgroups, it is born outside the job's cgroups: its
 * parent moves out before forking it, and is waited for. Then wait up to
 * o->wait_ms for it to call extc_background_done() or end.
 *
 * May be called from slurmstepd, which has threads: the grandchild only
 * uses what survives a fork there (glibc's allocator and stdio reset
 * their locks in the child; Slurm's log lock has fork handlers) and
 * starts its own children only with extc_as_user. *pid is the
 * grandchild's, or -1.
 */
enum extc_detach_result extc_background_detach(void (*fn)(void *arg), void *arg,
					       const struct extc_detach_opts *o, pid_t *pid);

/* In the detached work: tell the waiting caller it may go on (the rest is not waited for). */
void extc_background_done(void);

/*
 * In the detached work: NULL, or why it could not leave all of the job's
 * cgroups (it then may be charged to the job, or ended with it).
 */
const char *extc_background_cgroup_problem(void);

/*
 * extc_background_detach with nothing kept and no wait, from a single-threaded
 * process only (slurmd and its epilog). Returns the grandchild's pid, or
 * -1 when the work was not started (caller decides).
 */
pid_t extc_background_run_detached(void (*fn)(void *arg), void *arg);

/* The work runs at this nice value and in the idle I/O class. */
#define EXTC_BACKGROUND_NICE 19

/*
 * Where the detached process lists its open descriptors; when it cannot be
 * read they are found with poll(). Tests point it elsewhere.
 */
extern const char *extc_background_fd_dir;

/*
 * How long the intermediate child lingers before it exits (0): tests widen
 * with it the moment the grandchild is still its child.
 */
extern unsigned extc_background_linger_ms;

#endif /* EXTC_BACKGROUND_H_ */
