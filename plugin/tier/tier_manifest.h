/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a tier generation's manifest: every entry with its mode, mtime, size and digest, as text. */
#ifndef EXTC_TIER_MANIFEST_H_
#define EXTC_TIER_MANIFEST_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "warm/warm_names.h"

/*
 * The manifest sits in its generation, named so that no walk ever copies
 * it as a build, and is written last: a generation without one is not one.
 *
 *     ext-cache-generation 1
 *     d <mode> <mtime> <path>
 *     f <mode> <size> <mtime> <digest> <path>
 *     end <entries> <bytes>
 *
 * <mode> the permission bits, 4 octal digits (0777 at most); <mtime> the
 * timespec as <tv_sec>.<tv_nsec, 9 digits>; <digest> XXH64 (base/digest.h)
 * in 16 lowercase hex digits; <size> and the end line's counts in decimal.
 * <path> is relative to the generation, its components separated by '/',
 * with a backslash, a newline, a space and every byte outside printable
 * ASCII escaped (\\, \n, \xHH), so that any name a filesystem allows
 * round-trips and every line is one entry. The entries come in a walk's
 * order: a directory before its contents, the entries of a directory
 * sorted by name (bytes), each directory's contents right after it, so
 * that a path compares as its components do ('/' below every byte). The
 * end line gives the entries and the files' bytes: a manifest cut short,
 * or with a line added or lost, is refused.
 */
#define EXTC_TIER_MANIFEST_NAME EXTC_OWN_PREFIX "generation"
#define EXTC_TIER_MANIFEST_VERSION 1
#define EXTC_TIER_MANIFEST_MAX_BYTES (64ul * 1024 * 1024)	/* a longer manifest is refused */
#define EXTC_TIER_MANIFEST_MAX_ENTRIES 1000000ul		/* a generation of more is refused */
#define EXTC_TIER_MANIFEST_MAX_DEPTH 64				/* a deeper path is refused */

enum extc_tier_entry_type {
	EXTC_TIER_ENTRY_DIR,
	EXTC_TIER_ENTRY_FILE,
};

struct extc_tier_entry {
	enum extc_tier_entry_type type;
	unsigned mode;		/* permission bits, 0777 at most */
	uint64_t size;		/* a file's */
	struct timespec mtime;
	uint64_t digest;	/* a file's */
	char path[PATH_MAX];	/* relative to the generation, as the filesystem has it */
	const char *name;	/* the last component, in 'path' */
	unsigned depth;		/* components before the last: 0 for a child of the generation */
};

/* A manifest being written: its text so far and its counts. */
struct extc_tier_manifest_out {
	char *text;
	size_t len, cap;
	uint64_t entries, bytes;
};

/* Start one: the version line. 0, or -1 out of memory ('why'). */
int extc_tier_manifest_out_init(struct extc_tier_manifest_out *m, char *why, size_t whylen);

/* The next entry's line, in the walk's order. 0, or -1 past a bound or out of memory ('why'). */
int extc_tier_manifest_add(struct extc_tier_manifest_out *m, const struct extc_tier_entry *e,
			   char *why, size_t whylen);

/*
 * The end line, then the file in 'dirfd' (created, never replaced), fsynced
 * and closed; the caller fsyncs 'dirfd'. 0, or -1 with errno and 'why'.
 */
int extc_tier_manifest_write(int dirfd, struct extc_tier_manifest_out *m, char *why,
			     size_t whylen);

void extc_tier_manifest_out_free(struct extc_tier_manifest_out *m);

enum extc_tier_manifest_result {
	EXTC_TIER_MANIFEST_OK,
	EXTC_TIER_MANIFEST_OTHER_VERSION,	/* a later version's: neither read nor held against it */
	EXTC_TIER_MANIFEST_INVALID,		/* missing, too large, cut short or not a manifest */
	EXTC_TIER_MANIFEST_UNREADABLE,		/* a read failed (errno): maybe for a moment */
};

/*
 * Read the manifest of the generation 'genfd' into '*text' (malloc'ed,
 * NUL-terminated, '*len' bytes; free it), without checking its lines.
 */
enum extc_tier_manifest_result extc_tier_manifest_read(int genfd, char **text, size_t *len,
						       char *why, size_t whylen);

#endif /* EXTC_TIER_MANIFEST_H_ */
