/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the walk over a leaf's completed builds, each handed to the caller to place. */
#ifndef EXTC_WARM_WALK_H_
#define EXTC_WARM_WALK_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "warm/manifest.h"
#include "warm/warm_copy.h"

/* What placing a leaf's builds somewhere did. */
struct extc_warm_walk_report {
	uint64_t published;	/* entries this process placed */
	uint64_t present;	/* entries already there (placed earlier) */
	uint64_t lost;		/* entries another process placed first */
	uint64_t failed;
	uint64_t incomplete;	/* torch builds skipped: no .so, or a lock; broken Triton kernels */
	uint64_t abandoned;	/* killed publishers' stages and drafts removed */
	uint64_t changed;	/* left where they are: changed after the placer's limit */
	uint64_t whole;		/* variables' directories placed whole, by one rename (w->whole) */
	uint64_t fresh;		/* of the entries placed one by one, those holding a file written
				   since the step took its builds (the node pool's put-back) */
	struct extc_copy_stats copy;
	char first_error[256];
};

/* One completed entry the walk chose, and where it goes. */
struct extc_warm_entry {
	int srcfd;		/* the leaf's directory it is in */
	const char *name;	/* its name there, and the name it takes where it goes */
	const struct stat *sb;
	int dstfd;		/* the directory it goes into (made by the walk when first needed) */
	const char *rel;	/* its path below the leaf, for messages */
	unsigned merge;		/* levels of a content-addressed directory that may merge into one */
	const char *triton_final; /* a Triton kernel's: the path its group files must name; else NULL */
};

struct extc_warm_walk;

/* Put one entry where it goes, reporting into w->rep. */
typedef void (*extc_warm_place_fn)(struct extc_warm_walk *w, const struct extc_warm_entry *e);

/*
 * Place the variable's directory 'sub' of the leaf 'leaffd' into 'dirfd'
 * whole, if the placer can tell that walking it would place all of it as
 * it is: true when it did (nothing of it is walked then).
 */
typedef bool (*extc_warm_whole_fn)(struct extc_warm_walk *w, int leaffd, const char *sub,
				   int dirfd);

/*
 * A walk: the rules of the cache's shape (warm_shape.h) choose the
 * entries, 'place' puts each where it goes (a publish copies, the node
 * pool renames), reporting into 'rep'.
 */
struct extc_warm_walk {
	const struct extc_warm_opts *o;
	const struct extc_manifest *mf;	/* the manifest the directory must have */
	extc_warm_place_fn place;
	void *ctx;			/* the placer's own */
	struct extc_warm_walk_report *rep;
	extc_warm_whole_fn whole;	/* NULL: every directory is walked */
};

/*
 * Place every completed entry of the leaf 'leaffd' into 'dirfd': a torch
 * extension directory <torch>/[<pyver_cu>/]<name>, each Triton kernel
 * whose group files parse, and every top-level child of the other
 * subdirectories but Inductor's locks/. The manifest w->mf is written
 * first if the directory has none, and refreshed after anything was
 * placed; a directory whose manifest is for another key or CPU is refused
 * whole. This user's stages and manifest drafts older than
 * o->stale_before are removed first. 0 when every entry is placed or
 * present, -1 otherwise ('why' and the report say what).
 */
int extc_warm_walk(struct extc_warm_walk *w, int leaffd, int dirfd, char *why, size_t whylen);

/* A placer's failure: counted, and the first one kept for the report. */
void extc_warm_walk_fail(struct extc_warm_walk *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Has the walk's deadline passed? */
bool extc_warm_walk_late(const struct extc_warm_walk *w);

#endif /* EXTC_WARM_WALK_H_ */
