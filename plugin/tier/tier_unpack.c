/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: copying a generation out of the tier as its manifest lists it, each file checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "tier/tier_copy.h"
#include "tier/tier_entries.h"
#include "tier/tier_unpack.h"

/* A directory of the walk: open on both sides until its contents are done. */
struct level {
	int sfd, dfd;
	unsigned mode;
	struct timespec mtime;
};

struct unpack {
	const struct extc_tier_unpack_req *req;
	struct extc_tier_unpack_count *c;
	dev_t dev;			/* the generation's: a directory elsewhere is a mismatch */
	char *buf;
	char *why;
	size_t whylen;
	struct extc_tier_entries cur;
	struct extc_tier_entry e;
	struct level dirs[EXTC_TIER_MANIFEST_MAX_DEPTH];
	unsigned ndirs;
};

typedef enum extc_tier_unpack_result result;

static result say(struct unpack *u, result res, const char *what, int err)
{
	char shown[160];

	extc_escape(u->e.path, 120, shown, sizeof(shown));
	if (err != 0)
		extc_fmt(u->why, u->whylen, "%s: %s: %s", shown, what,
			 extc_tier_copy_write_error(err));
	else
		extc_fmt(u->why, u->whylen, "%s: %s", shown, what);
	return (res);
}

/* A source-side error: the generation lacks what it lists, or cannot be read for now. */
static result source_error(struct unpack *u, const char *what, int err)
{
	bool missing = err == ENOENT || err == ENOTDIR || err == ELOOP;

	return (say(u, missing ? EXTC_TIER_UNPACK_MISMATCH : EXTC_TIER_UNPACK_UNREADABLE, what, err));
}

static void set_meta(int fd, unsigned mode, const struct timespec *mtime)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, *mtime };

	fchmod(fd, mode);
	futimens(fd, ts);
}

/* Done with the directories at 'depth' and deeper: their modes and mtimes, after their contents. */
static void close_levels(struct unpack *u, unsigned depth)
{
	while (u->ndirs > depth) {
		struct level *l = &u->dirs[--u->ndirs];

		set_meta(l->dfd, l->mode, &l->mtime);
		close(l->dfd);
		close(l->sfd);
	}
}

static result unpack_dir(struct unpack *u, int psfd, int pdfd)
{
	struct level *l = &u->dirs[u->ndirs];
	struct stat sb;

	l->sfd = openat(psfd, u->e.name, EXTC_DIR_OPEN_FLAGS);
	if (l->sfd < 0)
		return (source_error(u, "cannot open the directory", errno));
	if (fstat(l->sfd, &sb) < 0 || sb.st_dev != u->dev) {
		close(l->sfd);
		return (say(u, EXTC_TIER_UNPACK_MISMATCH, "not on the generation's filesystem", 0));
	}
	if (mkdirat(pdfd, u->e.name, 0700) < 0 ||
	    (l->dfd = openat(pdfd, u->e.name, EXTC_DIR_OPEN_FLAGS)) < 0) {
		close(l->sfd);
		return (say(u, EXTC_TIER_UNPACK_LOCAL_FAILED, "cannot make its copy", errno));
	}
	l->mode = u->e.mode;
	l->mtime = u->e.mtime;
	u->ndirs++;
	u->c->dirs++;
	return (EXTC_TIER_UNPACK_DONE);
}

/* The bytes, checked against the manifest as they are copied. */
static result unpack_data(struct unpack *u, int in, int out)
{
	struct extc_digest d;
	uint64_t copied = 0;

	extc_digest_init(&d);
	switch (extc_tier_copy_data(in, out, u->buf, EXTC_TIER_COPY_BUF, u->e.size,
				    u->req->deadline_ns, &d, &copied)) {
	case EXTC_TIER_COPY_DONE:
		break;
	case EXTC_TIER_COPY_LONGER:
		return (say(u, EXTC_TIER_UNPACK_MISMATCH, "longer than its manifest says", 0));
	case EXTC_TIER_COPY_READ_FAILED:
		return (source_error(u, "cannot read", errno));
	case EXTC_TIER_COPY_WRITE_FAILED:
		return (say(u, EXTC_TIER_UNPACK_LOCAL_FAILED, "cannot write its copy", errno));
	case EXTC_TIER_COPY_TIMEOUT:
		return (say(u, EXTC_TIER_UNPACK_TIMEOUT, "out of time while copying", 0));
	}
	if (copied != u->e.size)
		return (say(u, EXTC_TIER_UNPACK_MISMATCH, "shorter than its manifest says", 0));
	if (extc_digest_final(&d) != u->e.digest)
		return (say(u, EXTC_TIER_UNPACK_MISMATCH, "its bytes are not those its manifest "
			    "has the digest of", 0));
	u->c->bytes += copied;
	return (EXTC_TIER_UNPACK_DONE);
}

static result unpack_file(struct unpack *u, int psfd, int pdfd)
{
	result res;
	struct stat sb;
	int in, out = -1;

	in = openat(psfd, u->e.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (in < 0)
		return (source_error(u, "cannot open", errno));
	if (fstat(in, &sb) < 0) {
		res = source_error(u, "cannot stat", errno);
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_dev != u->dev || (uint64_t)sb.st_size != u->e.size) {
		res = say(u, EXTC_TIER_UNPACK_MISMATCH, "not a regular file of the size its "
			  "manifest says", 0);
		goto out;
	}
	out = openat(pdfd, u->e.name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		res = say(u, EXTC_TIER_UNPACK_LOCAL_FAILED, "cannot create its copy", errno);
		goto out;
	}
	res = unpack_data(u, in, out);
	if (res != EXTC_TIER_UNPACK_DONE)
		goto out;
	set_meta(out, u->e.mode, &u->e.mtime);
	if (close(out) < 0)
		res = say(u, EXTC_TIER_UNPACK_LOCAL_FAILED, "cannot write its copy", errno);
	else
		u->c->files++;
	out = -1;
out:
	if (out >= 0)
		close(out);
	close(in);
	return (res);
}

static result unpack_entries(struct unpack *u)
{
	enum extc_tier_manifest_result mres;
	result res = EXTC_TIER_UNPACK_DONE;
	int more;

	extc_tier_entries_begin(&u->cur, u->req->text, u->req->len);
	while (res == EXTC_TIER_UNPACK_DONE &&
	       (more = extc_tier_entries_next(&u->cur, &u->e, &mres, u->why, u->whylen)) > 0) {
		int psfd, pdfd;

		if (extc_clock_past_deadline(u->req->deadline_ns))
			return (say(u, EXTC_TIER_UNPACK_TIMEOUT, "out of time", 0));
		close_levels(u, u->e.depth);
		/* the reading checked that the entry's directory is the walk's deepest */
		psfd = u->e.depth == 0 ? u->req->genfd : u->dirs[u->e.depth - 1].sfd;
		pdfd = u->e.depth == 0 ? u->req->dstfd : u->dirs[u->e.depth - 1].dfd;
		if (u->e.type == EXTC_TIER_ENTRY_DIR) {
			res = unpack_dir(u, psfd, pdfd);
		} else {
			res = unpack_file(u, psfd, pdfd);
			if (res == EXTC_TIER_UNPACK_DONE && u->req->after_file != NULL)
				u->req->after_file(u->req->ctx);
		}
	}
	if (res == EXTC_TIER_UNPACK_DONE && more < 0)
		res = EXTC_TIER_UNPACK_MISMATCH;
	return (res);
}

enum extc_tier_unpack_result extc_tier_unpack(const struct extc_tier_unpack_req *req,
					      struct extc_tier_unpack_count *c, char *why,
					      size_t whylen)
{
	struct unpack *u = calloc(1, sizeof(*u));	/* three paths' worth: off the stack */
	struct stat sb;
	result res = EXTC_TIER_UNPACK_LOCAL_FAILED;

	memset(c, 0, sizeof(*c));
	if (u == NULL || (u->buf = malloc(EXTC_TIER_COPY_BUF)) == NULL) {
		extc_fmt(why, whylen, "out of memory for the copy");
		goto out;
	}
	u->req = req;
	u->c = c;
	u->why = why;
	u->whylen = whylen;
	if (fstat(req->genfd, &sb) < 0) {
		extc_fmt(why, whylen, "cannot stat the generation: %s", strerror(errno));
		res = EXTC_TIER_UNPACK_UNREADABLE;
		goto out;
	}
	u->dev = sb.st_dev;
	res = unpack_entries(u);
	close_levels(u, 0);
out:
	if (u != NULL)
		free(u->buf);
	free(u);
	return (res);
}
