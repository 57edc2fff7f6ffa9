/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what the controller says about a job, for the leftover sweep. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>

#include "proc/child.h"
#include "base/clock.h"
#include "spank/ctl_query.h"
#include "fs/fs_remove.h"
#include "spank/log.h"

/*
 * libslurm is not linked: slurmd and slurmstepd, the only processes that
 * call this, already carry these symbols, and a second copy of the library
 * would have a second, unconfigured copy of its state.
 */

/* 26.05 names a job by a slurm_step_id_t (the uint32_t form is SLURM_BACKWARD_COMPAT only). */
static int load_job(job_info_msg_t **msg, uint32_t jobid)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	slurm_step_id_t id = SLURM_STEP_ID_INITIALIZER;

	id.job_id = jobid;
	return (slurm_load_job(msg, id, SHOW_ALL));
#else
	return (slurm_load_job(msg, jobid, SHOW_ALL));
#endif
}

/*
 * In the child. The job epilog's process holds the configuration slurmd
 * sent it but none of the plugins an RPC needs: from 24.11 on, an RPC
 * without them ends the process in fatal() or SIGSEGV. slurm_init() loads
 * them (on 22.05 it only reads a configuration, which is already there);
 * it too may fatal(), which is why this runs in a child.
 */
static enum extc_ctl_verdict ask_controller(uint32_t jobid)
{
	job_info_msg_t *msg = NULL;
	enum extc_ctl_verdict verdict = EXTC_CTL_UNKNOWN;
	uint32_t state;

	slurm_init(NULL);
	errno = 0;
	if (load_job(&msg, jobid) != SLURM_SUCCESS) {
		/* libslurm leaves its error code in errno (slurm_get_errno() is gone since 24.11) */
		if (errno == ESLURM_INVALID_JOB_ID)
			verdict = EXTC_CTL_OVER;
		goto out;
	}
	if (msg == NULL || msg->record_count == 0) {
		verdict = EXTC_CTL_OVER;
		goto out;
	}
	state = msg->job_array[0].job_state;
	if ((state & JOB_COMPLETING) || (state & JOB_STATE_BASE) < JOB_COMPLETE)
		verdict = EXTC_CTL_ALIVE;
	else
		verdict = EXTC_CTL_OVER;
out:
	if (msg != NULL)
		slurm_free_job_info_msg(msg);
	return (verdict);
}

/* Read the child's one byte until 'deadline_ns'; UNKNOWN if it dies or runs out of time. */
static enum extc_ctl_verdict await_verdict(int fd, uint64_t deadline_ns)
{
	unsigned char byte;

	for (;;) {
		uint64_t now = extc_clock_monotonic_ns();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int ret;

		if (now >= deadline_ns)
			return (EXTC_CTL_TIMEOUT);
		ret = poll(&pfd, 1, (int)((deadline_ns - now) / 1000000ULL) + 1);
		if (ret < 0 && errno != EINTR)
			return (EXTC_CTL_UNKNOWN);
		if (ret <= 0)
			continue;
		n = read(fd, &byte, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1 || byte > EXTC_CTL_UNKNOWN)
			return (EXTC_CTL_UNKNOWN);
		return ((enum extc_ctl_verdict)byte);
	}
}

enum extc_ctl_verdict extc_ctl_query_ask(uint32_t jobid, uint64_t timeout_ms)
{
	enum extc_ctl_verdict verdict;
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return (EXTC_CTL_UNKNOWN);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return (EXTC_CTL_UNKNOWN);
	}
	if (pid == 0) {
		unsigned char byte;

		close(fds[0]);
		signal(SIGPIPE, SIG_IGN);
		byte = (unsigned char)ask_controller(jobid);
		_exit(write(fds[1], &byte, 1) == 1 ? 0 : 1);
	}
	close(fds[1]);
	verdict = await_verdict(fds[0], extc_clock_monotonic_ns() + timeout_ms * 1000000ULL);
	close(fds[0]);
	/* bounded: a child stuck in the kernel is left to init rather than waited for */
	extc_child_reap(pid, 0, 1000);
	return (verdict);
}

bool extc_ctl_query_job_alive(uint32_t jobid, void *arg)
{
	struct extc_ctl_session *s = arg;
	enum extc_ctl_verdict verdict;

	if (s->gave_up || s->asked >= s->max_asks)
		return (true);
	s->asked++;
	verdict = extc_ctl_query_ask(jobid, s->timeout_ms);
	if (verdict == EXTC_CTL_UNKNOWN || verdict == EXTC_CTL_TIMEOUT) {
		/* one unanswered question is enough: the rest of this sweep waits for the next epilog */
		s->gave_up = true;
		extc_info("epilog: the controller did not say whether job %u is over (%s); "
			  "leftovers are kept until a later epilog", jobid,
			  verdict == EXTC_CTL_TIMEOUT ? "no answer in time" : "the query failed");
	}
	return (verdict != EXTC_CTL_OVER);
}
