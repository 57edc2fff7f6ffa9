/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: torch extension completeness: did ninja finish a file, is a directory a finished build. */
#ifndef EXTC_WARM_NINJA_H_
#define EXTC_WARM_NINJA_H_

#include <stdbool.h>
#include <sys/stat.h>

/* ninja's build log, next to build.ninja in a torch extension directory. */
#define EXTC_NINJA_LOG ".ninja_log"

/* Beyond this a log is not read: an extension's log is a few lines. */
#define EXTC_NINJA_LOG_MAX (1024 * 1024)

enum extc_ninja_verdict {
	EXTC_NINJA_BUILT,	/* the log's last entry for it matches the file on disk */
	EXTC_NINJA_NOT_BUILT,	/* no entry, or the file changed after its command ended */
	EXTC_NINJA_NO_LOG,	/* no readable log (or one too large): the caller decides */
};

/*
 * Whether the last command ninja logged in .ninja_log below 'dirfd' for
 * 'output' finished and left the file 'sb' describes. ninja appends an
 * entry only when a command succeeds; its third field is the output's
 * mtime (log v5, ninja 1.11) or the command's start time (v6 and v7,
 * ninja 1.12 and 1.13), both in nanoseconds. A file whose mtime is outside
 * [that time, that time + the command's duration + 1 s] was rewritten by a
 * later command that did not finish: a build killed while linking.
 */
enum extc_ninja_verdict extc_ninja_built(int dirfd, const char *output, const struct stat *sb);

/* What a torch extension directory holds. */
enum extc_ext_state {
	EXTC_EXT_NONE,		/* no build.ninja, .so or lock: no extension directory at all */
	EXTC_EXT_COMPLETE,	/* a finished build: copied and published */
	EXTC_EXT_INCOMPLETE,	/* being built, or killed mid-build: left out */
};

/*
 * The state of the torch extension directory 'dirfd'. The one rule for
 * both seed and publish: a build is complete when every .so in it is one
 * that ninja's log says a finished command left (extc_ninja_built);
 * without a log, when no builder holds (or, killed, left) its lock.
 */
enum extc_ext_state extc_warm_ninja_ext_state(int dirfd);

/* torch's "py<major><minor>_<cu>" level name (added when TORCH_EXTENSIONS_DIR is unset)? */
bool extc_warm_ninja_is_pyver_group(const char *name);

#endif /* EXTC_WARM_NINJA_H_ */
