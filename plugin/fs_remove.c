/* spank-ext-cache: removal of a user-controlled tree, as root, through held descriptors only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fs_ident.h"
#include "fs_remove.h"
#include "text.h"

/*
 * One level of the walk. Levels are kept on a heap stack, never the C
 * stack, so depth is bounded by memory, not by the thread's stack (a
 * recursive walk is CVE-2021-3997). Only the deepest 'max_fds' levels hold
 * an open directory; an older one is closed and later re-opened through
 * its child's "..", which is accepted only if device and inode still match
 * what was recorded on the way down.
 */
struct rm_frame {
	DIR *dir;		/* NULL while evicted */
	dev_t dev;
	ino_t ino;
	char *name;		/* name in the parent level */
};

/* Inodes that failed once, so a re-scan of an evicted level skips them. */
struct ino_set {
	ino_t *slots;		/* 0 marks a free slot; inode 0 is never valid */
	size_t cap;
	size_t count;
};

struct rm_walk {
	const struct extc_rm_limits *limits;
	struct extc_rm_report *report;
	int parentfd;
	struct extc_ident top;	/* the mount every removed entry must be on */
	struct rm_frame *frames;
	size_t depth, frames_cap;
	size_t lowest_open;	/* frames [lowest_open, depth) hold a DIR */
	struct ino_set failed;
	uint64_t visited;
};

#define FAILED_SET_MAX (1u << 20)

uint64_t extc_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

void extc_rm_limits_default(struct extc_rm_limits *limits)
{
	limits->max_fds = 32;
	limits->max_depth = 1u << 20;
	limits->max_entries = 0;
	limits->deadline_ns = 0;
}

static size_t ino_hash(ino_t ino, size_t cap)
{
	uint64_t x = (uint64_t)ino * 0x9e3779b97f4a7c15ull;

	return ((size_t)(x >> 17) & (cap - 1));
}

static bool ino_set_has(const struct ino_set *set, ino_t ino)
{
	size_t i;

	if (set->count == 0 || ino == 0)
		return (false);
	for (i = ino_hash(ino, set->cap); set->slots[i] != 0; i = (i + 1) & (set->cap - 1)) {
		if (set->slots[i] == ino)
			return (true);
	}
	return (false);
}

static int ino_set_add(struct ino_set *set, ino_t ino)
{
	size_t i;

	if (ino == 0 || ino_set_has(set, ino))
		return (0);
	if ((set->count + 1) * 2 > set->cap) {
		struct ino_set bigger = { NULL, set->cap ? set->cap * 2 : 64, 0 };

		bigger.slots = calloc(bigger.cap, sizeof(ino_t));
		if (bigger.slots == NULL)
			return (-1);
		for (i = 0; i < set->cap; i++) {
			if (set->slots[i] != 0)
				ino_set_add(&bigger, set->slots[i]);
		}
		free(set->slots);
		*set = bigger;
	}
	for (i = ino_hash(ino, set->cap); set->slots[i] != 0; i = (i + 1) & (set->cap - 1))
		;
	set->slots[i] = ino;
	set->count++;
	return (0);
}

void extc_rm_report_stop(struct extc_rm_report *report, int err, const char *why)
{
	if (report->stopped == NULL) {
		report->stopped = why;
		report->stop_errno = err;
	}
}

static void stop_walk(struct rm_walk *w, const char *why)
{
	extc_rm_report_stop(w->report, 0, why);
}

/* A stop caused by a failed call: the log line must carry its error. */
static void stop_walk_err(struct rm_walk *w, int err, const char *why)
{
	extc_rm_report_stop(w->report, err, why);
}

static void note_failure(struct rm_walk *w, int err, const char *name, ino_t ino)
{
	struct extc_rm_report *r = w->report;

	r->failed++;
	if (r->first_errno == 0) {
		r->first_errno = err;
		extc_escape(name, 48, r->first_name, sizeof(r->first_name));
	}
	if (w->failed.count >= FAILED_SET_MAX || ino_set_add(&w->failed, ino) < 0)
		stop_walk(w, "too many failures to track");
}

static unsigned open_count(const struct rm_walk *w)
{
	return ((unsigned)(w->depth - w->lowest_open));
}

static void evict_oldest(struct rm_walk *w)
{
	struct rm_frame *f = &w->frames[w->lowest_open];

	closedir(f->dir);
	f->dir = NULL;
	w->lowest_open++;
}

/* Push an opened, verified directory; takes ownership of 'fd'. */
static int push_frame(struct rm_walk *w, int fd, const struct extc_ident *id, const char *name)
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
	w->depth++;
	while (open_count(w) > w->limits->max_fds && w->lowest_open + 1 < w->depth)
		evict_oldest(w);
	return (0);
fail:
	err = errno;
	close(fd);
	stop_walk_err(w, err, "cannot hold another directory open");
	return (-1);
}

/*
 * Re-open the parent of the deepest level through "..". The user may have
 * moved the deepest level elsewhere meanwhile; then ".." is not our parent
 * any more, the identities differ, and the walk stops rather than guess.
 */
static int reopen_parent(struct rm_walk *w)
{
	struct rm_frame *child = &w->frames[w->depth - 1];
	struct rm_frame *parent = &w->frames[w->depth - 2];
	struct extc_ident id;
	int fd, err;

	fd = openat(dirfd(child->dir), "..", EXTC_DIR_OPEN_FLAGS);
	if (fd < 0) {
		stop_walk_err(w, errno, "could not re-open a parent directory");
		return (-1);
	}
	if (extc_ident_fd(fd, &id) < 0) {
		err = errno;
		close(fd);
		stop_walk_err(w, err, "could not identify a re-opened parent directory");
		return (-1);
	}
	if (id.dev != parent->dev || id.ino != parent->ino) {
		close(fd);
		stop_walk(w, "the tree was moved during removal");
		return (-1);
	}
	parent->dir = fdopendir(fd);
	if (parent->dir == NULL) {
		err = errno;
		close(fd);
		stop_walk_err(w, err, "could not read a re-opened parent directory");
		return (-1);
	}
	w->lowest_open = w->depth - 2;
	return (0);
}

/* The deepest level is empty (or as empty as it gets): drop it from its parent. */
static void pop_frame(struct rm_walk *w)
{
	struct rm_frame *f = &w->frames[w->depth - 1];
	int parentfd;

	if (w->depth == 1) {
		parentfd = w->parentfd;
	} else {
		if (w->frames[w->depth - 2].dir == NULL && reopen_parent(w) < 0)
			return;
		parentfd = dirfd(w->frames[w->depth - 2].dir);
	}
	closedir(f->dir);
	f->dir = NULL;
	if (unlinkat(parentfd, f->name, AT_REMOVEDIR) == 0)
		w->report->removed++;
	else if (errno != ENOENT)
		note_failure(w, errno, f->name, f->ino);
	free(f->name);
	w->depth--;
	if (w->lowest_open > w->depth)
		w->lowest_open = w->depth;
}

/* Open a subdirectory for descent; -1 with errno set when it cannot be. */
static int open_child_dir(struct rm_walk *w, int dfd, const char *name)
{
	int fd = openat(dfd, name, EXTC_DIR_OPEN_FLAGS);

	/* the descriptor budget is ours; the process limit may be lower still */
	while (fd < 0 && (errno == EMFILE || errno == ENFILE) && w->lowest_open + 1 < w->depth) {
		evict_oldest(w);
		fd = openat(dfd, name, EXTC_DIR_OPEN_FLAGS);
	}
	return (fd);
}

static bool entry_is_mount_point(const struct rm_walk *w, int dfd, const char *name)
{
	struct statx stx;

	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_MNT_ID, &stx) < 0)
		return (false);	/* the open below decides */
	if ((stx.stx_mask & STATX_MNT_ID) && w->top.mnt_id != 0 && stx.stx_mnt_id != w->top.mnt_id)
		return (true);
	return (makedev(stx.stx_dev_major, stx.stx_dev_minor) != w->top.dev);
}

static void remove_entry(struct rm_walk *w, struct rm_frame *f, const struct dirent *de)
{
	int dfd = dirfd(f->dir);
	bool is_dir = (de->d_type == DT_DIR);
	struct extc_ident id;
	struct stat sb;
	int fd;

	if (de->d_type == DT_UNKNOWN) {
		if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				note_failure(w, errno, de->d_name, de->d_ino);
			return;
		}
		is_dir = S_ISDIR(sb.st_mode);
	}
	if (!is_dir) {
		if (unlinkat(dfd, de->d_name, 0) == 0) {
			w->report->removed++;
			return;
		}
		if (errno == ENOENT)
			return;
		if (errno != EISDIR) {
			note_failure(w, errno, de->d_name, de->d_ino);
			return;
		}
		/* became a directory since readdir: treat it as one */
	}
	/*
	 * A mount point is recognised from the entry itself, before it is
	 * opened: opening the root of a FUSE mount asks its daemon, and one
	 * that never answers would hang the walk past the epilog's timeout.
	 * AT_STATX_DONT_SYNC keeps statx from asking the daemon too.
	 */
	if (entry_is_mount_point(w, dfd, de->d_name)) {
		w->report->mounts++;
		note_failure(w, EBUSY, de->d_name, de->d_ino);
		return;
	}
	fd = open_child_dir(w, dfd, de->d_name);
	if (fd < 0) {
		if (errno == ENOENT)
			return;
		/* swapped for a symlink or a file since readdir: remove the name, follow nothing */
		if (errno == ELOOP || errno == ENOTDIR) {
			if (unlinkat(dfd, de->d_name, 0) == 0) {
				w->report->removed++;
				return;
			}
			if (errno == ENOENT)
				return;
		}
		note_failure(w, errno, de->d_name, de->d_ino);
		return;
	}
	if (extc_ident_fd(fd, &id) < 0) {
		note_failure(w, errno, de->d_name, de->d_ino);
		close(fd);
		return;
	}
	if (!extc_ident_same_mount(&id, &w->top)) {
		w->report->mounts++;
		note_failure(w, EBUSY, de->d_name, de->d_ino);
		close(fd);
		return;
	}
	if (w->depth >= w->limits->max_depth) {
		close(fd);
		note_failure(w, ELOOP, de->d_name, de->d_ino);
		stop_walk(w, "the tree is deeper than the depth limit");
		return;
	}
	push_frame(w, fd, &id, de->d_name);
}

static bool over_budget(struct rm_walk *w)
{
	const struct extc_rm_limits *l = w->limits;

	w->visited++;
	if (l->max_entries != 0 && w->visited > l->max_entries) {
		stop_walk(w, "entry budget exhausted");
		return (true);
	}
	/* the clock is read on the first entry and every 256th after it */
	if (l->deadline_ns != 0 && (w->visited & 255) == 1 && extc_monotonic_ns() > l->deadline_ns) {
		stop_walk(w, "time budget exhausted");
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
				note_failure(w, errno, f->name, f->ino);
			pop_frame(w);
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (over_budget(w))
			break;
		if (ino_set_has(&w->failed, de->d_ino))
			continue;
		remove_entry(w, f, de);
	}
}

int extc_rm_tree_at(int parentfd, const char *name, const struct extc_rm_limits *limits,
		    struct extc_rm_report *report)
{
	struct extc_rm_limits defaults;
	struct rm_walk w;
	struct extc_ident parent_id, id;
	struct stat sb;
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

	/* one plain entry of parentfd, nothing that would resolve elsewhere */
	if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strchr(name, '/') != NULL) {
		note_failure(&w, EINVAL, name, 0);
		goto out;
	}

	if (fstatat(parentfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return (0);
		note_failure(&w, errno, name, 0);
		goto out;
	}
	if (!S_ISDIR(sb.st_mode)) {
		if (unlinkat(parentfd, name, 0) == 0)
			report->removed++;
		else if (errno != ENOENT)
			note_failure(&w, errno, name, sb.st_ino);
		goto out;
	}
	fd = openat(parentfd, name, EXTC_DIR_OPEN_FLAGS);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR) {
			if (unlinkat(parentfd, name, 0) == 0)
				report->removed++;
			else if (errno != ENOENT)
				note_failure(&w, errno, name, sb.st_ino);
		} else if (errno != ENOENT) {
			note_failure(&w, errno, name, sb.st_ino);
		}
		goto out;
	}
	if (extc_ident_fd(parentfd, &parent_id) < 0 || extc_ident_fd(fd, &id) < 0) {
		note_failure(&w, errno, name, sb.st_ino);
		close(fd);
		goto out;
	}
	if (!extc_ident_same_mount(&id, &parent_id)) {
		report->mounts++;
		note_failure(&w, EBUSY, name, sb.st_ino);
		close(fd);
		goto out;
	}
	w.top = id;
	if (push_frame(&w, fd, &id, name) == 0)
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

void extc_rm_report_text(const struct extc_rm_report *r, char *buf, size_t len)
{
	char err[160] = "", stop_err[80] = "";

	if (r->first_errno != 0)
		extc_fmt(err, sizeof(err), "; first error: %s: %s", r->first_name,
			 strerror(r->first_errno));
	if (r->stopped != NULL && r->stop_errno != 0)
		extc_fmt(stop_err, sizeof(stop_err), ": %s", strerror(r->stop_errno));
	extc_fmt(buf, len,
		 "removed %llu, could not remove %llu, mount points left alone %llu%s%s%s%s",
		 (unsigned long long)r->removed, (unsigned long long)r->failed,
		 (unsigned long long)r->mounts, err, r->stopped ? "; stopped: " : "",
		 r->stopped ? r->stopped : "", stop_err);
}
