/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the site tier's plugstack.conf keys (tier=, tier_timeout=, tier_keep=), parsed and checked. */
#ifndef EXTC_CONFIG_TIER_H_
#define EXTC_CONFIG_TIER_H_

#include <stddef.h>
#include <stdint.h>

#define EXTC_TIER_PATTERN_MAX 512
/*
 * Reading the tier happens in the user's own task before the program
 * starts: tens of seconds at most by default, so that a tier that hangs
 * (an NFS server that stopped answering) costs one step that much once.
 */
#define EXTC_DEFAULT_TIER_TIMEOUT 30		/* seconds */
#define EXTC_TIER_TIMEOUT_MAX 3600
#define EXTC_DEFAULT_TIER_KEEP 3		/* generations per key */
#define EXTC_TIER_KEEP_MAX 64

/* tier=PATTERN: absolute, %u, %U and %% only (as seed=); copied into 'out' (EXTC_TIER_PATTERN_MAX + 1). */
int extc_config_tier_pattern(const char *value, char *out, char *why, size_t whylen);

/* tier_timeout=SECONDS, 1 to EXTC_TIER_TIMEOUT_MAX. */
int extc_config_tier_timeout(const char *value, uint32_t *out, char *why, size_t whylen);

/* tier_keep=N, 1 to EXTC_TIER_KEEP_MAX. */
int extc_config_tier_keep(const char *value, uint32_t *out, char *why, size_t whylen);

#endif /* EXTC_CONFIG_TIER_H_ */
