/* spank-ext-cache: run slow work (emptying the trash) after the epilog has returned. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "background.h"

static int thread_count(void)
{
	char line[128];
	int threads = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Threads:", 8) == 0) {
			threads = atoi(line + 8);
			break;
		}
	}
	fclose(f);
	return (threads);
}

/*
 * Pipes and sockets go (slurmd may wait for their other end to close);
 * regular files stay, the log file among them, so the work can still log.
 */
static void close_inherited_fds(void)
{
	int fd, null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int max = (int)sysconf(_SC_OPEN_MAX);
	struct stat sb;

	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = 0; fd < max; fd++) {
		if (fd == null || (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)))
			continue;
		if (fd <= 2 && null >= 0)
			dup2(null, fd);
		else
			close(fd);
	}
	if (null > 2)
		close(null);
}

pid_t extc_run_detached(void (*fn)(void *arg), void *arg)
{
	int pipefd[2];
	pid_t child, grandchild = -1;
	int status;

	if (thread_count() != 1 || pipe2(pipefd, O_CLOEXEC) < 0)
		return (-1);
	child = fork();
	if (child < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return (-1);
	}
	if (child == 0) {
		pid_t pid;

		close(pipefd[0]);
		setsid();
		pid = fork();
		if (pid == 0) {
			close(pipefd[1]);
			close_inherited_fds();
			fn(arg);
			_exit(0);
		}
		if (write(pipefd[1], &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
			_exit(1);
		_exit(pid < 0 ? 1 : 0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &grandchild, sizeof(grandchild)) != (ssize_t)sizeof(grandchild))
		grandchild = -1;
	close(pipefd[0]);
	while (waitpid(child, &status, 0) < 0)
		;
	return (grandchild);
}
