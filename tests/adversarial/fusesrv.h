/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: a minimal FUSE filesystem spoken directly over
 * /dev/fuse (no libfuse), for security-cases.md cases 12 and 24. Its root is
 * an empty directory, root-owned 0755. In "hang" mode it never answers
 * OPENDIR, as a hostile or wedged daemon would.
 */
#ifndef EXTC_FUSESRV_H_
#define EXTC_FUSESRV_H_

#include <stdbool.h>
#include <sys/types.h>

enum fusesrv_mode {
	FUSESRV_ANSWER,		/* an empty directory, every request answered */
	FUSESRV_HANG_OPENDIR,	/* OPENDIR never answered */
	FUSESRV_HANG_ALL,	/* nothing but INIT ever answered: GETATTR, LOOKUP, OPENDIR, STATFS wait */
};

struct fusesrv {
	pid_t pid;		/* the daemon */
	char mnt[4096];
};

/* Mount on 'mnt' (an existing directory) and start the daemon; -1 with errno if FUSE is missing. */
int fusesrv_start(struct fusesrv *s, const char *mnt, bool hang_on_opendir);
/* Answer requests on the /dev/fuse descriptor 'fd' until the mount goes (in the daemon). */
void fusesrv_serve(int fd, enum fusesrv_mode mode);
/* Detach the mount (aborting any request in flight) and reap the daemon. */
void fusesrv_stop(struct fusesrv *s);

#endif /* EXTC_FUSESRV_H_ */
