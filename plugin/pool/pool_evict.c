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

#include "base/clock.h"
#include "base/fdio.h"
#include "fs/fs_level.h"
#include "fs/fs_trash.h"
#include "base/layout.h"
#include "pool/pool_evict.h"
#include "pool/pool_hold.h"
#include "pool/pool_level.h"
#include "pool/pool_job.h"
#include "pool/pool_taken.h"
#include "pool/pool_measure.h"
#include "base/text.h"

/* One pass: its levels, its limits, and what every user's part of it kept. */
struct pass {
	const struct extc_fs_policy *pol;
	struct extc_pool_limits lim;
	struct extc_pool_fds p;
	int trashfd;
	int64_t now, stale;
	struct extc_pool_evict_report *rep;
	struct extc_pool_entry *user;	/* the user at hand's keys */
	size_t user_cap;
	struct extc_pool_entry *kept;	/* every user's kept keys, for pool_total_max */
	size_t nkept, kept_cap;
};

/* One user's share of the pass: its own budget, so no user can spend another's. */
struct user_budget {
	int uidfd;
	uint64_t names_left;
	uint64_t deadline_ns;
};

/* Does 'name' end in 'suffix' (and have more before it)? */
static bool ends_in(const char *name, const char *suffix)
{
	size_t len = strlen(name), slen = strlen(suffix);

	return (len > slen && strcmp(name + len - slen, suffix) == 0);
}

/*
 * A job's notes (its key, what its steps took) outlive it only if its
 * epilog never ran and no sweep found its tree (a node crash); a key's
 * note of a loss waits for a next step that may never come. Root's own
 * files, dropped once older than 'stale'.
 */
static void drop_stale_note(int uidfd, const char *name, int64_t stale)
{
	struct stat sb;

	if (!ends_in(name, EXTC_POOL_JOB_SUFFIX) && !ends_in(name, EXTC_POOL_TAKEN_SUFFIX) &&
	    !ends_in(name, EXTC_POOL_LOST_SUFFIX))
		return;
	if (fstatat(uidfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
	    (int64_t)sb.st_mtim.tv_sec < stale)
		unlinkat(uidfd, name, 0);
}

/* Room for one more entry in 'e' (grown by doubling up to 'max'); NULL when there is none. */
static struct extc_pool_entry *room(struct extc_pool_entry **e, size_t n, size_t *cap, size_t max)
{
	if (n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct extc_pool_entry *grown;

		if (c > max)
			c = max;
		if (c <= n || (grown = realloc(*e, c * sizeof(*grown))) == NULL)
			return (NULL);
		*e = grown;
		*cap = c;
	}
	return (&(*e)[n]);
}

/* One user's keys: busy if a step holds the record; what is beyond the scan's bound waits. */
static size_t scan_user(struct pass *ps, int uidfd, uid_t uid)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d = extc_fdio_opendir(uidfd);

	if (d == NULL)
		return (0);
	while ((de = readdir(d)) != NULL) {
		struct extc_pool_entry *x;
		struct extc_pool_record rec;
		int fd;

		if (!extc_pool_key_name_ok(de->d_name)) {
			drop_stale_note(uidfd, de->d_name, ps->stale);
			continue;
		}
		x = room(&ps->user, n, &ps->user_cap, EXTC_POOL_USER_SCAN_MAX);
		if (x == NULL) {
			ps->rep->left++;
			continue;
		}
		memset(x, 0, sizeof(*x));
		x->uid = uid;
		strcpy(x->key, de->d_name);
		fd = extc_pool_level_open_record(uidfd, de->d_name, false, ps->pol);
		if (fd >= 0) {
			extc_pool_level_read_record(fd, &rec);
			x->used = rec.used;
			x->unmeasurable = rec.unmeasurable;
			x->old_version = rec.old_version;
			x->busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
			close(fd);
		}
		/* without a record it is a leftover of a step killed mid-way: oldest of all */
		n++;
	}
	closedir(d);
	return (n);
}

/* Root's walk of one key, on the user's own budget of names and time. */
static enum extc_pool_measured measure_entry(void *ctx, struct extc_pool_entry *e)
{
	struct user_budget *b = ctx;
	struct extc_pool_measure_limits lim = { EXTC_POOL_MEASURE_DEPTH, b->names_left, b->deadline_ns };
	struct extc_pool_usage use;
	enum extc_pool_measure_result r;

	if (b->names_left == 0)
		return (EXTC_POOL_OVER_BUDGET);
	r = extc_pool_measure_key(b->uidfd, e->key, &lim, &use);
	b->names_left -= use.entries < b->names_left ? use.entries : b->names_left;
	e->bytes = use.bytes;
	e->inodes = use.inodes;
	switch (r) {
	case EXTC_POOL_MEASURED:
	case EXTC_POOL_MEASURE_ABSENT:	/* gone meanwhile: nothing to count */
		return (EXTC_POOL_FITS_BUDGET);
	case EXTC_POOL_MEASURE_TOO_MANY:
		return (EXTC_POOL_OVER_BUDGET);
	default:
		break;
	}
	return (EXTC_POOL_NOT_MEASURED);
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
	struct extc_pool_record now;
	int fd, rv = -1;

	if (flock(uidfd, LOCK_EX | LOCK_NB) < 0)
		return (-1);
	fd = extc_pool_level_open_record(uidfd, e->key, false, pol);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
		goto out;
	if (fd >= 0) {
		extc_pool_level_read_record(fd, &now);
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

/* Act on one verdict: keep it for the node's count, or move it out and count why. */
static void settle(struct pass *ps, int uidfd, const struct extc_pool_entry *e)
{
	struct extc_pool_evict_report *rep = ps->rep;

	if (e->verdict == EXTC_POOL_KEEP) {
		struct extc_pool_entry *k = room(&ps->kept, ps->nkept, &ps->kept_cap, SIZE_MAX / sizeof(*k));
		if (k != NULL) {
			*k = *e;
			ps->nkept++;
		} else {
			/* left out of the node's count: it stays this time, counted as kept */
			rep->bytes_kept += e->bytes;
			rep->inodes_kept += e->inodes;
		}
		return;
	}
	if (evict_one(uidfd, ps->trashfd, e, ps->pol) == 0) {
		rep->evicted++;
		rep->bytes_evicted += e->bytes;
		rep->by_reason[e->verdict]++;
	} else {
		rep->failed++;
		rep->bytes_kept += e->bytes;
		rep->inodes_kept += e->inodes;
	}
}

/* One user's part of the pass, whatever any other user holds. */
static void pass_user(struct pass *ps, const char *uname, uid_t uid)
{
	char why[EXTC_WHY_MAX];
	struct user_budget b;
	size_t i, n;

	if (extc_pool_level_open_user(&ps->p, uname, false, why, sizeof(why)) != EXTC_LEVEL_FOUND)
		return;
	ps->rep->users++;
	n = scan_user(ps, ps->p.uid, uid);
	ps->rep->keys += (unsigned)n;
	b.uidfd = ps->p.uid;
	b.names_left = ps->lim.user_inodes;
	b.deadline_ns = extc_clock_monotonic_ns() + EXTC_POOL_MEASURE_BUDGET_NS;
	extc_pool_policy_choose_user(ps->user, n, &ps->lim, ps->now, measure_entry, &b);
	for (i = 0; i < n; i++) {
		ps->rep->busy += ps->user[i].busy;
		settle(ps, ps->p.uid, &ps->user[i]);
	}
}

static void pass_users(struct pass *ps)
{
	struct dirent *de;
	size_t plen = strlen(ps->p.t.path);
	DIR *d = extc_fdio_opendir(ps->p.pool);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		uid_t uid;

		if (extc_layout_parse_uid_name(de->d_name, &uid) < 0)
			continue;
		ps->p.t.path[plen] = '\0';
		pass_user(ps, de->d_name, uid);
		if (ps->p.uid >= 0)
			close(ps->p.uid);
		ps->p.uid = -1;
	}
	ps->p.t.path[plen] = '\0';
	closedir(d);
}

/* pool_total_max over what every user kept: a user counts for no more than pool_max. */
static void pass_total(struct pass *ps)
{
	char uname[EXTC_NAME_LEN], why[EXTC_WHY_MAX];
	size_t i, plen = strlen(ps->p.t.path);

	if (extc_pool_policy_choose_total(ps->kept, ps->nkept, &ps->lim) < 0) {
		for (i = 0; i < ps->nkept; i++)
			ps->kept[i].verdict = EXTC_POOL_KEEP;
	}
	for (i = 0; i < ps->nkept; i++) {
		struct extc_pool_entry *e = &ps->kept[i];

		if (e->verdict == EXTC_POOL_KEEP) {
			ps->rep->bytes_kept += e->bytes;
			ps->rep->inodes_kept += e->inodes;
			continue;
		}
		ps->p.t.path[plen] = '\0';
		if (extc_layout_uid_name(e->uid, uname, sizeof(uname)) == 0 &&
		    extc_pool_level_open_user(&ps->p, uname, false, why, sizeof(why)) ==
			    EXTC_LEVEL_FOUND) {
			settle(ps, ps->p.uid, e);
		} else {
			ps->rep->failed++;
			ps->rep->bytes_kept += e->bytes;
		}
		if (ps->p.uid >= 0)
			close(ps->p.uid);
		ps->p.uid = -1;
	}
	ps->p.t.path[plen] = '\0';
}

int extc_pool_evict(const struct extc_tree *tree, int64_t now, struct extc_pool_evict_report *rep,
		    char *why, size_t whylen)
{
	const struct extc_config *cfg = tree->cfg;
	struct pass ps;
	enum extc_level_result opened;
	int rv = -1;

	memset(rep, 0, sizeof(*rep));
	memset(&ps, 0, sizeof(ps));
	ps.pol = tree->pol;
	ps.lim.user_max = cfg->pool_max;
	ps.lim.total_max = cfg->pool_total_max;
	ps.lim.ttl_days = cfg->pool_ttl;
	ps.lim.user_keys = cfg->pool_max_keys;
	ps.lim.user_inodes = cfg->pool_max_inodes;
	ps.trashfd = -1;
	ps.now = now;
	ps.stale = now - (int64_t)cfg->pool_ttl * 86400;
	ps.rep = rep;
	opened = extc_pool_level_open(tree, false, &ps.p, why, whylen);
	if (opened == EXTC_LEVEL_ABSENT) {
		rv = 0;		/* no pool on this node yet */
		goto out;
	}
	if (opened != EXTC_LEVEL_FOUND ||
	    extc_trash_open(&ps.p.t, true, &ps.trashfd, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	/* one pass at a time: the one running reaches every user, a second would only double it */
	if (flock(ps.p.pool, LOCK_EX | LOCK_NB) < 0) {
		rep->overlapped = true;
		rv = 0;
		goto out;
	}
	pass_users(&ps);
	pass_total(&ps);
	rv = 0;
out:
	free(ps.user);
	free(ps.kept);
	if (ps.trashfd >= 0)
		close(ps.trashfd);
	extc_pool_level_close(&ps.p);
	return (rv);
}

void extc_pool_evict_report_text(const struct extc_pool_evict_report *rep, char *buf, size_t len)
{
	if (rep->overlapped) {
		extc_fmt(buf, len, "another pass was running: left to it");
		return;
	}
	/* "1 key of 1 user": the line is read by a person */
	extc_fmt(buf, len, "%u %s of %u %s, %u in use; evicted %u (%u unused past pool_ttl, "
		 "%u over pool_max, %u over pool_total_max, %u beyond pool_max_keys, %u over "
		 "pool_max_inodes, %u not measurable, %u of an older key version), %" PRIu64 " bytes; %u could not be; %u left "
		 "for the next pass; %" PRIu64 " bytes and %" PRIu64 " %s kept",
		 rep->keys, rep->keys == 1 ? "key" : "keys", rep->users,
		 rep->users == 1 ? "user" : "users", rep->busy, rep->evicted,
		 rep->by_reason[EXTC_POOL_EVICT_TTL],
		 rep->by_reason[EXTC_POOL_EVICT_USER_MAX], rep->by_reason[EXTC_POOL_EVICT_TOTAL_MAX],
		 rep->by_reason[EXTC_POOL_EVICT_USER_KEYS],
		 rep->by_reason[EXTC_POOL_EVICT_USER_INODES],
		 rep->by_reason[EXTC_POOL_EVICT_UNMEASURABLE],
		 rep->by_reason[EXTC_POOL_EVICT_OLD_VERSION], rep->bytes_evicted, rep->failed,
		 rep->left, rep->bytes_kept, rep->inodes_kept,
		 rep->inodes_kept == 1 ? "inode" : "inodes");
}
