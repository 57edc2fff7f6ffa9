/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: copying a key's newest good generation from the site tier into the node pool. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "fs/fs_remove.h"
#include "tier/tier_copy.h"
#include "tier/tier_entries.h"
#include "tier/tier_fetch.h"
#include "tier/tier_gen.h"
#include "tier/tier_manifest.h"
#include "tier/tier_unpack.h"

/* A fetcher's stage in the node pool's key directory; its lock says it is alive. */
#define FETCH_STAGE_PREFIX EXTC_OWN_PREFIX "tier."
/* The generations a listing looks at, the bad-marked ones among them. */
#define FETCH_LIST_MAX 256

struct fetch {
	const struct extc_tier_fetch_in *in;
	struct extc_tier_fetch_res *r;
	int tierkeyfd, keyfd;
	char stage[EXTC_TIER_GEN_NAME_MAX + 32];
};

/*
 * A stage is the node's, in the user's key directory; a fetcher holds an
 * exclusive lock on it for as long as it works. One whose lock can be
 * taken was left by a fetcher that is gone (the kernel drops the lock of a
 * killed process): removed, under the lock. This process's own name is
 * always a leftover.
 */
static void sweep_stages(struct fetch *f)
{
	struct dirent *de;
	DIR *d = extc_fdio_opendir(f->keyfd);

	while (d != NULL && (de = readdir(d)) != NULL) {
		struct extc_rm_report rm;
		int fd;

		if (!extc_has_prefix(de->d_name, FETCH_STAGE_PREFIX))
			continue;
		fd = openat(f->keyfd, de->d_name, EXTC_DIR_OPEN_FLAGS);
		if (fd >= 0 && (strcmp(de->d_name, f->stage) == 0 || flock(fd, LOCK_EX | LOCK_NB) == 0))
			extc_remove_tree_at(f->keyfd, de->d_name, NULL, &rm);
		if (fd >= 0)
			close(fd);
	}
	if (d != NULL)
		closedir(d);
}

/* A fresh stage, locked, and still the one at its name once locked. -1: 'why'. */
static int make_stage(struct fetch *f, char *why, size_t whylen)
{
	struct stat held, named;
	int fd = -1;

	if (mkdirat(f->keyfd, f->stage, 0700) < 0 ||
	    (fd = openat(f->keyfd, f->stage, EXTC_DIR_OPEN_FLAGS)) < 0 ||
	    flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &held) < 0 ||
	    fstatat(f->keyfd, f->stage, &named, AT_SYMLINK_NOFOLLOW) < 0 ||
	    held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
		extc_fmt(why, whylen, "cannot make a stage in the node's key directory: %s",
			 extc_tier_copy_write_error(errno ? errno : EEXIST));
		if (fd >= 0)
			close(fd);
		return (-1);
	}
	return (fd);
}

/* One top-level entry of the stage into the key directory, unless it has one of the name. */
static int move_one(struct fetch *f, int stagefd, const char *name, char *why, size_t whylen)
{
	struct stat sb;
	bool isdir = fstatat(stagefd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode);

	if (extc_fdio_rename_noreplace(stagefd, name, f->keyfd, name, isdir) == 0)
		return (0);
	if (errno == EEXIST || errno == ENOTEMPTY) {
		f->r->present++;	/* the node has its own: it stays */
		return (0);
	}
	extc_fmt(why, whylen, "cannot move the copy into the node's key directory: %s",
		 strerror(errno));
	return (-1);
}

/* The stage's top-level entries into the key directory, where it has none of the name. */
static int move_in(struct fetch *f, int stagefd, char *why, size_t whylen)
{
	struct dirent *de;
	DIR *d = extc_fdio_opendir(stagefd);
	int rv = 0;

	if (d == NULL) {
		extc_fmt(why, whylen, "cannot read the stage: %s", strerror(errno));
		return (-1);
	}
	while (rv == 0 && (de = readdir(d)) != NULL)
		if (!extc_fdio_is_dot(de->d_name))
			rv = move_one(f, stagefd, de->d_name, why, whylen);
	closedir(d);
	return (rv);
}

/* What one generation's trial came to. */
enum trial {
	TRIAL_TAKEN,		/* copied and moved in */
	TRIAL_BAD,		/* not what its manifest says: to be marked */
	TRIAL_PASSED,		/* unreadable for now, of another version, or too large */
	TRIAL_FAILED,		/* the node's side */
	TRIAL_TIMEOUT,
};

static enum trial unpacked(struct fetch *f, const struct extc_tier_unpack_req *req, char *why,
			   size_t whylen)
{
	struct extc_tier_unpack_count c;

	switch (extc_tier_unpack(req, &c, why, whylen)) {
	case EXTC_TIER_UNPACK_DONE:
		break;
	case EXTC_TIER_UNPACK_MISMATCH:
		return (TRIAL_BAD);
	case EXTC_TIER_UNPACK_UNREADABLE:
		return (TRIAL_PASSED);
	case EXTC_TIER_UNPACK_LOCAL_FAILED:
		return (TRIAL_FAILED);
	case EXTC_TIER_UNPACK_TIMEOUT:
		return (TRIAL_TIMEOUT);
	}
	if (extc_clock_past_deadline(f->in->deadline_ns)) {
		extc_fmt(why, whylen, "out of time before moving the copy in");
		return (TRIAL_TIMEOUT);
	}
	if (move_in(f, req->dstfd, why, whylen) < 0)
		return (TRIAL_FAILED);
	f->r->files = c.files;
	f->r->dirs = c.dirs;
	f->r->bytes = c.bytes;
	return (TRIAL_TAKEN);
}

static enum trial try_gen(struct fetch *f, const char *gen, char *why, size_t whylen)
{
	struct extc_tier_unpack_req req = { .deadline_ns = f->in->deadline_ns,
					    .after_file = f->in->after_file, .ctx = f->in->ctx };
	enum extc_tier_manifest_result mres;
	enum trial t = TRIAL_PASSED;
	struct extc_rm_report rm;
	uint64_t entries, bytes;
	char *text = NULL;

	req.dstfd = -1;
	req.genfd = openat(f->tierkeyfd, gen, EXTC_DIR_OPEN_FLAGS);
	if (req.genfd < 0) {	/* pruned since it was listed */
		extc_fmt(why, whylen, "cannot open it: %s", strerror(errno));
		goto out;
	}
	mres = extc_tier_manifest_read(req.genfd, &text, &req.len, why, whylen);
	if (mres == EXTC_TIER_MANIFEST_OK)
		mres = extc_tier_entries_check(text, req.len, &entries, &bytes, why, whylen);
	if (mres != EXTC_TIER_MANIFEST_OK) {
		t = mres == EXTC_TIER_MANIFEST_INVALID ? TRIAL_BAD : TRIAL_PASSED;
		goto out;
	}
	if (f->in->max_bytes != 0 && bytes > f->in->max_bytes) {
		extc_fmt(why, whylen, "it holds %llu bytes, more than the %llu allowed",
			 (unsigned long long)bytes, (unsigned long long)f->in->max_bytes);
		goto out;
	}
	req.text = text;
	req.dstfd = make_stage(f, why, whylen);
	t = req.dstfd < 0 ? TRIAL_FAILED : unpacked(f, &req, why, whylen);
	f->r->entries = t == TRIAL_TAKEN ? entries : 0;
out:
	if (req.dstfd >= 0) {	/* removed under its lock, then let go */
		extc_remove_tree_at(f->keyfd, f->stage, NULL, &rm);
		close(req.dstfd);
	}
	free(text);
	if (req.genfd >= 0)
		close(req.genfd);
	return (t);
}

/* Try the 'keep' newest unmarked generations, newest first, until one is taken. */
static enum extc_tier_fetch_result try_newest(struct fetch *f, const struct extc_tier_gen *gens,
					      size_t n, char *why, size_t whylen)
{
	unsigned keep = f->in->keep ? f->in->keep : 1, tried = 0;
	char one[EXTC_WHY_MAX];
	size_t i;

	why[0] = '\0';
	for (i = 0; i < n && tried < keep; i++) {
		if (gens[i].bad)
			continue;
		tried++;
		switch (try_gen(f, gens[i].name, one, sizeof(one))) {
		case TRIAL_TAKEN:
			extc_fmt(f->r->gen, sizeof(f->r->gen), "%s", gens[i].name);
			return (EXTC_TIER_FETCHED);
		case TRIAL_FAILED:
			extc_fmt(why, whylen, "%s: %s", gens[i].name, one);
			return (EXTC_TIER_FETCH_FAILED);
		case TRIAL_TIMEOUT:
			extc_fmt(why, whylen, "%s: %s", gens[i].name, one);
			return (EXTC_TIER_FETCH_TIMEOUT);
		case TRIAL_BAD:
			extc_tier_gen_mark_bad(f->tierkeyfd, gens[i].name);
			break;
		case TRIAL_PASSED:
			break;
		}
		f->r->skipped_bad++;
		if (why[0] == '\0')	/* the newest's reason: the one a user most wants */
			extc_fmt(why, whylen, "no generation of the %u newest could be taken; %s: %s",
				 keep, gens[i].name, one);
	}
	if (tried == 0)
		extc_fmt(why, whylen, "every generation of the key is marked bad");
	return (EXTC_TIER_NONE_VALID);
}

enum extc_tier_fetch_result extc_tier_fetch(int tierfd, int keyfd,
					    const struct extc_tier_fetch_in *in,
					    struct extc_tier_fetch_res *r, char *why,
					    size_t whylen)
{
	uint64_t start = extc_clock_monotonic_ns();
	struct fetch f = { .in = in, .r = r, .tierkeyfd = -1, .keyfd = keyfd };
	enum extc_tier_fetch_result rv = EXTC_TIER_FETCH_FAILED;
	struct extc_tier_gen *gens = NULL;
	size_t n = 0;
	int opened;

	memset(r, 0, sizeof(*r));
	if (!extc_tier_gen_tag_ok(in->tag) ||
	    extc_fmt(f.stage, sizeof(f.stage), "%s%s", FETCH_STAGE_PREFIX, in->tag) < 0) {
		extc_fmt(why, whylen, "the tag is not 1 to %d of [A-Za-z0-9._-]", EXTC_TIER_TAG_MAX);
		goto out;
	}
	sweep_stages(&f);
	if (extc_clock_past_deadline(in->deadline_ns)) {
		extc_fmt(why, whylen, "out of time before fetching");
		rv = EXTC_TIER_FETCH_TIMEOUT;
		goto out;
	}
	opened = extc_tier_gen_open_key(tierfd, in->key, false, &f.tierkeyfd, why, whylen);
	if (opened != 0 || (gens = calloc(FETCH_LIST_MAX, sizeof(*gens))) == NULL ||
	    extc_tier_gen_list(f.tierkeyfd, gens, FETCH_LIST_MAX, &n, why, whylen) < 0) {
		if (opened == 0 && gens == NULL)
			extc_fmt(why, whylen, "out of memory for the listing");
		rv = opened == 1 ? EXTC_TIER_EMPTY : EXTC_TIER_FETCH_FAILED;
		if (opened == 1)
			extc_fmt(why, whylen, "the tier has no directory for the key");
		goto out;
	}
	if (n == 0) {
		extc_fmt(why, whylen, "the tier has no generation for the key");
		rv = EXTC_TIER_EMPTY;
		goto out;
	}
	rv = try_newest(&f, gens, n, why, whylen);
out:
	free(gens);
	if (f.tierkeyfd >= 0)
		close(f.tierkeyfd);
	r->ns = extc_clock_monotonic_ns() - start;
	return (rv);
}
