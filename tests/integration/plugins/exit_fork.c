/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: a SPANK plugin that, in slurmstepd's exit hook,
 * starts a detached root process (comm "exit-fork") the way the plugin
 * starts its long work there, to see where such a process lands and what
 * the end of the step and of the job do to it. Built by test_cgroup.bats
 * together with plugin/proc/cgroup_escape.c.
 *
 * Arguments: out=DIR (required; a directory every node sees),
 * sleep=SECONDS (how long the process lives, default 30), escape=1 (it
 * first leaves the job's cgroups with extc_cgroup_escape).
 *
 * The process writes DIR/JOB.STEP.NODE.start (its pid, then its
 * /proc/self/cgroup, then, with escape=1, the result and the cgroups it
 * moved to), and DIR/JOB.STEP.NODE.end with its cgroups when its sleep is
 * over, so a test can tell "killed" (no .end) from "lived on".
 *
 * As the plugin's hook does (extc_background_detach), the hook returns only once the
 * process has written its start file and, with escape=1, left the job's
 * cgroups (at most 10 s): slurmstepd removes the job's cgroups soon after
 * the hook, once, and a process still in one then keeps it there for good
 * (on 22.05, cgroup/v1, an escape 6 s after the hook came too late).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "proc/cgroup_escape.h"

SPANK_PLUGIN(exit_fork, 1);

struct args {
	const char *out;
	unsigned sleep_s;
	int escape;
};

static void parse(int ac, char **av, struct args *a)
{
	int i;

	a->out = NULL;
	a->sleep_s = 30;
	a->escape = 0;
	for (i = 0; i < ac; i++) {
		if (strncmp(av[i], "out=", 4) == 0)
			a->out = av[i] + 4;
		else if (strncmp(av[i], "sleep=", 6) == 0)
			a->sleep_s = (unsigned)strtoul(av[i] + 6, NULL, 10);
		else if (strcmp(av[i], "escape=1") == 0)
			a->escape = 1;
	}
}

static void copy_cgroups(FILE *to)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		fputs(line, to);
	fclose(f);
}

/*
 * In the detached grandchild: report, maybe escape, tell the hook (close
 * 'reported'), live, report again.
 */
static void run(const struct args *a, const char *name, int reported)
{
	char path[PATH_MAX], why[512];
	FILE *f;

	prctl(PR_SET_NAME, "exit-fork", 0, 0, 0);
	snprintf(path, sizeof(path), "%s/%s.start", a->out, name);
	f = fopen(path, "we");
	if (f == NULL)
		_exit(1);
	fprintf(f, "pid %ld\n", (long)getpid());
	copy_cgroups(f);
	if (a->escape) {
		enum extc_cgroup_result r = extc_cgroup_escape(why, sizeof(why));

		fprintf(f, "escape %s: %s\n", extc_cgroup_escape_result_name(r), why);
		copy_cgroups(f);
	}
	fclose(f);
	close(reported);
	sleep(a->sleep_s);
	snprintf(path, sizeof(path), "%s/%s.end", a->out, name);
	f = fopen(path, "we");
	if (f == NULL)
		_exit(1);
	copy_cgroups(f);
	fclose(f);
	_exit(0);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	struct args a;
	char name[256], node[128] = "";
	uint32_t job = 0, step = 0;
	pid_t pid;
	int fd, reported[2];
	struct pollfd wait_report;
	char byte;

	if (spank_context() != S_CTX_REMOTE)
		return (0);
	parse(ac, av, &a);
	if (a.out == NULL || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return (0);
	if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node)) != ESPANK_SUCCESS)
		snprintf(node, sizeof(node), "%s", "node");
	snprintf(name, sizeof(name), "%u.%u.%s", job, step, node);
	if (pipe2(reported, O_CLOEXEC) < 0)
		return (0);
	pid = fork();
	if (pid == 0) {
		close(reported[0]);
		setsid();
		if (fork() != 0)
			_exit(0);
		signal(SIGHUP, SIG_IGN);
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		run(&a, name, reported[1]);
	}
	close(reported[1]);
	if (pid > 0) {
		waitpid(pid, NULL, 0);
		/* EOF once the grandchild has reported (or died) */
		wait_report = (struct pollfd){ .fd = reported[0], .events = POLLIN };
		if (poll(&wait_report, 1, 10000) > 0)
			(void)!read(reported[0], &byte, 1);
	}
	close(reported[0]);
	return (0);
}
