/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: publishing a node pool key's builds to the site tier as a new generation. */
#ifndef EXTC_TIER_PUBLISH_H_
#define EXTC_TIER_PUBLISH_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tier/tier_gen.h"
#include "warm/warm_opts.h"

struct extc_tier_publish_in {
	const char *key;		/* the pool key (extc_pool_key_name_ok) */
	const char *tag;		/* "<node>.<pid>" (extc_tier_gen_tag_ok) */
	unsigned keep;			/* good generations kept (0 is taken as 1) */
	uint64_t grace_ns;		/* longer than any reader's copy and any publish */
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC time to give up at; 0: none */
	const struct extc_warm_opts *o;	/* the subdirectories' shapes: inductor_subdir's locks/ */
};

struct extc_tier_publish_res {
	char gen[EXTC_TIER_GEN_NAME_MAX];	/* the generation made */
	uint64_t files, dirs, bytes;		/* what it holds */
	uint64_t skipped;	/* links, devices, FIFOs, sockets, other mounts, locks,
				   the plugin's own names and temporary names left out */
	unsigned removed;	/* older generations pruned */
	uint64_t ns;		/* how long it took */
};

enum extc_tier_publish_result {
	EXTC_TIER_PUBLISHED,
	EXTC_TIER_PUBLISH_FAILED,	/* 'why'; nothing of this publish is left */
};

/*
 * Names a build writes before renaming them into place, and never reads
 * again under them: Triton's and Inductor's "tmp..." files and directories
 * (tmp.pid_..., tmpXXXX from tempfile), editors' "~" and ".tmp" copies. A
 * name starting "tmp" or ".tmp", ending ".tmp" or "~", or holding ".tmp."
 * is temporary and never published.
 */
bool extc_tier_publish_is_temporary(const char *name);

/*
 * Copy the tree of 'srcfd' (the node pool's key directory: one
 * subdirectory per cache variable, as a step put them back) into a new
 * generation of in->key below 'tierfd'. Only directories and regular files
 * are copied: links, devices, FIFOs, sockets, other mounts, locks, the
 * plugin's own names (extc_shape_name_rule) and temporary names are left
 * out. Modes and nanosecond mtimes are kept (on the tier a directory is
 * always u+rwx and a file u+r, so that its owner can read and prune it;
 * the manifest has the real modes), each file digested from the read that
 * copies it. The copy goes to a stage; the manifest is written last and
 * fsynced with the stage, and one rename (never replacing) makes it a
 * generation. Then older generations are pruned (tier_prune.h). A stage of
 * a killed publisher is removed once older than in->grace_ns. On failure
 * the stage is removed and nothing of this publish is left; a full
 * filesystem and a quota are named as such.
 */
enum extc_tier_publish_result extc_tier_publish(int srcfd, int tierfd,
						const struct extc_tier_publish_in *in,
						struct extc_tier_publish_res *r, char *why,
						size_t whylen);

#endif /* EXTC_TIER_PUBLISH_H_ */
