/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache adversarial tests: a minimal /dev/fuse server (see fusesrv.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fusesrv.h"

#define BUFSZ ((1 << 20) + 4096)

static void reply(int fd, uint64_t unique, int error, const void *data, size_t len)
{
	char out[sizeof(struct fuse_out_header) + 256];
	struct fuse_out_header *h = (struct fuse_out_header *)out;

	if (len > 256)
		len = 256;
	h->len = (uint32_t)(sizeof(*h) + (error ? 0 : len));
	h->error = error;
	h->unique = unique;
	if (!error && len)
		memcpy(out + sizeof(*h), data, len);
	if (write(fd, out, h->len) < 0) {
		/* the mount went away: nothing to answer */
	}
}

static void root_attr(struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = FUSE_ROOT_ID;
	a->mode = S_IFDIR | 0755;
	a->nlink = 2;
	a->blksize = 4096;
}

void fusesrv_serve(int fd, enum fusesrv_mode mode)
{
	char *buf = malloc(BUFSZ);

	if (buf == NULL)
		_exit(1);
	for (;;) {
		struct fuse_in_header *in = (struct fuse_in_header *)buf;
		ssize_t n = read(fd, buf, BUFSZ);

		if (n < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			_exit(0);	/* ENODEV: unmounted */
		}
		if ((size_t)n < sizeof(*in))
			continue;
		/* a wedged daemon: mounted (INIT answered), then silent whatever is asked */
		if (mode == FUSESRV_HANG_ALL && in->opcode != FUSE_INIT)
			continue;
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_out o;

			memset(&o, 0, sizeof(o));
			o.major = FUSE_KERNEL_VERSION;
			o.minor = FUSE_KERNEL_MINOR_VERSION;
			o.max_readahead = 4096;
			o.max_background = 4;
			o.congestion_threshold = 3;
			o.max_write = 4096;
			o.time_gran = 1;
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o;

			memset(&o, 0, sizeof(o));
			root_attr(&o.attr);
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPENDIR: {
			struct fuse_open_out o;

			if (mode == FUSESRV_HANG_OPENDIR)
				break;	/* never answered */
			memset(&o, 0, sizeof(o));
			o.fh = 1;
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READDIR:
			reply(fd, in->unique, 0, NULL, 0);	/* end of directory */
			break;
		case FUSE_STATFS: {
			struct fuse_statfs_out o;

			memset(&o, 0, sizeof(o));
			o.st.bsize = 4096;
			o.st.namelen = 255;
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_RELEASEDIR:
		case FUSE_ACCESS:
		case FUSE_FLUSH:
			reply(fd, in->unique, 0, NULL, 0);
			break;
		case FUSE_LOOKUP:
			reply(fd, in->unique, -ENOENT, NULL, 0);
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break;	/* no answer expected */
		case FUSE_DESTROY:
			reply(fd, in->unique, 0, NULL, 0);
			_exit(0);
		default:
			reply(fd, in->unique, -ENOSYS, NULL, 0);
		}
	}
}

int fusesrv_start(struct fusesrv *s, const char *mnt, bool hang_on_opendir)
{
	char opts[128];
	int fd;

	memset(s, 0, sizeof(*s));
	snprintf(s->mnt, sizeof(s->mnt), "%s", mnt);
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return (-1);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
	if (mount("extcfuse", mnt, "fuse.extcfuse", MS_NOSUID | MS_NODEV, opts) < 0) {
		int saved = errno;

		close(fd);
		errno = saved;
		return (-1);
	}
	s->pid = fork();
	if (s->pid < 0) {
		umount2(mnt, MNT_DETACH);
		close(fd);
		return (-1);
	}
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fusesrv_serve(fd, hang_on_opendir ? FUSESRV_HANG_OPENDIR : FUSESRV_ANSWER);
		_exit(0);
	}
	close(fd);
	return (0);
}

void fusesrv_stop(struct fusesrv *s)
{
	if (s->pid <= 0)
		return;
	/* a lazy unmount never waits for a request nobody answers; the daemon's death ends it */
	umount2(s->mnt, MNT_DETACH);
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}
