/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: publishing a leaf's completed builds into a shared directory, atomically. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "fs/fs_ident.h"
#include "fs/fs_remove.h"
#include "base/text.h"
#include "warm/warm_names.h"
#include "warm/warm_ninja.h"
#include "warm/warm_publish.h"
#include "warm/warm_sweep.h"
#include "warm/warm_triton.h"

#define PUBLISH_DIR_MODE 0755	/* levels made in DIR; DIR's own mode decides who reaches them */
/* Inductor's and Triton's trees are a few levels of hash-named directories */
#define MERGE_DEPTH 6

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
 * linked (which fails on an existing name) and its old name dropped.
 */
static int rename_noreplace(int sfd, const char *sname, int dfd, const char *dname, bool isdir)
{
	if (renameat2(sfd, sname, dfd, dname, RENAME_NOREPLACE) == 0)
		return (0);
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return (-1);
	if (isdir)
		return (renameat(sfd, sname, dfd, dname));
	if (linkat(sfd, sname, dfd, dname, 0) < 0)
		return (-1);
	unlinkat(sfd, sname, 0);
	return (0);
}

/*
 * Rename one entry into the pool, whole. An entry already there stays (a
 * concurrent step put it first); where both are directories of a content-
 * addressed cache ('merge' levels left), what is not there yet goes in.
 */
static void move_entry(struct pub *p, int srcfd, const char *name, int dstfd, const char *rel,
		       unsigned merge)
{
	struct stat sb, there;
	struct dirent *de;
	int sfd, dfd;
	DIR *d;

	if (fstatat(srcfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	/*
	 * A torch build moves whole, but never with its lock: torch 2.14 keeps
	 * the file after every build. The step is over, nobody holds it.
	 */
	if (merge == 0 && S_ISDIR(sb.st_mode)) {
		sfd = openat(srcfd, name, EXTC_DIR_OPEN_FLAGS);
		if (sfd >= 0) {
			unlinkat(sfd, EXTC_WARM_LOCK_NAME, 0);
			close(sfd);
		}
	}
	if (rename_noreplace(srcfd, name, dstfd, name, S_ISDIR(sb.st_mode)) == 0) {
		p->rep->published++;
		return;
	}
	if (errno != EEXIST && errno != ENOTEMPTY) {
		pub_error(p, "%s: cannot move into the pool: %s", rel, strerror(errno));
		return;
	}
	if (merge == 0 || !S_ISDIR(sb.st_mode) || fstatat(dstfd, name, &there, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(there.st_mode)) {
		p->rep->present++;
		return;
	}
	sfd = openat(srcfd, name, EXTC_DIR_OPEN_FLAGS);
	dfd = openat(dstfd, name, EXTC_DIR_OPEN_FLAGS);
	d = sfd >= 0 && dfd >= 0 ? extc_fdio_opendir(sfd) : NULL;
	while (d != NULL && (de = readdir(d)) != NULL && !extc_past_deadline(p->o->deadline_ns)) {
		if (extc_warm_name_rule(de->d_name, false) == EXTC_NAME_COPY)
			move_entry(p, sfd, de->d_name, dfd, rel, merge - 1);
	}
	if (d != NULL)
		closedir(d);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
}

static void merge_copy(struct pub *p, int srcfd, const char *name, struct level *dst,
		       const char *rel, unsigned merge);

/* A Triton kernel's staged copy names its files where it goes ('final'); 0, or -1 said. */
static int rewrite_stage(struct pub *p, int dstfd, const char *stage, const char *final,
			 const char *shown)
{
	char why[EXTC_WHY_MAX];
	int fd = openat(dstfd, stage, EXTC_DIR_OPEN_FLAGS);
	enum extc_triton_result r = fd >= 0 ? extc_triton_rewrite(fd, final, why, sizeof(why)) :
					      EXTC_TRITON_FAILED;

	if (fd < 0)
		extc_fmt(why, sizeof(why), "cannot open its stage: %s", strerror(errno));
	else
		close(fd);
	if (r == EXTC_TRITON_OK || r == EXTC_TRITON_NO_GROUP)
		return (0);
	pub_error(p, "%s: %s", shown, why);
	return (-1);
}

/*
 * Stage one entry next to where it goes, then rename it in: readers never
 * see half of it. A directory of a content-addressed cache that DIR has
 * already ('merge' levels left) gets what it lacks, entry by entry. A
 * Triton kernel's copy gets group files that name 'triton_final'.
 */
static void publish_entry(struct pub *p, int srcfd, const char *name, const struct stat *sb,
			  struct level *dst, const char *rel, unsigned merge, const char *triton_final)
{
	struct extc_rm_report rm;
	struct stat there;
	char stage[160], why[EXTC_WHY_MAX], shown[160];
	int dstfd = level_fd(dst);

	extc_escape(rel, 120, shown, sizeof(shown));
	if (dstfd < 0) {
		pub_error(p, "%s: cannot make its directory: %s", shown, strerror(errno));
		return;
	}
	if (p->o->move) {
		move_entry(p, srcfd, name, dstfd, shown, merge);
		return;
	}
	if (fstatat(dstfd, name, &there, AT_SYMLINK_NOFOLLOW) == 0) {
		if (merge > 0 && S_ISDIR(sb->st_mode) && S_ISDIR(there.st_mode))
			merge_copy(p, srcfd, name, dst, rel, merge - 1);
		else
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
	} else if (triton_final != NULL && rewrite_stage(p, dstfd, stage, triton_final, shown) < 0) {
		;	/* said; the stage goes below */
	} else if (rename_noreplace(dstfd, stage, dstfd, name, S_ISDIR(sb->st_mode)) == 0) {
		p->rep->published++;
		return;
	} else if (errno == EEXIST || errno == ENOTEMPTY) {
		p->rep->lost++;	/* another node published it first: theirs is as good */
	} else {
		pub_error(p, "%s: cannot rename into place: %s", shown, strerror(errno));
	}
	extc_rm_tree_at(dstfd, stage, NULL, &rm);
}

/* A directory DIR has already: each entry it lacks goes in, staged (publish_entry). */
static void merge_copy(struct pub *p, int srcfd, const char *name, struct level *dst,
		       const char *rel, unsigned merge)
{
	struct level sub = { dst, name, -1 };
	struct dirent *de;
	int sfd = openat(srcfd, name, EXTC_DIR_OPEN_FLAGS);
	DIR *d = sfd >= 0 ? extc_fdio_opendir(sfd) : NULL;

	while (d != NULL && (de = readdir(d)) != NULL && !extc_past_deadline(p->o->deadline_ns)) {
		char subrel[PATH_MAX];
		struct stat sb;

		if (extc_warm_name_rule(de->d_name, false) != EXTC_NAME_COPY ||
		    fstatat(sfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)) ||
		    extc_fmt(subrel, sizeof(subrel), "%s/%s", rel, de->d_name) < 0)
			continue;
		publish_entry(p, sfd, de->d_name, &sb, &sub, subrel, merge, NULL);
	}
	if (d != NULL)
		closedir(d);
	if (sfd >= 0)
		close(sfd);
	level_close(&sub);
}

static bool past_deadline(const struct pub *p)
{
	return (extc_past_deadline(p->o->deadline_ns));
}

/* What a variable's directory in the leaf is to the publisher. */
enum level_kind {
	LEVEL_TORCH,		/* TORCH_EXTENSIONS_DIR: complete extension directories (or pyXY_cu groups) */
	LEVEL_TORCH_GROUP,	/* torch_extensions/<pyver_cu>: complete extension directories */
	LEVEL_INDUCTOR,		/* TORCHINDUCTOR_CACHE_DIR: every top-level child but its locks/ */
	LEVEL_TRITON,		/* TRITON_CACHE_DIR: kernel directories, each whole, group files rewritten */
	LEVEL_PLAIN,		/* any other variable's: every top-level child */
};

/*
 * Whether 'name' of the leaf's level is an entry to publish: the name rule
 * every seed and publish applies (warm_names.h), then the kinds of file a
 * level holds (torch's: directories only).
 */
static bool publishable(struct pub *p, int srcfd, const char *name, enum level_kind kind,
			struct stat *sb)
{
	switch (extc_warm_name_rule(name, kind == LEVEL_INDUCTOR)) {
	case EXTC_NAME_LOCK:
		p->rep->copy.skipped_locks++;
		return (false);
	case EXTC_NAME_SKIP:
		return (false);
	case EXTC_NAME_COPY:
		break;
	}
	if (fstatat(srcfd, name, sb, AT_SYMLINK_NOFOLLOW) < 0)
		return (false);
	if (kind == LEVEL_TORCH || kind == LEVEL_TORCH_GROUP)
		return (S_ISDIR(sb->st_mode));
	return (S_ISDIR(sb->st_mode) || S_ISREG(sb->st_mode) || S_ISLNK(sb->st_mode));
}

static void publish_level(struct pub *p, int srcfd, struct level *dst, const char *rel,
			  enum level_kind kind);

/* torch's levels: a complete extension directory, or a pyXY_cu group looked into once. */
static void publish_torch_entry(struct pub *p, int srcfd, const char *name, const struct stat *sb,
				struct level *dst, const char *rel, enum level_kind kind)
{
	struct level sub = { dst, name, -1 };
	int cfd = openat(srcfd, name, EXTC_DIR_OPEN_FLAGS);
	enum extc_ext_state state;

	if (cfd < 0)
		return;
	state = extc_warm_ext_state(cfd);
	if (state == EXTC_EXT_COMPLETE) {
		publish_entry(p, srcfd, name, sb, dst, rel, 0, NULL);	/* one build: whole or not at all */
	} else if (state == EXTC_EXT_NONE && kind == LEVEL_TORCH && extc_warm_is_pyver_group(name)) {
		publish_level(p, cfd, &sub, rel, LEVEL_TORCH_GROUP);
		level_close(&sub);
	} else {
		p->rep->incomplete++;
	}
	close(cfd);
}

/*
 * A Triton kernel, whole, with group files that name where it goes: a copy
 * is rewritten in its stage; a move (the pool) in the leaf, just before.
 * One whose group file does not parse or names a missing file is left out.
 */
static void publish_triton_entry(struct pub *p, int srcfd, const char *name, const struct stat *sb,
				 struct level *dst, const char *rel)
{
	char final[PATH_MAX], why[EXTC_WHY_MAX], shown[160];
	int kfd;
	enum extc_triton_result r;

	if (p->o->dest == NULL || extc_fmt(final, sizeof(final), "%s/%s", p->o->dest, rel) < 0) {
		p->rep->incomplete++;	/* its group files could not name it */
		return;
	}
	kfd = openat(srcfd, name, EXTC_DIR_OPEN_FLAGS);
	if (kfd < 0)
		return;
	r = p->o->move ? extc_triton_rewrite(kfd, final, why, sizeof(why)) : extc_triton_check(kfd);
	close(kfd);
	if (r == EXTC_TRITON_BROKEN) {
		p->rep->incomplete++;
	} else if (r == EXTC_TRITON_FAILED) {
		extc_escape(rel, 120, shown, sizeof(shown));
		pub_error(p, "%s: %s", shown, why);
	} else {
		publish_entry(p, srcfd, name, sb, dst, rel, 0, p->o->move ? NULL : final);
	}
}

static void publish_level(struct pub *p, int srcfd, struct level *dst, const char *rel,
			  enum level_kind kind)
{
	struct dirent *de;
	DIR *d;

	d = extc_fdio_opendir(srcfd);
	if (d == NULL) {
		pub_error(p, "%s: cannot read: %s", rel, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL && !past_deadline(p)) {
		char subrel[PATH_MAX];
		struct stat sb;

		if (!publishable(p, srcfd, de->d_name, kind, &sb) ||
		    extc_fmt(subrel, sizeof(subrel), "%s/%s", rel, de->d_name) < 0)
			continue;
		if (kind == LEVEL_TORCH || kind == LEVEL_TORCH_GROUP)
			publish_torch_entry(p, srcfd, de->d_name, &sb, dst, subrel, kind);
		else if (kind == LEVEL_TRITON && S_ISDIR(sb.st_mode))
			publish_triton_entry(p, srcfd, de->d_name, &sb, dst, subrel);
		else
			publish_entry(p, srcfd, de->d_name, &sb, dst, subrel, MERGE_DEPTH, NULL);
	}
	closedir(d);
}

static enum level_kind kind_of(const struct extc_warm_opts *o, const char *subdir)
{
	if (o->torch_subdir != NULL && strcmp(subdir, o->torch_subdir) == 0)
		return (LEVEL_TORCH);
	if (o->inductor_subdir != NULL && strcmp(subdir, o->inductor_subdir) == 0)
		return (LEVEL_INDUCTOR);
	if (o->triton_subdir != NULL && strcmp(subdir, o->triton_subdir) == 0)
		return (LEVEL_TRITON);
	return (LEVEL_PLAIN);
}

int extc_warm_publish(int leaffd, int dirfd, const struct extc_warm_opts *o,
		      const struct extc_manifest *mf, struct extc_publish_report *rep,
		      char *why, size_t whylen)
{
	struct extc_manifest there;
	struct pub p = { o, rep, 0 };
	struct level top = { NULL, NULL, dirfd };
	size_t i;
	enum extc_manifest_result ret;

	memset(rep, 0, sizeof(*rep));
	/*
	 * The manifest goes in before any entry, so that no reader ever sees
	 * builds without it; a directory of another key or CPU is not mixed.
	 */
	ret = extc_manifest_read(dirfd, &there, why, whylen);
	if (ret == EXTC_MANIFEST_ABSENT) {
		ret = extc_manifest_write(dirfd, mf, true, o->tag, why, whylen);
		if (ret == EXTC_MANIFEST_OK)
			there = *mf;	/* ours: nothing to compare */
		else if (ret == EXTC_MANIFEST_EXISTS)	/* another publisher's came first */
			ret = extc_manifest_read(dirfd, &there, why, whylen);
	}
	if (ret != EXTC_MANIFEST_OK)
		return (-1);
	if (extc_manifest_compatible(&there, mf, why, whylen) < 0)
		return (-1);
	rep->abandoned = extc_warm_sweep_abandoned(dirfd, o);
	for (i = 0; i < o->nsubdirs && !past_deadline(&p); i++) {
		struct level sub = { &top, o->subdirs[i], -1 };
		int srcfd = openat(leaffd, o->subdirs[i], EXTC_DIR_OPEN_FLAGS);

		if (srcfd < 0)
			continue;
		publish_level(&p, srcfd, &sub, o->subdirs[i], kind_of(o, o->subdirs[i]));
		level_close(&sub);
		close(srcfd);
	}
	if (past_deadline(&p))
		pub_error(&p, "stopped: the deadline passed");
	if (rep->published > 0 &&
	    extc_manifest_write(dirfd, mf, false, o->tag, why, whylen) != EXTC_MANIFEST_OK)
		pub_error(&p, "%s", why);
	if (rep->failed > 0) {
		extc_fmt(why, whylen, "%s", rep->first_error);
		return (-1);
	}
	return (0);
}
