/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the one clock every time budget is measured on. */
#ifndef EXTC_CLOCK_H_
#define EXTC_CLOCK_H_

#include <stdbool.h>
#include <stdint.h>

/* CLOCK_MONOTONIC now, in ns, for building deadlines. */
uint64_t extc_monotonic_ns(void);

/* Whether a deadline built on extc_monotonic_ns() has passed; 0 is none, never passed. */
bool extc_past_deadline(uint64_t deadline_ns);

#endif /* EXTC_CLOCK_H_ */
