/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: seeding a leaf from a prepared cache, publishing its builds back atomically. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fs_ident.h"
#include "fs_remove.h"
#include "text.h"
#include "warm_copy.h"

#define PUBLISH_DIR_MODE 0755	/* levels made in DIR; DIR's own mode decides who reaches them */

static bool dir_is_empty(int parentfd, const char *name)
{
	struct dirent *de;
	bool empty = true;
	DIR *d;
	int fd = openat(parentfd, name, EXTC_DIR_OPEN_FLAGS);

	if (fd < 0)
		return (false);
	d = extc_warm_opendir(fd);
	close(fd);
	if (d == NULL)
		return (false);
	while (empty && (de = readdir(d)) != NULL)
		empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
	closedir(d);
	return (empty);
}

/* A leaf as slurmstepd makes it holds nothing but empty directories. */
static int leaf_is_fresh(int leaffd, bool *fresh, char *why, size_t whylen)
{
	struct dirent *de;
	DIR *d;

	*fresh = true;
	d = extc_warm_opendir(leaffd);
	if (d == NULL) {
		extc_fmt(why, whylen, "cannot read the private directory: %s", strerror(errno));
		return (-1);
	}
	while (*fresh && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			*fresh = dir_is_empty(leaffd, de->d_name);
	}
	closedir(d);
	return (0);
}

/* Put the leaf back as it was before a failed seed: its variables' empty directories. */
static void leaf_reset(int leaffd, const struct extc_warm_opts *o)
{
	struct extc_rm_report rep;
	struct dirent *de;
	size_t i;
	DIR *d;

	d = extc_warm_opendir(leaffd);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			extc_rm_tree_at(leaffd, de->d_name, NULL, &rep);
	}
	closedir(d);
	for (i = 0; i < o->nsubdirs; i++)
		mkdirat(leaffd, o->subdirs[i], 0700);
}

static int move_into_leaf(int stagefd, int leaffd, char *why, size_t whylen)
{
	struct dirent *de;
	DIR *d;
	int rv = 0;

	d = extc_warm_opendir(stagefd);
	if (d == NULL) {
		extc_fmt(why, whylen, "cannot read the seed's stage: %s", strerror(errno));
		return (-1);
	}
	while (rv == 0 && (de = readdir(d)) != NULL) {
		struct stat sb;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* an empty directory of the leaf is replaced; anything else there is a conflict */
		if (fstatat(stagefd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(sb.st_mode))
			unlinkat(leaffd, de->d_name, AT_REMOVEDIR);
		if (renameat(stagefd, de->d_name, leaffd, de->d_name) < 0) {
			char shown[96];

			extc_escape(de->d_name, 60, shown, sizeof(shown));
			extc_fmt(why, whylen, "%s: cannot move into the private directory: %s", shown,
				 strerror(errno));
			rv = -1;
		}
	}
	closedir(d);
	return (rv);
}

int extc_warm_seed(int srcfd, int leaffd, const struct extc_warm_opts *o,
		   struct extc_copy_stats *st, char *why, size_t whylen)
{
	struct extc_rm_report rep;
	char stage[64], have[64], max[64];
	bool fresh;
	int stagefd = -1;
	int rv = -1;

	if (leaf_is_fresh(leaffd, &fresh, why, whylen) < 0)
		return (-1);
	if (!fresh)
		return (1);
	/* measured first, so that a seed too large is refused before anything is copied */
	if (extc_warm_measure(srcfd, o, st, why, whylen) < 0)
		return (-1);
	if (o->max_bytes != 0 && st->bytes > o->max_bytes) {
		extc_warm_size_text(st->bytes, have, sizeof(have));
		extc_warm_size_text(o->max_bytes, max, sizeof(max));
		extc_fmt(why, whylen, "it holds %s, more than the %s the admin allows (seed_max=); "
			 "nothing was copied", have, max);
		return (-1);
	}
	extc_fmt(stage, sizeof(stage), "%s%ld", EXTC_WARM_SEED_STAGE, (long)getpid());
	if (mkdirat(leaffd, stage, 0700) < 0 ||
	    (stagefd = openat(leaffd, stage, EXTC_DIR_OPEN_FLAGS)) < 0) {
		extc_fmt(why, whylen, "cannot make a stage in the private directory: %s",
			 strerror(errno));
		goto out;
	}
	if (extc_warm_copy_tree(srcfd, stagefd, o, st, why, whylen) < 0)
		goto out;
	if (move_into_leaf(stagefd, leaffd, why, whylen) < 0) {
		leaf_reset(leaffd, o);
		goto out;
	}
	rv = 0;
out:
	if (stagefd >= 0)
		close(stagefd);
	extc_rm_tree_at(leaffd, stage, NULL, &rep);
	return (rv);
}

/* ---- publishing ------------------------------------------------------------- */

struct pub {
	const struct extc_warm_opts *o;
	struct extc_publish_report *rep;
	unsigned seq;	/* stage names: <prefix><tag>.<seq> */
};

/* A level of the published tree, made only once something is published into it. */
struct level {
	struct level *parent;	/* NULL: the level is DIR itself, 'fd' given */
	const char *name;
	int fd;
};

static void pub_error(struct pub *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pub_error(struct pub *p, const char *fmt, ...)
{
	va_list ap;

	p->rep->failed++;
	if (p->rep->first_error[0] != '\0')
		return;
	va_start(ap, fmt);
	extc_vfmt(p->rep->first_error, sizeof(p->rep->first_error), fmt, ap);
	va_end(ap);
}

static int level_fd(struct level *l)
{
	int parentfd;

	if (l->fd >= 0 || l->parent == NULL)
		return (l->fd);
	parentfd = level_fd(l->parent);
	if (parentfd < 0)
		return (-1);
	if (mkdirat(parentfd, l->name, PUBLISH_DIR_MODE) < 0 && errno != EEXIST)
		return (-1);
	l->fd = openat(parentfd, l->name, EXTC_DIR_OPEN_FLAGS);
	return (l->fd);
}

static void level_close(struct level *l)
{
	if (l->parent != NULL && l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

/*
 * Rename without replacing. renameat2(RENAME_NOREPLACE) where the
 * filesystem has it; NFS and older kernels do not, and then a directory is
 * renamed plainly (which fails on a non-empty one) and anything else is
 * linked (which fails on an existing name) and its stage name dropped.
 */
static int commit(int dirfd, const char *stage, const char *name, bool isdir)
{
	if (renameat2(dirfd, stage, dirfd, name, RENAME_NOREPLACE) == 0)
		return (0);
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return (-1);
	if (isdir)
		return (renameat(dirfd, stage, dirfd, name));
	if (linkat(dirfd, stage, dirfd, name, 0) < 0)
		return (-1);
	unlinkat(dirfd, stage, 0);
	return (0);
}

/* Stage one entry next to where it goes, then rename it in: readers never see half of it. */
static void publish_entry(struct pub *p, int srcfd, const char *name, const struct stat *sb,
			  struct level *dst, const char *rel)
{
	struct extc_rm_report rm;
	struct stat there;
	char stage[160], why[256], shown[160];
	int dstfd = level_fd(dst);

	extc_escape(rel, 120, shown, sizeof(shown));
	if (dstfd < 0) {
		pub_error(p, "%s: cannot make its directory: %s", shown, strerror(errno));
		return;
	}
	if (fstatat(dstfd, name, &there, AT_SYMLINK_NOFOLLOW) == 0) {
		p->rep->present++;
		return;
	}
	if (extc_fmt(stage, sizeof(stage), "%s%s.%u", EXTC_WARM_STAGE_PREFIX, p->o->tag,
		     p->seq++) < 0) {
		pub_error(p, "%s: the stage name is too long", shown);
		return;
	}
	if (extc_warm_copy_entry(srcfd, name, dstfd, stage, p->o, &p->rep->copy, why,
				 sizeof(why)) < 0) {
		pub_error(p, "%s: %s", shown, why);
	} else if (commit(dstfd, stage, name, S_ISDIR(sb->st_mode)) == 0) {
		p->rep->published++;
		return;
	} else if (errno == EEXIST || errno == ENOTEMPTY) {
		p->rep->lost++;	/* another node published it first: theirs is as good */
	} else {
		pub_error(p, "%s: cannot rename into place: %s", shown, strerror(errno));
	}
	extc_rm_tree_at(dstfd, stage, NULL, &rm);
}

static bool past_deadline(const struct pub *p)
{
	return (p->o->deadline_ns != 0 && extc_monotonic_ns() > p->o->deadline_ns);
}

/* torch's level: complete extension directories, looking into pyXY_cu groups once. */
static void publish_torch(struct pub *p, int srcfd, struct level *dst, const char *rel, bool group)
{
	struct dirent *de;
	DIR *d;

	d = extc_warm_opendir(srcfd);
	if (d == NULL) {
		pub_error(p, "%s: cannot read: %s", rel, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL && !past_deadline(p)) {
		struct level sub = { dst, de->d_name, -1 };
		char subrel[PATH_MAX];
		struct stat sb;
		int cfd, state;

		if (de->d_name[0] == '.' || strcmp(de->d_name, EXTC_WARM_LOCK_NAME) == 0 ||
		    fstatat(srcfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode) ||
		    extc_fmt(subrel, sizeof(subrel), "%s/%s", rel, de->d_name) < 0)
			continue;
		cfd = openat(srcfd, de->d_name, EXTC_DIR_OPEN_FLAGS);
		if (cfd < 0)
			continue;
		state = extc_warm_ext_state(cfd);
		if (state == EXTC_EXT_COMPLETE) {
			publish_entry(p, srcfd, de->d_name, &sb, dst, subrel);
		} else if (state == EXTC_EXT_NONE && !group && extc_warm_is_pyver_group(de->d_name)) {
			publish_torch(p, cfd, &sub, subrel, true);
			level_close(&sub);
		} else {
			p->rep->incomplete++;
		}
		close(cfd);
	}
	closedir(d);
}

/*
 * Any other variable's directory: each top-level child is one entry, but
 * Inductor's locks/ ('inductor': this is TORCHINDUCTOR_CACHE_DIR's).
 */
static void publish_plain(struct pub *p, int srcfd, struct level *dst, const char *rel, bool inductor)
{
	struct dirent *de;
	DIR *d;

	d = extc_warm_opendir(srcfd);
	if (d == NULL) {
		pub_error(p, "%s: cannot read: %s", rel, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL && !past_deadline(p)) {
		char subrel[PATH_MAX];
		struct stat sb;

		if (inductor && strcmp(de->d_name, EXTC_WARM_INDUCTOR_LOCKS) == 0) {
			p->rep->copy.skipped_locks++;
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, EXTC_WARM_LOCK_NAME) == 0 ||
		    extc_has_prefix(de->d_name, ".ext-cache-") ||
		    fstatat(srcfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)) ||
		    extc_fmt(subrel, sizeof(subrel), "%s/%s", rel, de->d_name) < 0)
			continue;
		publish_entry(p, srcfd, de->d_name, &sb, dst, subrel);
	}
	closedir(d);
}

static bool before(const struct timespec *t, const struct timespec *limit)
{
	return (t->tv_sec < limit->tv_sec ||
		(t->tv_sec == limit->tv_sec && t->tv_nsec < limit->tv_nsec));
}

/*
 * A publisher killed at its deadline leaves its stage (or its manifest
 * draft) where it was working. Only this user's, and only those unchanged
 * since long before any publisher could still be running, are removed:
 * ctime, because a stage keeps its source's mtime and nobody can set ctime.
 */
static void sweep_level(struct pub *p, int levelfd, bool drafts)
{
	struct extc_rm_report rm;
	struct dirent *de;
	DIR *d = extc_warm_opendir(levelfd);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL && !past_deadline(p)) {
		struct stat sb;

		if (!extc_has_prefix(de->d_name, EXTC_WARM_STAGE_PREFIX) &&
		    !(drafts && extc_has_prefix(de->d_name, EXTC_MANIFEST_NAME ".")))
			continue;
		if (fstatat(levelfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    sb.st_uid != geteuid() || !before(&sb.st_ctim, &p->o->stale_before))
			continue;
		if (extc_rm_tree_at(levelfd, de->d_name, NULL, &rm) == 0)
			p->rep->abandoned++;
	}
	closedir(d);
}

static void sweep_groups(struct pub *p, int torchfd)
{
	struct dirent *de;
	DIR *d = extc_warm_opendir(torchfd);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL && !past_deadline(p)) {
		int groupfd;

		if (!extc_warm_is_pyver_group(de->d_name) ||
		    (groupfd = openat(torchfd, de->d_name, EXTC_DIR_OPEN_FLAGS)) < 0)
			continue;
		sweep_level(p, groupfd, false);
		close(groupfd);
	}
	closedir(d);
}

/* Where stages are made: DIR, each variable's level, and torch's pyXY_cu groups. */
static void sweep_abandoned(struct pub *p, int dirfd)
{
	size_t i;

	if (p->o->stale_before.tv_sec == 0 && p->o->stale_before.tv_nsec == 0)
		return;
	sweep_level(p, dirfd, true);
	for (i = 0; i < p->o->nsubdirs; i++) {
		int fd = openat(dirfd, p->o->subdirs[i], EXTC_DIR_OPEN_FLAGS);

		if (fd < 0)
			continue;
		sweep_level(p, fd, false);
		if (p->o->torch_subdir != NULL && strcmp(p->o->subdirs[i], p->o->torch_subdir) == 0)
			sweep_groups(p, fd);
		close(fd);
	}
}

/*
 * Each publisher is killed at its publish_timeout; twice that, and at least
 * an hour, leaves room for nodes configured differently and for clock skew
 * to the file server that stamps the ctime.
 */
#define ABANDONED_MIN_AGE_S 3600

void extc_warm_stale_limit(uint32_t publish_timeout_s, const struct timespec *now,
			   struct timespec *limit)
{
	time_t age = 2 * (time_t)publish_timeout_s;

	if (age < ABANDONED_MIN_AGE_S)
		age = ABANDONED_MIN_AGE_S;
	*limit = *now;
	limit->tv_sec -= age;
}

int extc_warm_publish(int leaffd, int dirfd, const struct extc_warm_opts *o,
		      const struct extc_manifest *mf, struct extc_publish_report *rep,
		      char *why, size_t whylen)
{
	struct extc_manifest there;
	struct pub p = { o, rep, 0 };
	struct level top = { NULL, NULL, dirfd };
	size_t i;
	int ret;

	memset(rep, 0, sizeof(*rep));
	/*
	 * The manifest goes in before any entry, so that no reader ever sees
	 * builds without it; a directory of another key or CPU is not mixed.
	 */
	ret = extc_manifest_read(dirfd, &there, why, whylen);
	if (ret == 1) {
		ret = extc_manifest_write(dirfd, mf, true, o->tag, why, whylen);
		if (ret == 0)
			there = *mf;	/* ours: nothing to compare */
		else if (ret == 1)	/* another publisher's came first */
			ret = extc_manifest_read(dirfd, &there, why, whylen);
	}
	if (ret != 0)
		return (-1);
	if (extc_manifest_compatible(&there, mf, why, whylen) < 0)
		return (-1);
	sweep_abandoned(&p, dirfd);
	for (i = 0; i < o->nsubdirs && !past_deadline(&p); i++) {
		struct level sub = { &top, o->subdirs[i], -1 };
		int srcfd = openat(leaffd, o->subdirs[i], EXTC_DIR_OPEN_FLAGS);

		if (srcfd < 0)
			continue;
		if (o->torch_subdir != NULL && strcmp(o->subdirs[i], o->torch_subdir) == 0)
			publish_torch(&p, srcfd, &sub, o->subdirs[i], false);
		else
			publish_plain(&p, srcfd, &sub, o->subdirs[i],
				      o->inductor_subdir != NULL &&
				      strcmp(o->subdirs[i], o->inductor_subdir) == 0);
		level_close(&sub);
		close(srcfd);
	}
	if (past_deadline(&p))
		pub_error(&p, "stopped: the deadline passed");
	if (rep->published > 0 && extc_manifest_write(dirfd, mf, false, o->tag, why, whylen) < 0)
		pub_error(&p, "%s", why);
	if (rep->failed > 0) {
		extc_fmt(why, whylen, "%s", rep->first_error);
		return (-1);
	}
	return (0);
}
