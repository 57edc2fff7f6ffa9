/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the sweep of what jobs whose epilog never ran left in the tree. */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/layout.h"
#include "base/text.h"
#include "fs/fs_level.h"
#include "fs/fs_sweep.h"
#include "fs/fs_trash.h"

/* What one sweep takes to every user's level. */
struct sweep {
	const struct extc_tree *tree;
	int trashfd;		/* -1: leftovers are removed in place */
	const struct extc_sweep_calls *calls;
	struct extc_sweep_report *rep;
};

/* One user's level: remove every job tree that is neither held nor alive. */
static void sweep_user(const struct sweep *sw, int nodefd, const char *uname, uid_t uid)
{
	const struct extc_sweep_calls *calls = sw->calls;
	struct extc_sweep_report *rep = sw->rep;
	struct extc_level_walk w;	/* the tree, and a path for messages nobody reads */
	struct extc_rm_limits limits;
	struct extc_rm_report part;
	char why[EXTC_WHY_MAX];
	struct dirent *de;
	DIR *dir = NULL;
	int uidfd = -1;

	extc_level_walk_init(&w, sw->tree);
	if (extc_level_open(&w, nodefd, uname, false, &uidfd, why, sizeof(why)) !=
	    EXTC_LEVEL_FOUND) {
		rep->refused++;
		goto out;
	}
	dir = extc_fdio_opendir(uidfd);
	if (dir == NULL) {
		rep->refused++;
		goto out;
	}
	for (;;) {
		uint32_t jobid;
		int jobfd = -1;

		errno = 0;
		de = readdir(dir);
		if (de == NULL) {
			/* a level not read to its end was not swept: say so */
			if (errno != 0)
				rep->refused++;
			break;
		}
		if (extc_layout_parse_job_name(de->d_name, &jobid) < 0)
			continue;
		w.path[0] = '\0';
		if (extc_level_open(&w, uidfd, de->d_name, false, &jobfd, why, sizeof(why)) !=
		    EXTC_LEVEL_FOUND) {
			rep->refused++;
			continue;
		}
		if (flock(jobfd, LOCK_EX | LOCK_NB) < 0) {
			rep->held++;	/* a step of that job runs here now */
		} else if (calls->alive != NULL && calls->alive(jobid, calls->alive_arg)) {
			rep->alive++;
		} else {
			if (calls->before_retire != NULL)
				calls->before_retire(uid, jobid, calls->retire_arg);
			if (sw->trashfd >= 0 &&
			    extc_trash_move(uidfd, de->d_name, sw->trashfd, de->d_name) == 0) {
				rep->jobs_removed++;
			} else if (extc_remove_tree_at(uidfd, de->d_name,
						       extc_fs_policy_rm_limits(sw->tree->pol, &limits),
						       &part) == 0) {
				rep->jobs_removed++;
				extc_rm_report_add(&rep->rm, &part);
			} else {
				rep->jobs_failed++;
				extc_rm_report_add(&rep->rm, &part);
			}
		}
		close(jobfd);
	}
	extc_level_drop_uid(nodefd, uidfd, uname, &rep->rm);
out:
	if (dir != NULL)
		closedir(dir);
	if (uidfd >= 0)
		close(uidfd);
	extc_level_walk_close(&w);
}

int extc_sweep_leftovers(const struct extc_tree *tree, const struct extc_sweep_calls *calls,
			 struct extc_sweep_report *report, char *why, size_t whylen)
{
	struct extc_level_walk w;
	struct sweep sw;
	struct dirent *de;
	DIR *dir = NULL;
	int trashfd = -1;
	enum extc_level_result opened;
	int rv;

	memset(report, 0, sizeof(*report));
	extc_level_walk_init(&w, tree);
	opened = extc_level_open_top(&w, false, why, whylen);
	if (opened != EXTC_LEVEL_FOUND) {
		rv = (opened == EXTC_LEVEL_ABSENT) ? 0 : -1;
		goto out;
	}
	/* leftovers go to the trash like an epilog's own job; without one, in place */
	if (extc_trash_open(&w, true, &trashfd, why, whylen) != EXTC_LEVEL_FOUND)
		trashfd = -1;
	sw = (struct sweep){ tree, trashfd, calls, report };
	dir = extc_fdio_opendir(w.node);
	if (dir == NULL) {
		extc_fmt(why, whylen, "%s: cannot read: %s", w.path, strerror(errno));
		rv = -1;
		goto out;
	}
	for (;;) {
		uid_t uid;

		errno = 0;
		de = readdir(dir);
		if (de == NULL)
			break;
		if (extc_layout_parse_uid_name(de->d_name, &uid) < 0)
			continue;
		sweep_user(&sw, w.node, de->d_name, uid);
	}
	if (errno != 0) {
		extc_fmt(why, whylen, "%s: cannot read: %s", w.path, strerror(errno));
		rv = -1;
		goto out;
	}
	rv = 0;
out:
	if (dir != NULL)
		closedir(dir);
	if (trashfd >= 0)
		close(trashfd);
	extc_level_walk_close(&w);
	return (rv);
}
