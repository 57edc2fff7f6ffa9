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

struct fusesrv {
	pid_t pid;		/* the daemon */
	char mnt[4096];
};

/* Mount on 'mnt' (an existing directory) and start the daemon; -1 with errno if FUSE is missing. */
int fusesrv_start(struct fusesrv *s, const char *mnt, bool hang_on_opendir);
/* Detach the mount (aborting any request in flight) and reap the daemon. */
void fusesrv_stop(struct fusesrv *s);

#endif /* EXTC_FUSESRV_H_ */
