/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache adversarial tests: a FUSE mount made by an unprivileged user (see fuseuser.h). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuseuser.h"

#define FUSE_CONF "/etc/fuse.conf"

static char saved_conf[8192];
static ssize_t saved_len = -1;	/* -1: nothing saved; -2: there was no file */

static int write_conf(const char *text, size_t len)
{
	char tmp[] = FUSE_CONF ".extc-test";
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rv = -1;

	if (fd < 0)
		return (-1);
	if (write(fd, text, len) == (ssize_t)len && fchmod(fd, 0644) == 0 && rename(tmp, FUSE_CONF) == 0)
		rv = 0;
	close(fd);
	return (rv);
}

static mode_t saved_dev_mode = (mode_t)-1;

static void restore_conf(void)
{
	if (saved_dev_mode != (mode_t)-1)
		chmod("/dev/fuse", saved_dev_mode);
	saved_dev_mode = (mode_t)-1;
	if (saved_len == -2)
		unlink(FUSE_CONF);
	else if (saved_len >= 0)
		write_conf(saved_conf, (size_t)saved_len);
	saved_len = -1;
}

int fuseuser_allow_other(void)
{
	char text[sizeof(saved_conf) + 64];
	int fd;

	if (saved_len != -1)
		return (0);
	fd = open(FUSE_CONF, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT)
		return (-1);
	if (fd < 0) {
		saved_len = -2;
		saved_conf[0] = '\0';
	} else {
		saved_len = read(fd, saved_conf, sizeof(saved_conf) - 1);
		close(fd);
		if (saved_len < 0)
			return (-1);
		saved_conf[saved_len] = '\0';
	}
	atexit(restore_conf);
	/* Debian makes /dev/fuse 0666; a container's /dev may not have: as on a node */
	{
		struct stat st;

		if (stat("/dev/fuse", &st) < 0)
			return (-1);
		if ((st.st_mode & 0666) != 0666) {
			saved_dev_mode = st.st_mode & 07777;
			if (chmod("/dev/fuse", 0666) < 0)
				return (-1);
		}
	}
	snprintf(text, sizeof(text), "%s%s# added by spank-ext-cache's tests, removed at their end\n"
		 "user_allow_other\n", saved_len > 0 ? saved_conf : "",
		 saved_len > 0 && saved_conf[saved_len - 1] != '\n' ? "\n" : "");
	return (write_conf(text, strlen(text)));
}

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

/* In the forked daemon, already the user: mount through fusermount3, report, serve. */
static void daemon_main(const char *mnt, enum fusesrv_mode mode, const char *options, int ready)
{
	char env[32];
	int sp[2], fd, status;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		_exit(3);
	pid = fork();
	if (pid == 0) {
		int keep = dup(sp[1]);	/* without O_CLOEXEC: fusermount3 must get it */

		snprintf(env, sizeof(env), "%d", keep);
		setenv("_FUSE_COMMFD", env, 1);
		execlp("fusermount3", "fusermount3", "-o", options, "--", mnt, (char *)NULL);
		fprintf(stderr, "fuseuser: fusermount3: %s (apt-get install fuse3)\n", strerror(errno));
		_exit(127);
	}
	close(sp[1]);
	fd = pid > 0 ? receive_fd(sp[0]) : -1;
	if (pid > 0)
		waitpid(pid, &status, 0);
	close(sp[0]);
	if (fd < 0)
		_exit(4);
	if (write(ready, "y", 1) != 1)
		_exit(5);
	close(ready);
	fusesrv_serve(fd, mode);
	_exit(0);
}

static int start(struct fuseuser *f, const char *mnt, uid_t uid, gid_t gid,
		 enum fusesrv_mode mode, bool allow_other)
{
	const char *options = allow_other ? "allow_other,fsname=extc-user,subtype=extc" :
					    "fsname=extc-user,subtype=extc";
	struct pollfd pfd;
	int pipefd[2];
	char c = 0;

	memset(f, 0, sizeof(*f));
	snprintf(f->mnt, sizeof(f->mnt), "%s", mnt);
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return (-1);
	f->pid = fork();
	if (f->pid == 0) {
		/* the user's daemon holds nothing of the test's (a lock would outlive it) */
		if (pipefd[1] != 3 && dup2(pipefd[1], 3) < 0)
			_exit(2);
		syscall(SYS_close_range, 4u, ~0u, 0u);
		pipefd[1] = 3;
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(2);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		daemon_main(mnt, mode, options, pipefd[1]);
	}
	close(pipefd[1]);
	pfd.fd = pipefd[0];
	pfd.events = POLLIN;
	/* a bound, not a synchronisation: fusermount3 answers in milliseconds */
	if (f->pid < 0 || poll(&pfd, 1, 20000) != 1 || read(pipefd[0], &c, 1) != 1 || c != 'y') {
		close(pipefd[0]);
		fprintf(stderr, "fuseuser: uid %u could not mount FUSE on %s with fusermount3 "
			"-o %s\n", (unsigned)uid, mnt, options);
		fuseuser_stop(f);
		return (-1);
	}
	close(pipefd[0]);
	return (0);
}

int fuseuser_start(struct fuseuser *f, const char *mnt, uid_t uid, gid_t gid,
		   enum fusesrv_mode mode)
{
	return (start(f, mnt, uid, gid, mode, true));
}

int fuseuser_start_private(struct fuseuser *f, const char *mnt, uid_t uid, gid_t gid,
			   enum fusesrv_mode mode)
{
	return (start(f, mnt, uid, gid, mode, false));
}

void fuseuser_detach_all(const char *mnt)
{
	char line[8192], point[4096], src[256], scope[4096];
	const char *slash = strchr(mnt + 1, '/');
	size_t slen;
	int round;

	slash = slash != NULL ? strchr(slash + 1, '/') : NULL;
	slen = slash != NULL ? (size_t)(slash - mnt) : strlen(mnt);
	snprintf(scope, sizeof(scope), "%.*s", (int)slen, mnt);
	for (round = 0; round < 16; round++) {
		FILE *mi = fopen("/proc/self/mountinfo", "re");
		int found = 0;

		if (mi == NULL)
			return;
		while (fgets(line, sizeof(line), mi) != NULL) {
			const char *sep = strstr(line, " - ");

			if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 || sep == NULL ||
			    sscanf(sep, " - %*s %255s", src) != 1 || strcmp(src, "extc-user") != 0 ||
			    strncmp(point, scope, strlen(scope)) != 0)
				continue;
			umount2(point, MNT_DETACH);
			found = 1;
		}
		fclose(mi);
		if (!found)
			return;
	}
}

void fuseuser_kill(struct fuseuser *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	f->pid = 0;
}

void fuseuser_stop(struct fuseuser *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	f->pid = 0;
	if (f->mnt[0] != '\0' && fuseuser_is_mounted(f->mnt) == 1)
		umount2(f->mnt, MNT_DETACH);
}

int fuseuser_is_mounted(const char *path)
{
	char line[8192], point[4096];
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (mi == NULL)
		return (-1);
	while (!found && fgets(line, sizeof(line), mi) != NULL) {
		/* "id parent major:minor root mountpoint ..." (no space or \n in our paths) */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 && strcmp(point, path) == 0)
			found = 1;
	}
	fclose(mi);
	return (found);
}
