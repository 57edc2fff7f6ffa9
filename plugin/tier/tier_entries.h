/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: reading a tier manifest's lines strictly, entry by entry. */
#ifndef EXTC_TIER_ENTRIES_H_
#define EXTC_TIER_ENTRIES_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "tier/tier_manifest.h"

/*
 * The format is tier_manifest.h's. The reading is strict: a line that is
 * not exactly as a publisher writes it (a field out of its form, a path
 * with "", ".", "..", a plugin's own name or an unescaped byte, an entry
 * out of order or whose directory is not listed before it, an end line
 * whose counts differ, anything after it) makes the manifest not one.
 */

/* A reading of a manifest's text, line by line. */
struct extc_tier_entries {
	const char *text;
	size_t len, off;
	unsigned long line;		/* of the last line read, from 1 */
	uint64_t entries, bytes;	/* counted so far */
	char prev[PATH_MAX];		/* the last entry's path: the next must sort after it */
	char chain[PATH_MAX];		/* the deepest directory whose contents may follow */
	size_t dirlen[EXTC_TIER_MANIFEST_MAX_DEPTH];	/* by depth: the length of each of its
						   ancestors' paths and its own */
	unsigned ndirs;
};

/* Start reading 'text' (the version line is read by the first next). */
void extc_tier_entries_begin(struct extc_tier_entries *c, const char *text, size_t len);

/*
 * The next entry: 1 and '*e'; 0 at a well-formed end (the end line's
 * counts agree and nothing follows it); -1 and '*res' (_OTHER_VERSION or
 * _INVALID) with 'why' naming the line.
 */
int extc_tier_entries_next(struct extc_tier_entries *c, struct extc_tier_entry *e,
			    enum extc_tier_manifest_result *res, char *why, size_t whylen);

/* Read the whole text through: _OK with its entries and bytes, or what is wrong. */
enum extc_tier_manifest_result extc_tier_entries_check(const char *text, size_t len,
							uint64_t *entries, uint64_t *bytes,
							char *why, size_t whylen);

#endif /* EXTC_TIER_ENTRIES_H_ */
