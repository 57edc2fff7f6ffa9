/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a node-wide time stamp on the trash, to do something at most once per interval. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fs/fs_level.h"
#include "fs/fs_stamp.h"
#include "fs/fs_trash.h"
#include "base/text.h"

#define STAMP_PREFIX "trusted.ext-cache."

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
	    extc_trash_open(&w, true, &trashfd, why, sizeof(why)) != EXTC_LEVEL_FOUND ||
	    flock(trashfd, LOCK_EX | LOCK_NB) < 0)
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
		close(trashfd);	/* and with it the lock */
	extc_level_walk_close(&w);
	return (due);
}
