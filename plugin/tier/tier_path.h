/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: opening the site tier's directory, a user's own on a shared filesystem. */
#ifndef EXTC_TIER_PATH_H_
#define EXTC_TIER_PATH_H_

#include <stddef.h>
#include <sys/types.h>

enum extc_tier_path_result {
	EXTC_TIER_PATH_OK,		/* '*fd' is the tier's directory */
	EXTC_TIER_PATH_MISSING,		/* no such path */
	EXTC_TIER_PATH_SYMLINK,		/* the last component is a symlink: never followed */
	EXTC_TIER_PATH_NOT_DIR,		/* something else than a directory */
	EXTC_TIER_PATH_NOT_OWNED,	/* not the user's */
	EXTC_TIER_PATH_OPEN_TO_OTHERS,	/* group- or world-writable */
	EXTC_TIER_PATH_FAILED,		/* not absolute, or a call failed: 'why' */
};

/*
 * Open the tier's directory 'path' (absolute) for a process of user 'uid'.
 * The components before the last are the site's (/shared/%U) and are
 * followed as any path is; the last is the user's and is opened with
 * O_NOFOLLOW. It must belong to 'uid' and be writable by its owner only:
 * whoever else could write it could put builds in the user's jobs. On
 * anything but _OK nothing is left open and 'why' names the path, what it
 * is and what is allowed.
 */
enum extc_tier_path_result extc_tier_path_open(const char *path, uid_t uid, int *fd, char *why,
					       size_t whylen);

#endif /* EXTC_TIER_PATH_H_ */
