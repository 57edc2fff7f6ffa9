/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: housekeeping of forked children: inherited descriptors, bounded reaping. */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"

int extc_close_range(unsigned int first, unsigned int last)
{
#ifdef SYS_close_range
	return ((int)syscall(SYS_close_range, first, last, 0u));
#else
	(void)first;
	(void)last;
	errno = ENOSYS;
	return (-1);
#endif
}

#define REAP_TICK_MS 10

bool extc_reap_child(pid_t pid, unsigned int grace_ms, unsigned int total_ms)
{
	const struct timespec tick = { .tv_sec = 0, .tv_nsec = REAP_TICK_MS * 1000000L };
	bool killed = false;
	unsigned int waited;
	int status;

	for (waited = 0; waited < total_ms; waited += REAP_TICK_MS) {
		pid_t r;

		if (!killed && waited >= grace_ms) {
			kill(pid, SIGKILL);
			killed = true;
		}
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return (true);
		nanosleep(&tick, NULL);
	}
	return (false);
}
