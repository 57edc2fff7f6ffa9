/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: housekeeping of forked children: inherited descriptors, bounded reaping. */
#ifndef EXTC_CHILD_H_
#define EXTC_CHILD_H_

#include <stdbool.h>
#include <sys/types.h>

/* close_range(2) without flags, or -1 with ENOSYS on a kernel before 5.9 or under a seccomp filter. */
int extc_child_close_range(unsigned int first, unsigned int last);

/*
 * Reap 'pid', SIGKILLing it after 'grace_ms' (at once for 0), and give up
 * after 'total_ms': a child stuck in the kernel (SIGKILL waits for its
 * filesystem) is left to init rather than waited for. True once reaped
 * (or gone); false when it is still there.
 */
bool extc_child_reap(pid_t pid, unsigned int grace_ms, unsigned int total_ms);

#endif /* EXTC_CHILD_H_ */
