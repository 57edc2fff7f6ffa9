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

/* Is 't' at or after 'limit'? */
static bool at_or_after(const struct timespec *t, const struct timespec *limit)
{
	return (t->tv_sec > limit->tv_sec || (t->tv_sec == limit->tv_sec && t->tv_nsec >= limit->tv_nsec));
}

/* Did the entry's inode change at or after 'limit' (a build made or touched since)? */
static bool changed_since(const struct stat *sb, const struct timespec *limit)
{
	return (at_or_after(&sb->st_ctim, limit));
}

/* What the put-back's placers are given (extc_pool_rename_put_back's limits). */
struct put_back_ctx {
	const struct timespec *changed_before;
	const struct timespec *taken_after;
};

/*
 * Torch's level: a build the step made, rebuilt or locked added, removed
 * or renamed names in its directory, so that directory's mtime moved
 * (a rename of a directory keeps it); a pyXY_cu group is looked into once
 * ('depth' 2). Only directory entries are read: a few per extension.
 */
/*
 * A directory whose names changed since 'taken_after' holds the same as
 * before if nothing in it now changed since and it holds no lock: torch
 * makes and removes its lock in a build's directory at every load, which
 * is all a step that only loaded its extensions changed. A rebuild makes
 * or rewrites files there (their change time is new); a build under way
 * holds the lock.
 */
static bool names_unchanged(int parentfd, const char *name, const struct timespec *taken_after)
{
	struct dirent *de;
	bool same = true;
	int fd = openat(parentfd, name, EXTC_DIR_OPEN_FLAGS);
	DIR *d = fd >= 0 ? extc_fdio_opendir(fd) : NULL;

	while (d != NULL && same && (de = readdir(d)) != NULL) {
		struct stat sb;

		if (extc_fdio_is_dot(de->d_name))
			continue;
		same = strcmp(de->d_name, EXTC_WARM_LOCK_NAME) != 0 &&
		       fstatat(fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		       !changed_since(&sb, taken_after);
	}
	if (d != NULL)
		closedir(d);
	if (fd >= 0)
		close(fd);
	return (d != NULL && same);
}

static bool dirs_unchanged(int fd, const struct timespec *taken_after, unsigned depth)
{
	struct dirent *de;
	bool same = true;
	DIR *d = extc_fdio_opendir(fd);

	while (d != NULL && same && (de = readdir(d)) != NULL) {
		struct stat sb;
		int cfd;

		if (extc_fdio_is_dot(de->d_name) ||
		    fstatat(fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		same = !at_or_after(&sb.st_mtim, taken_after) ||
		       names_unchanged(fd, de->d_name, taken_after);
		if (!same || depth <= 1)
			continue;
		cfd = openat(fd, de->d_name, EXTC_DIR_OPEN_FLAGS);
		same = cfd >= 0 && dirs_unchanged(cfd, taken_after, depth - 1);
		if (cfd >= 0)
			close(cfd);
	}
	if (d != NULL)
		closedir(d);
	return (d != NULL && same);
}

/* Did the step take 'sub' (it moved since the hold) and leave its top level and builds alone? */
static bool taken_unchanged(int leaffd, const char *sub, enum extc_shape shape,
			    const struct timespec *taken_after)
{
	struct stat sb;
	bool same = fstatat(leaffd, sub, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode) &&
		    changed_since(&sb, taken_after) && !at_or_after(&sb.st_mtim, taken_after);
	int fd;

	if (!same || shape != EXTC_SHAPE_TORCH)
		return (same);
	fd = openat(leaffd, sub, EXTC_DIR_OPEN_FLAGS);
	same = fd >= 0 && dirs_unchanged(fd, taken_after, 2);
	if (fd >= 0)
		close(fd);
	return (same);
}

/*
 * The put-back's fast way: a variable's directory the step took (it moved
 * after 'taken_after', the time its step held the key, before any take)
 * and whose top level nobody changed since (its mtime is older: no name
 * added, removed or renamed in it) goes back whole, by one rename, if the
 * key has none of its own meanwhile. What the walk would have chosen is
 * all of it then: the take moved only completed builds in, and the rules
 * apply to the names of the top level (a torch build that is rebuilt or
 * locked changes its own directory's names, so torch's builds are looked
 * at too). Triton's kernels go back whole as well, their group files
 * still naming the leaf: nothing reads a key's kernels but a take, and
 * every take names its own leaf in them again (name_the_leaf), so naming
 * the key here would be a rewrite of every kernel that no reader needs.
 * A key that got a directory of the name meanwhile is merged into entry
 * by entry, as without a limit.
 */
static bool put_back_whole(struct extc_warm_walk *w, int leaffd, const char *sub, int keyfd)
{
	const struct put_back_ctx *c = w->ctx;
	enum extc_shape shape = extc_shape_of_subdir(w->o, sub);
	struct stat there;
	/* one put back meanwhile makes the rename fail: then it is merged into entry by entry */
	bool whole = c->taken_after != NULL && c->changed_before == NULL &&
		     fstatat(keyfd, sub, &there, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
		     taken_unchanged(leaffd, sub, shape, c->taken_after) &&
		     extc_fdio_rename_noreplace(leaffd, sub, keyfd, sub, true) == 0;

	w->rep->whole += whole;
	return (whole);
}

/* How far a put-back looks into one entry for a file the step wrote. */
#define FRESH_DEPTH 8
#define FRESH_NAMES_MAX 4096

/*
 * Does the entry hold a file written at or after 'since' (a build the
 * step made or remade, not one it took)? torch rewrites build.ninja at
 * every load, with the same text when nothing is rebuilt (a rebuild writes
 * its objects too), and makes and removes its lock: neither is looked at.
 * Deeper than FRESH_DEPTH, or past 'budget' names, it counts as written.
 */
static bool holds_fresh(int parentfd, const char *name, const struct stat *sb,
			const struct timespec *since, unsigned depth, unsigned *budget)
{
	struct dirent *de;
	bool fresh = false;
	DIR *d;
	int fd;

	if (S_ISREG(sb->st_mode))
		return (at_or_after(&sb->st_mtim, since));
	if (!S_ISDIR(sb->st_mode))
		return (false);
	if (depth == 0 || *budget == 0)
		return (true);
	fd = openat(parentfd, name, EXTC_DIR_OPEN_FLAGS);
	d = fd >= 0 ? extc_fdio_opendir(fd) : NULL;
	while (d != NULL && !fresh && (de = readdir(d)) != NULL) {
		struct stat csb;

		if (extc_fdio_is_dot(de->d_name) || strcmp(de->d_name, EXTC_WARM_LOCK_NAME) == 0 ||
		    strcmp(de->d_name, "build.ninja") == 0)
			continue;
		if (--*budget == 0)
			fresh = true;
		else if (fstatat(fd, de->d_name, &csb, AT_SYMLINK_NOFOLLOW) == 0)
			fresh = holds_fresh(fd, de->d_name, &csb, since, depth - 1, budget);
	}
	if (d != NULL)
		closedir(d);
	if (fd >= 0)
		close(fd);
	return (fresh || d == NULL);
}

/*
 * A Triton kernel moved entry by entry names where it goes before it
 * moves, in the leaf, and one whose group file is broken stays out. With a
 * limit (w->ctx), an entry changed since stays where it is.
 */
static void put_back_entry(struct extc_warm_walk *w, const struct extc_warm_entry *e)
{
	const struct put_back_ctx *c = w->ctx;
	char why[EXTC_WHY_MAX], shown[160];
	enum extc_triton_result r = EXTC_TRITON_NO_GROUP;
	unsigned budget = FRESH_NAMES_MAX;

	if (c->changed_before != NULL && changed_since(e->sb, c->changed_before)) {
		w->rep->changed++;
		return;
	}
	/* what the key did not have as the step took it: the site tier publishes only then */
	if (c->taken_after != NULL &&
	    holds_fresh(e->srcfd, e->name, e->sb, c->taken_after, FRESH_DEPTH, &budget))
		w->rep->fresh++;
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
			      const struct extc_manifest *mf, const struct extc_pool_put_back_limits *lim,
			      struct extc_warm_walk_report *rep, char *why, size_t whylen)
{
	struct put_back_ctx c = { lim->changed_before, lim->taken_after };
	struct extc_warm_walk w = { o, mf, put_back_entry, &c, rep, put_back_whole };

	return (extc_warm_walk(&w, leaffd, keyfd, why, whylen));
}
