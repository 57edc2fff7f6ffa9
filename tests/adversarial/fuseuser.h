/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: a FUSE filesystem mounted the way a job's user
 * mounts one: as that user, through the setuid fusermount3 with -o allow_other,
 * the daemon being a process of that user (tests/adversarial/fusesrv.c's server).
 * /etc/fuse.conf needs user_allow_other for that, and /dev/fuse must be open to
 * users (0666, as Debian makes it): fuseuser_allow_other() sees to both and
 * restores them at exit.
 */
#ifndef EXTC_FUSEUSER_H_
#define EXTC_FUSEUSER_H_

#include <sys/types.h>

#include "fusesrv.h"

struct fuseuser {
	pid_t pid;		/* the daemon, running as the user */
	char mnt[4096];
};

/* Make sure /etc/fuse.conf says user_allow_other; the old file comes back at exit. -1 on error. */
int fuseuser_allow_other(void);

/*
 * As uid:gid (no supplementary groups), run fusermount3 -o allow_other on
 * 'mnt' and serve the mount in 'mode'. Returns when the mount is in place;
 * -1 (with a message on stderr) when fusermount3 refused or is missing.
 */
int fuseuser_start(struct fuseuser *f, const char *mnt, uid_t uid, gid_t gid,
		   enum fusesrv_mode mode);

/*
 * The same without allow_other, as any user with /dev/fuse may mount (no
 * user_allow_other needed): the kernel then refuses every other uid, root
 * included, the mount's attributes (EACCES).
 */
int fuseuser_start_private(struct fuseuser *f, const char *mnt, uid_t uid, gid_t gid,
			   enum fusesrv_mode mode);

/* Kill the daemon and leave its mount in place: a dead FUSE mount (every access ENOTCONN). */
void fuseuser_kill(struct fuseuser *f);

/*
 * Kill the daemon (the kernel then fails every request in flight, which
 * frees whatever waited on it) and detach the mount if it is still where
 * it was made.
 */
void fuseuser_stop(struct fuseuser *f);

/*
 * Detach every mount made through fuseuser_start below the first two
 * components of 'path' (a test's own directory), wherever a rename of an
 * ancestor took it. For a test's teardown.
 */
void fuseuser_detach_all(const char *path);

/* Is 'path' the root of a mount now (from /proc/self/mountinfo, no access to it)? */
int fuseuser_is_mounted(const char *path);

#endif /* EXTC_FUSEUSER_H_ */
