/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: run slow work (emptying the trash) after the epilog has returned. */
#ifndef EXTC_BACKGROUND_H_
#define EXTC_BACKGROUND_H_

#include <sys/types.h>

/*
 * Run fn(arg) in a grandchild in its own session, at the lowest CPU and I/O
 * priority, with no descriptor but regular files (the log) left open and
 * stdio on /dev/null (unless a regular file), so neither
 * slurmd waiting for the epilog nor its timeout kill of the epilog's
 * process group waits for or reaches it.
 * Only from a single-threaded process: after fork, a multi-threaded
 * process may hold allocator locks of threads that are gone. Returns the
 * grandchild's pid, or -1 when the work was not started (caller decides).
 */
pid_t extc_run_detached(void (*fn)(void *arg), void *arg);

/* The work runs at this nice value and in the idle I/O class. */
#define EXTC_BACKGROUND_NICE 19

/*
 * Where the detached process lists its open descriptors; when it cannot be
 * read they are found with poll(). Tests point it elsewhere.
 */
extern const char *extc_background_fd_dir;

#endif /* EXTC_BACKGROUND_H_ */
