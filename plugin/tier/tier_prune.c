/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what a publish removes from a key's directory on the tier, and when it may. */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fdio.h"
#include "base/text.h"
#include "fs/fs_remove.h"
#include "tier/tier_gen.h"
#include "tier/tier_prune.h"

/* A listing looks at this many generations at most: older ones wait for a later publish. */
#define PRUNE_LIST_MAX 256

static uint64_t ns_of(const struct timespec *ts)
{
	return ((uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec);
}

/* Has 'grace_ns' passed since 'then_ns' at 'now_ns'? */
static bool past_grace(uint64_t then_ns, uint64_t grace_ns, uint64_t now_ns)
{
	return (now_ns > then_ns && now_ns - then_ns > grace_ns);
}

static void prune_remove(int keyfd, const char *name, uint64_t deadline_ns)
{
	struct extc_rm_limits limits;
	struct extc_rm_report rep;

	extc_rm_limits_default(&limits);
	limits.deadline_ns = deadline_ns;
	extc_remove_tree_at(keyfd, name, &limits, &rep);
}

void extc_tier_prune_sweep(int keyfd, uint64_t grace_ns, uint64_t now_ns, const char *tag,
			   uint64_t deadline_ns)
{
	char own[EXTC_TIER_GEN_NAME_MAX + 32];
	struct dirent *de;
	DIR *d = extc_fdio_opendir(keyfd);

	if (d == NULL || extc_fmt(own, sizeof(own), "%s%s", EXTC_TIER_STAGE_PREFIX, tag) < 0)
		own[0] = '\0';
	while (d != NULL && (de = readdir(d)) != NULL) {
		struct stat sb;
		bool go = extc_has_prefix(de->d_name, EXTC_TIER_TRASH_PREFIX) ||
			  strcmp(de->d_name, own) == 0;

		if (!go && extc_has_prefix(de->d_name, EXTC_TIER_STAGE_PREFIX) &&
		    fstatat(keyfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
			go = past_grace(ns_of(&sb.st_ctim), grace_ns, now_ns);
		if (go)
			prune_remove(keyfd, de->d_name, deadline_ns);
	}
	if (d != NULL)
		closedir(d);
}

/* Out of the listing at once by a rename, then removed. */
static bool retire(int keyfd, const char *name, const char *tag, unsigned seq,
		   uint64_t deadline_ns)
{
	char trash[EXTC_TIER_GEN_NAME_MAX + 48];

	if (extc_fmt(trash, sizeof(trash), "%s%s.%u", EXTC_TIER_TRASH_PREFIX, tag, seq) < 0 ||
	    extc_fdio_rename_noreplace(keyfd, name, keyfd, trash, true) < 0)
		return (false);
	prune_remove(keyfd, trash, deadline_ns);
	return (true);
}

unsigned extc_tier_prune(int keyfd, unsigned keep, uint64_t grace_ns, uint64_t now_ns,
			 const char *tag, uint64_t deadline_ns)
{
	struct extc_tier_gen *gens = calloc(PRUNE_LIST_MAX, sizeof(*gens));
	size_t n = 0, i, good = 0;
	uint64_t *good_ns = calloc(PRUNE_LIST_MAX, sizeof(*good_ns));
	unsigned removed = 0;
	char why[EXTC_WHY_MAX];

	if (keep == 0)
		keep = 1;
	if (gens == NULL || good_ns == NULL ||
	    extc_tier_gen_list(keyfd, gens, PRUNE_LIST_MAX, &n, why, sizeof(why)) < 0)
		n = 0;
	for (i = 0; i < n; i++) {
		bool go;

		if (gens[i].bad) {
			go = past_grace(ns_of(&gens[i].bad_since), grace_ns, now_ns);
		} else {
			good_ns[good] = gens[i].ns;
			/* the good one 'keep' places newer pushed it out of the readers' reach */
			go = good >= keep && past_grace(good_ns[good - keep], grace_ns, now_ns);
			good++;
		}
		if (go && retire(keyfd, gens[i].name, tag, removed, deadline_ns))
			removed++;
	}
	free(good_ns);
	free(gens);
	return (removed);
}
