/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's verbs: take a key's builds into a step, put a step's builds back, by rename. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
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
#include "pool/pool_rename.h"
#include "warm/warm_triton.h"

/* The entries of a directory just taken, for the report (one readdir, nothing opened). */
static uint64_t count_entries(int parentfd, const char *name)
{
	struct dirent *de;
	uint64_t n = 0;
	int fd = openat(parentfd, name, EXTC_DIR_OPEN_FLAGS);
	DIR *d = fd >= 0 ? extc_fdio_opendir(fd) : NULL;

	if (fd >= 0)
		close(fd);
	while (d != NULL && (de = readdir(d)) != NULL)
		n += extc_shape_name_rule(de->d_name, false) == EXTC_NAME_COPY;
	if (d != NULL)
		closedir(d);
	return (n);
}

/* Every Triton kernel taken names the leaf; one that cannot is removed (it would only miss). */
static void name_the_leaf(int leaffd, const struct extc_warm_opts *o)
{
	struct extc_rm_report rep;
	struct dirent *de;
	char final[PATH_MAX], why[EXTC_WHY_MAX];
	int tfd = openat(leaffd, o->triton_subdir, EXTC_DIR_OPEN_FLAGS);
	DIR *d = tfd >= 0 ? extc_fdio_opendir(tfd) : NULL;

	while (d != NULL && (de = readdir(d)) != NULL) {
		int kfd;
		enum extc_triton_result r = EXTC_TRITON_BROKEN;

		if (extc_shape_name_rule(de->d_name, false) != EXTC_NAME_COPY)
			continue;
		kfd = openat(tfd, de->d_name, EXTC_DIR_OPEN_FLAGS);
		if (kfd < 0)
			continue;	/* a file of Triton's top level: nothing to name */
		if (extc_fmt(final, sizeof(final), "%s/%s/%s", o->dest, o->triton_subdir,
			     de->d_name) == 0)
			r = extc_triton_rewrite(kfd, final, why, sizeof(why));
		close(kfd);
		if (r == EXTC_TRITON_BROKEN || r == EXTC_TRITON_FAILED)
			extc_remove_tree_at(tfd, de->d_name, NULL, &rep);
	}
	if (d != NULL)
		closedir(d);
	if (tfd >= 0)
		close(tfd);
}

enum extc_seed_result extc_pool_rename_take(int keyfd, int leaffd, const struct extc_warm_opts *o,
					   struct extc_copy_stats *st, char *why, size_t whylen)
{
	bool fresh, took_triton = false;
	size_t i;

	memset(st, 0, sizeof(*st));
	if (extc_warm_seed_leaf_is_fresh(leaffd, &fresh, why, whylen) < 0)
		return (EXTC_SEED_REFUSED);
	if (!fresh)
		return (EXTC_SEED_NOT_FRESH);
	for (i = 0; i < o->nsubdirs; i++) {
		const char *sub = o->subdirs[i];
		struct stat sb;

		if (fstatat(keyfd, sub, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode))
			continue;	/* the key has none, or another step took it first */
		/* over the leaf's empty directory, or where the leaf has none */
		if (renameat(keyfd, sub, leaffd, sub) < 0) {
			if (errno == ENOENT)
				continue;	/* taken by another step meanwhile */
			extc_fmt(why, whylen, "%s: cannot take it from the node pool: %s", sub,
				 strerror(errno));
			return (EXTC_SEED_REFUSED);	/* what was taken goes back at the step's end */
		}
		st->files += count_entries(leaffd, sub);
		took_triton |= o->triton_subdir != NULL && strcmp(sub, o->triton_subdir) == 0;
	}
	if (took_triton && o->dest != NULL)
		name_the_leaf(leaffd, o);
	return (EXTC_SEED_DONE);
}

/*
 * The put-back's placer: rename one entry into the key, whole. An entry
 * already there stays (a concurrent step put it first); where both are
 * directories of a content-addressed cache ('merge' levels left), what is
 * not there yet goes in.
 */
static void move_entry(struct extc_warm_walk *w, int srcfd, const char *name, int dstfd,
		       const char *shown, unsigned merge)
{
	struct stat sb, there;
	struct dirent *de;
	int sfd, dfd;
	DIR *d;

	if (fstatat(srcfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	/*
	 * A torch build moves whole, but never with its lock: torch 2.14 keeps
	 * the file after every build. The step is over, nobody holds it.
	 */
	if (merge == 0 && S_ISDIR(sb.st_mode)) {
		sfd = openat(srcfd, name, EXTC_DIR_OPEN_FLAGS);
		if (sfd >= 0) {
			unlinkat(sfd, EXTC_WARM_LOCK_NAME, 0);
			close(sfd);
		}
	}
	if (extc_fdio_rename_noreplace(srcfd, name, dstfd, name, S_ISDIR(sb.st_mode)) == 0) {
		w->rep->published++;
		return;
	}
	if (errno != EEXIST && errno != ENOTEMPTY) {
		extc_warm_walk_fail(w, "%s: cannot move into the pool: %s", shown, strerror(errno));
		return;
	}
	if (merge == 0 || !S_ISDIR(sb.st_mode) || fstatat(dstfd, name, &there, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(there.st_mode)) {
		w->rep->present++;
		return;
	}
	sfd = openat(srcfd, name, EXTC_DIR_OPEN_FLAGS);
	dfd = openat(dstfd, name, EXTC_DIR_OPEN_FLAGS);
	d = sfd >= 0 && dfd >= 0 ? extc_fdio_opendir(sfd) : NULL;
	while (d != NULL && (de = readdir(d)) != NULL && !extc_warm_walk_late(w)) {
		if (extc_shape_name_rule(de->d_name, false) == EXTC_NAME_COPY)
			move_entry(w, sfd, de->d_name, dfd, shown, merge - 1);
	}
	if (d != NULL)
		closedir(d);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
}

/* Did the entry's inode change at or after 'limit' (a build made or touched since)? */
static bool changed_since(const struct stat *sb, const struct timespec *limit)
{
	return (sb->st_ctim.tv_sec > limit->tv_sec ||
		(sb->st_ctim.tv_sec == limit->tv_sec && sb->st_ctim.tv_nsec >= limit->tv_nsec));
}

/*
 * A Triton kernel names where it goes before it moves, in the leaf: the
 * key never holds one that misses. With a limit (w->ctx), an entry
 * changed since stays where it is.
 */
static void put_back_entry(struct extc_warm_walk *w, const struct extc_warm_entry *e)
{
	const struct timespec *changed_before = w->ctx;
	char why[EXTC_WHY_MAX], shown[160];
	enum extc_triton_result r = EXTC_TRITON_NO_GROUP;

	if (changed_before != NULL && changed_since(e->sb, changed_before)) {
		w->rep->changed++;
		return;
	}
	extc_escape(e->rel, 120, shown, sizeof(shown));
	if (e->triton_final != NULL) {
		int kfd = openat(e->srcfd, e->name, EXTC_DIR_OPEN_FLAGS);

		if (kfd < 0)
			return;
		r = extc_triton_rewrite(kfd, e->triton_final, why, sizeof(why));
		close(kfd);
	}
	if (r == EXTC_TRITON_BROKEN)
		w->rep->incomplete++;
	else if (r == EXTC_TRITON_FAILED)
		extc_warm_walk_fail(w, "%s: %s", shown, why);
	else
		move_entry(w, e->srcfd, e->name, e->dstfd, shown, e->merge);
}

int extc_pool_rename_put_back(int leaffd, int keyfd, const struct extc_warm_opts *o,
			      const struct extc_manifest *mf, const struct timespec *changed_before,
			      struct extc_warm_walk_report *rep, char *why, size_t whylen)
{
	struct extc_warm_walk w = { o, mf, put_back_entry, (void *)changed_before, rep };

	return (extc_warm_walk(&w, leaffd, keyfd, why, whylen));
}
