/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a key's generations on the site tier: their names, their listing, their bad marks. */
#ifndef EXTC_TIER_GEN_H_
#define EXTC_TIER_GEN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "warm/warm_names.h"

/*
 * The tier is <tier>/<key>/ (a pool key's name, mode 0700), holding:
 *   g<20 digits>.<tag>   a generation: a complete, immutable copy of the
 *                        key's builds as one step put them back, its
 *                        manifest (tier_manifest.h) written last; the
 *                        digits are the CLOCK_REALTIME ns of its publish,
 *                        the tag "<node>.<pid>" of its publisher;
 *   .ext-cache-stage.<tag>   a publish on its way in: never read;
 *   .ext-cache-trash.<tag>.<n>   a generation on its way out: never read.
 * A generation a reader found not to match its manifest holds the mark
 * .ext-cache-bad, and is read no more.
 */
#define EXTC_TIER_TAG_MAX 100		/* bytes of a tag */
#define EXTC_TIER_GEN_NAME_MAX (1 + 20 + 1 + EXTC_TIER_TAG_MAX + 1)
#define EXTC_TIER_STAGE_PREFIX EXTC_OWN_PREFIX "stage."
#define EXTC_TIER_TRASH_PREFIX EXTC_OWN_PREFIX "trash."
#define EXTC_TIER_BAD_MARK EXTC_OWN_PREFIX "bad"

/* Is 'tag' one: 1 to EXTC_TIER_TAG_MAX bytes of [A-Za-z0-9._-]? */
bool extc_tier_gen_tag_ok(const char *tag);

/* The generation name for a publish at 'ns' (CLOCK_REALTIME) by 'tag'. 0, or -1: 'tag' is not one. */
int extc_tier_gen_name(uint64_t ns, const char *tag, char *out, size_t len);

/* Is 'name' a generation's name? Its ns in '*ns' (may be NULL). */
bool extc_tier_gen_name_ok(const char *name, uint64_t *ns);

/* A generation as a listing found it. */
struct extc_tier_gen {
	char name[EXTC_TIER_GEN_NAME_MAX];
	uint64_t ns;			/* its publish, from its name */
	bool bad;			/* it holds the mark */
	struct timespec bad_since;	/* the mark's ctime, when 'bad' */
};

/*
 * The generations in the key directory 'keyfd': directories of a well-
 * formed name holding a manifest (a stage, the trash and any other name are
 * not), newest first (by the ns in their names, then by name). At most
 * 'max', the newest; how many in '*n'. 0, or -1 when 'keyfd' cannot be
 * read ('why').
 */
int extc_tier_gen_list(int keyfd, struct extc_tier_gen *gens, size_t max, size_t *n, char *why,
		       size_t whylen);

/*
 * Open the key directory 'key' (a pool key's name) below the tier 'tierfd':
 * not a link, on the tier's filesystem. With 'make' it is made (mode 0700)
 * when missing. 0 and '*fd'; 1 when it is missing (without 'make'); -1
 * with 'why'.
 */
int extc_tier_gen_open_key(int tierfd, const char *key, bool make, int *fd, char *why,
			   size_t whylen);

/* Mark the generation 'name' bad (O_EXCL: the first mark stays); failure is ignored. */
void extc_tier_gen_mark_bad(int keyfd, const char *name);

#endif /* EXTC_TIER_GEN_H_ */
