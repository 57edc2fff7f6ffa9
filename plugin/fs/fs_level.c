/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the root-owned levels <base>[/<node>]/<uid>/<job>, opened and verified one by one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "fs/fs_ident.h"
#include "fs/fs_level.h"
#include "base/layout.h"
#include "base/text.h"

#define LEVEL_RETRIES 64	/* bounded, but far above what racing epilogs can cause */

int extc_level_lock(int fd, int op, unsigned wait_ms)
{
	uint64_t deadline = extc_clock_monotonic_ns() + (uint64_t)wait_ms * 1000000ull;
	struct timespec pause = { 0, 1000000 };

	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0)
			return (0);
		if (errno != EWOULDBLOCK && errno != EINTR)
			return (-1);
		if (extc_clock_monotonic_ns() >= deadline) {
			errno = EWOULDBLOCK;
			return (-1);
		}
		/* 1, 2, 4 ... 64 ms between tries: cheap while the holder finishes */
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 64000000)
			pause.tv_nsec *= 2;
	}
}

void extc_level_walk_init(struct extc_level_walk *w, const struct extc_tree *tree)
{
	w->tree = *tree;
	w->base = w->node = w->uid = w->job = -1;
	w->path[0] = '\0';
}

void extc_level_walk_close(struct extc_level_walk *w)
{
	int *fds[] = { &w->job, &w->uid, &w->node, &w->base };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0) {
			/* cppcheck 2.10 reads this call as a declaration of a second fds */
			// cppcheck-suppress shadowVariable
			close(*fds[i]);
		}
		*fds[i] = -1;
	}
}

/*
 * Why openat(O_DIRECTORY|O_NOFOLLOW) failed, in words: Linux says ENOTDIR
 * rather than ELOOP for a symlink, so the entry itself is looked at.
 */
const char *extc_level_open_error(int parentfd, const char *name, int err)
{
	struct extc_ident id;

	if (err == ELOOP)
		return ("is a symbolic link");
	if (err == ENOTDIR) {
		/* from memory: a file a user mounted FUSE on must not be asked */
		if (extc_ident_at(parentfd, name, &id) == 0 && S_ISLNK(id.mode))
			return ("is a symbolic link");
		return ("is not a directory");
	}
	return (strerror(err));
}

/* How open_level opens a level. */
#define OPEN_CREATE 1u		/* made first if missing */
#define OPEN_MOUNT_OK 2u	/* the base: it may itself be a mount point */

/*
 * Open (and with OPEN_CREATE, make) a skeleton level below a verified
 * parent. EXTC_LEVEL_ABSENT when it does not exist and is not to be made.
 * The level must be on the mount of its parent, whose identity is taken
 * here, from its descriptor; only the base (OPEN_MOUNT_OK) is exempt.
 */
static enum extc_level_result open_level(struct extc_level_walk *w, int parentfd,
					 const char *name, unsigned how, int *out, char *why,
					 size_t whylen)
{
	const struct extc_fs_policy *pol = w->tree.pol;
	const bool create = (how & OPEN_CREATE) != 0;
	const bool mount_ok = (how & OPEN_MOUNT_OK) != 0;
	enum extc_open_result res = EXTC_OPEN_ERROR;
	struct extc_ident parent_id, id;
	char *path = w->path;
	size_t pathlen = sizeof(w->path);
	bool created = false;
	size_t plen = strlen(path);
	int attempt;
	int fd = -1;
	enum extc_level_result rv = EXTC_LEVEL_REFUSED;

	if (!mount_ok && extc_ident_fd(parentfd, &parent_id) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat: %s", path, strerror(errno));
		goto out;
	}
	if (extc_fmt(path + plen, pathlen - plen, "/%s", name) < 0) {
		extc_fmt(why, whylen, "%s: path too long", path);
		goto out;
	}
	/* another job's epilog may drop an empty level between our mkdir and open */
	for (attempt = 0; attempt < LEVEL_RETRIES; attempt++) {
		if (create) {
			if (mkdirat(parentfd, name, EXTC_FS_POLICY_SKELETON_MODE) == 0)
				created = true;
			else if (errno != EEXIST) {
				extc_fmt(why, whylen, "%s: cannot create: %s", path, strerror(errno));
				goto out;
			}
		}
		res = extc_ident_open_below(parentfd, mount_ok ? NULL : &parent_id, name, &fd, &id);
		if (res != EXTC_OPEN_ABSENT || !create)
			break;
	}
	if (res == EXTC_OPEN_MOUNT) {
		extc_fmt(why, whylen, "%s: is a mount point; refusing to cross it", path);
		goto out;
	}
	if (fd < 0) {
		if (errno == ENOENT && !create) {
			rv = EXTC_LEVEL_ABSENT;
			goto out;
		}
		extc_fmt(why, whylen, "%s: cannot open: %s", path, extc_level_open_error(parentfd, name, errno));
		goto out;
	}
	if (created) {
		/* exact owner and mode whatever the umask or a setgid parent did */
		if (fchown(fd, pol->owner, pol->owner_gid) < 0 ||
		    fchmod(fd, EXTC_FS_POLICY_SKELETON_MODE) < 0 || extc_ident_fd(fd, &id) < 0) {
			extc_fmt(why, whylen, "%s: cannot set owner and mode: %s", path,
				 strerror(errno));
			goto out;
		}
	}
	if (extc_fs_policy_check_skeleton(pol, &id, path, why, whylen) < 0)
		goto out;
	*out = fd;
	fd = -1;
	rv = EXTC_LEVEL_FOUND;
out:
	if (fd >= 0)
		close(fd);
	/*
	 * A level made here and then refused would be accepted half-made by
	 * the next step (wrong mode, wrong owner). It is still empty: only
	 * root can write in it, so rmdir by name removes exactly what we made.
	 */
	if (rv == EXTC_LEVEL_REFUSED && created)
		unlinkat(parentfd, name, AT_REMOVEDIR);
	return (rv);
}

enum extc_level_result extc_level_open(struct extc_level_walk *w, int parentfd, const char *name,
				       bool create, int *out, char *why, size_t whylen)
{
	return (open_level(w, parentfd, name, create ? OPEN_CREATE : 0, out, why, whylen));
}

/*
 * Walk from "/" to the base one component at a time with O_NOFOLLOW, so a
 * symlink anywhere on the way is refused rather than followed (O_NOFOLLOW
 * on a whole path guards only its last component).
 */
static enum extc_level_result open_base(struct extc_level_walk *w, bool create, char *why,
					size_t whylen)
{
	const struct extc_fs_policy *pol = w->tree.pol;
	char *path = w->path;
	size_t pathlen = sizeof(w->path);
	char copy[EXTC_BASE_MAX + 1];
	struct extc_ident id;
	char *save = NULL, *comp, *next;
	int fd, nfd;
	enum extc_level_result rv = EXTC_LEVEL_REFUSED;

	path[0] = '\0';
	if (extc_fmt(copy, sizeof(copy), "%s", w->tree.cfg->base) < 0) {
		extc_fmt(why, whylen, "base is too long");
		return (EXTC_LEVEL_REFUSED);
	}
	fd = open("/", EXTC_DIR_OPEN_FLAGS);
	if (fd < 0 || extc_ident_fd(fd, &id) < 0) {
		extc_fmt(why, whylen, "/: cannot open: %s", strerror(errno));
		goto out;
	}
	if (extc_fs_policy_check_ancestor(pol, &id, path, why, whylen) < 0)
		goto out;
	comp = strtok_r(copy, "/", &save);
	for (next = strtok_r(NULL, "/", &save); next != NULL; next = strtok_r(NULL, "/", &save)) {
		size_t plen = strlen(path);

		extc_fmt(path + plen, pathlen - plen, "/%s", comp);
		nfd = openat(fd, comp, EXTC_DIR_OPEN_FLAGS);
		if (nfd < 0) {
			rv = (errno == ENOENT && !create) ? EXTC_LEVEL_ABSENT : EXTC_LEVEL_REFUSED;
			if (rv == EXTC_LEVEL_REFUSED)
				extc_fmt(why, whylen, "%s: cannot open: %s", path,
					 extc_level_open_error(fd, comp, errno));
			goto out;
		}
		close(fd);
		fd = nfd;
		if (extc_ident_fd(fd, &id) < 0) {
			extc_fmt(why, whylen, "%s: cannot stat: %s", path, strerror(errno));
			goto out;
		}
		if (extc_fs_policy_check_ancestor(pol, &id, path, why, whylen) < 0)
			goto out;
		comp = next;
	}
	rv = open_level(w, fd, comp, OPEN_MOUNT_OK | (create ? OPEN_CREATE : 0), &w->base, why,
			whylen);
out:
	if (fd >= 0)
		close(fd);
	return (rv);
}

/* Base (refusing a network filesystem unless allowed) and the node level if any. */
enum extc_level_result extc_level_open_top(struct extc_level_walk *w, bool create, char *why,
					   size_t whylen)
{
	const char *fstype;
	bool network;
	enum extc_level_result rv;

	rv = open_base(w, create, why, whylen);
	if (rv != EXTC_LEVEL_FOUND)
		return (rv);
	if (extc_ident_is_network_fs(w->base, &network, &fstype) < 0) {
		extc_fmt(why, whylen, "%s: cannot stat the filesystem: %s", w->path, strerror(errno));
		return (EXTC_LEVEL_REFUSED);
	}
	if (network && !w->tree.cfg->allow_shared_fs) {
		extc_fmt(why, whylen,
			 "%s: is on %s, a network or cluster filesystem shared between nodes; "
			 "use node-local storage or set allow_shared_fs=yes", w->path, fstype);
		return (EXTC_LEVEL_REFUSED);
	}
	if (w->tree.pol->node_name == NULL) {
		w->node = dup(w->base);
		if (w->node < 0) {
			extc_fmt(why, whylen, "%s: cannot duplicate its descriptor: %s", w->path,
				 strerror(errno));
			return (EXTC_LEVEL_REFUSED);
		}
		return (EXTC_LEVEL_FOUND);
	}
	return (extc_level_open(w, w->base, w->tree.pol->node_name, create, &w->node, why, whylen));
}

/*
 * Open <uid> and <job> below the node level. While a job level is being
 * made, the uid level is held with a shared lock, so that an epilog that
 * removes the (then empty) uid level of the same user cannot pull it away
 * between our open and our mkdir; a level found already unlinked is
 * simply made again.
 */
enum extc_level_result extc_level_open_job(struct extc_level_walk *w, uid_t uid, uint32_t jobid,
					   bool create, char *why, size_t whylen)
{
	char uname[EXTC_NAME_LEN], jname[EXTC_NAME_LEN];
	struct extc_ident uid_id;
	size_t plen = strlen(w->path);
	int attempt;
	enum extc_level_result rv = EXTC_LEVEL_REFUSED;

	if (extc_layout_uid_name(uid, uname, sizeof(uname)) < 0 ||
	    extc_layout_job_name(jobid, jname, sizeof(jname)) < 0) {
		extc_fmt(why, whylen, "uid %u, job %u: not ids this plugin manages",
			 (unsigned)uid, jobid);
		return (EXTC_LEVEL_REFUSED);
	}
	for (attempt = 0; attempt < LEVEL_RETRIES; attempt++) {
		w->path[plen] = '\0';
		rv = extc_level_open(w, w->node, uname, create, &w->uid, why, whylen);
		if (rv != EXTC_LEVEL_FOUND || !create)
			break;
		if (extc_level_lock(w->uid, LOCK_SH, EXTC_LEVEL_LOCK_WAIT_MS) < 0 ||
		    extc_ident_fd(w->uid, &uid_id) < 0) {
			extc_fmt(why, whylen, "%s: cannot lock: %s", w->path, strerror(errno));
			return (EXTC_LEVEL_REFUSED);
		}
		if (uid_id.nlink > 0)
			break;
		close(w->uid);
		w->uid = -1;
		rv = EXTC_LEVEL_REFUSED;
		extc_fmt(why, whylen, "%s: removed repeatedly while in use", w->path);
	}
	if (rv != EXTC_LEVEL_FOUND)
		return (rv);
	rv = extc_level_open(w, w->uid, jname, create, &w->job, why, whylen);
	if (rv == EXTC_LEVEL_FOUND && create) {
		struct extc_ident job_id;

		/* held by every step of the job for its lifetime: a sweep skips held levels */
		if (extc_level_lock(w->job, LOCK_SH, EXTC_LEVEL_LOCK_WAIT_MS) < 0 ||
		    extc_ident_fd(w->job, &job_id) < 0) {
			extc_fmt(why, whylen, "%s: cannot lock: %s", w->path, strerror(errno));
			rv = EXTC_LEVEL_REFUSED;
		} else if (job_id.nlink == 0) {
			extc_fmt(why, whylen, "%s: removed while being set up", w->path);
			rv = EXTC_LEVEL_REFUSED;
		}
	}
	if (create)
		flock(w->uid, LOCK_UN);
	return (rv);
}

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
