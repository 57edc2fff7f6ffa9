/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what one key of the node pool really uses, measured by root's own walk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "fs/fs_ident.h"
#include "fs/fs_inoset.h"
#include "pool/pool_key.h"
#include "pool/pool_measure.h"
#include "base/text.h"

#define STAT_FLAGS (AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC)
#define STAT_MASK (STATX_BASIC_STATS | STATX_MNT_ID)

/*
 * The walk's state. Its levels live on a heap stack, never the C stack,
 * and each holds its directory open: the depth limit bounds the
 * descriptors, so no level is ever re-opened by name.
 */
struct mwalk {
	const struct extc_pool_measure_limits *lim;
	struct extc_pool_usage *out;
	struct extc_ident top;		/* the mount everything counted must be on */
	struct extc_inoset seen;		/* inodes with more than one name, counted once */
	DIR **stack;
	size_t depth, cap;
	enum extc_pool_measure_result res;
};

static void stop(struct mwalk *w, enum extc_pool_measure_result res, int err)
{
	if (w->res != EXTC_POOL_MEASURED)
		return;
	w->res = res;
	w->out->err = err;
}

/* A name on another mount than the key's (or a mount's root): not the key's to count. */
static bool other_mount(const struct mwalk *w, const struct statx *stx)
{
	if ((stx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (stx->stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return (true);
	if (makedev(stx->stx_dev_major, stx->stx_dev_minor) != w->top.dev)
		return (true);
	return ((stx->stx_mask & STATX_MNT_ID) && w->top.mnt_id != 0 &&
		stx->stx_mnt_id != w->top.mnt_id);
}

/* Add one inode, unless one of its other names was counted already. */
static void count(struct mwalk *w, const struct statx *stx)
{
	if (!S_ISDIR(stx->stx_mode) && stx->stx_nlink > 1) {
		if (extc_inoset_has(&w->seen, (ino_t)stx->stx_ino))
			return;
		if (extc_inoset_add(&w->seen, (ino_t)stx->stx_ino) < 0) {
			stop(w, EXTC_POOL_MEASURE_ERROR, ENOMEM);
			return;
		}
	}
	w->out->inodes++;
	w->out->bytes += (uint64_t)stx->stx_blocks * 512u;
}

/* Count an opened directory and make it the deepest level; takes 'fd'. */
static void push(struct mwalk *w, int fd)
{
	struct statx stx;
	DIR *d;

	if (w->depth == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		DIR **grown = realloc(w->stack, cap * sizeof(*grown));

		if (grown == NULL) {
			close(fd);
			stop(w, EXTC_POOL_MEASURE_ERROR, ENOMEM);
			return;
		}
		w->stack = grown;
		w->cap = cap;
	}
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STAT_MASK, &stx) < 0 ||
	    (d = fdopendir(fd)) == NULL) {
		stop(w, EXTC_POOL_MEASURE_ERROR, errno);
		close(fd);
		return;
	}
	count(w, &stx);
	w->stack[w->depth++] = d;
}

/* Go down into the directory 'name' of the deepest level, never into a mount. */
static void enter(struct mwalk *w, int dfd, const char *name)
{
	struct extc_ident id;
	int fd;

	if (w->depth > w->lim->max_depth) {
		stop(w, EXTC_POOL_MEASURE_TOO_DEEP, 0);
		return;
	}
	switch (extc_ident_open_below(dfd, &w->top, name, &fd, &id)) {
	case EXTC_OPEN_ABSENT:
		return;		/* gone since readdir: the user's own doing, nothing to count */
	case EXTC_OPEN_MOUNT:
		stop(w, EXTC_POOL_MEASURE_MOUNT, 0);
		return;
	case EXTC_OPEN_ERROR:
		/* swapped for a symlink or a file since the statx: the user races its own key */
		stop(w, EXTC_POOL_MEASURE_ERROR, errno);
		return;
	case EXTC_OPEN_OK:
		break;
	}
	push(w, fd);
}

static void entry(struct mwalk *w, int dfd, const char *name)
{
	struct statx stx;

	if (statx(dfd, name, STAT_FLAGS, STAT_MASK, &stx) < 0) {
		/* a FUSE mount that refuses root its attributes fails here too: not counted, not kept */
		if (errno != ENOENT)
			stop(w, EXTC_POOL_MEASURE_ERROR, errno);
		return;
	}
	if (other_mount(w, &stx))
		stop(w, EXTC_POOL_MEASURE_MOUNT, 0);
	else if (S_ISDIR(stx.stx_mode))
		enter(w, dfd, name);
	else
		count(w, &stx);
}

static void measure_walk(struct mwalk *w)
{
	while (w->depth > 0 && w->res == EXTC_POOL_MEASURED) {
		DIR *d = w->stack[w->depth - 1];
		struct dirent *de;

		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			if (errno != 0)
				stop(w, EXTC_POOL_MEASURE_ERROR, errno);
			closedir(d);
			w->depth--;
			continue;
		}
		if (extc_fdio_is_dot(de->d_name))
			continue;
		w->out->entries++;
		if (w->lim->max_entries != 0 && w->out->entries > w->lim->max_entries) {
			stop(w, EXTC_POOL_MEASURE_TOO_MANY, 0);
			break;
		}
		/* the clock is read on the first name and every 256th after it */
		if ((w->out->entries & 255) == 1 && extc_clock_past_deadline(w->lim->deadline_ns)) {
			stop(w, EXTC_POOL_MEASURE_TIMEOUT, 0);
			break;
		}
		entry(w, dirfd(d), de->d_name);
	}
}

enum extc_pool_measure_result extc_pool_measure_key(int uidfd, const char *key,
						    const struct extc_pool_measure_limits *lim,
						    struct extc_pool_usage *out)
{
	struct extc_ident parent;
	struct mwalk w;
	int fd = -1;

	memset(out, 0, sizeof(*out));
	memset(&w, 0, sizeof(w));
	w.lim = lim;
	w.out = out;
	w.res = EXTC_POOL_MEASURED;
	/* a key's name is one plain entry of the user's level, nothing that resolves elsewhere */
	if (!extc_pool_key_name_ok(key)) {
		stop(&w, EXTC_POOL_MEASURE_ERROR, EINVAL);
		goto out;
	}
	if (extc_ident_fd(uidfd, &parent) < 0) {
		stop(&w, EXTC_POOL_MEASURE_ERROR, errno);
		goto out;
	}
	switch (extc_ident_open_below(uidfd, &parent, key, &fd, &w.top)) {
	case EXTC_OPEN_ABSENT:
		stop(&w, EXTC_POOL_MEASURE_ABSENT, 0);
		goto out;
	case EXTC_OPEN_MOUNT:
		stop(&w, EXTC_POOL_MEASURE_MOUNT, 0);
		goto out;
	case EXTC_OPEN_ERROR:
		stop(&w, EXTC_POOL_MEASURE_ERROR, errno);
		goto out;
	case EXTC_OPEN_OK:
		break;
	}
	push(&w, fd);
	measure_walk(&w);
out:
	while (w.depth > 0)
		closedir(w.stack[--w.depth]);
	free(w.stack);
	free(w.seen.slots);
	return (w.res);
}

void extc_pool_measure_limits_for(const struct extc_config *cfg,
				  struct extc_pool_measure_limits *lim)
{
	lim->max_depth = EXTC_POOL_MEASURE_DEPTH;
	lim->max_entries = cfg->pool_max_inodes;
	lim->deadline_ns = extc_clock_monotonic_ns() + EXTC_POOL_MEASURE_BUDGET_NS;
}

void extc_pool_measure_text(enum extc_pool_measure_result r, const struct extc_pool_usage *u,
			    char *buf, size_t len)
{
	switch (r) {
	case EXTC_POOL_MEASURED:
		extc_fmt(buf, len, "measured");
		return;
	case EXTC_POOL_MEASURE_ABSENT:
		extc_fmt(buf, len, "no such key directory");
		return;
	case EXTC_POOL_MEASURE_TOO_DEEP:
		extc_fmt(buf, len, "deeper than %d levels", EXTC_POOL_MEASURE_DEPTH);
		return;
	case EXTC_POOL_MEASURE_TOO_MANY:
		extc_fmt(buf, len, "more names than the walk may read (pool_max_inodes)");
		return;
	case EXTC_POOL_MEASURE_TIMEOUT:
		extc_fmt(buf, len, "not measured within the time budget");
		return;
	case EXTC_POOL_MEASURE_MOUNT:
		extc_fmt(buf, len, "a mount point in the key");
		return;
	case EXTC_POOL_MEASURE_ERROR:
		break;
	}
	extc_fmt(buf, len, "cannot be measured: %s", strerror(u->err));
}
