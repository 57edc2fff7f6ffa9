/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: seeding a fresh leaf from a prepared cache, all of it or nothing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/layout.h"
#include "container/container_envfile.h"
#include "fs/fs_ident.h"
#include "fs/fs_remove.h"
#include "base/text.h"
#include "warm/warm_copy.h"
#include "warm/warm_data.h"
#include "warm/warm_names.h"
#include "warm/warm_seed.h"

/* Whether the directory holds nothing, or nothing but a file called 'allowed' (may be NULL). */
static bool dir_holds_only(int parentfd, const char *name, const char *allowed)
{
	struct dirent *de;
	bool empty = true;
	DIR *d;
	int fd = openat(parentfd, name, EXTC_DIR_OPEN_FLAGS);

	if (fd < 0)
		return (false);
	d = extc_fdio_opendir(fd);
	close(fd);
	if (d == NULL)
		return (false);
	while (empty && (de = readdir(d)) != NULL)
		empty = extc_fdio_is_dot(de->d_name) ||
			(allowed != NULL && strcmp(de->d_name, allowed) == 0);
	closedir(d);
	return (empty);
}

/*
 * A leaf as slurmstepd makes it holds nothing but empty directories. An
 * earlier step of a job-mode leaf may have left the env file for container
 * runtimes (container_envfile.h), which is no build: that leaf is still
 * fresh. Builds made in a container, under container/, make it not fresh.
 */
int extc_warm_seed_leaf_is_fresh(int leaffd, bool *fresh, char *why, size_t whylen)
{
	struct dirent *de;
	DIR *d;

	*fresh = true;
	d = extc_fdio_opendir(leaffd);
	if (d == NULL) {
		extc_fmt(why, whylen, "cannot read the private directory: %s", strerror(errno));
		return (-1);
	}
	while (*fresh && (de = readdir(d)) != NULL) {
		if (!extc_fdio_is_dot(de->d_name) &&
		    !extc_has_prefix(de->d_name, EXTC_SEEDED_MARK_PREFIX))
			*fresh = dir_holds_only(leaffd, de->d_name,
						strcmp(de->d_name, EXTC_CONTAINER_SUBTREE) == 0 ?
						EXTC_CONTAINER_ENVFILE : NULL);
	}
	closedir(d);
	return (0);
}

/* Put the leaf back as it was before a failed seed: its variables' empty directories. */
static void leaf_reset(int leaffd, const struct extc_warm_opts *o)
{
	struct extc_rm_report rep;
	struct dirent *de;
	size_t i;
	DIR *d;

	d = extc_fdio_opendir(leaffd);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (!extc_fdio_is_dot(de->d_name))
			extc_remove_tree_at(leaffd, de->d_name, NULL, &rep);
	}
	closedir(d);
	for (i = 0; i < o->nsubdirs; i++)
		mkdirat(leaffd, o->subdirs[i], 0700);
}

static int move_into_leaf(int stagefd, int leaffd, char *why, size_t whylen)
{
	struct dirent *de;
	DIR *d;
	int rv = 0;

	d = extc_fdio_opendir(stagefd);
	if (d == NULL) {
		extc_fmt(why, whylen, "cannot read the seed's stage: %s", strerror(errno));
		return (-1);
	}
	while (rv == 0 && (de = readdir(d)) != NULL) {
		struct stat sb;

		if (extc_fdio_is_dot(de->d_name))
			continue;
		/* an empty directory of the leaf is replaced; anything else there is a conflict */
		if (fstatat(stagefd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(sb.st_mode))
			unlinkat(leaffd, de->d_name, AT_REMOVEDIR);
		if (renameat(stagefd, de->d_name, leaffd, de->d_name) < 0) {
			char shown[96];

			extc_escape(de->d_name, 60, shown, sizeof(shown));
			extc_fmt(why, whylen, "%s: cannot move into the private directory: %s", shown,
				 strerror(errno));
			rv = -1;
		}
	}
	closedir(d);
	return (rv);
}

enum extc_seed_result extc_warm_seed(int srcfd, int leaffd, const struct extc_warm_opts *o,
				    struct extc_copy_stats *st, char *why, size_t whylen)
{
	struct extc_rm_report rep;
	char stage[64], have[64], max[64];
	bool fresh;
	int stagefd = -1;
	enum extc_seed_result rv = EXTC_SEED_REFUSED;

	if (extc_warm_seed_leaf_is_fresh(leaffd, &fresh, why, whylen) < 0)
		return (EXTC_SEED_REFUSED);
	if (!fresh)
		return (EXTC_SEED_NOT_FRESH);
	/* measured first, so that a seed too large is refused before anything is copied */
	if (extc_warm_copy_measure(srcfd, o, st, why, whylen) < 0)
		return (EXTC_SEED_REFUSED);
	if (o->max_bytes != 0 && st->bytes > o->max_bytes) {
		extc_warm_data_size_text(st->bytes, have, sizeof(have));
		extc_warm_data_size_text(o->max_bytes, max, sizeof(max));
		extc_fmt(why, whylen, "it holds %s, more than the %s the admin allows (seed_max=); "
			 "nothing was copied", have, max);
		return (EXTC_SEED_REFUSED);
	}
	extc_fmt(stage, sizeof(stage), "%s%ld", EXTC_WARM_SEED_STAGE, (long)getpid());
	if (mkdirat(leaffd, stage, 0700) < 0 ||
	    (stagefd = openat(leaffd, stage, EXTC_DIR_OPEN_FLAGS)) < 0) {
		extc_fmt(why, whylen, "cannot make a stage in the private directory: %s",
			 strerror(errno));
		goto out;
	}
	if (extc_warm_copy_tree(srcfd, stagefd, o, st, why, whylen) < 0)
		goto out;
	if (move_into_leaf(stagefd, leaffd, why, whylen) < 0) {
		leaf_reset(leaffd, o);
		goto out;
	}
	rv = EXTC_SEED_DONE;
out:
	if (stagefd >= 0)
		close(stagefd);
	extc_remove_tree_at(leaffd, stage, NULL, &rep);
	return (rv);
}
