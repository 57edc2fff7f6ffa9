/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: what a hostile job user runs in a step
 * (test_hostile.bats). As whoever runs it, mount a FUSE filesystem that never
 * answers anything but INIT on MNT, through the setuid fusermount3 with
 * -o allow_other, and leave its daemon running detached from the step
 * (double fork and setsid: proctrack/linuxproc, which follows parent pids,
 * does not kill it when the step ends; no descriptor of the step is kept,
 * so slurmstepd does not wait for it either). The hang is then still in
 * place when later steps and the job's epilog meet MNT.
 *
 * The server is tests/adversarial/fusesrv.c's (FUSESRV_HANG_ALL), built in
 * with it. tests/adversarial/fuseuser.c mounts the same way but for a test
 * running as root: it switches user (setgroups, which a user cannot call)
 * and ties the daemon to its parent (PR_SET_PDEATHSIG), which is not what a
 * job's user does; hence this program.
 *
 *   [FUSE_HANG_PRIVATE=1] fuse_hang MNT [PIDFILE]
 *
 * MNT: an existing directory, absolute path. Exits 0 once fusermount3 has
 * mounted, printing "fuse_hang: MNT: daemon PID" and writing PID to
 * PIDFILE; exits 1 with a message when it could not. Built by
 * test_hostile.bats at run time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* pipe2 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fusesrv.h"

/*
 * fsname and subtype: how test_hostile.bats finds these mounts in a
 * mountinfo. With FUSE_HANG_PRIVATE set in the environment, no allow_other
 * (which needs no user_allow_other): the kernel then answers other users,
 * root included, EACCES without asking the daemon (case 68).
 */
#define FUSE_HANG_NAMES "fsname=extc-hang,subtype=extchang"
#define FUSE_HANG_OPTS (getenv("FUSE_HANG_PRIVATE") != NULL ? FUSE_HANG_NAMES : \
			"allow_other," FUSE_HANG_NAMES)

/* The descriptor fusermount3 sends over its _FUSE_COMMFD socket, or -1. */
static int receive_fd(int sock)
{
	char byte, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) <= 0)
		return (-1);
	c = CMSG_FIRSTHDR(&msg);
	if (c == NULL || c->cmsg_type != SCM_RIGHTS)
		return (-1);
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return (fd);
}

/* stdin, stdout, stderr on /dev/null: nothing of the step's I/O stays open */
static int detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		return (-1);
	if (fd > 2)
		close(fd);
	return (0);
}

/*
 * In the detached grandchild: mount through fusermount3, report the pid on
 * 'ready' (or the reason on stderr, still the caller's), then serve.
 */
static void daemon_main(const char *mnt, int ready)
{
	char env[32], msg[32];
	int sp[2], fd, status = 0;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		perror("fuse_hang: socketpair");
		_exit(1);
	}
	pid = fork();
	if (pid == 0) {
		int keep = dup(sp[1]);	/* without O_CLOEXEC: fusermount3 must get it */

		snprintf(env, sizeof(env), "%d", keep);
		setenv("_FUSE_COMMFD", env, 1);
		execlp("fusermount3", "fusermount3", "-o", FUSE_HANG_OPTS, "--", mnt, (char *)NULL);
		fprintf(stderr, "fuse_hang: fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	close(sp[1]);
	fd = pid > 0 ? receive_fd(sp[0]) : -1;
	if (pid > 0)
		waitpid(pid, &status, 0);
	close(sp[0]);
	if (fd < 0) {
		fprintf(stderr, "fuse_hang: fusermount3 -o %s -- %s did not mount (status 0x%x)\n",
			FUSE_HANG_OPTS, mnt, (unsigned)status);
		_exit(1);
	}
	snprintf(msg, sizeof(msg), "%d\n", (int)getpid());
	if (detach_stdio() < 0 || write(ready, msg, strlen(msg)) != (ssize_t)strlen(msg))
		_exit(1);
	close(ready);
	fusesrv_serve(fd, FUSESRV_HANG_ALL);
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *mnt, *pidfile;
	struct pollfd pfd;
	char buf[32];
	int ready[2];
	ssize_t n;
	pid_t pid;

	if (argc < 2 || argc > 3 || argv[1][0] != '/') {
		fprintf(stderr, "usage: fuse_hang /ABSOLUTE/MOUNTPOINT [PIDFILE]\n");
		return (1);
	}
	mnt = argv[1];
	pidfile = argc == 3 ? argv[2] : NULL;
	if (pipe2(ready, O_CLOEXEC) < 0) {
		perror("fuse_hang: pipe2");
		return (1);
	}
	pid = fork();
	if (pid < 0) {
		perror("fuse_hang: fork");
		return (1);
	}
	if (pid == 0) {
		/* keep 0-2 and the pipe; the step's other descriptors stay behind */
		if (ready[1] != 3 && dup2(ready[1], 3) < 0)
			_exit(1);
		syscall(SYS_close_range, 4u, ~0u, 0u);
		if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0 || chdir("/") < 0 || setsid() < 0)
			_exit(1);
		pid = fork();
		if (pid != 0)
			_exit(pid < 0 ? 1 : 0);
		daemon_main(mnt, 3);
	}
	close(ready[1]);
	waitpid(pid, NULL, 0);
	pfd.fd = ready[0];
	pfd.events = POLLIN;
	/* a bound, not a synchronisation: fusermount3 answers in milliseconds */
	if (poll(&pfd, 1, 20000) != 1 || (n = read(ready[0], buf, sizeof(buf) - 1)) <= 0) {
		fprintf(stderr, "fuse_hang: %s: no FUSE mount (see above)\n", mnt);
		return (1);
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	printf("fuse_hang: %s: daemon %s\n", mnt, buf);
	if (pidfile != NULL) {
		FILE *f = fopen(pidfile, "w");

		if (f == NULL || fprintf(f, "%s\n", buf) < 0 || fclose(f) != 0) {
			fprintf(stderr, "fuse_hang: %s: %s\n", pidfile, strerror(errno));
			return (1);
		}
	}
	return (0);
}
