/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the walk over a leaf's completed builds, each handed to the caller to place. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "warm/warm_names.h"
#include "warm/warm_shape.h"
#include "warm/warm_sweep.h"
#include "warm/warm_triton.h"
#include "warm/warm_walk.h"

#define PLACED_DIR_MODE 0755	/* levels made where entries go; its top's mode decides who reaches them */
/* Inductor's and Triton's trees are a few levels of hash-named directories */
#define MERGE_DEPTH 6

/* A level of the tree entries go into, made only once something is placed in it. */
struct level {
	struct level *parent;	/* NULL: the level is the top itself, 'fd' given */
	const char *name;
	int fd;
};

void extc_warm_walk_fail(struct extc_warm_walk *w, const char *fmt, ...)
{
	va_list ap;

	w->rep->failed++;
	if (w->rep->first_error[0] != '\0')
		return;
	va_start(ap, fmt);
	extc_vfmt(w->rep->first_error, sizeof(w->rep->first_error), fmt, ap);
	va_end(ap);
}

bool extc_warm_walk_late(const struct extc_warm_walk *w)
{
	return (extc_clock_past_deadline(w->o->deadline_ns));
}

static int level_fd(struct level *l)
{
	int parentfd;

	if (l->fd >= 0 || l->parent == NULL)
		return (l->fd);
	parentfd = level_fd(l->parent);
	if (parentfd < 0)
		return (-1);
	if (mkdirat(parentfd, l->name, PLACED_DIR_MODE) < 0 && errno != EEXIST)
		return (-1);
	l->fd = openat(parentfd, l->name, EXTC_DIR_OPEN_FLAGS);
	return (l->fd);
}

static void level_close(struct level *l)
{
	if (l->parent != NULL && l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

/* Hand one entry to the placer, the level it goes into made first. */
static void place(struct extc_warm_walk *w, struct extc_warm_entry *e, struct level *dst)
{
	e->dstfd = level_fd(dst);
	if (e->dstfd < 0) {
		char shown[160];

		extc_escape(e->rel, 120, shown, sizeof(shown));
		extc_warm_walk_fail(w, "%s: cannot make its directory: %s", shown, strerror(errno));
		return;
	}
	w->place(w, e);
}

/*
 * Whether 'name' of the leaf's level is an entry to place: the name rule
 * every seed and publish applies (warm_names.h), then the kinds of file a
 * level holds (torch's: directories only).
 */
static bool placeable(struct extc_warm_walk *w, int srcfd, const char *name,
		      enum extc_shape shape, struct stat *sb)
{
	switch (extc_shape_name_rule(name, shape == EXTC_SHAPE_INDUCTOR)) {
	case EXTC_NAME_LOCK:
		w->rep->copy.skipped_locks++;
		return (false);
	case EXTC_NAME_SKIP:
		return (false);
	case EXTC_NAME_COPY:
		break;
	}
	if (fstatat(srcfd, name, sb, AT_SYMLINK_NOFOLLOW) < 0)
		return (false);
	if (shape == EXTC_SHAPE_TORCH || shape == EXTC_SHAPE_TORCH_GROUP)
		return (S_ISDIR(sb->st_mode));
	return (S_ISDIR(sb->st_mode) || S_ISREG(sb->st_mode) || S_ISLNK(sb->st_mode));
}

static void walk_level(struct extc_warm_walk *w, int srcfd, struct level *dst, const char *rel,
		       enum extc_shape shape);

/*
 * A directory of torch's or Triton's level, by its shape: a complete
 * extension directory, whole; a pyXY_cu group, looked into once; a
 * Triton kernel, whole, with the path its group files must name.
 */
static void walk_dir_entry(struct extc_warm_walk *w, struct extc_warm_entry *e,
			   struct level *dst, enum extc_shape shape)
{
	struct level sub = { dst, e->name, -1 };
	char final[PATH_MAX];
	int cfd = openat(e->srcfd, e->name, EXTC_DIR_OPEN_FLAGS);

	if (cfd < 0)
		return;
	e->merge = 0;	/* one build or kernel: whole or not at all */
	switch (extc_shape_of_child(w->o, shape, cfd, e->name)) {
	case EXTC_SHAPE_TORCH_BUILD:
		place(w, e, dst);
		break;
	case EXTC_SHAPE_TORCH_GROUP:
		walk_level(w, cfd, &sub, e->rel, EXTC_SHAPE_TORCH_GROUP);
		level_close(&sub);
		break;
	case EXTC_SHAPE_TRITON_KERNEL:
		if (w->o->dest == NULL ||
		    extc_fmt(final, sizeof(final), "%s/%s", w->o->dest, e->rel) < 0) {
			w->rep->incomplete++;	/* its group files could not name it */
		} else {
			e->triton_final = final;
			place(w, e, dst);
		}
		break;
	default:
		w->rep->incomplete++;
		break;
	}
	close(cfd);
}

static void walk_level(struct extc_warm_walk *w, int srcfd, struct level *dst, const char *rel,
		       enum extc_shape shape)
{
	bool by_shape = shape == EXTC_SHAPE_TORCH || shape == EXTC_SHAPE_TORCH_GROUP ||
			shape == EXTC_SHAPE_TRITON;
	struct dirent *de;
	DIR *d;

	d = extc_fdio_opendir(srcfd);
	if (d == NULL) {
		extc_warm_walk_fail(w, "%s: cannot read: %s", rel, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL && !extc_warm_walk_late(w)) {
		char subrel[PATH_MAX];
		struct stat sb;
		struct extc_warm_entry e = { srcfd, de->d_name, &sb, -1, subrel, MERGE_DEPTH, NULL };

		if (!placeable(w, srcfd, de->d_name, shape, &sb) ||
		    extc_fmt(subrel, sizeof(subrel), "%s/%s", rel, de->d_name) < 0)
			continue;
		if (by_shape && S_ISDIR(sb.st_mode))
			walk_dir_entry(w, &e, dst, shape);
		else
			place(w, &e, dst);
	}
	closedir(d);
}

/*
 * The manifest goes in before any entry, so that no reader ever sees
 * builds without it; a directory of another key or CPU is not mixed.
 */
static int own_manifest(struct extc_warm_walk *w, int dirfd, char *why, size_t whylen)
{
	struct extc_manifest there;
	enum extc_manifest_result ret = extc_manifest_read(dirfd, &there, why, whylen);

	if (ret == EXTC_MANIFEST_ABSENT) {
		ret = extc_manifest_write(dirfd, w->mf, true, w->o->tag, why, whylen);
		if (ret == EXTC_MANIFEST_OK)
			there = *w->mf;	/* ours: nothing to compare */
		else if (ret == EXTC_MANIFEST_EXISTS)	/* another's came first */
			ret = extc_manifest_read(dirfd, &there, why, whylen);
	}
	if (ret != EXTC_MANIFEST_OK)
		return (-1);
	return (extc_manifest_compatible(&there, w->mf, why, whylen));
}

int extc_warm_walk(struct extc_warm_walk *w, int leaffd, int dirfd, char *why, size_t whylen)
{
	const struct extc_warm_opts *o = w->o;
	struct level top = { NULL, NULL, dirfd };
	size_t i;

	memset(w->rep, 0, sizeof(*w->rep));
	if (own_manifest(w, dirfd, why, whylen) < 0)
		return (-1);
	w->rep->abandoned = extc_warm_sweep_abandoned(dirfd, o);
	for (i = 0; i < o->nsubdirs && !extc_warm_walk_late(w); i++) {
		struct level sub = { &top, o->subdirs[i], -1 };
		int srcfd;

		if (w->whole != NULL && w->whole(w, leaffd, o->subdirs[i], dirfd))
			continue;	/* one rename: its entries are not looked at */
		srcfd = openat(leaffd, o->subdirs[i], EXTC_DIR_OPEN_FLAGS);
		if (srcfd < 0)
			continue;
		walk_level(w, srcfd, &sub, o->subdirs[i], extc_shape_of_subdir(o, o->subdirs[i]));
		level_close(&sub);
		close(srcfd);
	}
	if (extc_warm_walk_late(w))
		extc_warm_walk_fail(w, "stopped: the deadline passed");
	if (w->rep->published > 0 &&
	    extc_manifest_write(dirfd, w->mf, false, o->tag, why, whylen) != EXTC_MANIFEST_OK)
		extc_warm_walk_fail(w, "%s", why);
	if (w->rep->failed > 0) {
		extc_fmt(why, whylen, "%s", w->rep->first_error);
		return (-1);
	}
	return (0);
}
