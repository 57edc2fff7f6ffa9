/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node's one turn on a fresh leaf in task_init: seed it, write its env file, mark the turn done. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "base/text.h"
#include "spank/pool_step.h"
#include "spank/step.h"
#include "spank/step_container.h"
#include "spank/step_seed.h"
#include "spank/warm_step.h"
#include "spank/warm_tell.h"
#include "warm/warm_seed.h"

/* Why in a task and why one turn per node: step_seed.h. */
void extc_step_seed_once(spank_t sp, struct extc_step *s, bool tell, bool seeds)
{
	char mark[64];
	size_t before = extc_warm_step_notices(s);
	int fd;

	/* the turn is over (its work done before it was marked): nothing to wait for */
	if (s->turn_done != NULL && __atomic_load_n(s->turn_done, __ATOMIC_ACQUIRE) != 0)
		return;
	if (extc_fmt(mark, sizeof(mark), "%s%u", EXTC_SEEDED_MARK_PREFIX, s->ids.stepid) < 0)
		return;
	fd = open(s->leaf_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
		;
	if (s->turn_done != NULL ? *s->turn_done == 0
				 : faccessat(fd, mark, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		if (seeds) {
			extc_warm_step_seed(s);
			extc_pool_step_seed(s, extc_warm_step_seeds(s));
		}
		extc_step_container_envfile(sp, fd, s);
		if (s->turn_done != NULL) {
			__atomic_store_n(s->turn_done, 1, __ATOMIC_RELEASE);
		} else {
			int markfd = openat(fd, mark, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					    O_CLOEXEC, 0600);

			if (markfd >= 0)
				close(markfd);
		}
		/* the one task of the node that knows how the directory started says it, if asked */
		extc_warm_tell(sp, s);
		/* task 0 tells everything below; another task tells what its seeding found */
		if (tell)
			extc_warm_step_notify(s, before);
	}
	close(fd);	/* and with it the lock */
}
