/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: removal of a user-controlled tree, as root, through held descriptors only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "fs/fs_ident.h"
#include "fs/fs_inoset.h"
#include "fs/fs_remove.h"
#include "fs/fs_rmstack.h"
#include "base/text.h"

/*
 * Open a subdirectory for descent without asking a filesystem mounted on
 * it (extc_ident_open_below). The descriptor budget is ours; the process limit
 * may be lower still.
 */
static enum extc_open_result open_child_dir(struct rm_walk *w, int dfd, const char *name, int *fd,
					    struct extc_ident *id)
{
	enum extc_open_result res = extc_ident_open_below(dfd, &w->top, name, fd, id);

	while (res == EXTC_OPEN_ERROR && (errno == EMFILE || errno == ENFILE) &&
	       w->lowest_open + 1 < w->depth) {
		extc_rmstack_evict_oldest(w);
		res = extc_ident_open_below(dfd, &w->top, name, fd, id);
	}
	return (res);
}

/*
 * A mount point in the root-only trash: detached, so that what is under it
 * can go and the next emptier does not meet it again. The path goes through
 * our descriptor of its directory; umount2 looks the mount up without
 * asking its filesystem, and MNT_DETACH never waits for it.
 */
static bool detach_mount(int dfd, const char *name)
{
	char path[64 + 256];

	if (snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name) >= (int)sizeof(path))
		return (false);
	return (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0);
}

/* The path of 'name' below the top, escaped, for the report's first foreign directory. */
static void note_foreign(struct rm_walk *w, const char *name)
{
	char path[512] = "";
	size_t i, len = 0;

	w->report->foreign++;
	if (w->report->foreign > 1)
		return;
	for (i = 0; i < w->depth && len < sizeof(path); i++)
		len += (size_t)snprintf(path + len, sizeof(path) - len, "%s/", w->frames[i].name);
	if (len < sizeof(path))
		snprintf(path + len, sizeof(path) - len, "%s", name);
	extc_escape(path, 100, w->report->first_foreign, sizeof(w->report->first_foreign));
}

/*
 * Root enters only what the tree's user could have emptied: a directory of
 * the owner of its parent, or anything below a root-owned level (the
 * plugin's skeleton, the leaf before it is handed over). Another user's
 * directory the user moved in stays whole: the user could not empty it.
 */
static bool may_enter(uid_t parent_uid, uid_t uid)
{
	return (parent_uid == 0 || uid == parent_uid);
}

/* Descend into the directory 'name' of frame 'f', or leave it and say why. */
static void enter_dir(struct rm_walk *w, struct rm_frame *f, const char *name, ino_t ino)
{
	int dfd = dirfd(f->dir);
	enum extc_open_result res;
	struct extc_ident id;
	int fd, detaches = 0;

	res = open_child_dir(w, dfd, name, &fd, &id);
	/* stacked mounts are detached one by one, within a bound */
	while (res == EXTC_OPEN_MOUNT && w->limits->detach_mounts && detaches < 8 &&
	       detach_mount(dfd, name)) {
		w->report->detached++;
		detaches++;
		res = open_child_dir(w, dfd, name, &fd, &id);
	}
	if (res == EXTC_OPEN_ABSENT)
		return;
	if (res == EXTC_OPEN_MOUNT) {
		w->report->mounts++;
		extc_rmstack_note_failure(w, EBUSY, name, ino);
		return;
	}
	if (res == EXTC_OPEN_ERROR) {
		/* swapped for a symlink or a file since readdir: remove the name, follow nothing */
		if (errno == ELOOP || errno == ENOTDIR) {
			if (unlinkat(dfd, name, 0) == 0) {
				w->report->removed++;
				return;
			}
			if (errno == ENOENT)
				return;
		}
		extc_rmstack_note_failure(w, errno, name, ino);
		return;
	}
	if (!may_enter(f->uid, id.uid)) {
		close(fd);
		note_foreign(w, name);
		extc_rmstack_note_failure(w, EPERM, name, ino);
		return;
	}
	if (w->depth >= w->limits->max_depth) {
		close(fd);
		extc_rmstack_note_failure(w, ELOOP, name, ino);
		extc_rmstack_stop(w, "the tree is deeper than the depth limit");
		return;
	}
	extc_rmstack_push(w, fd, &id, name);
}

static void remove_entry(struct rm_walk *w, struct rm_frame *f, const struct dirent *de)
{
	int dfd = dirfd(f->dir);
	bool is_dir = (de->d_type == DT_DIR);
	struct extc_ident id;

	if (de->d_type == DT_UNKNOWN) {
		/* from memory: a plain stat of a mount point would ask its filesystem */
		if (extc_ident_at(dfd, de->d_name, &id) < 0) {
			if (errno != ENOENT)
				extc_rmstack_note_failure(w, errno, de->d_name, de->d_ino);
			return;
		}
		is_dir = S_ISDIR(id.mode);
	}
	if (!is_dir) {
		if (unlinkat(dfd, de->d_name, 0) == 0) {
			w->report->removed++;
			return;
		}
		if (errno == ENOENT)
			return;
		if (errno != EISDIR) {
			extc_rmstack_note_failure(w, errno, de->d_name, de->d_ino);
			return;
		}
		/* became a directory since readdir: treat it as one */
	}
	enter_dir(w, f, de->d_name, de->d_ino);
}

static bool over_budget(struct rm_walk *w)
{
	const struct extc_rm_limits *l = w->limits;

	w->visited++;
	if (l->max_entries != 0 && w->visited > l->max_entries) {
		extc_rmstack_stop(w, "entry budget exhausted");
		return (true);
	}
	/* the clock is read on the first entry and every 256th after it */
	if ((w->visited & 255) == 1 && extc_clock_past_deadline(l->deadline_ns)) {
		extc_rmstack_stop(w, "time budget exhausted");
		return (true);
	}
	return (false);
}

static void walk(struct rm_walk *w)
{
	while (w->depth > 0 && w->report->stopped == NULL) {
		struct rm_frame *f = &w->frames[w->depth - 1];
		struct dirent *de;

		errno = 0;
		de = readdir(f->dir);
		if (de == NULL) {
			if (errno != 0)
				extc_rmstack_note_failure(w, errno, f->name, f->ino);
			extc_rmstack_pop(w);
			continue;
		}
		if (extc_fdio_is_dot(de->d_name))
			continue;
		if (over_budget(w))
			break;
		if (extc_inoset_has(&w->failed, de->d_ino))
			continue;
		remove_entry(w, f, de);
	}
}

/*
 * The top is met like any entry: never opened before it is known not to be
 * a mount, never entered if the user could not have emptied it. true with
 * '*fd' open on it when the walk is to go down; false when it is done (a
 * non-directory removed, an absent name) or failed (in the report).
 */
static bool open_top(struct rm_walk *w, int parentfd, const char *name, int *fd,
		     struct extc_ident *id)
{
	struct extc_ident parent_id;

	if (extc_ident_fd(parentfd, &parent_id) < 0) {
		extc_rmstack_note_failure(w, errno, name, 0);
		return (false);
	}
	if (extc_ident_at(parentfd, name, id) < 0) {
		if (errno == ENOENT)
			return (false);
		extc_rmstack_note_failure(w, errno, name, 0);
		return (false);
	}
	if (!extc_rmstack_top_expected(w, id))
		return (false);
	if (!S_ISDIR(id->mode)) {
		if (unlinkat(parentfd, name, 0) == 0)
			w->report->removed++;
		else if (errno != ENOENT)
			extc_rmstack_note_failure(w, errno, name, id->ino);
		return (false);
	}
	switch (extc_ident_open_below(parentfd, &parent_id, name, fd, id)) {
	case EXTC_OPEN_ABSENT:
		return (false);
	case EXTC_OPEN_MOUNT:
		w->report->mounts++;
		extc_rmstack_note_failure(w, EBUSY, name, id->ino);
		return (false);
	case EXTC_OPEN_ERROR:
		if (errno == ELOOP || errno == ENOTDIR) {
			if (unlinkat(parentfd, name, 0) == 0)
				w->report->removed++;
			else if (errno != ENOENT)
				extc_rmstack_note_failure(w, errno, name, id->ino);
		} else {
			extc_rmstack_note_failure(w, errno, name, id->ino);
		}
		return (false);
	case EXTC_OPEN_OK:
		break;
	}
	/* the descriptor the walk goes down through, not only the name looked at above */
	if (!extc_rmstack_top_expected(w, id)) {
		close(*fd);
		return (false);
	}
	if (!may_enter(parent_id.uid, id->uid)) {
		close(*fd);
		note_foreign(w, name);
		extc_rmstack_note_failure(w, EPERM, name, id->ino);
		return (false);
	}
	return (true);
}

int extc_remove_tree_at(int parentfd, const char *name, const struct extc_rm_limits *limits,
			struct extc_rm_report *report)
{
	return (extc_remove_tree_at_ident(parentfd, name, NULL, limits, report));
}

int extc_remove_tree_at_ident(int parentfd, const char *name, const struct extc_ident *expect,
			      const struct extc_rm_limits *limits, struct extc_rm_report *report)
{
	struct extc_rm_limits defaults;
	struct rm_walk w;
	struct extc_ident id;
	int fd = -1;
	size_t i;

	memset(report, 0, sizeof(*report));
	if (limits == NULL) {
		extc_rm_limits_default(&defaults);
		limits = &defaults;
	}
	memset(&w, 0, sizeof(w));
	w.limits = limits;
	w.report = report;
	w.parentfd = parentfd;
	w.expect = expect;

	/* one plain entry of parentfd, nothing that would resolve elsewhere */
	if (name[0] == '\0' || extc_fdio_is_dot(name) || strchr(name, '/') != NULL) {
		extc_rmstack_note_failure(&w, EINVAL, name, 0);
		goto out;
	}

	if (!open_top(&w, parentfd, name, &fd, &id))
		goto out;
	w.top = id;
	if (extc_rmstack_push(&w, fd, &id, name) == 0)
		walk(&w);
out:
	for (i = 0; i < w.depth; i++) {
		if (w.frames[i].dir != NULL)
			closedir(w.frames[i].dir);
		free(w.frames[i].name);
	}
	free(w.frames);
	free(w.failed.slots);
	return ((report->failed == 0 && report->stopped == NULL) ? 0 : -1);
}

