/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: removing what killed publishers left in a publish directory. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "fs/fs_ident.h"
#include "fs/fs_remove.h"
#include "warm/manifest.h"
#include "base/text.h"
#include "warm/warm_names.h"
#include "warm/warm_ninja.h"
#include "warm/warm_sweep.h"

struct sweep {
	const struct extc_warm_opts *o;
	uint64_t removed;
};

static bool before(const struct timespec *t, const struct timespec *limit)
{
	return (t->tv_sec < limit->tv_sec ||
		(t->tv_sec == limit->tv_sec && t->tv_nsec < limit->tv_nsec));
}

/*
 * A publisher killed at its deadline leaves its stage (or its manifest
 * draft) where it was working. Only this user's, and only those unchanged
 * since long before any publisher could still be running, are removed:
 * ctime, because a stage keeps its source's mtime and nobody can set ctime.
 */
static void sweep_level(struct sweep *sw, int levelfd, bool drafts)
{
	struct extc_rm_report rm;
	struct dirent *de;
	DIR *d = extc_fdio_opendir(levelfd);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL && !extc_clock_past_deadline(sw->o->deadline_ns)) {
		struct stat sb;

		if (!extc_has_prefix(de->d_name, EXTC_WARM_STAGE_PREFIX) &&
		    !(drafts && extc_has_prefix(de->d_name, EXTC_MANIFEST_NAME ".")))
			continue;
		if (fstatat(levelfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    sb.st_uid != geteuid() || !before(&sb.st_ctim, &sw->o->stale_before))
			continue;
		if (extc_remove_tree_at(levelfd, de->d_name, NULL, &rm) == 0)
			sw->removed++;
	}
	closedir(d);
}

static void sweep_groups(struct sweep *sw, int torchfd)
{
	struct dirent *de;
	DIR *d = extc_fdio_opendir(torchfd);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL && !extc_clock_past_deadline(sw->o->deadline_ns)) {
		int groupfd;

		if (!extc_warm_ninja_is_pyver_group(de->d_name) ||
		    (groupfd = openat(torchfd, de->d_name, EXTC_DIR_OPEN_FLAGS)) < 0)
			continue;
		sweep_level(sw, groupfd, false);
		close(groupfd);
	}
	closedir(d);
}

static void sweep_all(struct sweep *sw, int dirfd)
{
	size_t i;

	if (sw->o->stale_before.tv_sec == 0 && sw->o->stale_before.tv_nsec == 0)
		return;
	sweep_level(sw, dirfd, true);
	for (i = 0; i < sw->o->nsubdirs; i++) {
		int fd = openat(dirfd, sw->o->subdirs[i], EXTC_DIR_OPEN_FLAGS);

		if (fd < 0)
			continue;
		sweep_level(sw, fd, false);
		if (sw->o->torch_subdir != NULL && strcmp(sw->o->subdirs[i], sw->o->torch_subdir) == 0)
			sweep_groups(sw, fd);
		close(fd);
	}
}

/*
 * Each publisher is killed at its publish_timeout; twice that, and at least
 * an hour, leaves room for nodes configured differently and for clock skew
 * to the file server that stamps the ctime.
 */
#define ABANDONED_MIN_AGE_S 3600

void extc_warm_sweep_stale_limit(uint32_t publish_timeout_s, const struct timespec *now,
				 struct timespec *limit)
{
	time_t age = 2 * (time_t)publish_timeout_s;

	if (age < ABANDONED_MIN_AGE_S)
		age = ABANDONED_MIN_AGE_S;
	*limit = *now;
	limit->tv_sec -= age;
}

/* Where stages are made: DIR, each variable's level, and torch's pyXY_cu groups. */
uint64_t extc_warm_sweep_abandoned(int dirfd, const struct extc_warm_opts *o)
{
	struct sweep sw = { o, 0 };

	sweep_all(&sw, dirfd);
	return (sw.removed);
}
