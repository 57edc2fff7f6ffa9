/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: run slow work (emptying the trash) after the epilog has returned. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/background.h"
#include "proc/cgroup_escape.h"
#include "proc/child.h"
#include "base/clock.h"
#include "base/text.h"

const char *extc_background_fd_dir = "/proc/self/fd";
unsigned extc_background_linger_ms;

/* Linux ABI values (linux/ioprio.h is missing from older kernel headers). */
#define IOPRIO_WHO_PROCESS_ 1
#define IOPRIO_CLASS_IDLE_ 3
#define IOPRIO_CLASS_SHIFT_ 13

#define KEPT_MAX 64		/* regular files kept; more is unheard of, and still handled */
#define POLL_BATCH 1024

static int thread_count(void)
{
	char line[128];
	int threads = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Threads:", 8) == 0) {
			threads = atoi(line + 8);
			break;
		}
	}
	fclose(f);
	return (threads);
}

/*
 * The open descriptors above stdio, in ascending order, found without
 * touching every number up to the open-files limit (~25000 system calls
 * under slurmd): from the kernel's list, or, when that cannot be opened
 * (no /proc, or the limit reached), by poll(), which flags unused numbers
 * POLLNVAL a thousand at a time.
 */
struct fd_iter {
	DIR *dir;
	int next, limit;
	int nbatch, pos;
	struct pollfd batch[POLL_BATCH];
};

static void fd_iter_open(struct fd_iter *it)
{
	long max = sysconf(_SC_OPEN_MAX);

	it->dir = opendir(extc_background_fd_dir);
	it->next = 3;
	it->limit = (max < 0 || max > INT_MAX) ? 65536 : (int)max;
	it->nbatch = it->pos = 0;
}

static void fd_iter_close(struct fd_iter *it)
{
	if (it->dir != NULL)
		closedir(it->dir);
	it->dir = NULL;
}

/* The next open descriptor, or -1 when there is none. */
static int fd_iter_next(struct fd_iter *it)
{
	int i;

	if (it->dir != NULL) {
		struct dirent *de;

		while ((de = readdir(it->dir)) != NULL) {
			char *end;
			long fd;

			errno = 0;
			fd = strtol(de->d_name, &end, 10);
			if (end == de->d_name || *end != '\0' || errno != 0 || fd < 3 ||
			    fd > INT_MAX || fd == dirfd(it->dir))
				continue;
			return ((int)fd);
		}
		return (-1);
	}
	for (;;) {
		while (it->pos < it->nbatch) {
			struct pollfd *p = &it->batch[it->pos++];

			if ((p->revents & POLLNVAL) == 0)
				return (p->fd);
		}
		if (it->next >= it->limit)
			return (-1);
		it->nbatch = it->limit - it->next < POLL_BATCH ? it->limit - it->next : POLL_BATCH;
		for (i = 0; i < it->nbatch; i++) {
			it->batch[i].fd = it->next + i;
			it->batch[i].events = 0;
			it->batch[i].revents = 0;
		}
		it->next += it->nbatch;
		it->pos = 0;
		/* unsure is open: closing a free number only costs an EBADF */
		if (poll(it->batch, (nfds_t)it->nbatch, 0) < 0) {
			for (i = 0; i < it->nbatch; i++)
				it->batch[i].revents = 0;
		}
	}
}

/* In the detached process: what the caller asked to keep, and the end of the "done" pipe. */
static const int *kept_fds;
static size_t nkept_fds;
static int done_fd = -1;
static char cgroup_problem[EXTC_WHY_MAX];

/*
 * The log (a regular file) stays so the work can still log; so do our
 * /dev/null, the "done" pipe and what the caller keeps (the locks its
 * work holds).
 */
static bool keep_fd(int fd, int null)
{
	struct stat sb;
	size_t i;

	if (fd == null || fd == done_fd)
		return (true);
	for (i = 0; i < nkept_fds; i++) {
		if (kept_fds[i] == fd)
			return (true);
	}
	return (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode));
}

/*
 * Close every descriptor above stdio but the kept ones, with close_range(2)
 * over the gaps between them: one call per kept descriptor, and the last
 * one reaches past any limit. -1 when that cannot be done (no
 * close_range: kernel before 5.9 or a seccomp filter; or too many kept),
 * and nothing was closed.
 */
static int close_gaps(int null)
{
	struct fd_iter it;
	int kept[KEPT_MAX];
	size_t nkept = 0, i;
	unsigned int lo = 3;
	int fd, rv = -1;

	/* a range where nothing is open shows whether the call exists */
	if (extc_child_close_range(~0u - 1, ~0u) < 0)
		return (-1);
	fd_iter_open(&it);
	while ((fd = fd_iter_next(&it)) >= 0) {
		if (!keep_fd(fd, null))
			continue;
		if (nkept == KEPT_MAX)
			goto out;
		kept[nkept++] = fd;
	}
	/* the listing's own descriptor may sit in a gap: it goes first */
	fd_iter_close(&it);
	/* both listings are ascending, but a gap must never cover a kept one */
	for (i = 1; i < nkept; i++) {
		size_t j;

		for (j = i; j > 0 && kept[j - 1] > kept[j]; j--) {
			fd = kept[j];
			kept[j] = kept[j - 1];
			kept[j - 1] = fd;
		}
	}
	for (i = 0; i < nkept; i++) {
		if ((unsigned int)kept[i] > lo)
			extc_child_close_range(lo, (unsigned int)kept[i] - 1);
		if ((unsigned int)kept[i] + 1 > lo)
			lo = (unsigned int)kept[i] + 1;
	}
	extc_child_close_range(lo, ~0u);
	rv = 0;
out:
	fd_iter_close(&it);
	return (rv);
}

/* Without close_range: close each open descriptor that is not kept. */
static void close_each(int null)
{
	struct fd_iter it;
	int fd;

	fd_iter_open(&it);
	while ((fd = fd_iter_next(&it)) >= 0) {
		if (!keep_fd(fd, null))
			close(fd);
	}
	fd_iter_close(&it);
}

/*
 * Pipes and sockets go (slurmd may wait for their other end to close);
 * regular files stay, the log file among them, so the work can still log.
 */
static void close_inherited_fds(void)
{
	int fd, null = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (fd = 0; fd <= 2; fd++) {
		if (keep_fd(fd, null))
			continue;
		if (null >= 0)
			dup2(null, fd);
		else
			close(fd);
	}
	if (close_gaps(null) < 0)
		close_each(null);
	if (null > 2)
		close(null);
}

/*
 * Removing a huge tree is many small metadata writes: at the lowest CPU
 * priority and in the idle I/O class (honoured by the bfq and mq-deadline
 * schedulers), it yields to the next job's tasks on the same node instead
 * of competing with them. A failure leaves normal priority: slower for
 * others, still correct.
 */
static void lower_priority(void)
{
	(void)setpriority(PRIO_PROCESS, 0, EXTC_BACKGROUND_NICE);
#ifdef SYS_ioprio_set
	(void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS_, 0,
		      IOPRIO_CLASS_IDLE_ << IOPRIO_CLASS_SHIFT_);
#endif
}

/*
 * The caller's handlers are not ours: slurmstepd's would run its own code
 * in this process. Every signal goes back to its default and is unblocked,
 * but SIGPIPE, ignored: the caller may have stopped listening.
 */
static void reset_signals(void)
{
	sigset_t none;
	int sig;

	for (sig = 1; sig < NSIG; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, sig == SIGPIPE ? SIG_IGN : SIG_DFL);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

const char *extc_background_cgroup_problem(void)
{
	return (cgroup_problem[0] != '\0' ? cgroup_problem : NULL);
}

void extc_background_done(void)
{
	if (done_fd >= 0)
		close(done_fd);
	done_fd = -1;
}

/* Wait until the grandchild closes its end of 'fd' (done or ended), at most 'wait_ms'. */
static bool wait_done(int fd, unsigned wait_ms)
{
	uint64_t deadline = extc_clock_monotonic_ns() + (uint64_t)wait_ms * 1000000ULL;

	for (;;) {
		uint64_t now = extc_clock_monotonic_ns();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char byte;
		int ret;

		if (now >= deadline)
			return (false);
		ret = poll(&pfd, 1, (int)((deadline - now) / 1000000ULL) + 1);
		if (ret < 0 && errno != EINTR)
			return (false);
		if (ret > 0 && read(fd, &byte, 1) <= 0)
			return (true);	/* EOF: no writer is left */
	}
}

/*
 * Wait, at most ORPHAN_WAIT_MS, until the intermediate child has exited
 * and this process is no longer its child. Until then the caller's
 * process tree holds this one: Slurm's proctrack/linuxproc signals every
 * descendant of slurmstepd not named like slurmstepd itself (its
 * kill_tree.c), and the job's end (SIGCONT, SIGTERM) may come while the
 * exit hook runs. Keeping slurmstepd's name until then keeps it out of
 * any such signal: /proc/PID/stat gives the parent and the name together.
 */
#define ORPHAN_WAIT_MS 2000

static void wait_orphaned(pid_t intermediate)
{
	uint64_t deadline = extc_clock_monotonic_ns() + (uint64_t)ORPHAN_WAIT_MS * 1000000ULL;

	while (getppid() == intermediate && !extc_clock_past_deadline(deadline))
		poll(NULL, 0, 1);
}

static void grandchild(void (*fn)(void *arg), void *arg, const struct extc_detach_opts *o, int wfd,
		       pid_t intermediate)
{
	/* nobody waits when wait_ms is 0: the pipe goes with the others */
	done_fd = o->wait_ms > 0 ? wfd : -1;
	kept_fds = o->keep;
	nkept_fds = o->nkeep;
	reset_signals();
	wait_orphaned(intermediate);
	if (o->name != NULL)
		prctl(PR_SET_NAME, o->name, 0, 0, 0);
	close_inherited_fds();
	lower_priority();
	fn(arg);
	_exit(0);
}

enum extc_detach_result extc_background_detach(void (*fn)(void *arg), void *arg,
					       const struct extc_detach_opts *o, pid_t *pid_out)
{
	int pipefd[2];
	pid_t child, grandchild_pid = -1;
	int status;
	enum extc_detach_result rv = EXTC_DETACH_FAILED;

	*pid_out = -1;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return (EXTC_DETACH_FAILED);
	child = fork();
	if (child < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return (EXTC_DETACH_FAILED);
	}
	if (child == 0) {
		pid_t pid, intermediate;

		close(pipefd[0]);
		setsid();
		/*
		 * Forked from a process in the job's cgroups, the work would be
		 * charged to the job, and ended with it where the site's cgroup
		 * plugins kill what is left of a job: it moves out first. Here,
		 * before the grandchild exists, so that it is born outside and
		 * the caller's waitpid below returns only once that is so:
		 * slurmstepd removes the job's cgroups once, soon after its
		 * hook, and a process still in one would keep it there.
		 */
		if (o->leave_job_cgroups) {
			enum extc_cgroup_result left = extc_cgroup_escape(cgroup_problem,
									  sizeof(cgroup_problem));

			if (left != EXTC_CGROUP_PARTIAL && left != EXTC_CGROUP_FAILED)
				cgroup_problem[0] = '\0';
		}
		intermediate = getpid();
		pid = fork();
		if (pid == 0)
			grandchild(fn, arg, o, pipefd[1], intermediate);
		if (write(pipefd[1], &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
			_exit(1);
		if (extc_background_linger_ms > 0)
			poll(NULL, 0, (int)extc_background_linger_ms);
		_exit(pid < 0 ? 1 : 0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &grandchild_pid, sizeof(grandchild_pid)) != (ssize_t)sizeof(grandchild_pid))
		grandchild_pid = -1;
	/* EINTR only: ECHILD (SIGCHLD ignored, someone else reaped it) ends the wait */
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (grandchild_pid > 0) {
		*pid_out = grandchild_pid;
		rv = o->wait_ms > 0 && wait_done(pipefd[0], o->wait_ms) ? EXTC_DETACH_DONE :
									   EXTC_DETACH_RUNNING;
	}
	close(pipefd[0]);
	return (rv);
}

pid_t extc_background_run_detached(void (*fn)(void *arg), void *arg)
{
	const struct extc_detach_opts o = { 0 };
	pid_t pid;

	if (thread_count() != 1)
		return (-1);
	return (extc_background_detach(fn, arg, &o, &pid) == EXTC_DETACH_FAILED ? -1 : pid);
}
