/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: walking a JIT cache tree as the job's user: what a seed or a publish copies. */
#ifndef EXTC_WARM_COPY_H_
#define EXTC_WARM_COPY_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define EXTC_WARM_MAX_DEPTH 64		/* deeper trees are refused, not cut */

/* What a walk met. Only regular files count towards 'bytes'. */
struct extc_copy_stats {
	uint64_t bytes;
	uint64_t files, dirs, links;
	uint64_t skipped_locks;		/* entries named "lock", Inductor's locks/ directory */
	uint64_t skipped_incomplete;	/* torch extension directories without a .so, or locked; Triton
					   entries whose group file does not parse or misses a file */
	uint64_t skipped_special;	/* devices, FIFOs, sockets */
	uint64_t skipped_mounts;	/* directories on another mount than the source */
};

/* What the copy needs to know about the cache's shape. */
struct extc_warm_opts {
	const char *torch_subdir;	/* TORCH_EXTENSIONS_DIR's subdirectory, or NULL */
	const char *inductor_subdir;	/* TORCHINDUCTOR_CACHE_DIR's subdirectory, or NULL */
	const char *triton_subdir;	/* TRITON_CACHE_DIR's subdirectory, or NULL */
	/*
	 * The absolute path the copy's (or publish's) root has for those who
	 * read it afterwards: Triton's group files are rewritten to name their
	 * files below it (warm_triton.h). NULL: none is rewritten.
	 */
	const char *dest;
	const char *const *subdirs;	/* the variables' subdirectories (publish walks these) */
	size_t nsubdirs;
	uint64_t max_bytes;		/* seed: the admin's seed_max (0: no limit) */
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC time to give up at; 0: none */
	const char *tag;		/* unique to this node and process: "<node>.<pid>" */
	/*
	 * publish into the node pool: each completed entry is renamed from the
	 * leaf (same filesystem, no copy) instead of copied; directories other
	 * than torch builds merge into ones already there.
	 */
	bool move;
	/* seed from the node pool's key by rename (warm_take.h), not by copy */
	bool take;
	/*
	 * publish: this user's stages and manifest drafts in DIR changed
	 * (ctime) before this CLOCK_REALTIME time were left by a publisher
	 * that was killed, and are removed; {0, 0}: none is removed.
	 */
	struct timespec stale_before;
};

/*
 * Copy the contents of directory 'srcfd' into the empty directory 'dstfd'
 * with every rule of the seed (no measuring, no staging); for benchmarks
 * and tests.
 */
int extc_warm_copy_tree(int srcfd, int dstfd, const struct extc_warm_opts *o,
			struct extc_copy_stats *st, char *why, size_t whylen);

/*
 * Copy one entry 'name' of 'srcfd' (file, symlink or directory tree) to
 * 'dname' in 'dstfd', with the same rules; counts add up in 'st'.
 */
int extc_warm_copy_entry(int srcfd, const char *name, int dstfd, const char *dname,
			 const struct extc_warm_opts *o, struct extc_copy_stats *st,
			 char *why, size_t whylen);

/* Walk 'srcfd' as a seed copy would, counting only. */
int extc_warm_measure(int srcfd, const struct extc_warm_opts *o, struct extc_copy_stats *st,
		      char *why, size_t whylen);

#endif /* EXTC_WARM_COPY_H_ */
