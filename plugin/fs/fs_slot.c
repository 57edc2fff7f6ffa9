/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: slots for detached work, as flocks on root-owned files below the base. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/layout.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "fs/fs_level.h"
#include "fs/fs_slot.h"

#define SLOT_DIR_MODE 0700
#define SLOT_FILE_MODE 0600
#define SLOT_NAME_LEN (EXTC_NAME_LEN + 16)

/* The slot directory and what it was found to be: the reference for each slot file's checks. */
struct slot_dir {
	int fd;
	struct extc_ident id;
	uid_t owner;
};

/*
 * <node level>/.slots, made if missing, opened without following a
 * symlink or crossing a mount (extc_ident_open_below), and refused
 * unless a directory of the policy owner that no one else may enter:
 * every name in it is then root's to choose, never a user's.
 */
static enum extc_level_result open_slot_dir(struct extc_level_walk *w, struct slot_dir *d,
					    char *why, size_t whylen)
{
	const struct extc_fs_policy *pol = w->tree.pol;
	struct extc_ident node_id;
	enum extc_level_result top;
	enum extc_open_result opened;
	bool made = false;
	enum extc_level_result rv = EXTC_LEVEL_REFUSED;

	top = extc_level_open_top(w, false, why, whylen);
	if (top != EXTC_LEVEL_FOUND) {
		if (top == EXTC_LEVEL_ABSENT)
			extc_fmt(why, whylen, "%s: the base is not there", w->tree.cfg->base);
		goto out;
	}
	if (extc_ident_fd(w->node, &node_id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", w->path, strerror(errno));
		goto out;
	}
	if (mkdirat(w->node, EXTC_SLOT_DIR_NAME, SLOT_DIR_MODE) == 0)
		made = true;
	else if (errno != EEXIST) {
		extc_fmt(why, whylen, "%s/%s: cannot create: %s", w->path, EXTC_SLOT_DIR_NAME,
			 strerror(errno));
		goto out;
	}
	opened = extc_ident_open_below(w->node, &node_id, EXTC_SLOT_DIR_NAME, &d->fd, &d->id);
	if (opened != EXTC_OPEN_OK) {
		extc_fmt(why, whylen, "%s/%s: cannot open: %s", w->path, EXTC_SLOT_DIR_NAME,
			 opened == EXTC_OPEN_MOUNT ? "is a mount point" :
			 extc_level_open_error(w->node, EXTC_SLOT_DIR_NAME, errno));
		goto out;
	}
	/* exact owner and mode whatever the umask or a setgid parent did */
	if (made && (fchown(d->fd, pol->owner, pol->owner_gid) < 0 ||
		     fchmod(d->fd, SLOT_DIR_MODE) < 0 || extc_ident_fd(d->fd, &d->id) < 0)) {
		extc_fmt(why, whylen, "%s/%s: cannot set owner and mode: %s", w->path,
			 EXTC_SLOT_DIR_NAME, strerror(errno));
		goto out;
	}
	if (!S_ISDIR(d->id.mode) || d->id.uid != pol->owner || (d->id.mode & 077) != 0) {
		extc_fmt(why, whylen, "%s/%s: owned by uid %u with mode %04o: it must be uid %u's "
			 "and 0700; refusing it", w->path, EXTC_SLOT_DIR_NAME, (unsigned)d->id.uid,
			 (unsigned)(d->id.mode & 07777), (unsigned)pol->owner);
		goto out;
	}
	d->owner = pol->owner;
	rv = EXTC_LEVEL_FOUND;
out:
	return (rv);
}

/*
 * A slot file, made if missing: refused (EPERM) unless a regular file of
 * the owner, with one name, no access for others, on the directory's
 * mount. O_NONBLOCK: nothing else can be there, but should a FIFO be,
 * its open must not wait.
 */
static int open_slot(const struct slot_dir *d, const char *name)
{
	struct extc_ident id;
	int fd = openat(d->fd, name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
			SLOT_FILE_MODE);

	if (fd < 0)
		return (-1);
	if (extc_ident_fd(fd, &id) < 0 || !S_ISREG(id.mode) || id.uid != d->owner ||
	    id.nlink != 1 || (id.mode & 077) != 0 || !extc_ident_same_mount(&id, &d->id)) {
		close(fd);
		errno = EPERM;
		return (-1);
	}
	return (fd);
}

/* What one pass over the slots of one kind found. */
enum pass_result {
	PASS_GOT,		/* one is locked: its descriptor is the caller's */
	PASS_BUSY,		/* every one is held */
	PASS_FAILED,		/* a slot file is unusable: 'why' */
};

/* Lock the first free slot among <prefix>.0 .. <prefix>.<n-1>, without waiting. */
static enum pass_result take_one(const struct slot_dir *d, const char *prefix, unsigned n, int *out,
				 char *why, size_t whylen)
{
	char name[SLOT_NAME_LEN];
	unsigned i;

	for (i = 0; i < n; i++) {
		int fd;

		extc_fmt(name, sizeof(name), "%s.%u", prefix, i);
		fd = open_slot(d, name);
		if (fd < 0) {
			extc_fmt(why, whylen, "%s/%s: %s", EXTC_SLOT_DIR_NAME, name,
				 errno == EPERM ? "not a plain file of the owner's; refusing it" :
				 extc_level_open_error(d->fd, name, errno));
			return (PASS_FAILED);
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*out = fd;
			return (PASS_GOT);
		}
		close(fd);
		if (errno != EWOULDBLOCK && errno != EINTR) {
			extc_fmt(why, whylen, "%s/%s: cannot lock: %s", EXTC_SLOT_DIR_NAME, name,
				 strerror(errno));
			return (PASS_FAILED);
		}
	}
	return (PASS_BUSY);
}

void extc_slot_release(struct extc_slot_held *held)
{
	if (held->user_fd >= 0)
		close(held->user_fd);
	if (held->node_fd >= 0)
		close(held->node_fd);
	held->user_fd = held->node_fd = -1;
}

/*
 * The user's slot first, then the node's, by every taker in that order;
 * a user slot held while waiting for a node slot is one of the user's
 * own, so no user waits on another's beyond the node's bound.
 */
enum extc_slot_result extc_slot_take(const struct extc_tree *tree, uid_t uid,
				     const struct extc_slot_bound *bound, unsigned wait_ms,
				     struct extc_slot_held *held, char *why, size_t whylen)
{
	const uint64_t deadline = extc_clock_monotonic_ns() + (uint64_t)wait_ms * 1000000ull;
	struct timespec pause = { 0, 1000000 };
	struct slot_dir d = { .fd = -1 };
	struct extc_level_walk w;
	char uname[EXTC_NAME_LEN], user_prefix[SLOT_NAME_LEN];
	enum pass_result pass;
	enum extc_slot_result rv = EXTC_SLOT_REFUSED;

	held->user_fd = held->node_fd = -1;
	extc_level_walk_init(&w, tree);
	if (bound->per_user < 1 || bound->per_user > EXTC_SLOT_MAX || bound->per_node < 1 ||
	    bound->per_node > EXTC_SLOT_MAX) {
		extc_fmt(why, whylen, "slot bounds %u and %u: each must be 1 to %u", bound->per_user,
			 bound->per_node, (unsigned)EXTC_SLOT_MAX);
		goto out;
	}
	if (extc_layout_uid_name(uid, uname, sizeof(uname)) < 0) {
		extc_fmt(why, whylen, "uid %u: not an id this plugin manages", (unsigned)uid);
		goto out;
	}
	extc_fmt(user_prefix, sizeof(user_prefix), "u%s", uname);
	if (open_slot_dir(&w, &d, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	for (;;) {
		pass = PASS_GOT;
		if (held->user_fd < 0)
			pass = take_one(&d, user_prefix, bound->per_user, &held->user_fd, why, whylen);
		if (pass == PASS_GOT)
			pass = take_one(&d, "node", bound->per_node, &held->node_fd, why, whylen);
		if (pass == PASS_GOT) {
			rv = EXTC_SLOT_TAKEN;
			break;
		}
		if (pass == PASS_FAILED)
			break;
		if (extc_clock_monotonic_ns() >= deadline) {
			rv = held->user_fd < 0 ? EXTC_SLOT_USER_FULL : EXTC_SLOT_NODE_FULL;
			break;
		}
		/* 1, 2, 4 ... 64 ms between passes: a slot frees when a helper ends */
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 64000000)
			pause.tv_nsec *= 2;
	}
out:
	if (rv != EXTC_SLOT_TAKEN)
		extc_slot_release(held);
	if (d.fd >= 0)
		close(d.fd);
	extc_level_walk_close(&w);
	return (rv);
}
