/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool on disk, as root: a step's hold on a key, and its record written. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs_level.h"
#include "fs/fs_trash.h"
#include "base/layout.h"
#include "pool/pool_hold.h"
#include "pool/pool_level.h"
#include "pool/pool_measure.h"
#include "base/text.h"

#define KEY_MODE 0700
#define RECORD_NAME_LEN (EXTC_POOL_KEY_LEN + sizeof(EXTC_POOL_RECORD_SUFFIX))

/*
 * The user's key directory. Made root-owned and handed over by name: the
 * name lies in a root-owned level, so the user cannot swap it. An existing
 * one is looked at from memory only (a FUSE mount on it is never asked).
 */
static int key_dir(int uidfd, const char *key, const struct extc_ids *ids, char *why,
		   size_t whylen)
{
	struct extc_ident id, parent;

	if (mkdirat(uidfd, key, KEY_MODE) == 0) {
		if (fchownat(uidfd, key, ids->uid, ids->gid, AT_SYMLINK_NOFOLLOW) == 0)
			return (0);
		extc_fmt(why, whylen, "cannot hand the key directory to uid %u: %s",
			 (unsigned)ids->uid, strerror(errno));
		unlinkat(uidfd, key, AT_REMOVEDIR);
		return (-1);
	}
	if (errno != EEXIST || extc_ident_at(uidfd, key, &id) < 0 || extc_ident_fd(uidfd, &parent) < 0) {
		extc_fmt(why, whylen, "cannot make the key directory: %s", strerror(errno));
		return (-1);
	}
	if (id.mount_root || !extc_ident_same_mount(&id, &parent)) {
		extc_fmt(why, whylen, "the key directory is a mount point; left for the evictor");
		return (-1);
	}
	if (!S_ISDIR(id.mode) || id.uid != ids->uid || (id.mode & 077) != 0) {
		extc_fmt(why, whylen, "the key directory is not a 0700 directory of uid %u "
			 "(uid %u, mode %04o); left for the evictor", (unsigned)ids->uid,
			 (unsigned)id.uid, (unsigned)(id.mode & 07777));
		return (-1);
	}
	return (0);
}

enum extc_pool_hold_result extc_pool_hold(const struct extc_tree *tree, const struct extc_ids *ids,
					  const char *key, struct extc_pool_hold *h, char *why,
					  size_t whylen)
{
	char uname[EXTC_NAME_LEN], sub[EXTC_WHY_MAX];
	struct extc_pool_record rec;
	struct extc_pool_fds p;
	enum extc_pool_hold_result rv = EXTC_POOL_REFUSED;
	int fd = -1;

	h->record_fd = -1;
	h->uid = ids->uid;
	if (!extc_pool_key_name_ok(key) || extc_layout_uid_name(ids->uid, uname, sizeof(uname)) < 0) {
		extc_fmt(why, whylen, "no usable key");
		return (EXTC_POOL_REFUSED);
	}
	if (extc_pool_level_open(tree, true, &p, why, whylen) != EXTC_LEVEL_FOUND ||
	    extc_pool_level_open_user(&p, uname, true, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	/* the evictor holds the user's level while it moves keys out: bounded wait */
	if (extc_level_lock(p.uid, LOCK_EX, EXTC_LEVEL_LOCK_WAIT_MS) < 0) {
		extc_fmt(why, whylen, "%s: busy", p.t.path);
		goto out;
	}
	fd = extc_pool_level_open_record(p.uid, key, true, tree->pol);
	if (fd < 0) {
		extc_fmt(why, whylen, "%s/%s%s: %s", p.t.path, key, EXTC_POOL_RECORD_SUFFIX,
			 strerror(errno));
	} else if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		rv = EXTC_POOL_EVICTING;
	} else if (key_dir(p.uid, key, ids, sub, sizeof(sub)) < 0) {
		extc_fmt(why, whylen, "%s/%s: %s", p.t.path, key, sub);
	} else if (extc_pool_level_read_record(fd, &rec) == 0 && futimens(fd, NULL) == 0 &&
		   extc_fmt(h->dir, sizeof(h->dir), "%s/%s", p.t.path, key) == 0) {
		h->bytes = rec.bytes;
		h->inodes = rec.inodes;
		/* a measured key counts its own directory: no inode means no numbers */
		h->counted = !rec.unmeasurable && !rec.old_version && rec.inodes > 0;
		/* before any take: what the step's end compares with (under the level, no evictor) */
		extc_pool_since_note(p.uid, key, &h->since);
		strcpy(h->key, key);
		h->record_fd = fd;
		fd = -1;
		rv = EXTC_POOL_HELD;
	}
	flock(p.uid, LOCK_UN);
out:
	if (fd >= 0)
		close(fd);
	extc_pool_level_close(&p);
	return (rv);
}

/* The record's whole text, in place, and the key marked used now. */
static int write_record(int fd, const char *text)
{
	size_t len = strlen(text);

	if (pwrite(fd, text, len, 0) != (ssize_t)len || ftruncate(fd, (off_t)len) < 0 ||
	    futimens(fd, NULL) < 0)
		return (-1);
	return (0);
}

/* Is 'fd' still the record <key>.use of the level 'uidfd' (not one evicted meanwhile)? */
static bool same_record(int uidfd, const char *key, int fd)
{
	char name[RECORD_NAME_LEN];
	struct stat a, b;

	return (extc_fmt(name, sizeof(name), "%s%s", key, EXTC_POOL_RECORD_SUFFIX) == 0 &&
		fstatat(uidfd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 && fstat(fd, &b) == 0 &&
		a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

/* The record's text for what root measured, or why it could not; 'h' takes the numbers. */
static enum extc_pool_account_result measured_text(struct extc_pool_hold *h,
						   struct extc_pool_fds *p,
						   const struct extc_tree *tree, char *text,
						   char *why, size_t whylen)
{
	enum extc_pool_measure_result measured;
	struct extc_pool_measure_limits lim;
	struct extc_pool_usage use;

	extc_pool_measure_limits_for(tree->cfg, &lim);
	measured = extc_pool_measure_key(p->uid, h->key, &lim, &use);
	if (measured != EXTC_POOL_MEASURED) {
		char sub[EXTC_WHY_MAX];

		extc_pool_measure_text(measured, &use, sub, sizeof(sub));
		extc_fmt(text, EXTC_POOL_RECORD_MAX, "version=%d\n%s: %s\n", EXTC_POOL_KEY_VERSION,
			 EXTC_POOL_UNMEASURABLE, sub);
		extc_fmt(why, whylen, "%s/%s: %s", p->t.path, h->key, sub);
		return (EXTC_POOL_ACCOUNT_UNMEASURABLE);
	}
	h->bytes = use.bytes;
	h->inodes = use.inodes;
	return (EXTC_POOL_ACCOUNTED);
}

enum extc_pool_account_result extc_pool_hold_account(struct extc_pool_hold *h,
						      const struct extc_tree *tree, bool whole_only,
						      char *why, size_t whylen)
{
	char uname[EXTC_NAME_LEN], text[EXTC_POOL_RECORD_MAX];
	enum extc_pool_account_result rv = EXTC_POOL_ACCOUNT_FAILED;
	struct extc_pool_fds p;

	extc_fmt(why, whylen, "no hold");
	p.pool = p.uid = -1;
	extc_level_walk_init(&p.t, tree);
	if (h->record_fd < 0 || !extc_pool_key_name_ok(h->key) ||
	    extc_layout_uid_name(h->uid, uname, sizeof(uname)) < 0)
		goto out;
	if (extc_pool_level_open(tree, false, &p, why, whylen) != EXTC_LEVEL_FOUND ||
	    extc_pool_level_open_user(&p, uname, false, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	if (!same_record(p.uid, h->key, h->record_fd)) {
		extc_fmt(why, whylen, "%s/%s%s: not the record this step holds", p.t.path, h->key,
			 EXTC_POOL_RECORD_SUFFIX);
		goto out;
	}
	/* root's own numbers of before the take stand for a key that is as it was then */
	if (whole_only && h->counted && extc_pool_since_same(p.uid, h->key, &h->since))
		rv = EXTC_POOL_ACCOUNT_KEPT;
	else
		rv = measured_text(h, &p, tree, text, why, whylen);
	if (rv != EXTC_POOL_ACCOUNT_UNMEASURABLE) {
		extc_fmt(text, sizeof(text), "version=%d\nbytes=%" PRIu64 "\ninodes=%" PRIu64 "\n",
			 EXTC_POOL_KEY_VERSION, h->bytes, h->inodes);
		extc_fmt(why, whylen, "%" PRIu64 " bytes, %" PRIu64 " inodes", h->bytes, h->inodes);
	}
	if (write_record(h->record_fd, text) < 0) {
		extc_fmt(why, whylen, "%s/%s%s: cannot write: %s", p.t.path, h->key,
			 EXTC_POOL_RECORD_SUFFIX, strerror(errno));
		rv = EXTC_POOL_ACCOUNT_FAILED;
	}
out:
	extc_pool_level_close(&p);
	return (rv);
}

void extc_pool_hold_release(struct extc_pool_hold *h)
{
	if (h->record_fd >= 0)
		close(h->record_fd);
	h->record_fd = -1;
}
