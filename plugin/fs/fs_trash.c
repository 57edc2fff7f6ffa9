/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the root-only trash: a job's tree retired into it, and emptied. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "fs/fs_ident.h"
#include "fs/fs_level.h"
#include "fs/fs_trash.h"
#include "base/layout.h"
#include "base/text.h"

#define TRASH_MODE 0700

/*
 * <base>[/<node>]/.trash: root-owned 0700, so what is moved there is out of
 * every user's reach by path at once, and can be removed at leisure.
 */
enum extc_level_result extc_trash_open(struct extc_level_walk *w, bool create, int *out, char *why,
				       size_t whylen)
{
	struct extc_ident node_id, id;
	bool created = false;
	int fd = -1;
	enum extc_level_result rv = EXTC_LEVEL_REFUSED;

	if (extc_ident_fd(w->node, &node_id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", w->path, strerror(errno));
		goto out;
	}
	if (create) {
		if (mkdirat(w->node, EXTC_TRASH_NAME, TRASH_MODE) == 0)
			created = true;
		else if (errno != EEXIST) {
			extc_fmt(why, whylen, "%s/%s: cannot create: %s", w->path, EXTC_TRASH_NAME,
				 strerror(errno));
			goto out;
		}
	}
	if (extc_ident_open_below(w->node, &node_id, EXTC_TRASH_NAME, &fd, &id) == EXTC_OPEN_MOUNT)
		errno = EBUSY;
	if (fd < 0) {
		if (errno == ENOENT && !create)
			rv = EXTC_LEVEL_ABSENT;
		else
			extc_fmt(why, whylen, "%s/%s: cannot open: %s", w->path, EXTC_TRASH_NAME,
				 extc_level_open_error(w->node, EXTC_TRASH_NAME, errno));
		goto out;
	}
	if (created && (fchown(fd, 0, 0) < 0 || fchmod(fd, TRASH_MODE) < 0)) {
		extc_fmt(why, whylen, "%s/%s: cannot set owner and mode: %s", w->path,
			 EXTC_TRASH_NAME, strerror(errno));
		goto out;
	}
	if (extc_ident_fd(fd, &id) < 0 || !S_ISDIR(id.mode) || id.uid != 0 ||
	    (id.mode & 077) != 0 || !extc_ident_same_mount(&id, &node_id)) {
		extc_fmt(why, whylen, "%s/%s: not a root-owned 0700 directory on the base's mount; "
			 "refusing it", w->path, EXTC_TRASH_NAME);
		goto out;
	}
	*out = fd;
	fd = -1;
	rv = EXTC_LEVEL_FOUND;
out:
	if (fd >= 0)
		close(fd);
	return (rv);
}

/*
 * Move <dirfd>/<name> into the trash under a name no other move can take.
 * Returns 0 when moved, -1 (errno set) when it could not be.
 */
int extc_trash_move(int dirfd, const char *name, int trashfd, const char *tag)
{
	static unsigned seq;
	char tname[96];

	if (extc_fmt(tname, sizeof(tname), "%s.%d.%llx.%u", tag, (int)getpid(),
		     (unsigned long long)extc_clock_monotonic_ns(), seq++) < 0) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	return (renameat2(dirfd, name, trashfd, tname, RENAME_NOREPLACE));
}

enum extc_trash_retire_result extc_trash_retire_job(const struct extc_tree *tree, uid_t uid,
						    uint32_t jobid, void (*before_move)(void *arg),
						    void *arg, bool *moved, char *why, size_t whylen)
{
	char uname[EXTC_NAME_LEN], jname[EXTC_NAME_LEN];
	struct extc_rm_report ignored;
	struct extc_ident id;
	struct extc_level_walk w;
	int trashfd = -1;
	enum extc_level_result opened;
	enum extc_trash_retire_result rv = EXTC_TRASH_RETIRE_DONE;

	*moved = false;
	extc_level_walk_init(&w, tree);
	opened = extc_level_open_user(&w, uid, jobid, uname, jname, why, whylen);
	if (opened != EXTC_LEVEL_FOUND) {
		rv = (opened == EXTC_LEVEL_ABSENT) ? EXTC_TRASH_RETIRE_DONE : EXTC_TRASH_RETIRE_REFUSED;
		goto out;
	}
	if (extc_ident_at(w.uid, jname, &id) < 0) {
		rv = EXTC_TRASH_RETIRE_DONE;		/* no tree for this job here */
		goto out;
	}
	/* a step's detached end still reads the tree: it holds the job level shared */
	if (extc_level_open(&w, w.uid, jname, false, &w.job, why, whylen) != EXTC_LEVEL_FOUND) {
		rv = EXTC_TRASH_RETIRE_REFUSED;
		goto out;
	}
	if (flock(w.job, LOCK_EX | LOCK_NB) < 0) {
		rv = EXTC_TRASH_RETIRE_HELD;
		goto out;
	}
	if (before_move != NULL)
		before_move(arg);
	if (extc_trash_open(&w, true, &trashfd, why, whylen) != EXTC_LEVEL_FOUND ||
	    extc_trash_move(w.uid, jname, trashfd, jname) < 0) {
		if (trashfd >= 0)
			extc_fmt(why, whylen, "%s/%s: cannot move to %s: %s", w.path, jname,
				 EXTC_TRASH_NAME, strerror(errno));
		rv = EXTC_TRASH_RETIRE_NO_TRASH;	/* the tree is fine, the trash is not to be had */
		goto out;
	}
	*moved = true;
	memset(&ignored, 0, sizeof(ignored));
	extc_level_drop_uid(w.node, w.uid, uname, &ignored);
	rv = EXTC_TRASH_RETIRE_DONE;
out:
	if (trashfd >= 0)
		close(trashfd);
	extc_level_walk_close(&w);
	return (rv);
}

/*
 * A trash entry the emptier finished without being stopped, and which is
 * still there, holds what root must not remove (another user's directory)
 * or cannot (an immutable file): trying again at every epilog would report
 * it forever. It goes to .trash/.kept once. An entry with a mount in it
 * never does (the caller's rule): parked, a user's FUSE mount would count
 * against fusermount3's mount_max for good; it stays for the next emptier
 * to detach.
 */
static int keep_entry(int trashfd, const char *name)
{
	struct extc_ident trash_id, id;
	int keptfd = -1, rv = -1;

	if (extc_ident_fd(trashfd, &trash_id) < 0 ||
	    (mkdirat(trashfd, EXTC_TRASH_KEPT_NAME, TRASH_MODE) < 0 && errno != EEXIST) ||
	    extc_ident_open_below(trashfd, &trash_id, EXTC_TRASH_KEPT_NAME, &keptfd, &id) != EXTC_OPEN_OK)
		goto out;
	if (id.uid != 0 || (id.mode & 077) != 0) {
		errno = EPERM;
		goto out;
	}
	rv = renameat2(trashfd, name, keptfd, name, RENAME_NOREPLACE);
out:
	if (keptfd >= 0)
		close(keptfd);
	return (rv);
}

struct kept {
	unsigned n;
	char first[200];	/* "<entry>: <what stayed>" of the first kept entry, escaped */
};

/* Every entry of the trash but .kept, through the removal engine. */
static void empty_entries(DIR *dir, int trashfd, const struct extc_rm_limits *limits,
			  struct extc_rm_report *report, struct kept *kept)
{
	struct extc_rm_report part;
	char text[512], name[96];

	while (report->stopped == NULL) {
		struct dirent *de;

		errno = 0;
		de = readdir(dir);
		if (de == NULL) {
			if (errno != 0)
				extc_rm_report_stop(report, errno, "the trash could not be read");
			break;
		}
		if (extc_fdio_is_dot(de->d_name) || strcmp(de->d_name, EXTC_TRASH_KEPT_NAME) == 0)
			continue;
		if (extc_remove_tree_at(trashfd, de->d_name, limits, &part) < 0 && part.stopped == NULL &&
		    part.mounts == 0 && keep_entry(trashfd, de->d_name) == 0) {
			if (kept->n++ == 0) {
				extc_rm_report_text(&part, text, sizeof(text));
				extc_escape(de->d_name, 80, name, sizeof(name));
				extc_fmt(kept->first, sizeof(kept->first), "%s: %s", name, text);
			}
		}
		extc_rm_report_add(report, &part);
	}
}

int extc_trash_empty(const struct extc_tree *tree, struct extc_rm_report *report, char *why,
		     size_t whylen)
{
	struct extc_rm_limits limits;
	struct kept kept = { 0, "" };
	struct extc_level_walk w;
	DIR *dir = NULL;
	int trashfd = -1;
	enum extc_level_result opened;
	int rv;

	memset(report, 0, sizeof(*report));
	extc_level_walk_init(&w, tree);
	opened = extc_level_open_top(&w, false, why, whylen);
	if (opened == EXTC_LEVEL_FOUND)
		opened = extc_trash_open(&w, false, &trashfd, why, whylen);
	if (opened != EXTC_LEVEL_FOUND) {
		rv = (opened == EXTC_LEVEL_ABSENT) ? 0 : -1;
		goto out;
	}
	/* one emptier at a time; a second one has nothing to add */
	if (flock(trashfd, LOCK_EX | LOCK_NB) < 0) {
		rv = 0;
		goto out;
	}
	dir = extc_fdio_opendir(trashfd);
	if (dir == NULL) {
		extc_fmt(why, whylen, "%s/%s: cannot read: %s", w.path, EXTC_TRASH_NAME,
			 strerror(errno));
		rv = -1;
		goto out;
	}
	if (tree->pol->rm_limits != NULL)
		limits = *tree->pol->rm_limits;
	else
		extc_rm_limits_default(&limits);
	/* nobody reaches the trash by path: a mount there only blocks its own removal */
	limits.detach_mounts = true;
	empty_entries(dir, trashfd, &limits, report, &kept);
	rv = 0;
	if (kept.n != 0) {
		extc_fmt(why, whylen, "%s/%s: moved %u entr%s root would not remove to %s/%s/%s for an "
			 "admin (first: %s)", w.path, EXTC_TRASH_NAME, kept.n, kept.n == 1 ? "y" : "ies",
			 w.path, EXTC_TRASH_NAME, EXTC_TRASH_KEPT_NAME, kept.first);
		rv = -1;
	} else if (report->failed != 0 || report->stopped != NULL) {
		char text[512];

		extc_rm_report_text(report, text, sizeof(text));
		extc_fmt(why, whylen, "%s/%s: %s", w.path, EXTC_TRASH_NAME, text);
		rv = -1;
	}
out:
	if (dir != NULL)
		closedir(dir);
	if (trashfd >= 0)
		close(trashfd);
	extc_level_walk_close(&w);
	return (rv);
}
