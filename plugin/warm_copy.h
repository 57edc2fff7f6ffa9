/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: copying a JIT cache tree as the job's user (seed in, publish out). */
#ifndef EXTC_WARM_COPY_H_
#define EXTC_WARM_COPY_H_

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "manifest.h"

#define EXTC_WARM_MAX_DEPTH 64		/* deeper trees are refused, not cut */
#define EXTC_WARM_STAGE_PREFIX ".ext-cache-stage."
#define EXTC_WARM_SEED_STAGE ".ext-cache-seed."
#define EXTC_WARM_LOCK_NAME "lock"	/* torch's FileBaton, and the name many caches use */
/* TorchInductor's lock files, <TORCHINDUCTOR_CACHE_DIR>/locks/<key>.lock (torch/_inductor/codecache.py, get_lock_dir) */
#define EXTC_WARM_INDUCTOR_LOCKS "locks"

/* What a walk met. Only regular files count towards 'bytes'. */
struct extc_copy_stats {
	uint64_t bytes;
	uint64_t files, dirs, links;
	uint64_t skipped_locks;		/* entries named "lock", Inductor's locks/ directory */
	uint64_t skipped_incomplete;	/* torch extension directories without a .so, or locked */
	uint64_t skipped_special;	/* devices, FIFOs, sockets */
	uint64_t skipped_mounts;	/* directories on another mount than the source */
};

/* What the copy needs to know about the cache's shape. */
struct extc_warm_opts {
	const char *torch_subdir;	/* TORCH_EXTENSIONS_DIR's subdirectory, or NULL */
	const char *inductor_subdir;	/* TORCHINDUCTOR_CACHE_DIR's subdirectory, or NULL */
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

/*
 * Seed: copy the tree of a seed directory 'srcfd' into a freshly made leaf
 * 'leaffd', keeping modification times to the nanosecond, skipping locks
 * (Inductor's locks/ directory included),
 * incomplete torch builds, the manifest and publishers' stages, special
 * files and other mounts; symlinks are copied as symlinks, never followed.
 * The size is measured first: more than max_bytes refuses the seed with
 * both sizes in 'why' and copies nothing. The copy goes to a hidden stage
 * in the leaf and is moved into place at the end; on any failure (the tree
 * growing past max_bytes during the copy included) everything copied is
 * removed. Returns 0 when seeded, 1 when the leaf already held files (an
 * earlier step of a job-mode job: nothing done), -1 on failure.
 */
int extc_warm_seed(int srcfd, int leaffd, const struct extc_warm_opts *o,
		   struct extc_copy_stats *st, char *why, size_t whylen);

struct extc_publish_report {
	uint64_t published;	/* entries this process renamed into place */
	uint64_t present;	/* entries already there (published earlier) */
	uint64_t lost;		/* entries another publisher renamed in first */
	uint64_t failed;
	uint64_t incomplete;	/* torch builds skipped: no .so, or a lock */
	uint64_t abandoned;	/* killed publishers' stages and drafts removed */
	struct extc_copy_stats copy;
	char first_error[256];
};

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
		      const struct extc_manifest *mf, struct extc_publish_report *rep,
		      char *why, size_t whylen);

/*
 * The stale_before for a publish at 'now' (CLOCK_REALTIME) under the
 * admin's publish_timeout: older than any running publisher's stage can be.
 */
void extc_warm_stale_limit(uint32_t publish_timeout_s, const struct timespec *now,
			   struct timespec *limit);

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

/* torch's "py<major><minor>_<cu>" level name? */
bool extc_warm_is_pyver_group(const char *name);

/* What a torch extension directory holds: EXTC_EXT_NONE, _COMPLETE or _INCOMPLETE. */
#define EXTC_EXT_NONE 0
#define EXTC_EXT_COMPLETE 1
#define EXTC_EXT_INCOMPLETE 2
int extc_warm_ext_state(int dirfd);

/* Walk 'srcfd' as a seed copy would, counting only. */
int extc_warm_measure(int srcfd, const struct extc_warm_opts *o, struct extc_copy_stats *st,
		      char *why, size_t whylen);

/* A stream over directory 'dirfd' from its first entry ('dirfd' stays open and usable). */
DIR *extc_warm_opendir(int dirfd);

/* "1.5 GiB (1610612736 bytes)" style size for messages. */
void extc_warm_size_text(uint64_t bytes, char *buf, size_t len);

#endif /* EXTC_WARM_COPY_H_ */
