/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the removal walk's stack of levels, each re-opened only through a verified "..". */
#ifndef EXTC_FS_RMSTACK_H_
#define EXTC_FS_RMSTACK_H_

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/fs_ident.h"
#include "fs/fs_inoset.h"
#include "fs/fs_rm.h"

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
	uid_t uid;		/* owner: decides which subdirectories are entered */
	char *name;		/* name in the parent level */
};

struct rm_walk {
	const struct extc_rm_limits *limits;
	struct extc_rm_report *report;
	int parentfd;
	struct extc_ident top;	/* the mount every removed entry must be on */
	const struct extc_ident *expect;	/* the top must be this directory (dev, ino), or NULL */
	struct rm_frame *frames;
	size_t depth, frames_cap;
	size_t lowest_open;	/* frames [lowest_open, depth) hold a DIR */
	struct extc_inoset failed;
	uint64_t visited;
};

/* The walk stops (the first reason wins); '_err': a failed call, whose error the log must carry. */
void extc_rmstack_stop(struct rm_walk *w, const char *why);
void extc_rmstack_stop_err(struct rm_walk *w, int err, const char *why);

/* Count a name that could not be removed; its inode is not tried again. */
void extc_rmstack_note_failure(struct rm_walk *w, int err, const char *name, ino_t ino);

/* Close the shallowest open level, to be re-opened through ".." when the walk climbs back. */
void extc_rmstack_evict_oldest(struct rm_walk *w);

/*
 * Is the top still the directory the walk was told to expect (w->expect)?
 * true when nothing is expected; else the walk stops, touching nothing more.
 */
bool extc_rmstack_top_expected(struct rm_walk *w, const struct extc_ident *seen);

/* Push an opened, verified directory; takes ownership of 'fd'. 0, or -1 with the walk stopped. */
int extc_rmstack_push(struct rm_walk *w, int fd, const struct extc_ident *id, const char *name);

/* The deepest level is empty (or as empty as it gets): drop it from its parent. */
void extc_rmstack_pop(struct rm_walk *w);

#endif /* EXTC_FS_RMSTACK_H_ */
