/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's eviction pass, as root, in the background after an epilog. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_level.h"
#include "fs_trash.h"
#include "layout.h"
#include "pool_fs.h"
#include "pool_fs_int.h"
#include "pool_job.h"
#include "text.h"

/*
 * A job-mode job's note outlives it only if its epilog never ran (a node
 * crash): root's own file, dropped once older than 'stale'.
 */
static void drop_stale_note(int uidfd, const char *name, int64_t stale)
{
	size_t len = strlen(name), slen = strlen(EXTC_POOL_JOB_SUFFIX);
	struct stat sb;

	if (len <= slen || strcmp(name + len - slen, EXTC_POOL_JOB_SUFFIX) != 0)
		return;
	if (fstatat(uidfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
	    (int64_t)sb.st_mtim.tv_sec < stale)
		unlinkat(uidfd, name, 0);
}

/* Add one user's keys to 'e': busy if a step holds the record. */
static void scan_user(int uidfd, uid_t uid, const struct extc_fs_policy *pol, int64_t stale,
		      struct extc_pool_entry *e, size_t *n)
{
	struct dirent *de;
	int dfd = dup(uidfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL && *n < EXTC_POOL_MAX_ENTRIES) {
		struct extc_pool_entry *x = &e[*n];
		int fd;

		if (!extc_pool_key_name_ok(de->d_name)) {
			drop_stale_note(uidfd, de->d_name, stale);
			continue;
		}
		memset(x, 0, sizeof(*x));
		x->uid = uid;
		strcpy(x->key, de->d_name);
		fd = extc_pool_open_record(uidfd, de->d_name, false, pol);
		if (fd >= 0) {
			extc_pool_read_record(fd, &x->bytes, &x->used);
			x->busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
			close(fd);
		}
		/* without a record it is a leftover of a step killed mid-way: oldest of all */
		(*n)++;
	}
	closedir(d);
}

static size_t scan(struct extc_pool_fds *p, const struct extc_fs_policy *pol, int64_t stale,
		   struct extc_pool_entry *e)
{
	char why[EXTC_WHY_MAX];
	struct dirent *de;
	size_t n = 0, plen = strlen(p->t.path);
	int dfd = dup(p->pool);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return (0);
	}
	while ((de = readdir(d)) != NULL && n < EXTC_POOL_MAX_ENTRIES) {
		uid_t uid;

		if (extc_layout_parse_uid_name(de->d_name, &uid) < 0)
			continue;
		p->t.path[plen] = '\0';
		if (extc_pool_open_user(p, pol, de->d_name, false, why, sizeof(why)) == EXTC_LEVEL_FOUND)
			scan_user(p->uid, uid, pol, stale, e, &n);
		if (p->uid >= 0)
			close(p->uid);
		p->uid = -1;
	}
	p->t.path[plen] = '\0';
	closedir(d);
	return (n);
}

/*
 * Move one key out, under the user's level and the record locked
 * exclusively, and only if no step used it since the scan: its name lies
 * in a root-owned level, so the rename cannot be redirected; a mount on it
 * makes the rename fail, and it stays.
 */
static int evict_one(int uidfd, int trashfd, const struct extc_pool_entry *e,
		     const struct extc_fs_policy *pol)
{
	char rname[EXTC_POOL_KEY_LEN + sizeof(EXTC_POOL_RECORD_SUFFIX)];
	struct extc_pool_entry now;
	int fd, rv = -1;

	if (flock(uidfd, LOCK_EX | LOCK_NB) < 0)
		return (-1);
	fd = extc_pool_open_record(uidfd, e->key, false, pol);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
		goto out;
	if (fd >= 0) {
		extc_pool_read_record(fd, &now.bytes, &now.used);
		if (now.used != e->used)
			goto out;	/* used since the scan */
	}
	if (extc_trash_move(uidfd, e->key, trashfd, "pool") < 0 && errno != ENOENT)
		goto out;
	extc_fmt(rname, sizeof(rname), "%s%s", e->key, EXTC_POOL_RECORD_SUFFIX);
	unlinkat(uidfd, rname, 0);
	rv = 0;
out:
	if (fd >= 0)
		close(fd);
	flock(uidfd, LOCK_UN);
	return (rv);
}

static void evict_chosen(struct extc_pool_fds *p, int trashfd, const struct extc_fs_policy *pol,
			 struct extc_pool_entry *e, size_t n, struct extc_pool_evict_report *rep)
{
	char uname[EXTC_NAME_LEN], why[EXTC_WHY_MAX];
	size_t i, plen = strlen(p->t.path);

	for (i = 0; i < n; i++) {
		rep->busy += e[i].busy;
		if (e[i].verdict == EXTC_POOL_KEEP) {
			rep->bytes_kept += e[i].bytes;
			continue;
		}
		p->t.path[plen] = '\0';
		if (extc_layout_uid_name(e[i].uid, uname, sizeof(uname)) == 0 &&
		    extc_pool_open_user(p, pol, uname, false, why, sizeof(why)) == EXTC_LEVEL_FOUND &&
		    evict_one(p->uid, trashfd, &e[i], pol) == 0) {
			rep->evicted++;
			rep->bytes_evicted += e[i].bytes;
			rep->by_reason[e[i].verdict]++;
		} else {
			rep->failed++;
			rep->bytes_kept += e[i].bytes;
		}
		if (p->uid >= 0)
			close(p->uid);
		p->uid = -1;
	}
	p->t.path[plen] = '\0';
}

int extc_pool_evict(const struct extc_config *cfg, const struct extc_fs_policy *pol,
		    int64_t now, struct extc_pool_evict_report *rep, char *why, size_t whylen)
{
	struct extc_pool_limits lim = { cfg->pool_max, cfg->pool_total_max, cfg->pool_ttl };
	struct extc_pool_entry *e = NULL;
	struct extc_pool_fds p;
	enum extc_level_result opened;
	int trashfd = -1, rv = -1;
	size_t n;

	memset(rep, 0, sizeof(*rep));
	opened = extc_pool_open_levels(cfg, pol, false, &p, why, whylen);
	if (opened == EXTC_LEVEL_ABSENT) {
		rv = 0;		/* no pool on this node yet */
		goto out;
	}
	if (opened != EXTC_LEVEL_FOUND ||
	    extc_trash_open(&p.t, true, &trashfd, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	e = calloc(EXTC_POOL_MAX_ENTRIES, sizeof(*e));
	if (e == NULL) {
		extc_fmt(why, whylen, "out of memory");
		goto out;
	}
	n = scan(&p, pol, now - (int64_t)cfg->pool_ttl * 86400, e);
	rep->keys = (unsigned)n;
	extc_pool_choose(e, n, &lim, now);
	evict_chosen(&p, trashfd, pol, e, n, rep);
	rv = 0;
out:
	free(e);
	if (trashfd >= 0)
		close(trashfd);
	extc_pool_fds_close(&p);
	return (rv);
}
