/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: run a function in a child process that is fully the job's user, with a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/as_user.h"
#include "proc/child.h"
#include "base/clock.h"
#include "base/fdio.h"
#include "base/text.h"

/* The header and EXTC_AS_USER_RES_MAX together stay one atomic pipe write (PIPE_BUF). */
#define AS_USER_WHY_MAX 200

struct msg {
	int rc;		/* fn's result, or -1: the child could not become the user */
	char why[AS_USER_WHY_MAX];	/* why it could not */
	/* the caller's result struct is read in place: align it for any type */
	_Alignas(max_align_t) unsigned char res[EXTC_AS_USER_RES_MAX];
};

static bool group_allowed(gid_t g, const struct extc_creds *cr)
{
	size_t i;

	if (g == cr->gid)
		return (true);
	for (i = 0; cr->groups != NULL && i < cr->ngroups; i++) {
		if (cr->groups[i] == g)
			return (true);
	}
	return (false);
}

/*
 * From root: setgroups, then gids, then uids. From a process whose
 * effective ids are already the user's (slurmstepd's user_init) the groups
 * are already the job's and cannot be set without privilege: they are
 * checked instead, and the real and saved ids (root) are dropped.
 */
static int become(const struct extc_creds *cr, char *why, size_t whylen)
{
	gid_t groups[256];
	uid_t r, e, s;
	gid_t rg, eg, sg;
	bool from_root = geteuid() == 0;
	int n, i;

	if (cr->uid == 0) {
		extc_fmt(why, whylen, "refusing to work for uid 0");
		return (-1);
	}
	if (from_root) {
		if (setgroups(cr->groups ? cr->ngroups : 0, cr->groups) < 0) {
			extc_fmt(why, whylen, "setgroups: %s", strerror(errno));
			return (-1);
		}
	} else if (geteuid() != cr->uid) {
		extc_fmt(why, whylen, "running as uid %u, not the job's uid %u", (unsigned)geteuid(),
			 (unsigned)cr->uid);
		return (-1);
	}
	if (setresgid(cr->gid, cr->gid, cr->gid) < 0 || setresuid(cr->uid, cr->uid, cr->uid) < 0) {
		extc_fmt(why, whylen, "cannot become uid %u gid %u: %s", (unsigned)cr->uid,
			 (unsigned)cr->gid, strerror(errno));
		return (-1);
	}
	if (getresuid(&r, &e, &s) < 0 || r != cr->uid || e != cr->uid || s != cr->uid ||
	    getresgid(&rg, &eg, &sg) < 0 || rg != cr->gid || eg != cr->gid || sg != cr->gid ||
	    setuid(0) == 0) {
		extc_fmt(why, whylen, "the ids did not change as asked");
		return (-1);
	}
	n = getgroups((int)(sizeof(groups) / sizeof(groups[0])), groups);
	/* slurmstepd set the groups of user_init itself; unknown ones can only be trusted */
	for (i = 0; (from_root || cr->groups != NULL) && i < n; i++) {
		if (!group_allowed(groups[i], cr)) {
			extc_fmt(why, whylen, "holds group %u, which is not the job's",
				 (unsigned)groups[i]);
			return (-1);
		}
	}
	if (n < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		extc_fmt(why, whylen, "cannot lock the credentials: %s", strerror(errno));
		return (-1);
	}
	return (0);
}

#define FALLBACK_FD_MAX 65536	/* without close_range: every number up to this is closed */

/*
 * The child keeps nothing of slurmstepd's: not the log, not the job level
 * it holds locked, not the leaf, not the task I/O pipes. Only its result
 * pipe stays (moved to 3), and stdio goes to /dev/null. A child stuck in a
 * FUSE request then holds nothing anyone else waits for. Async-signal-safe
 * calls only: the parent may be a multi-threaded slurmstepd.
 */
static int keep_only(int wfd)
{
	int w = fcntl(wfd, F_DUPFD, 3);	/* out of the way of stdio */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (w < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		return (-1);
	if (w != 3 && dup2(w, 3) < 0)
		return (-1);
	if (extc_child_close_range(4, ~0u) < 0) {
		for (int fd = 4; fd < FALLBACK_FD_MAX; fd++)
			close(fd);
	}
	return (3);
}

static void child(const struct extc_creds *cr, extc_as_user_fn fn, void *arg, size_t reslen,
		  int wfd)
{
	static struct msg m;	/* too large for a slurmstepd thread's stack */

	signal(SIGPIPE, SIG_DFL);
	umask(022);
	memset(&m, 0, sizeof(m));
	wfd = keep_only(wfd);
	if (wfd < 0)
		_exit(3);
	/* the user must not ptrace or read the memory of a process that was root */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		_exit(3);
	if (become(cr, m.why, sizeof(m.why)) < 0)
		m.rc = -1;
	else
		m.rc = fn(arg, m.res, reslen) == 0 ? 0 : 1;
	if (extc_fdio_write_all(wfd, &m, sizeof(m)) < 0)
		_exit(2);
	_exit(0);
}

/*
 * Reap the child: at once SIGKILLed if 'kill_it', else given 1 s to exit
 * first; 2 s in all. false when it is still there: it holds nothing of ours
 * (keep_only), so it is left to die on its own.
 */
static bool reap(pid_t pid, bool kill_it)
{
	return (extc_child_reap(pid, kill_it ? 0 : 1000, 2000));
}

enum extc_as_user_result extc_as_user(const struct extc_creds *cr, uint64_t timeout_ms,
				      extc_as_user_fn fn, void *arg, void *res, size_t reslen,
				      char *why, size_t whylen)
{
	static struct msg m;
	uint64_t deadline = extc_clock_monotonic_ns() + timeout_ms * 1000000ULL;
	size_t got = 0;
	int fds[2];
	pid_t pid;
	enum extc_as_user_result rv = EXTC_AS_USER_FAILED;

	if (reslen > sizeof(m.res)) {
		extc_fmt(why, whylen, "result too large for the pipe");
		return (EXTC_AS_USER_FAILED);
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		extc_fmt(why, whylen, "pipe: %s", strerror(errno));
		return (EXTC_AS_USER_FAILED);
	}
	pid = fork();
	if (pid < 0) {
		extc_fmt(why, whylen, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return (EXTC_AS_USER_FAILED);
	}
	if (pid == 0) {
		close(fds[0]);
		child(cr, fn, arg, reslen, fds[1]);
	}
	close(fds[1]);
	while (got < sizeof(m)) {
		uint64_t now = extc_clock_monotonic_ns();
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		ssize_t n;
		int ret;

		if (now >= deadline)
			break;
		ret = poll(&pfd, 1, (int)((deadline - now) / 1000000ULL) + 1);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			continue;
		n = read(fds[0], (char *)&m + got, sizeof(m) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (got == sizeof(m)) {
		reap(pid, false);
		if (m.rc < 0) {
			extc_fmt(why, whylen, "cannot act as the job's user: %s", m.why);
		} else {
			memcpy(res, m.res, reslen);
			rv = m.rc == 0 ? EXTC_AS_USER_DONE : EXTC_AS_USER_FN_FAILED;
		}
	} else if (extc_clock_monotonic_ns() >= deadline) {
		if (reap(pid, true))
			extc_fmt(why, whylen, "gave up after %llu s (killed the copy; a hung filesystem?)",
				 (unsigned long long)(timeout_ms / 1000));
		else
			extc_fmt(why, whylen, "gave up after %llu s: the copy (pid %d) is stuck in its "
				 "filesystem and does not die; it holds nothing of the step and is left "
				 "behind", (unsigned long long)(timeout_ms / 1000), (int)pid);
	} else {
		reap(pid, true);
		extc_fmt(why, whylen, "the copying process died");
	}
	return (rv);
}
