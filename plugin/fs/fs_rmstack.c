/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the removal walk's stack of levels, each re-opened only through a verified "..". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs_rmstack.h"
#include "base/text.h"

#define FAILED_SET_MAX (1u << 20)

void extc_rmstack_stop(struct rm_walk *w, const char *why)
{
	extc_rm_report_stop(w->report, 0, why);
}

/* A stop caused by a failed call: the log line must carry its error. */
void extc_rmstack_stop_err(struct rm_walk *w, int err, const char *why)
{
	extc_rm_report_stop(w->report, err, why);
}

void extc_rmstack_note_failure(struct rm_walk *w, int err, const char *name, ino_t ino)
{
	struct extc_rm_report *r = w->report;

	r->failed++;
	if (r->first_errno == 0) {
		r->first_errno = err;
		extc_escape(name, 48, r->first_name, sizeof(r->first_name));
	}
	if (w->failed.count >= FAILED_SET_MAX || extc_inoset_add(&w->failed, ino) < 0)
		extc_rmstack_stop(w, "too many failures to track");
}

static unsigned rmw_open_count(const struct rm_walk *w)
{
	return ((unsigned)(w->depth - w->lowest_open));
}

void extc_rmstack_evict_oldest(struct rm_walk *w)
{
	struct rm_frame *f = &w->frames[w->lowest_open];

	closedir(f->dir);
	f->dir = NULL;
	w->lowest_open++;
}

/* Push an opened, verified directory; takes ownership of 'fd'. */
int extc_rmstack_push(struct rm_walk *w, int fd, const struct extc_ident *id, const char *name)
{
	struct rm_frame *f;
	int err;

	if (w->depth == w->frames_cap) {
		size_t cap = w->frames_cap ? w->frames_cap * 2 : 64;
		struct rm_frame *grown = realloc(w->frames, cap * sizeof(*grown));

		if (grown == NULL)
			goto fail;
		w->frames = grown;
		w->frames_cap = cap;
	}
	f = &w->frames[w->depth];
	f->name = strdup(name);
	if (f->name == NULL)
		goto fail;
	f->dir = fdopendir(fd);
	if (f->dir == NULL) {
		free(f->name);
		goto fail;
	}
	f->dev = id->dev;
	f->ino = id->ino;
	f->uid = id->uid;
	w->depth++;
	while (rmw_open_count(w) > w->limits->max_fds && w->lowest_open + 1 < w->depth)
		extc_rmstack_evict_oldest(w);
	return (0);
fail:
	err = errno;
	close(fd);
	extc_rmstack_stop_err(w, err, "cannot hold another directory open");
	return (-1);
}

/*
 * Re-open the parent of the deepest level through "..". The user may have
 * moved the deepest level elsewhere meanwhile; then ".." is not our parent
 * any more, the identities differ, and the walk stops rather than guess.
 */
static int rmw_reopen_parent(struct rm_walk *w)
{
	struct rm_frame *child = &w->frames[w->depth - 1];
	struct rm_frame *parent = &w->frames[w->depth - 2];
	struct extc_ident id;
	int fd, err;

	fd = openat(dirfd(child->dir), "..", EXTC_DIR_OPEN_FLAGS);
	if (fd < 0) {
		extc_rmstack_stop_err(w, errno, "could not re-open a parent directory");
		return (-1);
	}
	if (extc_ident_fd(fd, &id) < 0) {
		err = errno;
		close(fd);
		extc_rmstack_stop_err(w, err, "could not identify a re-opened parent directory");
		return (-1);
	}
	if (id.dev != parent->dev || id.ino != parent->ino) {
		close(fd);
		extc_rmstack_stop(w, "the tree was moved during removal");
		return (-1);
	}
	parent->dir = fdopendir(fd);
	if (parent->dir == NULL) {
		err = errno;
		close(fd);
		extc_rmstack_stop_err(w, err, "could not read a re-opened parent directory");
		return (-1);
	}
	w->lowest_open = w->depth - 2;
	return (0);
}

bool extc_rmstack_top_expected(struct rm_walk *w, const struct extc_ident *seen)
{
	if (w->expect == NULL ||
	    (seen->dev == w->expect->dev && seen->ino == w->expect->ino))
		return (true);
	extc_rmstack_stop(w, extc_rm_not_expected);
	return (false);
}

/* The deepest level is empty (or as empty as it gets): drop it from its parent. */
void extc_rmstack_pop(struct rm_walk *w)
{
	struct rm_frame *f = &w->frames[w->depth - 1];
	struct extc_ident seen;
	int parentfd;

	if (w->depth == 1) {
		parentfd = w->parentfd;
		/*
		 * The top goes by name: look again that the name is still the
		 * directory emptied. What remains is the instant between this
		 * look and the rmdir, and rmdir takes only an empty directory.
		 */
		if (w->expect != NULL && extc_ident_at(parentfd, f->name, &seen) == 0 &&
		    !extc_rmstack_top_expected(w, &seen)) {
			closedir(f->dir);
			f->dir = NULL;
			free(f->name);
			w->depth--;
			return;
		}
	} else {
		if (w->frames[w->depth - 2].dir == NULL && rmw_reopen_parent(w) < 0)
			return;
		parentfd = dirfd(w->frames[w->depth - 2].dir);
	}
	closedir(f->dir);
	f->dir = NULL;
	if (unlinkat(parentfd, f->name, AT_REMOVEDIR) == 0)
		w->report->removed++;
	else if (errno != ENOENT)
		extc_rmstack_note_failure(w, errno, f->name, f->ino);
	free(f->name);
	w->depth--;
	if (w->lowest_open > w->depth)
		w->lowest_open = w->depth;
}
