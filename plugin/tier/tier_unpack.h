/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: copying a generation out of the tier as its manifest lists it, each file checked. */
#ifndef EXTC_TIER_UNPACK_H_
#define EXTC_TIER_UNPACK_H_

#include <stddef.h>
#include <stdint.h>

enum extc_tier_unpack_result {
	EXTC_TIER_UNPACK_DONE,
	EXTC_TIER_UNPACK_MISMATCH,	/* the generation is not what its manifest says: mark it bad */
	EXTC_TIER_UNPACK_UNREADABLE,	/* a read failed (EIO, ESTALE, EACCES ...): maybe for a moment */
	EXTC_TIER_UNPACK_LOCAL_FAILED,	/* the copy could not be written (the node's side) */
	EXTC_TIER_UNPACK_TIMEOUT,
};

/* Called after each file copied (tests hold a reader inside its copy with it). */
typedef void (*extc_tier_unpack_after_fn)(void *ctx);

struct extc_tier_unpack_req {
	int genfd;			/* the generation */
	int dstfd;			/* the empty directory its copy goes to */
	const char *text;		/* its manifest, read and checked (tier_entries.h) */
	size_t len;
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC; 0: none */
	extc_tier_unpack_after_fn after_file;	/* may be NULL */
	void *ctx;
};

struct extc_tier_unpack_count {
	uint64_t files, dirs, bytes;
};

/*
 * Copy every entry the manifest lists, and only those, from the generation
 * into 'dstfd': a directory must be one (on the generation's filesystem),
 * a file a regular file of the listed size whose bytes have the listed
 * digest, taken from the read that copies them. Each gets the manifest's
 * mode and mtime (a directory's after its contents). No link is followed.
 * What is copied stays in 'dstfd' whatever the result: the caller removes it.
 */
enum extc_tier_unpack_result extc_tier_unpack(const struct extc_tier_unpack_req *req,
					      struct extc_tier_unpack_count *c, char *why,
					      size_t whylen);

#endif /* EXTC_TIER_UNPACK_H_ */
