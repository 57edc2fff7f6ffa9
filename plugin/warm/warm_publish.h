/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: publishing a leaf's completed builds into a shared directory, by copy, atomically. */
#ifndef EXTC_WARM_PUBLISH_H_
#define EXTC_WARM_PUBLISH_H_

#include <stddef.h>
#include <stdint.h>

#include "warm/manifest.h"
#include "warm/warm_copy.h"
#include "warm/warm_walk.h"

/*
 * Publish: copy every completed entry of the leaf into 'dirfd' (a torch
 * extension directory <torch>/[<pyver_cu>/]<name>, and every top-level child
 * of the other subdirectories but Inductor's locks/), each staged under a hidden name unique to
 * o->tag and renamed into place without replacing anything: of several
 * publishers of one entry one wins, the others remove their stage. An entry
 * already present is left alone. Stages and manifest drafts of this user
 * older than o->stale_before are removed first. The manifest 'mf' is
 * written first if the directory has none, and refreshed after; a
 * directory whose manifest is for another key or CPU is refused whole.
 * Returns 0 when every entry is published or present, -1 otherwise ('why'
 * and the report say what).
 */
int extc_warm_publish(int leaffd, int dirfd, const struct extc_warm_opts *o,
		      const struct extc_manifest *mf, struct extc_warm_walk_report *rep,
		      char *why, size_t whylen);

#endif /* EXTC_WARM_PUBLISH_H_ */
