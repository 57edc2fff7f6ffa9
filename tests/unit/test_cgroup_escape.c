/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: cgroup_escape.h. The paths and mount tables
 * are Slurm's layouts as its cgroup plugins name them (see the comment at
 * the top of plugin/proc/cgroup_escape.c) and as the lab shows them. make
 * check's cases apply the moves to regular files standing for cgroup.procs,
 * so no root and no cgroup is needed; make check-root's case runs the v2
 * escape on the kernel's own cgroup2 hierarchy (below).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/cgroup_escape.h"
#include "base/clock.h"
#include "strassert.h"
#include "testmain.h"

/* Debian 12 on a cgroup v1 host with the v2 hierarchy beside it (hybrid) */
#define MI_V1 \
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" \
	"32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n" \
	"34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n" \
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" \
	"37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n" \
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
#define MI_UNIFIED "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
#define MI_V2 "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n"

/* a task of step 0, as task/cgroup and proctrack/cgroup (v1) place it */
#define CG_V1_TASK \
	"9:name=systemd:/system.slice/slurmd.service\n" \
	"6:freezer:/slurm_n1/uid_1001/job_5/step_0\n" \
	"4:memory:/slurm_n1/uid_1001/job_5/step_0/task_0\n" \
	"3:cpuset:/slurm_n1/uid_1001/job_5/step_0\n" \
	"2:cpu,cpuacct:/slurm_n1/uid_1001/job_5/step_extern/task_2\n" \
	"0::/system.slice/slurmd.service\n"

static struct extc_cgroup_plan *new_plan(void)
{
	struct extc_cgroup_plan *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	return (p);
}

static const struct extc_cgroup_move *find(const struct extc_cgroup_plan *p, const char *h)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (strcmp(p->moves[i].hierarchy, h) == 0)
			return (&p->moves[i]);
	fail_msg("no move on %s", h);
	return (NULL);
}

static void expect_target(const char *path, int v2, enum extc_cgroup_where want, const char *to)
{
	char out[PATH_MAX] = "";

	assert_int_equal(extc_cgroup_escape_target(path, v2, out, sizeof(out)), want);
	if (want == EXTC_CGROUP_IN_JOB)
		assert_string_equal(out, to);
}

static void test_target_v1(void **state)
{
	(void)state;
	expect_target("/slurm_n1/uid_1001/job_5/step_0/task_0", 0, EXTC_CGROUP_IN_JOB, "/slurm_n1");
	expect_target("/slurm/uid_0/job_7/step_extern", 0, EXTC_CGROUP_IN_JOB, "/slurm");
	expect_target("/slurm/uid_0/job_7/step_batch/task_0", 0, EXTC_CGROUP_IN_JOB, "/slurm");
	expect_target("/slurm/uid_0/job_7/step_interactive", 0, EXTC_CGROUP_IN_JOB, "/slurm");
	/* the job level: where the exit hook's child is in the lab's freezer */
	expect_target("/slurm_n1/uid_1001/job_1", 0, EXTC_CGROUP_IN_JOB, "/slurm_n1");
	expect_target("/slurm_n1/uid_1001/job_1/", 0, EXTC_CGROUP_IN_JOB, "/slurm_n1");
	/* a prefix above Slurm's (a container's) stays */
	expect_target("/lxc/node7/slurm/uid_1/job_2/step_0", 0, EXTC_CGROUP_IN_JOB, "/lxc/node7/slurm");
	/* the outermost job wins: a job name below it changes nothing */
	expect_target("/slurm/uid_1/job_2/step_0/job_9", 0, EXTC_CGROUP_IN_JOB, "/slurm");
	expect_target("/uid_1/job_2", 0, EXTC_CGROUP_IN_JOB, "/");
}

static void test_target_v2(void **state)
{
	(void)state;
	expect_target("/system.slice/slurmstepd.scope/job_5/step_0/user/task_0", 1, EXTC_CGROUP_IN_JOB,
		      "/system.slice/slurmstepd.scope/system");
	expect_target("/system.slice/slurmstepd.scope/job_5/step_0/slurm", 1, EXTC_CGROUP_IN_JOB,
		      "/system.slice/slurmstepd.scope/system");
	expect_target("/system.slice/n1_slurmstepd.scope/job_5/step_batch/user/task_special", 1,
		      EXTC_CGROUP_IN_JOB, "/system.slice/n1_slurmstepd.scope/system");
	expect_target("/system.slice/slurmstepd.scope/job_5", 1, EXTC_CGROUP_IN_JOB,
		      "/system.slice/slurmstepd.scope/system");
	/* 26.05: the job's SLUID, right under the scope */
	expect_target("/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/slurm", 1,
		      EXTC_CGROUP_IN_JOB, "/system.slice/slurmstepd.scope/system");
	expect_target("/docker.slice/docker-1.scope/my.slice/slurmstepd.scope/job_3/step_1/slurm", 1,
		      EXTC_CGROUP_IN_JOB, "/docker.slice/docker-1.scope/my.slice/slurmstepd.scope/system");
	/* not under a scope: the parent itself (a write there may be refused: reported) */
	expect_target("/custom/job_3/step_0", 1, EXTC_CGROUP_IN_JOB, "/custom");
}

static void test_target_outside(void **state)
{
	(void)state;
	expect_target("/", 0, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/", 1, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/system.slice/slurmd.service", 1, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/system.slice/slurmstepd.scope/system", 1, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/slurm_n1/system", 0, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/user.slice/uid_1000", 0, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/user.slice/user-1000.slice/session-3.scope", 1, EXTC_CGROUP_OUTSIDE, NULL);
	/* a SLUID counts only under a slurmstepd scope, and only on v2 */
	expect_target("/system.slice/sEKNKTV3WPV500", 1, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/system.slice/slurmstepd.scope/sEKNKTV3WPV500", 0, EXTC_CGROUP_OUTSIDE, NULL);
	/* names that only look like it */
	expect_target("/slurm/job_/step_0", 0, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/slurm/job_5x/step_0", 0, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/slurm/uid_5/notjob_1", 0, EXTC_CGROUP_OUTSIDE, NULL);
	expect_target("/system.slice/slurmstepd.scope/sekNKTV3WPV500", 1, EXTC_CGROUP_OUTSIDE, NULL);
}

static void test_target_bad(void **state)
{
	char big[PATH_MAX + 16], small[8];

	(void)state;
	expect_target("slurm/uid_1/job_2", 0, EXTC_CGROUP_BAD_PATH, NULL);
	expect_target("/../slurm/uid_1/job_2", 0, EXTC_CGROUP_BAD_PATH, NULL);
	expect_target("/slurm/uid_1/job_2/./step_0", 0, EXTC_CGROUP_BAD_PATH, NULL);
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	expect_target(big, 0, EXTC_CGROUP_BAD_PATH, NULL);
	/* the target does not fit the caller's buffer */
	assert_int_equal(extc_cgroup_escape_target("/slurm_n1/uid_1/job_2", 0, small, sizeof(small)),
			 EXTC_CGROUP_BAD_PATH);
}

static void test_plan_v1(void **state)
{
	struct extc_cgroup_plan *p = new_plan();
	const struct extc_cgroup_move *m;

	(void)state;
	extc_cgroup_escape_plan(CG_V1_TASK, MI_V1 MI_UNIFIED, p);
	assert_int_equal(p->n, 4);
	m = find(p, "memory");
	assert_string_equal(m->from, "/slurm_n1/uid_1001/job_5/step_0/task_0");
	assert_string_equal(m->to, "/slurm_n1");
	assert_string_equal(m->procs, "/sys/fs/cgroup/memory/slurm_n1/cgroup.procs");
	assert_string_equal(find(p, "freezer")->procs, "/sys/fs/cgroup/freezer/slurm_n1/cgroup.procs");
	assert_string_equal(find(p, "cpuset")->procs, "/sys/fs/cgroup/cpuset/slurm_n1/cgroup.procs");
	/* co-mounted controllers: the hierarchy whose options name them all */
	assert_string_equal(find(p, "cpu,cpuacct")->procs,
			    "/sys/fs/cgroup/cpu,cpuacct/slurm_n1/cgroup.procs");
	free(p);
}

static void test_plan_v2(void **state)
{
	struct extc_cgroup_plan *p = new_plan();

	(void)state;
	extc_cgroup_escape_plan("0::/system.slice/slurmstepd.scope/job_5/step_0/slurm\n", MI_V2, p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].hierarchy, "unified");
	assert_string_equal(p->moves[0].procs,
			    "/sys/fs/cgroup/system.slice/slurmstepd.scope/system/cgroup.procs");
	/* no trailing newline, and the user leaf */
	extc_cgroup_escape_plan("0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_1", MI_V2, p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].to, "/system.slice/slurmstepd.scope/system");
	free(p);
}

static void test_plan_hybrid(void **state)
{
	struct extc_cgroup_plan *p = new_plan();

	(void)state;
	extc_cgroup_escape_plan("6:freezer:/slurm_n1/uid_1001/job_1\n"
				"4:memory:/\n"
				"0::/system.slice/slurmstepd.scope/job_1/step_0/slurm\n",
				MI_V1 MI_UNIFIED, p);
	assert_int_equal(p->n, 2);
	assert_string_equal(find(p, "freezer")->procs, "/sys/fs/cgroup/freezer/slurm_n1/cgroup.procs");
	assert_string_equal(find(p, "unified")->procs,
			    "/sys/fs/cgroup/unified/system.slice/slurmstepd.scope/system/cgroup.procs");
	free(p);
}

static void test_not_in_job(void **state)
{
	struct extc_cgroup_plan *p = new_plan();
	char why[256];

	(void)state;
	/* the lab host's own shell */
	extc_cgroup_escape_plan("9:name=systemd:/\n6:freezer:/\n4:memory:/process_api/c05e\n3:cpuset:/\n0::/\n",
				MI_V1 MI_UNIFIED, p);
	assert_int_equal(p->n, 0);
	assert_int_equal(extc_cgroup_escape_apply(p, getpid(), why, sizeof(why)), EXTC_CGROUP_NOT_IN_JOB);
	assert_contains(why, "in no Slurm job");
	extc_cgroup_escape_plan("", "", p);
	assert_int_equal(p->n, 0);
	free(p);
}

/* a mount's root below the hierarchy's (a container's view), escaped mount points */
static void test_plan_mounts(void **state)
{
	struct extc_cgroup_plan *p = new_plan();

	(void)state;
	extc_cgroup_escape_plan("4:memory:/docker/abc/slurm/uid_1/job_2/step_0\n"
				"6:freezer:/slurm/uid_1/job_2/step_0\n",
				"50 1 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
				"51 1 0:34 / /my\\040cgroups/free\\134zer rw - cgroup cgroup rw,freezer\n", p);
	assert_int_equal(p->n, 2);
	assert_string_equal(find(p, "memory")->procs, "/sys/fs/cgroup/memory/slurm/cgroup.procs");
	assert_string_equal(find(p, "freezer")->procs, "/my cgroups/free\\zer/slurm/cgroup.procs");
	/* the target above the mount's root: not reachable through it */
	extc_cgroup_escape_plan("4:memory:/slurm/uid_1/job_2\n",
				"50 1 0:32 /slurm/uid_1 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].procs, "");
	assert_contains(p->moves[0].why, "no mount of it holds");
	/* the hierarchy is not mounted at all */
	extc_cgroup_escape_plan("8:pids:/slurm/uid_1/job_2\n", MI_V1, p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].procs, "");
	assert_contains(p->moves[0].why, "not mounted");
	/* "memory" is not "memory_x", nor a word inside another option */
	extc_cgroup_escape_plan("4:memory:/slurm/uid_1/job_2\n",
				"50 1 0:32 / /a rw - cgroup cgroup rw,memory_x\n"
				"51 1 0:32 / /b rw - cgroup cgroup rw,name=memory\n", p);
	assert_string_equal(p->moves[0].procs, "");
	free(p);
}

static void test_plan_hostile(void **state)
{
	struct extc_cgroup_plan *p = new_plan();
	size_t big = 3 * PATH_MAX, i;
	char *cg = malloc(big + 64), *mi = malloc(big + 1024);

	(void)state;
	assert_non_null(cg);
	assert_non_null(mi);
	/* a cgroup path longer than any buffer, naming a job: in it, not movable */
	strcpy(cg, "4:memory:/slurm/uid_1/job_2/");
	for (i = strlen(cg); i < big; i++)
		cg[i] = 'x';
	strcpy(cg + big, "\n6:freezer:/slurm/uid_1/job_2/step_0\nno colons here\n7::\n:::\n");
	/* a mount line with too many fields, and one with a huge mount point, before the good ones */
	strcpy(mi, "1 2 3");
	for (i = strlen(mi); i < 400; i += 2)
		memcpy(mi + i, " x", 2);
	strcpy(mi + 400, "\n60 1 0:34 / /");
	for (i = strlen(mi); i < big; i++)
		mi[i] = 'm';
	strcpy(mi + big, " rw - cgroup cgroup rw,freezer\n" MI_V1);
	extc_cgroup_escape_plan(cg, mi, p);
	assert_int_equal(p->n, 2);
	assert_string_equal(find(p, "memory")->procs, "");
	assert_contains(find(p, "memory")->why, "too long");
	assert_string_equal(find(p, "freezer")->procs, "/sys/fs/cgroup/freezer/slurm/cgroup.procs");
	/* ".." (a cgroup outside this namespace) naming a job */
	extc_cgroup_escape_plan("6:freezer:/../slurm/uid_1/job_2\n", MI_V1, p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].procs, "");
	/* a truncated escape and a lone backslash are taken as they are */
	extc_cgroup_escape_plan("6:freezer:/slurm/uid_1/job_2\n",
				"51 1 0:34 / /c\\04 rw - cgroup cgroup rw,freezer\n", p);
	assert_string_equal(p->moves[0].procs, "/c\\04/slurm/cgroup.procs");
	free(mi);
	free(cg);
	free(p);
}

/* a directory standing for a cgroup mount: DIR/slurm_n1/cgroup.procs */
struct fx {
	char dir[64], procs[256], cg[128], mi[128];
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char sub[128];
	int fd;

	if (fx == NULL)
		return (-1);
	strcpy(fx->dir, "/tmp/extc-cgroup.XXXXXX");
	if (mkdtemp(fx->dir) == NULL)
		return (-1);
	snprintf(sub, sizeof(sub), "%s/slurm_n1", fx->dir);
	snprintf(fx->procs, sizeof(fx->procs), "%s/cgroup.procs", sub);
	snprintf(fx->cg, sizeof(fx->cg), "%s/cgroup", fx->dir);
	snprintf(fx->mi, sizeof(fx->mi), "%s/mountinfo", fx->dir);
	if (mkdir(sub, 0700) != 0 || (fd = open(fx->procs, O_CREAT | O_WRONLY, 0600)) < 0)
		return (-1);
	close(fd);
	*state = fx;
	return (0);
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return (-1);
	free(fx);
	return (0);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void read_back(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void test_escape_from_files(void **state)
{
	struct fx *fx = *state;
	char mi[512], why[1024], got[64], want[32];

	snprintf(mi, sizeof(mi), "37 31 0:34 / %s rw - cgroup cgroup rw,freezer\n", fx->dir);
	put(fx->mi, mi);
	put(fx->cg, "6:freezer:/slurm_n1/uid_1001/job_1\n4:memory:/\n");
	assert_int_equal(extc_cgroup_escape_from(fx->cg, fx->mi, 4242, why, sizeof(why)),
			 EXTC_CGROUP_MOVED);
	assert_string_equal(why, "freezer /slurm_n1/uid_1001/job_1 -> /slurm_n1");
	read_back(fx->procs, got, sizeof(got));
	snprintf(want, sizeof(want), "%d", 4242);
	assert_string_equal(got, want);
	/* one hierarchy moved, another not mounted: partial, and it says which */
	put(fx->cg, "6:freezer:/slurm_n1/uid_1001/job_1\n4:memory:/slurm_n1/uid_1001/job_1/step_0\n");
	assert_int_equal(extc_cgroup_escape_from(fx->cg, fx->mi, 4242, why, sizeof(why)),
			 EXTC_CGROUP_PARTIAL);
	assert_contains(why, "memory /slurm_n1/uid_1001/job_1/step_0 -> /slurm_n1: the hierarchy is not mounted");
	/* not in a job: nothing is written */
	put(fx->cg, "6:freezer:/slurm_n1\n");
	assert_int_equal(extc_cgroup_escape_from(fx->cg, fx->mi, 1, why, sizeof(why)),
			 EXTC_CGROUP_NOT_IN_JOB);
	/* an unreadable file */
	assert_int_equal(extc_cgroup_escape_from("/nonexistent/cgroup", fx->mi, 1, why, sizeof(why)),
			 EXTC_CGROUP_FAILED);
	assert_contains(why, "cannot read /nonexistent/cgroup");
}

/* cgroup.procs as a symbolic link is never followed; a missing one fails */
static void test_escape_no_follow(void **state)
{
	struct fx *fx = *state;
	char mi[512], why[1024], target[160];

	snprintf(mi, sizeof(mi), "37 31 0:34 / %s rw - cgroup cgroup rw,freezer\n", fx->dir);
	put(fx->mi, mi);
	put(fx->cg, "6:freezer:/slurm_n1/uid_1001/job_1\n");
	snprintf(target, sizeof(target), "%s/elsewhere", fx->dir);
	put(target, "");
	assert_int_equal(unlink(fx->procs), 0);
	assert_int_equal(symlink(target, fx->procs), 0);
	assert_int_equal(extc_cgroup_escape_from(fx->cg, fx->mi, 7, why, sizeof(why)),
			 EXTC_CGROUP_FAILED);
	assert_contains(why, strerror(ELOOP));
	assert_int_equal(unlink(fx->procs), 0);
	assert_int_equal(extc_cgroup_escape_from(fx->cg, fx->mi, 7, why, sizeof(why)),
			 EXTC_CGROUP_FAILED);
	assert_contains(why, strerror(ENOENT));
	/* a tiny why buffer is filled, never overrun */
	why[4] = 'Z';
	assert_int_equal(extc_cgroup_escape_from(fx->cg, fx->mi, 7, why, 4), EXTC_CGROUP_FAILED);
	assert_int_equal(strlen(why), 3);
	assert_int_equal(why[4], 'Z');
}

static void test_result_names(void **state)
{
	(void)state;
	assert_string_equal(extc_cgroup_escape_result_name(EXTC_CGROUP_NOT_IN_JOB), "not-in-job");
	assert_string_equal(extc_cgroup_escape_result_name(EXTC_CGROUP_MOVED), "moved");
	assert_string_equal(extc_cgroup_escape_result_name(EXTC_CGROUP_PARTIAL), "partial");
	assert_string_equal(extc_cgroup_escape_result_name(EXTC_CGROUP_FAILED), "failed");
}

/*
 * The root tier: the v2 escape on the kernel's own cgroup2 hierarchy.
 *
 * Slurm's cgroup/v2 plugin refuses a hybrid host (one with v1 controllers
 * mounted, as the lab's is), so the lab cannot run it; but root may mount
 * cgroup2 in a mount namespace of its own, where it shows the real unified
 * hierarchy (without the controllers v1 holds). A child of the test does
 * that, builds Slurm's v2 layout below a cgroup of a unique name
 * (SCOPE/system and SCOPE/job_J/step_S/{slurm,user/task_N}, as cgroup/v2
 * makes them), puts a stand-in for the step's detached end in step_S/slurm
 * (slurmstepd's own leaf: the exit hook's child starts there and leaves
 * before it forks the detached end) and another for a task in
 * user/task_0, escapes the first, then kills the job with
 * cgroup.kill: the task must die of SIGKILL and the escaped one live on in
 * SCOPE/system, and the job's cgroups must be empty and removable. This is
 * the kernel's behaviour on Slurm's layout, not a run of Slurm's plugin.
 *
 * /proc/PID/cgroup and the root field of a cgroup mount in mountinfo are
 * both shown relative to the reader's cgroup namespace, and a cgroup2
 * mount made in it is rooted at that namespace's root. The test makes no
 * cgroup namespace of its own, so whether it runs on a host or in a
 * container with one, its mount's root reads "/" and the stand-ins' paths
 * read /NAME/system.slice/..., as the escape expects.
 *
 * Anything the kernel refuses (the mount, a mkdir, a move, cgroup.kill
 * before 5.14) fails the test, saying what; nothing skips.
 */
#define CG2_SCOPE "system.slice/n1_slurmstepd.scope"
#define CG2_JOB CG2_SCOPE "/job_77"
#define CG2_BOUND_MS 30000	/* any one wait on the kernel or a stand-in; valgrind is slow */
#define CG2_CHILD_MS 180000	/* the whole child, cleanup included */

/* the layout, parents first; removed last first */
static const char *const cg2_dirs[] = {
	"system.slice", CG2_SCOPE, CG2_SCOPE "/system",
	CG2_JOB, CG2_JOB "/step_0", CG2_JOB "/step_0/slurm", CG2_JOB "/step_0/user",
	CG2_JOB "/step_0/user/task_0",
};
#define CG2_NDIRS (sizeof(cg2_dirs) / sizeof(cg2_dirs[0]))
#define CG2_JOB_DIRS 3		/* cg2_dirs from this index on are the job's */

/* a stand-in process: answers each byte read on cmd with one on reply, ends at cmd's end */
struct standin {
	pid_t pid;
	int cmd, reply;		/* our ends; -1 when closed */
	bool reaped;
};

struct cg2 {
	char mnt[64];		/* /tmp/extc-cg2-XXXXXX: the cgroup2 mount point (the parent made it) */
	char name[32];		/* extc-cg2-XXXXXX: the test's cgroup below the hierarchy's root */
	char msg[1024];		/* the first failure (and the cleanup's); "" while all holds */
	int report;		/* to the parent: msg, nothing when all held */
	bool mounted, top_made;
	size_t made;		/* cg2_dirs made */
	struct standin in[2];	/* [0] the step's detached end, [1] a task left in the job */
};

static bool cg2_fail(struct cg2 *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* the steps stop at the first failure; the cleanup's are added after it */
static bool cg2_fail(struct cg2 *w, const char *fmt, ...)
{
	size_t used = strlen(w->msg);
	va_list ap;

	if (used > 0 && used + 2 < sizeof(w->msg)) {
		memcpy(w->msg + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(w->msg + used, sizeof(w->msg) - used, fmt, ap);
	va_end(ap);
	return (false);
}

/* <mnt>/<name>[/rel][/file] */
static const char *cg2_path(const struct cg2 *w, char *buf, const char *rel, const char *file)
{
	snprintf(buf, PATH_MAX, "%s/%s%s%s%s%s", w->mnt, w->name, rel != NULL ? "/" : "",
		 rel != NULL ? rel : "", file != NULL ? "/" : "", file != NULL ? file : "");
	return (buf);
}

/* a whole small file, NUL-terminated; its length, or -1 with errno (EFBIG: it does not fit) */
static long cg2_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	size_t n = 0;
	ssize_t r = 1;

	if (fd < 0)
		return (-1);
	while (n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	if (r < 0)
		err = errno;
	else if (n + 1 == len)
		err = EFBIG;
	close(fd);
	buf[n] = '\0';
	errno = err;
	return (err == 0 ? (long)n : -1);
}

/* write 'text' to a cgroup file in one write(2); 0, or -1 with errno */
static int cg2_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;
	ssize_t len = (ssize_t)strlen(text);

	if (fd < 0)
		return (-1);
	if (write(fd, text, (size_t)len) != len)
		err = errno != 0 ? errno : EIO;
	if (close(fd) != 0 && err == 0)
		err = errno;
	errno = err;
	return (err == 0 ? 0 : -1);
}

/* rmdir, waiting (bounded) while the kernel still counts an ended process in it */
static int cg2_rmdir(const char *path)
{
	uint64_t deadline = extc_clock_monotonic_ns() + (uint64_t)CG2_BOUND_MS * 1000000u;
	int rc;

	while ((rc = rmdir(path)) != 0 && errno == EBUSY && !extc_clock_past_deadline(deadline))
		poll(NULL, 0, 5);
	return (rc);
}

/* the unified hierarchy's cgroup of 'pid', the "0::" line of /proc/PID/cgroup */
static bool cg2_cgroup_of(pid_t pid, char *out, size_t len)
{
	char path[64], text[8192];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
	if (cg2_read(path, text, sizeof(text)) < 0)
		return (false);
	if (strncmp(text, "0::", 3) == 0)
		p = text + 3;
	else if ((p = strstr(text, "\n0::")) != NULL)
		p += 4;
	else
		return (false);
	snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
	return (true);
}

static bool cg2_expect_in(struct cg2 *w, pid_t pid, const char *rel, const char *what)
{
	char want[PATH_MAX], got[PATH_MAX];

	snprintf(want, sizeof(want), "/%s/%s", w->name, rel);
	if (!cg2_cgroup_of(pid, got, sizeof(got)))
		return (cg2_fail(w, "%s (pid %ld): no \"0::\" line in /proc/%ld/cgroup", what,
				 (long)pid, (long)pid));
	if (strcmp(got, want) != 0)
		return (cg2_fail(w, "%s (pid %ld) is in %s, not in %s", what, (long)pid, got, want));
	return (true);
}

/* mountinfo's \ooo escapes undone, in place */
static void cg2_unescape(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/*
 * The cgroup2 mounts of this namespace: the test's own is counted in
 * *ours, the others in *others and, with 'detach', detached.
 */
static bool cg2_scan_mounts(struct cg2 *w, bool detach, int *ours, int *others)
{
	static char mi[1 << 20];
	char *line, *save = NULL, mnt[PATH_MAX];

	*ours = *others = 0;
	if (cg2_read("/proc/self/mountinfo", mi, sizeof(mi)) < 0)
		return (cg2_fail(w, "reading /proc/self/mountinfo: %s", strerror(errno)));
	for (line = strtok_r(mi, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, " - cgroup2 ") == NULL ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		cg2_unescape(mnt);
		if (strcmp(mnt, w->mnt) == 0) {
			(*ours)++;
		} else {
			(*others)++;
			if (detach)
				(void)umount2(mnt, MNT_DETACH);	/* one below another goes with it */
		}
	}
	return (true);
}

/*
 * In a mount namespace of its own with / private, cgroup2 on w->mnt.
 * The host's own cgroup2 mounts (here /sys/fs/cgroup/unified) show the
 * same hierarchy and come first in mountinfo, so the escape would write
 * through them; they are detached in this namespace, which leaves the
 * test's mount the only one the escape can find.
 */
static bool cg2_mount(struct cg2 *w)
{
	int ours, others;

	if (unshare(CLONE_NEWNS) != 0)
		return (cg2_fail(w, "unshare(CLONE_NEWNS): %s", strerror(errno)));
	/* private: the mount below does not reach the host's namespace */
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
		return (cg2_fail(w, "making / private in the test's mount namespace: %s", strerror(errno)));
	if (mount("cgroup2", w->mnt, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		return (cg2_fail(w, "the kernel refuses to mount cgroup2 on %s: %s", w->mnt,
				 strerror(errno)));
	w->mounted = true;
	if (!cg2_scan_mounts(w, true, &ours, &others) || !cg2_scan_mounts(w, false, &ours, &others))
		return (false);
	if (ours != 1 || others != 0)
		return (cg2_fail(w, "after detaching the others, mountinfo shows %d cgroup2 mount(s) on %s "
				 "and %d elsewhere, not 1 and 0", ours, w->mnt, others));
	return (true);
}

static bool cg2_build(struct cg2 *w)
{
	char p[PATH_MAX];

	if (mkdir(cg2_path(w, p, NULL, NULL), 0755) != 0)
		return (cg2_fail(w, "mkdir %s: %s", p, strerror(errno)));
	w->top_made = true;
	for (; w->made < CG2_NDIRS; w->made++)
		if (mkdir(cg2_path(w, p, cg2_dirs[w->made], NULL), 0755) != 0)
			return (cg2_fail(w, "mkdir %s: %s", p, strerror(errno)));
	return (true);
}

static void cg2_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void cg2_standin(struct cg2 *w, int cmd, int reply)
{
	char c;
	size_t i;

	/* the ends the parent waits on for their end of file are not held here */
	close(w->report);
	for (i = 0; i < 2; i++) {
		cg2_close(&w->in[i].cmd);
		cg2_close(&w->in[i].reply);
	}
	while (read(cmd, &c, 1) == 1)
		if (write(reply, &c, 1) != 1)
			_exit(3);
	_exit(0);
}

/* a stand-in forked and written into the cgroup.procs of 'rel' */
static bool cg2_start(struct cg2 *w, struct standin *s, const char *rel, const char *what)
{
	char procs[PATH_MAX], num[32];
	int c[2], r[2];

	if (pipe2(c, O_CLOEXEC) != 0)
		return (cg2_fail(w, "pipe: %s", strerror(errno)));
	if (pipe2(r, O_CLOEXEC) != 0) {
		close(c[0]);
		close(c[1]);
		return (cg2_fail(w, "pipe: %s", strerror(errno)));
	}
	s->pid = fork();
	if (s->pid == 0) {
		close(c[1]);
		close(r[0]);
		cg2_standin(w, c[0], r[1]);
	}
	close(c[0]);
	close(r[1]);
	s->cmd = c[1];
	s->reply = r[0];
	if (s->pid < 0)
		return (cg2_fail(w, "fork: %s", strerror(errno)));
	snprintf(num, sizeof(num), "%ld", (long)s->pid);
	if (cg2_write(cg2_path(w, procs, rel, "cgroup.procs"), num) != 0)
		return (cg2_fail(w, "writing %s (pid %s) into %s: %s", what, num, procs, strerror(errno)));
	return (cg2_expect_in(w, s->pid, rel, what));
}

/* a stand-in answers a byte within the bound: it runs, and no SIGKILL is pending on it */
static bool cg2_answers(struct cg2 *w, struct standin *s, const char *what)
{
	struct pollfd p = { .fd = s->reply, .events = POLLIN };
	char c = 'x';

	if (write(s->cmd, &c, 1) != 1)
		return (cg2_fail(w, "%s (pid %ld) has ended: writing to it: %s", what, (long)s->pid,
				 strerror(errno)));
	if (poll(&p, 1, CG2_BOUND_MS) != 1 || read(s->reply, &c, 1) != 1 || c != 'x')
		return (cg2_fail(w, "%s (pid %ld) does not answer within %d ms", what, (long)s->pid,
				 CG2_BOUND_MS));
	return (true);
}

/* wait (bounded) for a stand-in's end; false while it still runs at the bound */
static bool cg2_wait_end(struct standin *s, int *status)
{
	uint64_t deadline = extc_clock_monotonic_ns() + (uint64_t)CG2_BOUND_MS * 1000000u;

	do {
		pid_t r = waitpid(s->pid, status, WNOHANG);

		if (r == s->pid) {
			s->reaped = true;
			return (true);
		}
		if (r < 0)
			return (false);
		poll(NULL, 0, 5);
	} while (!extc_clock_past_deadline(deadline));
	return (false);
}

/* the detached end escapes, as extc_cgroup_escape does for itself, from the texts of /proc */
static bool cg2_escape(struct cg2 *w)
{
	char cg[64], why[1024], want[2 * PATH_MAX];
	const struct standin *s = &w->in[0];
	enum extc_cgroup_result r;

	snprintf(cg, sizeof(cg), "/proc/%ld/cgroup", (long)s->pid);
	r = extc_cgroup_escape_from(cg, "/proc/self/mountinfo", s->pid, why, sizeof(why));
	if (r != EXTC_CGROUP_MOVED)
		return (cg2_fail(w, "the escape: %s (%s), not moved", extc_cgroup_escape_result_name(r), why));
	snprintf(want, sizeof(want), "unified /%s/" CG2_JOB "/step_0/slurm -> /%s/" CG2_SCOPE "/system",
		 w->name, w->name);
	if (strcmp(why, want) != 0)
		return (cg2_fail(w, "the escape says \"%s\", not \"%s\"", why, want));
	return (cg2_expect_in(w, s->pid, CG2_SCOPE "/system", "the escaped detached end"));
}

/* cgroup.kill on the job: the task dies of SIGKILL, the escaped end answers after it */
static bool cg2_kill_job(struct cg2 *w)
{
	char p[PATH_MAX];
	int status = 0;

	if (cg2_write(cg2_path(w, p, CG2_JOB, "cgroup.kill"), "1") != 0)
		return (cg2_fail(w, "writing 1 to %s: %s (cgroup.kill is the kernel's from 5.14)", p,
				 strerror(errno)));
	if (!cg2_wait_end(&w->in[1], &status))
		return (cg2_fail(w, "the task left in the job (pid %ld) still runs %d ms after cgroup.kill",
				 (long)w->in[1].pid, CG2_BOUND_MS));
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		return (cg2_fail(w, "the task left in the job ended with status %#x, not by SIGKILL",
				 (unsigned)status));
	return (cg2_answers(w, &w->in[0], "the escaped detached end after cgroup.kill") &&
		cg2_expect_in(w, w->in[0].pid, CG2_SCOPE "/system", "the escaped detached end"));
}

/* the job's cgroups are empty, and go (as Slurm removes them) while the escaped end lives */
static bool cg2_remove_job(struct cg2 *w)
{
	uint64_t deadline = extc_clock_monotonic_ns() + (uint64_t)CG2_BOUND_MS * 1000000u;
	char p[PATH_MAX], events[512];
	long n;

	cg2_path(w, p, CG2_JOB, "cgroup.events");
	while ((n = cg2_read(p, events, sizeof(events))) >= 0 && strstr(events, "populated 0\n") == NULL &&
	       !extc_clock_past_deadline(deadline))
		poll(NULL, 0, 5);
	if (n < 0)
		return (cg2_fail(w, "reading %s: %s", p, strerror(errno)));
	if (strstr(events, "populated 0\n") == NULL)
		return (cg2_fail(w, "%s still reads \"%s\" after cgroup.kill", p, events));
	for (; w->made > CG2_JOB_DIRS; w->made--)
		if (cg2_rmdir(cg2_path(w, p, cg2_dirs[w->made - 1], NULL)) != 0)
			return (cg2_fail(w, "removing the job's %s: %s", p, strerror(errno)));
	return (cg2_answers(w, &w->in[0], "the escaped detached end after the job's cgroups went"));
}

/* every stand-in ended at its input's end (killed past the bound), the tree removed, unmounted */
static void cg2_cleanup(struct cg2 *w)
{
	char p[PATH_MAX];
	int status;
	size_t i;

	for (i = 0; i < 2; i++) {
		struct standin *s = &w->in[i];

		cg2_close(&s->cmd);
		if (s->pid > 0 && !s->reaped && !cg2_wait_end(s, &status)) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &status, 0);
			cg2_fail(w, "stand-in %ld did not end at the end of its input", (long)s->pid);
		}
		cg2_close(&s->reply);
	}
	for (; w->made > 0; w->made--)
		if (cg2_rmdir(cg2_path(w, p, cg2_dirs[w->made - 1], NULL)) != 0) {
			cg2_fail(w, "cleanup: removing %s: %s", p, strerror(errno));
			return;
		}
	if (w->top_made && cg2_rmdir(cg2_path(w, p, NULL, NULL)) != 0)
		cg2_fail(w, "cleanup: removing %s: %s", p, strerror(errno));
	else if (w->mounted && umount2(w->mnt, 0) != 0)
		cg2_fail(w, "cleanup: unmounting %s: %s", w->mnt, strerror(errno));
}

/* the child: its exit status 0 when all held, else 1 with the first failure sent to the parent */
static int cg2_child(struct cg2 *w)
{
	bool ok;

	signal(SIGPIPE, SIG_IGN);	/* a dead stand-in fails a write, it does not end us */
	ok = cg2_mount(w) && cg2_build(w) &&
	     cg2_start(w, &w->in[0], CG2_JOB "/step_0/slurm", "the step's detached end") &&
	     cg2_start(w, &w->in[1], CG2_JOB "/step_0/user/task_0", "the task") &&
	     cg2_answers(w, &w->in[0], "the step's detached end") &&
	     cg2_answers(w, &w->in[1], "the task") &&
	     cg2_escape(w) && cg2_kill_job(w) && cg2_remove_job(w);
	cg2_cleanup(w);
	if (w->msg[0] != '\0' && write(w->report, w->msg, strlen(w->msg)) < 0)
		return (2);
	return (ok && w->msg[0] == '\0' ? 0 : 1);
}

/* what the child sent, up to its end of file or the bound */
static void cg2_read_report(int fd, char *msg, size_t len)
{
	uint64_t deadline = extc_clock_monotonic_ns() + (uint64_t)CG2_CHILD_MS * 1000000u;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t n = 0;
	ssize_t r = 1;

	while (r > 0 && n + 1 < len && !extc_clock_past_deadline(deadline)) {
		if (poll(&p, 1, 100) != 1)
			continue;
		r = read(fd, msg + n, len - 1 - n);
		if (r > 0)
			n += (size_t)r;
	}
	msg[n] = '\0';
}

static void test_v2_escape_on_the_kernels_hierarchy(void **state)
{
	struct cg2 *w = calloc(1, sizeof(*w));
	char msg[sizeof(w->msg)];
	int rep[2], status = -1, gone;
	struct standin child = { .cmd = -1, .reply = -1 };

	(void)state;
	assert_non_null(w);
	strcpy(w->mnt, "/tmp/extc-cg2-XXXXXX");
	assert_non_null(mkdtemp(w->mnt));
	snprintf(w->name, sizeof(w->name), "%s", strrchr(w->mnt, '/') + 1);
	w->in[0] = child;
	w->in[1] = child;
	assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
	child.pid = fork();
	assert_true(child.pid >= 0);
	if (child.pid == 0) {
		close(rep[0]);
		w->report = rep[1];
		_exit(cg2_child(w));
	}
	close(rep[1]);
	cg2_read_report(rep[0], msg, sizeof(msg));
	close(rep[0]);
	if (!cg2_wait_end(&child, &status)) {
		kill(child.pid, SIGKILL);
		waitpid(child.pid, &status, 0);
		snprintf(msg, sizeof(msg), "the test's child did not end within %d ms", CG2_CHILD_MS);
	}
	/* its mount went with its namespace: the mount point is an empty directory here */
	gone = rmdir(w->mnt);
	free(w);
	if (msg[0] != '\0')
		fail_msg("%s", msg);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(gone, 0);
}

int main(void)
{
	const struct CMUnitTest any[] = {
		cmocka_unit_test(test_target_v1),
		cmocka_unit_test(test_target_v2),
		cmocka_unit_test(test_target_outside),
		cmocka_unit_test(test_target_bad),
		cmocka_unit_test(test_plan_v1),
		cmocka_unit_test(test_plan_v2),
		cmocka_unit_test(test_plan_hybrid),
		cmocka_unit_test(test_not_in_job),
		cmocka_unit_test(test_plan_mounts),
		cmocka_unit_test(test_plan_hostile),
		cmocka_unit_test_setup_teardown(test_escape_from_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escape_no_follow, setup, teardown),
		cmocka_unit_test(test_result_names),
	};
	const struct CMUnitTest root[] = {
		cmocka_unit_test(test_v2_escape_on_the_kernels_hierarchy),
	};

	return (TESTMAIN_TIERED("cgroup_escape", "it mounts cgroup2 and moves processes between cgroups",
				any, root, NULL, NULL));
}
