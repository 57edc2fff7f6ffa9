/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: publishing a leaf's completed builds into a shared directory, by copy, atomically. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs_ident.h"
#include "fs/fs_remove.h"
#include "base/fdio.h"
#include "base/text.h"
#include "warm/warm_names.h"
#include "warm/warm_shape.h"
#include "warm/warm_publish.h"
#include "warm/warm_triton.h"

/* The copying placer's own: stage names are <prefix><tag>.<seq>. */
struct pub {
	unsigned seq;
};

static void copy_entry(struct extc_warm_walk *w, const struct extc_warm_entry *e);

/* A Triton kernel's staged copy names its files where it goes ('final'); 0, or -1 said. */
static int rewrite_stage(struct extc_warm_walk *w, int dstfd, const char *stage,
			 const char *final, const char *shown)
{
	char why[EXTC_WHY_MAX];
	int fd = openat(dstfd, stage, EXTC_DIR_OPEN_FLAGS);
	enum extc_triton_result r = fd >= 0 ? extc_triton_rewrite(fd, final, why, sizeof(why)) :
					      EXTC_TRITON_FAILED;

	if (fd < 0)
		extc_fmt(why, sizeof(why), "cannot open its stage: %s", strerror(errno));
	else
		close(fd);
	if (r == EXTC_TRITON_OK || r == EXTC_TRITON_NO_GROUP)
		return (0);
	extc_warm_walk_fail(w, "%s: %s", shown, why);
	return (-1);
}

/* A directory DIR has already: each entry it lacks goes in, staged (copy_entry). */
static void merge_copy(struct extc_warm_walk *w, const struct extc_warm_entry *e)
{
	struct dirent *de;
	int sfd = openat(e->srcfd, e->name, EXTC_DIR_OPEN_FLAGS);
	int dfd = openat(e->dstfd, e->name, EXTC_DIR_OPEN_FLAGS);
	DIR *d = sfd >= 0 && dfd >= 0 ? extc_fdio_opendir(sfd) : NULL;

	if (dfd < 0) {
		char shown[160];

		extc_escape(e->rel, 120, shown, sizeof(shown));
		extc_warm_walk_fail(w, "%s: cannot make its directory: %s", shown, strerror(errno));
	}
	while (d != NULL && (de = readdir(d)) != NULL && !extc_warm_walk_late(w)) {
		struct extc_warm_entry sub = { sfd, de->d_name, NULL, dfd, NULL, e->merge - 1, NULL };
		char subrel[PATH_MAX];
		struct stat sb;

		if (extc_shape_name_rule(de->d_name, false) != EXTC_NAME_COPY ||
		    fstatat(sfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)) ||
		    extc_fmt(subrel, sizeof(subrel), "%s/%s", e->rel, de->d_name) < 0)
			continue;
		sub.sb = &sb;
		sub.rel = subrel;
		copy_entry(w, &sub);
	}
	if (d != NULL)
		closedir(d);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
}

/*
 * The publish's placer: stage one entry next to where it goes, then rename
 * it in, so that readers never see half of it. A directory of a content-
 * addressed cache that DIR has already ('merge' levels left) gets what it
 * lacks, entry by entry. A Triton kernel's copy gets group files that name
 * where it goes.
 */
static void copy_entry(struct extc_warm_walk *w, const struct extc_warm_entry *e)
{
	struct pub *p = w->ctx;
	struct extc_rm_report rm;
	struct stat there;
	char stage[160], why[EXTC_WHY_MAX], shown[160];

	extc_escape(e->rel, 120, shown, sizeof(shown));
	if (fstatat(e->dstfd, e->name, &there, AT_SYMLINK_NOFOLLOW) == 0) {
		if (e->merge > 0 && S_ISDIR(e->sb->st_mode) && S_ISDIR(there.st_mode))
			merge_copy(w, e);
		else
			w->rep->present++;
		return;
	}
	if (extc_fmt(stage, sizeof(stage), "%s%s.%u", EXTC_WARM_STAGE_PREFIX, w->o->tag,
		     p->seq++) < 0) {
		extc_warm_walk_fail(w, "%s: the stage name is too long", shown);
		return;
	}
	if (extc_warm_copy_entry(e->srcfd, e->name, e->dstfd, stage, w->o, &w->rep->copy, why,
				 sizeof(why)) < 0) {
		extc_warm_walk_fail(w, "%s: %s", shown, why);
	} else if (e->triton_final != NULL &&
		   rewrite_stage(w, e->dstfd, stage, e->triton_final, shown) < 0) {
		;	/* said; the stage goes below */
	} else if (extc_fdio_rename_noreplace(e->dstfd, stage, e->dstfd, e->name,
					      S_ISDIR(e->sb->st_mode)) == 0) {
		w->rep->published++;
		return;
	} else if (errno == EEXIST || errno == ENOTEMPTY) {
		w->rep->lost++;	/* another node published it first: theirs is as good */
	} else {
		extc_warm_walk_fail(w, "%s: cannot rename into place: %s", shown, strerror(errno));
	}
	extc_remove_tree_at(e->dstfd, stage, NULL, &rm);
}

int extc_warm_publish(int leaffd, int dirfd, const struct extc_warm_opts *o,
		      const struct extc_manifest *mf, struct extc_warm_walk_report *rep,
		      char *why, size_t whylen)
{
	struct pub p = { 0 };
	struct extc_warm_walk w = { o, mf, copy_entry, &p, rep, NULL };

	return (extc_warm_walk(&w, leaffd, dirfd, why, whylen));
}
