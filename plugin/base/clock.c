/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the one clock every time budget is measured on. */
#include <time.h>

#include "base/clock.h"

uint64_t extc_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

bool extc_past_deadline(uint64_t deadline_ns)
{
	return (deadline_ns != 0 && extc_monotonic_ns() > deadline_ns);
}
