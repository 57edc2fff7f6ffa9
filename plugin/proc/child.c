/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: housekeeping of forked children: inherited descriptors, bounded reaping. */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/child.h"

int extc_child_close_range(unsigned int first, unsigned int last)
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

/*
 * The child has usually sent its result and is exiting when we get here, so
 * the first polls come fast (0.1 ms, doubling) and only a child that takes
 * longer is polled every 10 ms: a fixed 10 ms tick cost every step launch
 * about 10 ms for nothing. Polling, never a blocking waitpid: a child stuck
 * in a hung filesystem must not hold root here past 'total_ms'.
 */
#define REAP_FIRST_TICK_US 100u
#define REAP_MAX_TICK_US 10000u

bool extc_child_reap(pid_t pid, unsigned int grace_ms, unsigned int total_ms)
{
	const unsigned long long grace_us = grace_ms * 1000ull, total_us = total_ms * 1000ull;
	unsigned int tick_us = REAP_FIRST_TICK_US;
	unsigned long long waited_us;
	bool killed = false;
	int status;

	for (waited_us = 0; waited_us < total_us; waited_us += tick_us) {
		struct timespec tick;
		pid_t r;

		if (!killed && waited_us >= grace_us) {
			kill(pid, SIGKILL);
			killed = true;
		}
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return (true);
		if (waited_us > 0 && tick_us < REAP_MAX_TICK_US)
			tick_us = tick_us * 2 > REAP_MAX_TICK_US ? REAP_MAX_TICK_US : tick_us * 2;
		tick.tv_sec = 0;
		tick.tv_nsec = (long)tick_us * 1000L;
		nanosleep(&tick, NULL);
	}
	return (false);
}
