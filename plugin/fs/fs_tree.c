/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the per-node tree <base>/<uid>/<job>/<leaf>, made and removed safely as root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs_ident.h"
#include "fs/fs_level.h"
#include "fs/fs_trash.h"
#include "fs/fs_tree.h"
#include "base/layout.h"
#include "base/text.h"

#define LEAF_MODE 0700

/* Only the directories some tool will not make itself (struct extc_var). */
static int make_subdirs(const struct extc_level_walk *w, int leaffd, const struct extc_ids *ids,
			char *why, size_t whylen)
{
	const struct extc_config *cfg = w->tree.cfg;
	const char *path = w->path;
	size_t i, made;
	int fd = -1;
	int rv = -1;

	for (i = 0; i < cfg->nvars; i++) {
		const char *sub = cfg->vars[i].subdir;

		if (!cfg->vars[i].make_dir)
			continue;
		if (mkdirat(leaffd, sub, LEAF_MODE) < 0 && errno != EEXIST) {
			extc_fmt(why, whylen, "%s/%s: cannot create: %s", path, sub, strerror(errno));
			goto out;
		}
		fd = openat(leaffd, sub, EXTC_DIR_OPEN_FLAGS);
		if (fd < 0) {
			extc_fmt(why, whylen, "%s/%s: cannot open: %s", path, sub,
				 extc_level_open_error(leaffd, sub, errno));
			goto out;
		}
		if (fchmod(fd, LEAF_MODE) < 0 || fchown(fd, ids->uid, ids->gid) < 0) {
			extc_fmt(why, whylen, "%s/%s: cannot hand over: %s", path, sub, strerror(errno));
			goto out;
		}
		close(fd);
		fd = -1;
	}
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	/*
	 * The leaf is still root's and unreachable by users, so these names
	 * are the empty directories just made: rmdir by name needs no
	 * descriptor, and the failure may have been a shortage of them.
	 */
	for (made = 0; rv < 0 && made <= i && made < cfg->nvars; made++) {
		if (cfg->vars[made].make_dir)
			unlinkat(leaffd, cfg->vars[made].subdir, AT_REMOVEDIR);
	}
	return (rv);
}

static int remove_stale_leaf(struct extc_level_walk *w, const char *leaf, char *why, size_t whylen)
{
	struct extc_rm_limits limits;
	struct extc_rm_report rep;
	char text[512];

	if (extc_remove_tree_at(w->job, leaf, extc_fs_policy_rm_limits(w->tree.pol, &limits),
				&rep) == 0)
		return (0);
	extc_rm_report_text(&rep, text, sizeof(text));
	extc_fmt(why, whylen, "%s: a stale directory could not be removed: %s", w->path, text);
	return (-1);
}

/*
 * The leaf is made root-owned inside a root-owned job level, filled, and
 * only then handed to the user with fchmod/fchown on its descriptor: until
 * that moment no user can reach it, and nothing is ever changed by path.
 */
static int make_leaf(struct extc_level_walk *w, const char *leaf, const struct extc_ids *ids,
		     bool reuse, char *why, size_t whylen)
{
	const struct extc_fs_policy *pol = w->tree.pol;
	struct extc_rm_limits limits;
	struct extc_rm_report rep;
	enum extc_open_result res;
	struct extc_ident job_id, id;
	size_t plen = strlen(w->path);
	bool created = false;
	int attempt;
	int fd = -1;
	int rv = -1;

	/*
	 * Leaf creation is serialised per user on the uid level: the job level
	 * cannot serve, every running step of the job holds it shared.
	 */
	if (extc_fmt(w->path + plen, sizeof(w->path) - plen, "/%s", leaf) < 0 ||
	    extc_ident_fd(w->job, &job_id) < 0 ||
	    extc_level_lock(w->uid, LOCK_EX, EXTC_LEVEL_LOCK_WAIT_MS) < 0) {
		extc_fmt(why, whylen, "%s: cannot prepare: %s", w->path, strerror(errno));
		return (-1);
	}
	for (attempt = 0; attempt < 2; attempt++) {
		if (mkdirat(w->job, leaf, LEAF_MODE) == 0) {
			created = true;
		} else if (errno != EEXIST) {
			extc_fmt(why, whylen, "%s: cannot create: %s", w->path, strerror(errno));
			goto out;
		}
		/* a leaf of a job-mode step is the user's: it may carry a mount (FUSE) */
		res = extc_ident_open_below(w->job, &job_id, leaf, &fd, &id);
		if (res == EXTC_OPEN_MOUNT) {
			extc_fmt(why, whylen, "%s: is a mount point; refusing it", w->path);
			goto out;
		}
		if (res != EXTC_OPEN_OK) {
			extc_fmt(why, whylen, "%s: cannot open: %s", w->path,
				 extc_level_open_error(w->job, leaf, errno));
			goto out;
		}
		if (created)
			break;
		if (reuse && id.uid == ids->uid) {
			rv = 0;
			goto out;
		}
		/* left by an earlier run or a half-made attempt: never hand it over */
		close(fd);
		fd = -1;
		if (remove_stale_leaf(w, leaf, why, whylen) < 0)
			goto out;
	}
	if (!created || id.uid != pol->owner) {
		extc_fmt(why, whylen, "%s: changed while being created; refusing it", w->path);
		goto out;
	}
	if (make_subdirs(w, fd, ids, why, whylen) < 0)
		goto out;
	if (fchmod(fd, LEAF_MODE) < 0 || fchown(fd, ids->uid, ids->gid) < 0) {
		extc_fmt(why, whylen, "%s: cannot hand over to uid %u: %s", w->path,
			 (unsigned)ids->uid, strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	/*
	 * Nothing but root could write in the leaf before it was handed over,
	 * so it is usually empty: rmdir needs no descriptor, which matters
	 * when the failure was running out of them.
	 */
	if (rv < 0 && created && unlinkat(w->job, leaf, AT_REMOVEDIR) < 0 && errno != ENOENT)
		extc_remove_tree_at(w->job, leaf, extc_fs_policy_rm_limits(pol, &limits), &rep);
	flock(w->uid, LOCK_UN);
	return (rv);
}

int extc_tree_prepare_base(const struct extc_tree *tree, char *why, size_t whylen)
{
	struct extc_level_walk w;
	enum extc_level_result opened;

	extc_level_walk_init(&w, tree);
	opened = extc_level_open_top(&w, true, why, whylen);
	extc_level_walk_close(&w);
	return (opened == EXTC_LEVEL_FOUND ? 0 : -1);
}

int extc_tree_create(const struct extc_tree *tree, const struct extc_ids *ids, enum extc_mode mode,
		     char *leaf_path, size_t pathlen, char *why, size_t whylen)
{
	char leaf[EXTC_NAME_LEN];
	struct extc_level_walk w;
	int hold = -1;

	extc_level_walk_init(&w, tree);
	if (extc_layout_leaf_name(mode, ids->stepid, leaf, sizeof(leaf)) < 0) {
		extc_fmt(why, whylen, "step %u gets no directory in mode %s", ids->stepid,
			 extc_mode_name(mode));
		goto out;
	}
	if (extc_level_open_top(&w, true, why, whylen) != EXTC_LEVEL_FOUND ||
	    extc_level_open_job(&w, ids->uid, ids->jobid, true, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	/* the longest exported value must fit before anything is handed over */
	if (strlen(w.path) + 1 + strlen(leaf) + 1 + EXTC_SUBDIR_MAX >= pathlen) {
		extc_fmt(why, whylen, "%s/%s: path too long", w.path, leaf);
		goto out;
	}
	if (make_leaf(&w, leaf, ids, mode == EXTC_MODE_JOB || tree->pol->job_private, why,
		      whylen) != 0)
		goto out;
	extc_fmt(leaf_path, pathlen, "%s", w.path);
	hold = w.job;
	w.job = -1;
out:
	extc_level_walk_close(&w);
	return (hold);
}

enum extc_level_result extc_tree_leaf_ident_at(int job_fd, const char *job_path,
					       enum extc_mode mode, uint32_t stepid,
					       struct extc_ident *id, char *why, size_t whylen)
{
	char leaf[EXTC_NAME_LEN];
	struct extc_ident job_id;
	enum extc_level_result rv = EXTC_LEVEL_REFUSED;

	if (extc_layout_leaf_name(mode, stepid, leaf, sizeof(leaf)) < 0) {
		rv = EXTC_LEVEL_ABSENT;
		goto out;
	}
	/*
	 * From memory only: every task of the step asks this, and the user may
	 * have mounted a FUSE filesystem on the leaf, whose daemon need not
	 * answer. A mount there is not the leaf slurmstepd made.
	 */
	if (extc_ident_fd(job_fd, &job_id) < 0 || extc_ident_at(job_fd, leaf, id) < 0) {
		rv = (errno == ENOENT) ? EXTC_LEVEL_ABSENT : EXTC_LEVEL_REFUSED;
		if (rv == EXTC_LEVEL_REFUSED)
			extc_fmt(why, whylen, "%s/%s: cannot stat: %s", job_path, leaf, strerror(errno));
		goto out;
	}
	/* id was filled: extc_ident_at returned 0 (cppcheck's whole-program pass misses that) */
	// cppcheck-suppress ctuuninitvar
	if (!S_ISDIR(id->mode))
		extc_fmt(why, whylen, "%s/%s: is not a directory", job_path, leaf);
	else if (id->mount_root || !extc_ident_same_mount(id, &job_id))
		extc_fmt(why, whylen, "%s/%s: is a mount point", job_path, leaf);
	else
		rv = EXTC_LEVEL_FOUND;
out:
	return (rv);
}

enum extc_level_result extc_tree_leaf_ident(const struct extc_tree *tree,
					    const struct extc_ids *ids, enum extc_mode mode,
					    struct extc_ident *id, char *why, size_t whylen)
{
	struct extc_level_walk w;
	enum extc_level_result rv;

	extc_level_walk_init(&w, tree);
	rv = extc_level_open_top(&w, false, why, whylen);
	if (rv == EXTC_LEVEL_FOUND)
		rv = extc_level_open_job(&w, ids->uid, ids->jobid, false, why, whylen);
	if (rv == EXTC_LEVEL_FOUND)
		rv = extc_tree_leaf_ident_at(w.job, w.path, mode, ids->stepid, id, why, whylen);
	extc_level_walk_close(&w);
	return (rv);
}

int extc_tree_remove_leaf(const struct extc_tree *tree, const struct extc_ids *ids,
			  enum extc_mode mode, struct extc_rm_report *report, char *why,
			  size_t whylen)
{
	struct extc_rm_limits limits;
	char leaf[EXTC_NAME_LEN];
	struct extc_level_walk w;
	int trashfd = -1;
	enum extc_level_result opened;
	int rv;

	memset(report, 0, sizeof(*report));
	extc_level_walk_init(&w, tree);
	if (extc_layout_leaf_name(mode, ids->stepid, leaf, sizeof(leaf)) < 0) {
		rv = 0;
		goto out;
	}
	opened = extc_level_open_top(&w, false, why, whylen);
	if (opened == EXTC_LEVEL_FOUND)
		opened = extc_level_open_job(&w, ids->uid, ids->jobid, false, why, whylen);
	if (opened == EXTC_LEVEL_ABSENT) {
		rv = 0;		/* nothing was ever made here */
		goto out;
	}
	if (opened == EXTC_LEVEL_REFUSED) {
		rv = -1;
		goto out;
	}
	rv = extc_remove_tree_at(w.job, leaf, extc_fs_policy_rm_limits(tree->pol, &limits), report);
	if (rv < 0) {
		char text[512], ignored[256];

		extc_rm_report_text(report, text, sizeof(text));
		extc_fmt(why, whylen, "%s/%s: %s", w.path, leaf, text);
		/*
		 * Out of time (a huge cache, or a process still writing into
		 * it): the rest goes to the trash in one rename, out of every
		 * user's reach, and the job epilog's emptier finishes it.
		 */
		if (report->stopped != NULL && report->failed == 0 &&
		    extc_trash_open(&w, true, &trashfd, ignored, sizeof(ignored)) == EXTC_LEVEL_FOUND &&
		    extc_trash_move(w.job, leaf, trashfd, leaf) == 0)
			extc_fmt(why, whylen, "%s/%s: %s; moved what is left to %s", w.path, leaf,
				 text, EXTC_TRASH_NAME);
	}
out:
	if (trashfd >= 0)
		close(trashfd);
	extc_level_walk_close(&w);
	return (rv);
}

static bool same_dir(const struct extc_ident *a, const struct extc_ident *b)
{
	return (a->dev == b->dev && a->ino == b->ino);
}

/*
 * The job level's path walked down to (as every walk: nothing followed or
 * crossed, nothing made) and compared with the level h->job_fd holds;
 * then the leaf below the held level, from memory, compared with h->leaf_id. 'w'
 * stays open for the caller (its node level for the trash), 'leaf' gets
 * the leaf's name (EXTC_NAME_LEN).
 */
static enum extc_tree_held_result held_walk(struct extc_level_walk *w,
					    const struct extc_tree_held *h, char *leaf,
					    char *why, size_t whylen)
{
	const struct extc_ids *ids = h->ids;
	const struct extc_ident *leaf_id = h->leaf_id;
	int job_fd = h->job_fd;
	enum extc_mode mode = h->mode;
	struct extc_ident held, at_path, seen;
	enum extc_level_result opened;

	if (extc_layout_leaf_name(mode, ids->stepid, leaf, EXTC_NAME_LEN) < 0)
		return (EXTC_TREE_HELD_GONE);
	if (leaf_id == NULL || extc_ident_fd(job_fd, &held) < 0) {
		extc_fmt(why, whylen, "%s", leaf_id == NULL ? "its identity was never recorded" :
			 "the job level it holds cannot be identified");
		return (EXTC_TREE_HELD_REFUSED);
	}
	opened = extc_level_open_top(w, false, why, whylen);
	if (opened == EXTC_LEVEL_FOUND)
		opened = extc_level_open_job(w, ids->uid, ids->jobid, false, why, whylen);
	if (opened == EXTC_LEVEL_REFUSED)
		return (EXTC_TREE_HELD_REFUSED);
	if (opened == EXTC_LEVEL_ABSENT) {
		extc_fmt(why, whylen, "the job level it holds is no longer at its path");
		return (EXTC_TREE_HELD_REPLACED);
	}
	if (extc_ident_fd(w->job, &at_path) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", w->path, strerror(errno));
		return (EXTC_TREE_HELD_REFUSED);
	}
	if (!same_dir(&held, &at_path)) {
		extc_fmt(why, whylen, "%s: another job level has its path", w->path);
		return (EXTC_TREE_HELD_REPLACED);
	}
	switch (extc_tree_leaf_ident_at(job_fd, w->path, mode, ids->stepid, &seen, why, whylen)) {
	case EXTC_LEVEL_ABSENT:
		return (EXTC_TREE_HELD_GONE);
	case EXTC_LEVEL_REFUSED:
		return (EXTC_TREE_HELD_REFUSED);
	case EXTC_LEVEL_FOUND:
		break;
	}
	if (!same_dir(&seen, leaf_id)) {
		extc_fmt(why, whylen, "%s/%s: another directory has its path", w->path, leaf);
		return (EXTC_TREE_HELD_REPLACED);
	}
	return (EXTC_TREE_HELD_OURS);
}

enum extc_tree_held_result extc_tree_held_check(const struct extc_tree *tree,
						const struct extc_tree_held *h, char *why, size_t whylen)
{
	char leaf[EXTC_NAME_LEN];
	struct extc_level_walk w;
	enum extc_tree_held_result rv;

	extc_level_walk_init(&w, tree);
	rv = held_walk(&w, h, leaf, why, whylen);
	extc_level_walk_close(&w);
	return (rv);
}

enum extc_tree_held_result extc_tree_remove_held_leaf(const struct extc_tree *tree,
						      const struct extc_tree_held *h,
						      struct extc_rm_report *report, char *why, size_t whylen)
{
	char leaf[EXTC_NAME_LEN], text[512], ignored[256];
	struct extc_rm_limits limits;
	struct extc_level_walk w;
	struct extc_ident seen;
	int trashfd = -1;
	enum extc_tree_held_result rv;

	memset(report, 0, sizeof(*report));
	extc_level_walk_init(&w, tree);
	rv = held_walk(&w, h, leaf, why, whylen);
	if (rv != EXTC_TREE_HELD_OURS ||
	    extc_remove_tree_at_ident(h->job_fd, leaf, h->leaf_id,
				      extc_fs_policy_rm_limits(tree->pol, &limits), report) == 0)
		goto out;
	if (report->stopped == extc_rm_not_expected) {
		/* replaced between the check and the engine's own look: the engine left it */
		extc_fmt(why, whylen, "%s/%s: another directory has its path", w.path, leaf);
		rv = EXTC_TREE_HELD_REPLACED;
		goto out;
	}
	rv = EXTC_TREE_HELD_REFUSED;
	extc_rm_report_text(report, text, sizeof(text));
	extc_fmt(why, whylen, "%s/%s: %s", w.path, leaf, text);
	/*
	 * Out of time: the rest to the trash in one rename, as
	 * extc_tree_remove_leaf does, once the name is seen to be still the
	 * step's leaf. Between that look and the rename a later run could
	 * only have replaced it by first removing this half-emptied one.
	 */
	if (report->stopped != NULL && report->failed == 0 &&
	    extc_ident_at(h->job_fd, leaf, &seen) == 0 && same_dir(&seen, h->leaf_id) &&
	    extc_trash_open(&w, true, &trashfd, ignored, sizeof(ignored)) == EXTC_LEVEL_FOUND &&
	    extc_trash_move(h->job_fd, leaf, trashfd, leaf) == 0)
		extc_fmt(why, whylen, "%s/%s: %s; moved what is left to %s", w.path, leaf, text,
			 EXTC_TRASH_NAME);
out:
	if (trashfd >= 0)
		close(trashfd);
	extc_level_walk_close(&w);
	return (rv);
}

int extc_tree_remove_job(const struct extc_tree *tree, uid_t uid, uint32_t jobid,
			 struct extc_rm_report *report, char *why, size_t whylen)
{
	char uname[EXTC_NAME_LEN], jname[EXTC_NAME_LEN];
	struct extc_rm_limits limits;
	struct extc_level_walk w;
	enum extc_level_result opened;
	int rv;

	memset(report, 0, sizeof(*report));
	extc_level_walk_init(&w, tree);
	opened = extc_level_open_user(&w, uid, jobid, uname, jname, why, whylen);
	if (opened != EXTC_LEVEL_FOUND) {
		rv = (opened == EXTC_LEVEL_ABSENT) ? 0 : -1;
		goto out;
	}
	if (extc_remove_tree_at(w.uid, jname, extc_fs_policy_rm_limits(tree->pol, &limits),
				report) < 0) {
		char text[512];

		extc_rm_report_text(report, text, sizeof(text));
		extc_fmt(why, whylen, "%s/%s: %s", w.path, jname, text);
		rv = -1;
		goto out;
	}
	extc_level_drop_uid(w.node, w.uid, uname, report);
	rv = 0;
out:
	extc_level_walk_close(&w);
	return (rv);
}
