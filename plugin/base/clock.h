/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the one clock every time budget is measured on. */
#ifndef EXTC_CLOCK_H_
#define EXTC_CLOCK_H_

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/*
 * Two lines each, read on every walk's step: inline, the header their only
 * home (a file of their own would hold nothing else).
 */

/* CLOCK_MONOTONIC now, in ns, for building deadlines. */
static inline uint64_t extc_clock_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

/* Whether a deadline built on extc_clock_monotonic_ns() has passed; 0 is none, never passed. */
static inline bool extc_clock_past_deadline(uint64_t deadline_ns)
{
	return (deadline_ns != 0 && extc_clock_monotonic_ns() > deadline_ns);
}

#endif /* EXTC_CLOCK_H_ */
