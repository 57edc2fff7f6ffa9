/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the site tier's plugstack.conf keys, parsed and checked. */
#include <string.h>

#include "base/config_tier.h"
#include "base/seed_path.h"
#include "base/text.h"

int extc_config_tier_pattern(const char *value, char *out, char *why, size_t whylen)
{
	/* the same rules as seed= (at most EXTC_TIER_PATTERN_MAX bytes): opened only as the job's user */
	if (extc_seed_path_check_pattern(value, why, whylen) < 0)
		return (-1);
	strcpy(out, value);
	return (0);
}

int extc_config_tier_timeout(const char *value, uint32_t *out, char *why, size_t whylen)
{
	if (extc_parse_u32(value, EXTC_TIER_TIMEOUT_MAX, out) < 0 || *out == 0) {
		extc_fmt(why, whylen, "expected a number of seconds from 1 to %d (reading the tier "
			 "holds the step's tasks that long at most)", EXTC_TIER_TIMEOUT_MAX);
		return (-1);
	}
	return (0);
}

int extc_config_tier_keep(const char *value, uint32_t *out, char *why, size_t whylen)
{
	if (extc_parse_u32(value, EXTC_TIER_KEEP_MAX, out) < 0 || *out == 0) {
		extc_fmt(why, whylen, "expected a number of generations from 1 to %d",
			 EXTC_TIER_KEEP_MAX);
		return (-1);
	}
	return (0);
}
