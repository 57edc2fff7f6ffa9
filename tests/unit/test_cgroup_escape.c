/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: cgroup_escape.h. The paths and mount tables
 * are Slurm's layouts as its cgroup plugins name them (see the comment at
 * the top of plugin/proc/cgroup_escape.c) and as the lab shows them; the moves
 * are applied to regular files standing for cgroup.procs, so no root and
 * no cgroup is needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/cgroup_escape.h"
#include "strassert.h"

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

	assert_int_equal(extc_cgroup_target(path, v2, out, sizeof(out)), want);
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
	assert_int_equal(extc_cgroup_target("/slurm_n1/uid_1/job_2", 0, small, sizeof(small)),
			 EXTC_CGROUP_BAD_PATH);
}

static void test_plan_v1(void **state)
{
	struct extc_cgroup_plan *p = new_plan();
	const struct extc_cgroup_move *m;

	(void)state;
	extc_cgroup_plan(CG_V1_TASK, MI_V1 MI_UNIFIED, p);
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
	extc_cgroup_plan("0::/system.slice/slurmstepd.scope/job_5/step_0/slurm\n", MI_V2, p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].hierarchy, "unified");
	assert_string_equal(p->moves[0].procs,
			    "/sys/fs/cgroup/system.slice/slurmstepd.scope/system/cgroup.procs");
	/* no trailing newline, and the user leaf */
	extc_cgroup_plan("0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_1", MI_V2, p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].to, "/system.slice/slurmstepd.scope/system");
	free(p);
}

static void test_plan_hybrid(void **state)
{
	struct extc_cgroup_plan *p = new_plan();

	(void)state;
	extc_cgroup_plan("6:freezer:/slurm_n1/uid_1001/job_1\n"
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
	extc_cgroup_plan("9:name=systemd:/\n6:freezer:/\n4:memory:/process_api/c05e\n3:cpuset:/\n0::/\n",
			 MI_V1 MI_UNIFIED, p);
	assert_int_equal(p->n, 0);
	assert_int_equal(extc_cgroup_apply(p, getpid(), why, sizeof(why)), EXTC_CGROUP_NOT_IN_JOB);
	assert_contains(why, "in no Slurm job");
	extc_cgroup_plan("", "", p);
	assert_int_equal(p->n, 0);
	free(p);
}

/* a mount's root below the hierarchy's (a container's view), escaped mount points */
static void test_plan_mounts(void **state)
{
	struct extc_cgroup_plan *p = new_plan();

	(void)state;
	extc_cgroup_plan("4:memory:/docker/abc/slurm/uid_1/job_2/step_0\n"
			 "6:freezer:/slurm/uid_1/job_2/step_0\n",
			 "50 1 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
			 "51 1 0:34 / /my\\040cgroups/free\\134zer rw - cgroup cgroup rw,freezer\n", p);
	assert_int_equal(p->n, 2);
	assert_string_equal(find(p, "memory")->procs, "/sys/fs/cgroup/memory/slurm/cgroup.procs");
	assert_string_equal(find(p, "freezer")->procs, "/my cgroups/free\\zer/slurm/cgroup.procs");
	/* the target above the mount's root: not reachable through it */
	extc_cgroup_plan("4:memory:/slurm/uid_1/job_2\n",
			 "50 1 0:32 /slurm/uid_1 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].procs, "");
	assert_contains(p->moves[0].why, "no mount of it holds");
	/* the hierarchy is not mounted at all */
	extc_cgroup_plan("8:pids:/slurm/uid_1/job_2\n", MI_V1, p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].procs, "");
	assert_contains(p->moves[0].why, "not mounted");
	/* "memory" is not "memory_x", nor a word inside another option */
	extc_cgroup_plan("4:memory:/slurm/uid_1/job_2\n",
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
	extc_cgroup_plan(cg, mi, p);
	assert_int_equal(p->n, 2);
	assert_string_equal(find(p, "memory")->procs, "");
	assert_contains(find(p, "memory")->why, "too long");
	assert_string_equal(find(p, "freezer")->procs, "/sys/fs/cgroup/freezer/slurm/cgroup.procs");
	/* ".." (a cgroup outside this namespace) naming a job */
	extc_cgroup_plan("6:freezer:/../slurm/uid_1/job_2\n", MI_V1, p);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->moves[0].procs, "");
	/* a truncated escape and a lone backslash are taken as they are */
	extc_cgroup_plan("6:freezer:/slurm/uid_1/job_2\n",
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
	assert_string_equal(extc_cgroup_result_name(EXTC_CGROUP_NOT_IN_JOB), "not-in-job");
	assert_string_equal(extc_cgroup_result_name(EXTC_CGROUP_MOVED), "moved");
	assert_string_equal(extc_cgroup_result_name(EXTC_CGROUP_PARTIAL), "partial");
	assert_string_equal(extc_cgroup_result_name(EXTC_CGROUP_FAILED), "failed");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
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

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
