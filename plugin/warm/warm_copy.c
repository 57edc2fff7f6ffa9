/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: walking a JIT cache tree as the job's user: what a seed or a publish copies. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "fs/fs_ident.h"
#include "fs/fs_remove.h"
#include "base/text.h"
#include "warm/warm_copy.h"
#include "warm/warm_data.h"
#include "warm/warm_names.h"
#include "warm/warm_shape.h"
#include "warm/warm_triton.h"

#define COPY_BUF_SIZE (256u * 1024u)

struct walk {
	const struct extc_warm_opts *o;
	struct extc_copy_stats *st;
	struct extc_ident top;	/* the source's root: the walk stays on its mount */
	bool copy;		/* false: measure only */
	char *buf;		/* read/write fallback */
	char *why;
	size_t whylen;
	char path[PATH_MAX];	/* relative path of the entry at hand, for messages */
};

static int walk_dir(struct walk *w, int srcfd, int dstfd, unsigned depth, enum extc_shape shape);

static int fail(struct walk *w, const char *what, int err)
{
	char shown[160];

	extc_escape(w->path[0] ? w->path : ".", 120, shown, sizeof(shown));
	extc_fmt(w->why, w->whylen, "%s: %s: %s", shown, what, strerror(err));
	return (-1);
}

static int path_push(struct walk *w, const char *name, size_t *saved)
{
	size_t len = strlen(w->path);

	*saved = len;
	if (extc_fmt(w->path + len, sizeof(w->path) - len, "%s%s", len ? "/" : "", name) < 0) {
		w->path[len] = '\0';
		extc_fmt(w->why, w->whylen, "a path in the tree is longer than %d bytes", PATH_MAX);
		return (-1);
	}
	return (0);
}

/* The file's bytes (warm_data.c), against the seed's byte limit. */
static int copy_data(struct walk *w, int sfd, int dfd)
{
	const char *what = "cannot copy";
	char max[64];

	switch (extc_warm_data_copy(sfd, dfd, w->buf, COPY_BUF_SIZE, w->o->max_bytes, &w->st->bytes,
				    &what)) {
	case EXTC_DATA_COPIED:
		return (0);
	case EXTC_DATA_TOO_BIG:
		extc_warm_data_size_text(w->o->max_bytes, max, sizeof(max));
		extc_fmt(w->why, w->whylen, "the tree grew past %s while it was copied", max);
		return (-1);
	case EXTC_DATA_FAILED:
		break;
	}
	return (fail(w, what, errno));
}

static void times_of(const struct stat *sb, struct timespec ts[2])
{
	ts[0] = sb->st_atim;
	ts[1] = sb->st_mtim;
}

static int copy_file(struct walk *w, int srcfd, int dstfd, const char *name, const char *dname)
{
	struct timespec ts[2];
	struct stat sb;
	int sfd, dfd = -1;
	int rv = -1;

	sfd = openat(srcfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (sfd < 0)
		return (errno == ENOENT ? 0 : fail(w, "cannot open", errno));
	if (fstat(sfd, &sb) < 0) {
		fail(w, "cannot stat", errno);
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {	/* swapped for something else since the directory was read */
		w->st->skipped_special++;
		rv = 0;
		goto out;
	}
	w->st->files++;
	if (!w->copy) {
		w->st->bytes += (uint64_t)sb.st_size;
		rv = 0;
		goto out;
	}
	dfd = openat(dstfd, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (dfd < 0) {
		fail(w, "cannot create the copy", errno);
		goto out;
	}
	if (copy_data(w, sfd, dfd) < 0)
		goto out;
	times_of(&sb, ts);
	/* ninja decides what to rebuild from mtimes: they must survive exactly */
	if (fchmod(dfd, sb.st_mode & 0777) < 0 || futimens(dfd, ts) < 0) {
		fail(w, "cannot set mode and times of the copy", errno);
		goto out;
	}
	rv = 0;
out:
	if (dfd >= 0)
		close(dfd);
	close(sfd);
	return (rv);
}

static int copy_link(struct walk *w, int srcfd, int dstfd, const char *name, const char *dname,
		     const struct stat *sb)
{
	char target[PATH_MAX];
	struct timespec ts[2];
	ssize_t n;

	w->st->links++;
	if (!w->copy)
		return (0);
	n = readlinkat(srcfd, name, target, sizeof(target));
	if (n < 0)
		return (errno == ENOENT ? 0 : fail(w, "cannot read the link", errno));
	if ((size_t)n >= sizeof(target))
		return (fail(w, "link target too long", ENAMETOOLONG));
	target[n] = '\0';
	if (symlinkat(target, dstfd, dname) < 0)
		return (fail(w, "cannot create the link", errno));
	times_of(sb, ts);
	if (utimensat(dstfd, dname, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return (fail(w, "cannot set the link's times", errno));
	return (0);
}

/* A Triton kernel's copy names its own files: <dest>/<its path in the tree>/<file>. */
static int rewrite_groups(struct walk *w, int dfd)
{
	char final[PATH_MAX], why[EXTC_WHY_MAX];

	if (w->o->dest == NULL)
		return (0);
	if (extc_fmt(final, sizeof(final), "%s/%s", w->o->dest, w->path) < 0)
		return (fail(w, "the copy's path is too long", ENAMETOOLONG));
	switch (extc_triton_rewrite(dfd, final, why, sizeof(why))) {
	case EXTC_TRITON_NO_GROUP:
	case EXTC_TRITON_OK:
		return (0);
	case EXTC_TRITON_BROKEN:	/* the source changed under the copy */
	case EXTC_TRITON_FAILED:
		break;
	}
	extc_escape(w->path, 120, final, sizeof(final));
	extc_fmt(w->why, w->whylen, "%s: %s", final, why);
	return (-1);
}

static int copy_dir(struct walk *w, int srcfd, int dstfd, const char *name, const char *dname,
		    const struct stat *sb, unsigned depth, enum extc_shape shape)
{
	struct extc_ident id;
	struct timespec ts[2];
	int sfd, dfd = -1;
	enum extc_shape cshape;
	int rv = -1;

	sfd = openat(srcfd, name, EXTC_DIR_OPEN_FLAGS);
	if (sfd < 0)
		return (errno == ENOENT ? 0 : fail(w, "cannot open the directory", errno));
	if (extc_ident_fd(sfd, &id) < 0) {
		fail(w, "cannot stat the directory", errno);
		goto out;
	}
	if (!extc_ident_same_mount(&id, &w->top)) {
		w->st->skipped_mounts++;
		rv = 0;
		goto out;
	}
	cshape = extc_shape_of_child(w->o, shape, sfd, name);
	if (cshape == EXTC_SHAPE_INCOMPLETE) {
		w->st->skipped_incomplete++;	/* not walked at all */
		rv = 0;
		goto out;
	}
	w->st->dirs++;
	if (w->copy) {
		if (mkdirat(dstfd, dname, 0700) < 0) {
			fail(w, "cannot create the directory", errno);
			goto out;
		}
		dfd = openat(dstfd, dname, EXTC_DIR_OPEN_FLAGS);
		if (dfd < 0) {
			fail(w, "cannot open the new directory", errno);
			goto out;
		}
	}
	if (walk_dir(w, sfd, dfd, depth + 1, cshape) < 0)
		goto out;
	if (w->copy && cshape == EXTC_SHAPE_TRITON_KERNEL && rewrite_groups(w, dfd) < 0)
		goto out;
	if (w->copy) {
		times_of(sb, ts);
		/* the owner keeps rwx: a copy it cannot remove would be worse than none */
		if (fchmod(dfd, (sb->st_mode & 0777) | S_IRWXU) < 0 || futimens(dfd, ts) < 0) {
			fail(w, "cannot set mode and times of the directory", errno);
			goto out;
		}
	}
	rv = 0;
out:
	if (dfd >= 0)
		close(dfd);
	close(sfd);
	return (rv);
}

static int walk_entry(struct walk *w, int srcfd, int dstfd, const char *name, const char *dname,
		      unsigned depth, enum extc_shape shape)
{
	struct stat sb;
	size_t saved;
	int rv;

	switch (extc_shape_name_rule(name, shape == EXTC_SHAPE_INDUCTOR)) {
	case EXTC_NAME_LOCK:
		w->st->skipped_locks++;
		return (0);
	case EXTC_NAME_SKIP:
		return (0);
	case EXTC_NAME_COPY:
		break;
	}
	if (path_push(w, name, &saved) < 0)
		return (-1);
	if (extc_clock_past_deadline(w->o->deadline_ns)) {
		rv = fail(w, "stopped: the deadline passed", ETIMEDOUT);
	} else if (fstatat(srcfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		rv = errno == ENOENT ? 0 : fail(w, "cannot stat", errno);
	} else if (S_ISREG(sb.st_mode)) {
		rv = copy_file(w, srcfd, dstfd, name, dname);
	} else if (S_ISLNK(sb.st_mode)) {
		rv = copy_link(w, srcfd, dstfd, name, dname, &sb);
	} else if (S_ISDIR(sb.st_mode)) {
		rv = copy_dir(w, srcfd, dstfd, name, dname, &sb, depth, shape);
	} else {
		w->st->skipped_special++;
		rv = 0;
	}
	w->path[saved] = '\0';
	return (rv);
}

static int walk_dir(struct walk *w, int srcfd, int dstfd, unsigned depth, enum extc_shape shape)
{
	struct dirent *de;
	DIR *d;
	int rv = -1;

	if (depth > EXTC_WARM_MAX_DEPTH) {
		extc_fmt(w->why, w->whylen, "the tree is deeper than %d levels", EXTC_WARM_MAX_DEPTH);
		return (-1);
	}
	d = extc_fdio_opendir(srcfd);
	if (d == NULL)
		return (fail(w, "cannot read the directory", errno));
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (de == NULL)
			break;
		if (walk_entry(w, srcfd, dstfd, de->d_name, de->d_name, depth, shape) < 0)
			goto out;
	}
	if (errno != 0) {
		fail(w, "cannot read the directory", errno);
		goto out;
	}
	rv = 0;
out:
	closedir(d);
	return (rv);
}

static int walk_init(struct walk *w, int srcfd, const struct extc_warm_opts *o,
		     struct extc_copy_stats *st, bool copy, char *why, size_t whylen)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->st = st;
	w->copy = copy;
	w->why = why;
	w->whylen = whylen;
	if (extc_ident_fd(srcfd, &w->top) < 0) {
		extc_fmt(why, whylen, "cannot stat the source: %s", strerror(errno));
		return (-1);
	}
	if (copy) {
		w->buf = malloc(COPY_BUF_SIZE);
		if (w->buf == NULL) {
			extc_fmt(why, whylen, "out of memory");
			return (-1);
		}
	}
	return (0);
}

int extc_warm_copy_measure(int srcfd, const struct extc_warm_opts *o, struct extc_copy_stats *st,
			   char *why, size_t whylen)
{
	struct walk w;

	memset(st, 0, sizeof(*st));
	if (walk_init(&w, srcfd, o, st, false, why, whylen) < 0)
		return (-1);
	return (walk_dir(&w, srcfd, -1, 0, EXTC_SHAPE_LEAF));
}

int extc_warm_copy_tree(int srcfd, int dstfd, const struct extc_warm_opts *o,
			struct extc_copy_stats *st, char *why, size_t whylen)
{
	struct walk w;
	int rv;

	memset(st, 0, sizeof(*st));
	if (walk_init(&w, srcfd, o, st, true, why, whylen) < 0)
		return (-1);
	rv = walk_dir(&w, srcfd, dstfd, 0, EXTC_SHAPE_LEAF);
	free(w.buf);
	return (rv);
}

int extc_warm_copy_entry(int srcfd, const char *name, int dstfd, const char *dname,
			 const struct extc_warm_opts *o, struct extc_copy_stats *st,
			 char *why, size_t whylen)
{
	struct walk w;
	int rv;

	if (walk_init(&w, srcfd, o, st, true, why, whylen) < 0)
		return (-1);
	/* a published entry is complete by now: nothing below it has torch's rules */
	rv = walk_entry(&w, srcfd, dstfd, name, dname, 1, EXTC_SHAPE_PLAIN);
	free(w.buf);
	return (rv);
}
