/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: root's note that a user's site tier did not answer in time. */
#include <inttypes.h>
#include <stdio.h>

#include "base/text.h"
#include "pool/pool_level.h"
#include "tier/tier_mark.h"

int extc_tier_mark_unreachable(const struct extc_tree *tree, uid_t uid, int64_t now, char *why,
			       size_t whylen)
{
	struct extc_pool_fds p;
	char text[64];
	int rc = -1;

	extc_fmt(text, sizeof(text), "at=%" PRId64 "\n", now);
	if (extc_pool_level_open_uid(tree, uid, false, &p, why, whylen) == EXTC_LEVEL_FOUND &&
	    extc_pool_level_write_note(&p, EXTC_TIER_MARK_NAME, EXTC_TIER_MARK_SUFFIX, text, true,
				       why, whylen) == EXTC_NOTE_WRITTEN)
		rc = 0;
	extc_pool_level_close(&p);
	return (rc);
}

bool extc_tier_mark_recent(const struct extc_tree *tree, uid_t uid, int64_t now)
{
	struct extc_pool_fds p;
	char text[64], why[256];
	int64_t at = 0;
	bool recent = false;

	/* root's own plain file, or nothing (a note of another kind is not read as one) */
	if (extc_pool_level_open_uid(tree, uid, false, &p, why, sizeof(why)) == EXTC_LEVEL_FOUND &&
	    extc_pool_level_read_note(p.uid, EXTC_TIER_MARK_NAME, tree->pol, text, sizeof(text),
				      false) > 0 &&
	    sscanf(text, "at=%" SCNd64, &at) == 1)
		recent = at <= now && now - at < EXTC_TIER_UNREACHABLE_S;
	extc_pool_level_close(&p);
	return (recent);
}
