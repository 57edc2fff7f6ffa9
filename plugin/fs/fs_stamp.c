/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a node-wide time stamp on the trash, to do something at most once per interval. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fs/fs_ident.h"
#include "fs/fs_level.h"
#include "fs/fs_stamp.h"
#include "fs/fs_trash.h"
#include "base/text.h"

#define STAMP_PREFIX "trusted.ext-cache."

/*
 * The descriptor whose flock makes reading and setting the stamp one step:
 * the node level, the directory the trash is in. Not the trash: its
 * emptier holds that lock for its whole run, and no stamp would come due
 * meanwhile (review 4). Nothing else locks the node level. Not an OFD
 * lock on the trash: a write lock needs a descriptor open for writing,
 * which a directory never has, and read locks exclude nothing. Not a file
 * of its own: the base and the trash hold nothing more. A node level its
 * group or others may read (an admin's 0755 base) could be opened and
 * locked for good by a user: there the trash's lock serves, as before, and
 * a running emptier delays the stamp. Every caller of a node reads the
 * same mode, so two callers never take two different locks.
 */
static int stamp_lock(const struct extc_level_walk *w, int trashfd)
{
	struct extc_ident id;

	if (extc_ident_fd(w->node, &id) == 0 && (id.mode & 044) == 0)
		return (w->node);
	return (trashfd);
}

bool extc_stamp_due(const struct extc_tree *tree, const char *name, uint32_t interval_s,
		    int64_t now)
{
	char why[EXTC_WHY_MAX], attr[64], text[32];
	struct extc_level_walk w;
	bool due = false;
	ssize_t n;
	int trashfd = -1;

	extc_level_walk_init(&w, tree);
	if (extc_fmt(attr, sizeof(attr), "%s%s", STAMP_PREFIX, name) < 0 ||
	    extc_level_open_top(&w, false, why, sizeof(why)) != EXTC_LEVEL_FOUND ||
	    extc_trash_open(&w, true, &trashfd, why, sizeof(why)) != EXTC_LEVEL_FOUND)
		goto out;
	if (flock(stamp_lock(&w, trashfd), LOCK_EX | LOCK_NB) < 0)
		goto out;
	n = fgetxattr(trashfd, attr, text, sizeof(text) - 1);
	if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP)) {
		due = true;
		goto out;
	}
	if (n > 0) {
		char *end;
		long long last;

		text[n] = '\0';
		last = strtoll(text, &end, 10);
		/* a stamp in the future (the clock went back) counts as never */
		if (end != text && last <= now && last + (int64_t)interval_s > now)
			goto out;
	}
	extc_fmt(text, sizeof(text), "%" PRId64, now);
	due = fsetxattr(trashfd, attr, text, strlen(text), 0) == 0;
out:
	if (trashfd >= 0)
		close(trashfd);
	extc_level_walk_close(&w);	/* and with the last descriptor of the locked level, the lock */
	return (due);
}
