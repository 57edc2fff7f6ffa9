/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: opening the site tier's directory, a user's own on a shared filesystem. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/text.h"
#include "tier/tier_path.h"

/* What the lstat or the open found in the place of a directory. */
static enum extc_tier_path_result not_a_directory(int err, mode_t mode, const char *shown,
						  char *why, size_t whylen)
{
	if (err == ENOENT) {
		extc_fmt(why, whylen, "%s does not exist", shown);
		return (EXTC_TIER_PATH_MISSING);
	}
	if (err == ELOOP || (err == 0 && S_ISLNK(mode))) {
		extc_fmt(why, whylen, "%s is a symbolic link: the tier must be a directory itself, "
			 "never a link to one", shown);
		return (EXTC_TIER_PATH_SYMLINK);
	}
	if (err == ENOTDIR || err == 0) {
		extc_fmt(why, whylen, "%s is not a directory", shown);
		return (EXTC_TIER_PATH_NOT_DIR);
	}
	extc_fmt(why, whylen, "%s: cannot open: %s", shown, strerror(err));
	return (EXTC_TIER_PATH_FAILED);
}

enum extc_tier_path_result extc_tier_path_open(const char *path, uid_t uid, int *fd, char *why,
					       size_t whylen)
{
	enum extc_tier_path_result rv = EXTC_TIER_PATH_FAILED;
	char shown[200];
	struct stat sb;
	int dfd = -1;

	*fd = -1;
	extc_escape(path, 160, shown, sizeof(shown));
	if (path[0] != '/') {
		extc_fmt(why, whylen, "%s is not an absolute path", shown);
		return (EXTC_TIER_PATH_FAILED);
	}
	/* the lstat tells a symlink from a file; the open below is what is trusted */
	if (lstat(path, &sb) < 0)
		return (not_a_directory(errno, 0, shown, why, whylen));
	if (!S_ISDIR(sb.st_mode))
		return (not_a_directory(0, sb.st_mode, shown, why, whylen));
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (dfd < 0)
		return (not_a_directory(errno, 0, shown, why, whylen));
	if (fstat(dfd, &sb) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", shown, strerror(errno));
		goto out;
	}
	if (sb.st_uid != uid) {
		extc_fmt(why, whylen, "%s belongs to uid %lu: the tier must belong to the job's "
			 "user (uid %lu)", shown, (unsigned long)sb.st_uid, (unsigned long)uid);
		rv = EXTC_TIER_PATH_NOT_OWNED;
		goto out;
	}
	if ((sb.st_mode & 022) != 0) {
		extc_fmt(why, whylen, "%s is group- or world-writable (mode %04o): the tier must be "
			 "writable by its owner only", shown, (unsigned)(sb.st_mode & 07777));
		rv = EXTC_TIER_PATH_OPEN_TO_OTHERS;
		goto out;
	}
	*fd = dfd;
	dfd = -1;
	rv = EXTC_TIER_PATH_OK;
out:
	if (dfd >= 0)
		close(dfd);
	return (rv);
}
