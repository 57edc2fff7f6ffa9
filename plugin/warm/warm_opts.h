/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what every walk over a JIT cache tree is given, and what it counts. */
#ifndef EXTC_WARM_OPTS_H_
#define EXTC_WARM_OPTS_H_

#include <stddef.h>
#include <stdint.h>
#include <time.h>

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

/* What a walk over a cache tree needs to know: its shape, its bounds, where it goes. */
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
	 * publish: this user's stages and manifest drafts in DIR changed
	 * (ctime) before this CLOCK_REALTIME time were left by a publisher
	 * that was killed, and are removed; {0, 0}: none is removed.
	 */
	struct timespec stale_before;
};

#endif /* EXTC_WARM_OPTS_H_ */
