/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the user's level <base>[/<node>]/<uid> of an epilog: opened, and dropped once empty. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/layout.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "fs/fs_level.h"
#include "fs/fs_user_level.h"

/* Drop a user's level once empty and not in use; creators hold it shared while they use it. */
void extc_level_drop_uid(int nodefd, int uidfd, const char *uname, struct extc_rm_report *report)
{
	struct extc_ident held, named;

	/*
	 * Never waited for: the holder is a step of this user being set up,
	 * and an empty level left here goes at the next epilog or sweep.
	 */
	if (flock(uidfd, LOCK_EX | LOCK_NB) < 0)
		return;
	/*
	 * Only the holder of this lock removes this directory, so if the name
	 * still leads to it now it does so at the unlink too; if it leads to a
	 * newer level, that one is in use by whoever made it.
	 */
	if (extc_ident_fd(uidfd, &held) == 0 && held.nlink > 0 &&
	    extc_ident_at(nodefd, uname, &named) == 0 &&
	    named.dev == held.dev && named.ino == held.ino &&
	    unlinkat(nodefd, uname, AT_REMOVEDIR) == 0)
		report->removed++;
	flock(uidfd, LOCK_UN);
}

/*
 * Names of a job's levels and the user's level opened (no creation), for
 * the epilog's paths: found, absent (or ids never managed), or refused
 * ('why' says why).
 */
enum extc_level_result extc_level_open_user(struct extc_level_walk *w, uid_t uid, uint32_t jobid,
					    char *uname, char *jname, char *why, size_t whylen)
{
	enum extc_level_result rv;

	if (extc_layout_uid_name(uid, uname, EXTC_NAME_LEN) < 0 ||
	    extc_layout_job_name(jobid, jname, EXTC_NAME_LEN) < 0)
		return (EXTC_LEVEL_ABSENT);
	rv = extc_level_open_top(w, false, why, whylen);
	if (rv == EXTC_LEVEL_FOUND)
		rv = extc_level_open(w, w->node, uname, false, &w->uid, why, whylen);
	return (rv);
}
