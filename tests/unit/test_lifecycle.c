/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: whole SPANK lifecycles through the fake spank layer, on a real directory. */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "spank/ctl_query.h"
#include "fake_spank.h"
#include "fsfixture.h"
#include "spank/option.h"
#include "testmain.h"

/*
 * A uid and gid with no account: test_adv_user creates uid 4242 and 4343
 * for its run, and make -j2 check may run it beside this program, whose
 * expectations depend on the job's user having no password entry.
 */
#define JOB_UID 4747
#define JOB_GID 4848

static char tmpdir[128];
static char base_arg[300];
static char base[256];

static const struct fake_job step0 = {
	.uid = JOB_UID, .gid = JOB_GID, .jobid = 77, .stepid = 0, .taskid = 0,
};

static int setup(void **state)
{
	(void)state;
	if (fsfx_tmpdir(tmpdir, sizeof(tmpdir)) < 0)
		return (-1);
	snprintf(base, sizeof(base), "%s/base", tmpdir);
	snprintf(base_arg, sizeof(base_arg), "base=%s", base);
	return (0);
}

static int teardown(void **state)
{
	(void)state;
	return (fsfx_rmtree(tmpdir));
}

/*
 * Every fork() of the plugin's code goes through here (-Wl,--wrap=fork in
 * Makefile.am): a test makes the next 'forks_to_fail' of them fail with
 * EAGAIN, as on a node out of processes, where no process of root's
 * privileges may be asked to fail another way.
 */
static int forks_to_fail;
pid_t __real_fork(void);
pid_t __wrap_fork(void);
pid_t __wrap_fork(void)
{
	if (forks_to_fail > 0) {
		forks_to_fail--;
		errno = EAGAIN;
		return (-1);
	}
	return (__real_fork());
}

static bool exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool exists(const char *fmt, ...)
{
	char path[PATH_MAX];
	struct stat sb;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return (lstat(path, &sb) == 0);
}

static void assert_dir(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	struct stat sb;

	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_uid, uid);
	assert_int_equal(sb.st_gid, gid);
	assert_int_equal(sb.st_mode & 07777, mode);
}

static int count_fds(void)
{
	char path[64];
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (access(path, F_OK) == 0)
			n++;
	}
	return (n);
}

static int count_entries(const char *path)
{
	struct dirent *de;
	DIR *dir = opendir(path);
	int n = 0;

	assert_non_null(dir);
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	}
	closedir(dir);
	return (n);
}

/*
 * task_init runs in the task's own process, as in slurmstepd: a task the
 * plugin fails exits there (status 75), which this reports as -1.
 */
/*
 * exit and the job epilog hand their slow work to a detached process
 * (background.h); the test goes on once it has ended, as a later step or
 * epilog on a real node finds it done (or still holding what it holds).
 */
static int exit_and_wait(spank_t sp, int ac, char **av)
{
	int rc = slurm_spank_exit(sp, ac, av);

	fake_wait_background();
	return (rc);
}

static int epilog_and_wait(spank_t sp, int ac, char **av)
{
	int rc = slurm_spank_job_epilog(sp, ac, av);

	fake_wait_background();
	return (rc);
}

/* Like slurmstepd, the task drops to the job's ids before task_init. */
static void become_job_user(void)
{
	gid_t groups[1] = { JOB_GID };

	if (setgroups(1, groups) < 0 || setresgid(JOB_GID, JOB_GID, JOB_GID) < 0 ||
	    setresuid(JOB_UID, JOB_UID, JOB_UID) < 0)
		_exit(3);
}

/*
 * A task Slurm moved into the job's own mount namespace (job_container/tmpfs,
 * namespace/linux): the tests change what the path shows by renames, and the
 * task must be in another namespace for the plugin to look again.
 */
static void enter_job_namespace(void)
{
	if (unshare(CLONE_NEWNS) != 0)
		_exit(2);
}

/* A task's end: -1 for one the plugin failed (status 75), else its exit status. */
static int wait_task(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return (WEXITSTATUS(status) == 75 ? -1 : WEXITSTATUS(status));
}

static int run_task_init(int ac, char **av)
{
	int rc;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		become_job_user();
		_exit(slurm_spank_task_init(NULL, ac, av) == 0 ? 0 : 1);
	}
	rc = wait_task(pid);
	if (rc >= 0)
		assert_int_equal(rc, 0);
	return (rc);
}

/* slurmstepd's hooks before the tasks: init, the option, init_post_opt, user_init. */
static void start_step(int ac, char **av, const char *option)
{
	assert_int_equal(slurm_spank_init(NULL, ac, av), 0);
	if (option != NULL)
		assert_int_equal(fake_option(option, 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, ac, av), 0);
	assert_int_equal(slurm_spank_user_init(NULL, ac, av), 0);
}

/* Run the stepd hooks of one step; returns task_init's result. */
static int run_step(int ac, char **av, const char *option, int *exit_rc)
{
	int rc;

	start_step(ac, av, option);
	rc = run_task_init(ac, av);
	if (exit_rc != NULL)
		*exit_rc = exit_and_wait(NULL, ac, av);
	return (rc);
}

static void run_epilog(int ac, char **av)
{
	fake_set_context(S_CTX_JOB_SCRIPT);
	assert_int_equal(epilog_and_wait(NULL, ac, av), 0);
	fake_set_context(S_CTX_REMOTE);
}

static void test_local_step_full_lifecycle(void **state)
{
	char *av[] = { base_arg };
	char leaf[PATH_MAX], expect[PATH_MAX + 32];
	int fds = count_fds();

	(void)state;
	assert_int_equal(chmod(tmpdir, 0755), 0);	/* the task, as the user, reaches its leaf */
	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("local", 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);

	snprintf(leaf, sizeof(leaf), "%s/%d/77/0", base, JOB_UID);
	assert_dir(leaf, JOB_UID, JOB_GID, 0700);
	snprintf(expect, sizeof(expect), "%s/%d", base, JOB_UID);
	assert_dir(expect, 0, 0, 0711);
	/* only the directory PyTorch's jiterator will not make itself */
	snprintf(expect, sizeof(expect), "%s/torch_kernels", leaf);
	assert_dir(expect, JOB_UID, JOB_GID, 0700);
	assert_int_equal(count_entries(leaf), 1);
	snprintf(expect, sizeof(expect), "%s/torch_extensions", leaf);
	assert_false(exists("%s", expect));

	assert_int_equal(slurm_spank_user_init(NULL, 1, av), 0);
	assert_string_equal(fake_env_get("TORCH_EXTENSIONS_DIR"), expect);
	assert_string_equal(fake_env_get("SLURM_EXT_CACHE_DIR"), leaf);
	assert_string_equal(fake_env_get("SLURM_EXT_CACHE_MODE"), "local");
	snprintf(expect, sizeof(expect), "%s/numba", leaf);
	assert_string_equal(fake_env_get("NUMBA_CACHE_DIR"), expect);

	assert_int_equal(run_task_init(1, av), 0);
	{
		/* the task wrote, as the user, what runtimes without a variable read */
		char envfile[PATH_MAX + 32], text[8192], want[PATH_MAX + 64];
		struct stat sb;
		FILE *f;
		size_t n;

		snprintf(envfile, sizeof(envfile), "%s/container/env", leaf);
		assert_int_equal(lstat(envfile, &sb), 0);
		assert_int_equal(sb.st_uid, JOB_UID);
		f = fopen(envfile, "r");
		assert_non_null(f);
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[n] = '\0';
		snprintf(want, sizeof(want), "TORCH_EXTENSIONS_DIR=%s/container/torch_extensions\n", leaf);
		assert_non_null(strstr(text, want));
		snprintf(want, sizeof(want), "SLURM_EXT_CACHE_DIR=%s\n", leaf);
		assert_non_null(strstr(text, want));
		/* as on the host: PyTorch's kernel cache is off where its directory is missing */
		snprintf(envfile, sizeof(envfile), "%s/container/torch_kernels", leaf);
		assert_dir(envfile, JOB_UID, JOB_GID, 0700);
	}
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
	assert_false(exists("%s", leaf));
	assert_true(exists("%s/%d/77", base, JOB_UID));

	run_epilog(1, av);
	assert_false(exists("%s/%d/77", base, JOB_UID));
	assert_false(exists("%s/%d", base, JOB_UID));
	assert_true(exists("%s", base));
	assert_int_equal(count_fds(), fds);
}

static void test_job_mode_shared_by_steps_until_epilog(void **state)
{
	char *av[] = { base_arg };
	struct fake_job job = step0;
	char marker[PATH_MAX];
	int fd;

	(void)state;
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(1, av, "job", NULL), 0);
	/* as torch would, as the job's user: its directory first, then the build in it */
	snprintf(marker, sizeof(marker), "%s/%d/77/job/torch_extensions", base, JOB_UID);
	assert_int_equal(mkdir(marker, 0755), 0);
	assert_int_equal(lchown(marker, JOB_UID, JOB_GID), 0);
	strcat(marker, "/built.so");
	fd = open(marker, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, JOB_UID, JOB_GID), 0);
	close(fd);
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
	assert_true(exists("%s", marker));

	job.stepid = 1;
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(1, av, "job", NULL), 0);
	assert_string_equal(fake_env_get("SLURM_EXT_CACHE_MODE"), "job");
	assert_true(exists("%s", marker));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);

	run_epilog(1, av);
	assert_false(exists("%s/%d/77", base, JOB_UID));
}

static void test_environment_form_and_default(void **state)
{
	char *av[] = { base_arg, "default=local" };
	int exit_rc;

	(void)state;
	/* SLURM_EXT_CACHE in the job's environment asks for job mode */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("SLURM_EXT_CACHE", "job");
	assert_int_equal(run_step(2, av, NULL, &exit_rc), 0);
	assert_string_equal(fake_env_get("SLURM_EXT_CACHE_MODE"), "job");
	run_epilog(2, av);

	/* the option wins over the environment: off means nothing is made */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("SLURM_EXT_CACHE", "job");
	assert_int_equal(run_step(2, av, "off", &exit_rc), 0);
	assert_null(fake_env_get("SLURM_EXT_CACHE_DIR"));
	assert_false(exists("%s/%d/77", base, JOB_UID));

	/* nothing asked: the admin default applies */
	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(run_step(2, av, NULL, &exit_rc), 0);
	assert_string_equal(fake_env_get("SLURM_EXT_CACHE_MODE"), "local");
	run_epilog(2, av);
}

static void test_user_values_kept_or_replaced(void **state)
{
	char *av[] = { base_arg, "default=local" };
	char inherited[PATH_MAX];
	char expect[PATH_MAX];

	(void)state;
	/* only the admin default: the user's own value stays */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("TORCH_EXTENSIONS_DIR", "/home/u/prebuilt");
	snprintf(inherited, sizeof(inherited), "%s/%d/77/batch/triton", base, JOB_UID);
	fake_env_set("TRITON_CACHE_DIR", inherited);
	assert_int_equal(run_step(2, av, NULL, NULL), 0);
	assert_string_equal(fake_env_get("TORCH_EXTENSIONS_DIR"), "/home/u/prebuilt");
	assert_true(fake_log_has("verbose", "TORCH_EXTENSIONS_DIR: kept"));
	/* a value the plugin set in the enclosing batch step is always replaced */
	snprintf(expect, sizeof(expect), "%s/%d/77/0/triton", base, JOB_UID);
	assert_string_equal(fake_env_get("TRITON_CACHE_DIR"), expect);
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);

	/* the user asked for a mode: the user's value is replaced, with a log line */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("TORCH_EXTENSIONS_DIR", "/home/u/prebuilt");
	assert_int_equal(run_step(2, av, "local", NULL), 0);
	snprintf(expect, sizeof(expect), "%s/%d/77/0/torch_extensions", base, JOB_UID);
	assert_string_equal(fake_env_get("TORCH_EXTENSIONS_DIR"), expect);
	assert_true(fake_log_has("verbose", "TORCH_EXTENSIONS_DIR: replaced"));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	run_epilog(2, av);
}

/*
 * FLASHINFER_WORKSPACE_BASE moves into the step directory; the store of
 * cubins FlashInfer downloads stays where the user had it (envvars.h).
 */
static void test_flashinfer_cubin_store_stays_put(void **state)
{
	char *av[] = { base_arg };
	char *av_vars[] = { base_arg, "vars=TORCH_EXTENSIONS_DIR,TRITON_CACHE_DIR" };
	char expect[PATH_MAX];

	(void)state;
	/* nothing set but HOME: ~/.cache/flashinfer/cubins */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("HOME", "/home/u");
	assert_int_equal(run_step(1, av, "local", NULL), 0);
	snprintf(expect, sizeof(expect), "%s/%d/77/0/flashinfer", base, JOB_UID);
	assert_string_equal(fake_env_get("FLASHINFER_WORKSPACE_BASE"), expect);
	assert_string_equal(fake_env_get("FLASHINFER_CUBIN_DIR"), "/home/u/.cache/flashinfer/cubins");
	assert_true(fake_log_has("verbose", "FLASHINFER_CUBIN_DIR=/home/u/.cache/flashinfer/cubins"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);

	/* the user's own base, replaced because the user asked: the store under it */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("HOME", "/home/u");
	fake_env_set("FLASHINFER_WORKSPACE_BASE", "/scratch/u/fi");
	assert_int_equal(run_step(1, av, "local", NULL), 0);
	assert_string_equal(fake_env_get("FLASHINFER_WORKSPACE_BASE"), expect);
	assert_string_equal(fake_env_get("FLASHINFER_CUBIN_DIR"), "/scratch/u/fi/.cache/flashinfer/cubins");
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);

	/* the user's own FLASHINFER_CUBIN_DIR is kept as it is */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("HOME", "/home/u");
	fake_env_set("FLASHINFER_CUBIN_DIR", "/opt/fi-cubins");
	assert_int_equal(run_step(1, av, "local", NULL), 0);
	assert_string_equal(fake_env_get("FLASHINFER_CUBIN_DIR"), "/opt/fi-cubins");
	assert_true(fake_log_has("verbose", "FLASHINFER_CUBIN_DIR: kept"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);

	/* a vars= list without FlashInfer moves nothing of FlashInfer's */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("HOME", "/home/u");
	assert_int_equal(run_step(2, av_vars, "local", NULL), 0);
	assert_null(fake_env_get("FLASHINFER_WORKSPACE_BASE"));
	assert_null(fake_env_get("FLASHINFER_CUBIN_DIR"));
	assert_int_equal(exit_and_wait(NULL, 2, av_vars), 0);

	/* no HOME and no password entry for the uid: nothing to point at, and said so */
	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(run_step(1, av, "local", NULL), 0);
	assert_null(fake_env_get("FLASHINFER_CUBIN_DIR"));
	assert_true(fake_log_has("info", "FLASHINFER_CUBIN_DIR: not set"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
	run_epilog(1, av);
}

static void test_bad_remote_option_fails_tasks_not_hooks(void **state)
{
	char *av[] = { base_arg };

	(void)state;
	fake_reset(S_CTX_REMOTE, &step0);
	/* every hook that could drain the node still returns 0 */
	assert_int_equal(run_step(1, av, "lcoal", NULL), -1);
	assert_true(fake_log_has("error", "--ext-cache=lcoal"));
	assert_true(fake_log_has("error", "local, job, off"));
	assert_null(fake_env_get("SLURM_EXT_CACHE_DIR"));
	assert_false(exists("%s/%d", base, JOB_UID));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);

	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("SLURM_EXT_CACHE", "../../etc");
	assert_int_equal(run_step(1, av, NULL, NULL), -1);
	assert_true(fake_log_has("error", "SLURM_EXT_CACHE=../../etc"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
}

static void test_squatted_base_fails_or_warns(void **state)
{
	char *av_default[] = { base_arg, "default=local" };
	char *av[] = { base_arg };

	(void)state;
	/* a user-owned base: refused and left as it is */
	assert_int_equal(mkdir(base, 0777), 0);
	assert_int_equal(chown(base, JOB_UID, JOB_GID), 0);
	assert_int_equal(chmod(base, 0777), 0);

	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(run_step(1, av, "local", NULL), -1);
	assert_true(fake_log_has("error", "refusing"));
	assert_null(fake_env_get("TORCH_EXTENSIONS_DIR"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);

	/* only the admin default: the step goes on without a cache */
	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(run_step(2, av_default, NULL, NULL), 0);
	assert_true(fake_log_has("error", "going on without"));
	assert_null(fake_env_get("TORCH_EXTENSIONS_DIR"));
	assert_int_equal(exit_and_wait(NULL, 2, av_default), 0);

	assert_dir(base, JOB_UID, JOB_GID, 0777);
	assert_false(exists("%s/%d", base, JOB_UID));
	assert_int_equal(rmdir(base), 0);
}

static void test_on_error_overrides(void **state)
{
	char *av_warn[] = { base_arg, "on_error=warn" };
	char *av_fail[] = { base_arg, "default=local", "on_error=fail" };
	int fd;

	(void)state;
	/* base is a regular file: creation fails */
	fd = open(base, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(run_step(2, av_warn, "local", NULL), 0);
	assert_true(fake_log_has("error", "not a directory"));
	assert_int_equal(exit_and_wait(NULL, 2, av_warn), 0);

	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(run_step(3, av_fail, NULL, NULL), -1);
	assert_int_equal(exit_and_wait(NULL, 3, av_fail), 0);
	assert_int_equal(unlink(base), 0);
}

static void test_special_steps(void **state)
{
	char *av[] = { base_arg, "default=local" };
	struct fake_job job = step0;

	(void)state;
	job.stepid = 0xfffffffc;	/* extern: nothing */
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(2, av, NULL, NULL), 0);
	assert_false(exists("%s/%d", base, JOB_UID));
	assert_null(fake_env_get("SLURM_EXT_CACHE_DIR"));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);

	job.stepid = 0xfffffffb;	/* batch */
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(2, av, NULL, NULL), 0);
	assert_true(exists("%s/%d/77/batch", base, JOB_UID));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	assert_false(exists("%s/%d/77/batch", base, JOB_UID));
	assert_true(exists("%s/%d/77", base, JOB_UID));

	/* root's jobs are left alone */
	job = step0;
	job.uid = 0;
	fake_reset(S_CTX_REMOTE, &job);
	fake_ctl_set_job(77, JOB_RUNNING);	/* so the root job's epilog sweep keeps 77 */
	assert_int_equal(run_step(2, av, NULL, NULL), 0);
	assert_false(exists("%s/0", base));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	run_epilog(2, av);
	assert_true(exists("%s/%d/77", base, JOB_UID));

	fake_reset(S_CTX_REMOTE, &step0);
	run_epilog(2, av);
	assert_false(exists("%s/%d", base, JOB_UID));
}

static void test_client_refuses_bad_input(void **state)
{
	char *bad_cfg[] = { "base=relative/path" };
	char *unknown[] = { "bsae=/x" };
	char *av[] = { base_arg };

	(void)state;
	fake_reset(S_CTX_LOCAL, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, bad_cfg), -1);
	assert_true(fake_log_has("error", "ext-cache: base=relative/path: must be an absolute path"));
	assert_int_equal(slurm_spank_init(NULL, 1, unknown), -1);
	assert_true(fake_log_has("error", "bsae=/x: unknown argument"));

	fake_reset(S_CTX_ALLOCATOR, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("lcoal", 0), -1);
	assert_true(fake_log_has("error", "did you mean 'local'"));
	assert_int_equal(fake_option("local", 0), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);

	/* the environment form is checked once the command line had its say */
	fake_reset(S_CTX_LOCAL, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	setenv("SLURM_EXT_CACHE", "bogus", 1);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), -1);
	assert_true(fake_log_has("error", "SLURM_EXT_CACHE=bogus"));
	assert_int_equal(fake_option("job", 0), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	unsetenv("SLURM_EXT_CACHE");

	/* seed and publish directories: only the text is checked, before submission */
	fake_reset(S_CTX_LOCAL, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option_named("ext-cache-seed", "relative/dir", 0), -1);
	assert_true(fake_log_has("error", "ext-cache: --ext-cache-seed=relative/dir: not an absolute path"));
	assert_int_equal(fake_option_named("ext-cache-publish", "/scratch/me/jit", 0), 0);
	fake_reset(S_CTX_LOCAL, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	setenv("SLURM_EXT_CACHE_SEED", "seeds", 1);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), -1);
	assert_true(fake_log_has("error", "SLURM_EXT_CACHE_SEED=seeds: not an absolute path"));
	unsetenv("SLURM_EXT_CACHE_SEED");
}

#define INHERITED_MODE "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache"

/*
 * The same option twice: the last value wins, as Slurm forwards it; a
 * refused value is not kept. Which source wins is option.c's, tested in
 * test_option.c; here the client's answer is what the step then gets.
 */
static void test_repeated_option(void **state)
{
	char *av[] = { base_arg };

	(void)state;
	fake_reset(S_CTX_LOCAL, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("job", 0), 0);
	assert_int_equal(fake_option("local", 0), 0);
	assert_string_equal(extc_option_value(), "local");
	assert_int_equal(fake_option_named("ext-cache-seed", "/scratch/a", 0), 0);
	assert_int_equal(fake_option_named("ext-cache-seed", "/scratch/b", 0), 0);
	assert_string_equal(extc_option_seed(), "/scratch/b");
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	assert_false(fake_log_has("error", ""));

	/* a refused value is not kept */
	fake_reset(S_CTX_LOCAL, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("lcoal", 0), -1);
	assert_int_equal(fake_option("local", 0), 0);
	assert_string_equal(extc_option_value(), "local");

	/* srun in a job: the job's value, then the step's own, which wins */
	setenv(INHERITED_MODE, "job", 1);
	fake_reset(S_CTX_LOCAL, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option(getenv(INHERITED_MODE), 0), 0);
	assert_int_equal(fake_option("local", 0), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	assert_string_equal(extc_option_value(), "local");
	unsetenv(INHERITED_MODE);

	/* sbatch: SLURM_EXT_CACHE beats an #SBATCH line and reaches the step as the option */
	setenv("SLURM_EXT_CACHE", "local", 1);
	fake_reset(S_CTX_ALLOCATOR, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("job", 0), 0);
	assert_int_equal(fake_option(getenv(INHERITED_MODE), 0), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	assert_string_equal(extc_option_value(), "local");
	unsetenv(INHERITED_MODE);
	unsetenv("SLURM_EXT_CACHE");

	/* slurmstepd only stores: the step reports, a callback failure there would drain the node */
	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("job", 1), 0);
	assert_int_equal(fake_option("local", 1), 0);
	assert_string_equal(extc_option_value(), "local");
}

/*
 * A step seeded from one directory and publishing to another. user_init
 * runs with the user's effective ids, as slurmstepd runs it; the copies
 * run in a child that is fully the user.
 */
static void test_seed_and_publish_lifecycle(void **state)
{
	char *av[] = { base_arg };
	static const struct timespec jan_2023[2] = {
		{ .tv_sec = 1672531200, .tv_nsec = 0 }, { .tv_sec = 1672531200, .tv_nsec = 0 },
	};
	char seed[300], pub[300], path[PATH_MAX + 64], dir[PATH_MAX];
	gid_t groups[1] = { JOB_GID };
	int fds = count_fds();

	(void)state;
	snprintf(seed, sizeof(seed), "%s/seed", tmpdir);
	snprintf(pub, sizeof(pub), "%s/pub", tmpdir);
	assert_int_equal(chmod(tmpdir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/torch_extensions/ext", seed);
	assert_int_equal(fsfx_mkdirs_path(dir), 0);
	assert_int_equal(fsfx_write_at(AT_FDCWD, fsfx_join(path, sizeof(path), dir, "ext.so"),
				       "ELF\n", 0644), 0);
	assert_int_equal(utimensat(AT_FDCWD, path, jan_2023, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(mkdir(pub, 0755), 0);
	assert_int_equal(fsfx_chown_tree(seed, JOB_UID, JOB_GID), 0);
	assert_int_equal(fsfx_chown_tree(pub, JOB_UID, JOB_GID), 0);

	fake_reset(S_CTX_REMOTE, &step0);
	fake_set_groups(groups, 1);
	fake_env_set("SLURM_EXT_CACHE_PUBLISH", pub);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("local", 1), 0);
	assert_int_equal(fake_option_named("ext-cache-seed", seed, 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	/* as slurmstepd's drop_privileges leaves user_init */
	assert_int_equal(setgroups(1, groups), 0);
	assert_int_equal(setegid(JOB_GID), 0);
	assert_int_equal(seteuid(JOB_UID), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 1, av), 0);
	assert_int_equal(seteuid(0), 0);
	assert_int_equal(setegid(0), 0);
	assert_int_equal(setgroups(0, NULL), 0);

	/* user_init no longer seeds: nothing of the user's waits in a slurmstepd hook */
	snprintf(path, sizeof(path), "%s/%d/77/0/torch_extensions/ext/ext.so", base, JOB_UID);
	assert_false(exists("%s", path));
	/* the first task seeds, as the user; the second finds its turn done and waits for nothing */
	assert_int_equal(run_task_init(1, av), 0);
	assert_true(exists("%s", path));
	assert_true(fake_log_has("verbose", "seeded "));
	/* marked in the page the tasks share, not with a file in the leaf */
	assert_false(exists("%s/%d/77/0/.ext-cache-seeded.0", base, JOB_UID));
	assert_int_equal(run_task_init(1, av), 0);
	assert_true(exists("%s", path));
	{
		struct stat sb;

		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_uid, JOB_UID);
		assert_int_equal(sb.st_mtime, 1672531200);	/* 2023-01-01 UTC, kept */
	}
	/* the step builds something of its own, then ends */
	snprintf(dir, sizeof(dir), "%s/%d/77/0/torch_extensions/mine", base, JOB_UID);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(fsfx_write_at(AT_FDCWD, fsfx_join(path, sizeof(path), dir, "mine.so"),
				       "ELF\n", 0644), 0);
	snprintf(dir, sizeof(dir), "%s/%d/77/0", base, JOB_UID);
	assert_int_equal(fsfx_chown_tree(dir, JOB_UID, JOB_GID), 0);
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
	if (!fake_log_has("verbose", "published to"))
		fake_log_dump();
	assert_true(fake_log_has("verbose", "2 new entries"));
	assert_true(exists("%s/torch_extensions/mine/mine.so", pub));
	assert_true(exists("%s/torch_extensions/ext/ext.so", pub));
	assert_true(exists("%s/.ext-cache-manifest", pub));
	{
		struct stat sb;

		snprintf(path, sizeof(path), "%s/torch_extensions/mine/mine.so", pub);
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_uid, JOB_UID);	/* written as the user, not as root */
	}
	assert_false(exists("%s/%d/77/0", base, JOB_UID));
	run_epilog(1, av);
	assert_int_equal(count_fds(), fds);
}

/*
 * One local step of job 77 with the node pool, up to task_init: 'verbose'
 * gives --ext-cache-verbose, 'env' (unless NULL) is SLURM_EXT_CACHE_VERBOSE.
 */
static void pool_step(int ac, char **av, uint32_t stepid, bool verbose, const char *env)
{
	struct fake_job job = step0;

	job.stepid = stepid;
	fake_reset(S_CTX_REMOTE, &job);
	fake_env_set("SLURM_EXT_CACHE_KEY", "verbose-test");
	if (env != NULL)
		fake_env_set("SLURM_EXT_CACHE_VERBOSE", env);
	assert_int_equal(slurm_spank_init(NULL, ac, av), 0);
	assert_int_equal(fake_option("local", 1), 0);
	if (verbose)
		assert_int_equal(fake_option_named("ext-cache-verbose", NULL, 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, ac, av), 0);
	assert_int_equal(slurm_spank_user_init(NULL, ac, av), 0);
	assert_int_equal(run_task_init(ac, av), 0);
}

/* A build 'name' in job 77's step 'stepid' directory, the user's as the task leaves it. */
static void make_step_build(uint32_t stepid, const char *name)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];

	snprintf(dir, sizeof(dir), "%s/%d/77/%u/torch_extensions/%s", base, JOB_UID, stepid, name);
	assert_int_equal(fsfx_mkdirs_path(dir), 0);
	assert_int_equal(fsfx_write_at(AT_FDCWD, fsfx_join(path, sizeof(path), dir, "ext.so"),
				       "ELF\n", 0644), 0);
	snprintf(dir, sizeof(dir), "%s/%d/77/%u", base, JOB_UID, stepid);
	assert_int_equal(fsfx_chown_tree(dir, JOB_UID, JOB_GID), 0);
}

/* The step's one line, if any, as the user's terminal shows it. */
static bool told_start(const char *needle)
{
	return (fake_log_has("user", needle));
}

/*
 * --ext-cache-verbose: the task that prepares the node's directory says
 * in one line how it started: cold and why, or warm, from where and how
 * much. Without it (or with SLURM_EXT_CACHE_VERBOSE=0) nothing is said.
 */
static void test_verbose_says_warm_or_cold(void **state)
{
	char *av[] = { base_arg, "pool=node" };

	(void)state;
	assert_int_equal(chmod(tmpdir, 0755), 0);
	/* the environment's first step: its key holds nothing yet */
	pool_step(2, av, 0, true, NULL);
	if (!told_start("node "))
		fake_log_dump();
	assert_true(told_start("cold: the node pool's key for this environment ("));
	assert_true(told_start(") holds nothing yet"));
	assert_false(told_start("warm:"));
	/* it builds something, which goes into the pool at its end */
	make_step_build(0, "ext");
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);

	/* the next step of that environment starts from it, and says so */
	pool_step(2, av, 1, true, NULL);
	if (!told_start("warm:"))
		fake_log_dump();
	assert_true(told_start("warm: took 1 entry from the node pool (key "));
	assert_false(told_start("cold:"));
	assert_true(exists("%s/%d/77/1/torch_extensions/ext/ext.so", base, JOB_UID));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);

	/* without the option: seeded all the same, and silent */
	pool_step(2, av, 2, false, NULL);
	assert_true(exists("%s/%d/77/2/torch_extensions/ext/ext.so", base, JOB_UID));
	assert_false(told_start("warm:"));
	assert_false(told_start("cold:"));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);

	/* srun takes the flag, given twice too, and checks nothing more */
	fake_reset(S_CTX_LOCAL, &step0);
	assert_int_equal(slurm_spank_init(NULL, 2, av), 0);
	assert_false(extc_option_verbose());
	assert_int_equal(fake_option_named("ext-cache-verbose", NULL, 0), 0);
	assert_int_equal(fake_option_named("ext-cache-verbose", NULL, 0), 0);
	assert_true(extc_option_verbose());
	assert_false(fake_log_has("error", "ext-cache"));

	/* the environment form, off with 0; the option wins over it */
	pool_step(2, av, 3, false, "1");
	assert_true(told_start("warm: took 1 entry"));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	pool_step(2, av, 4, false, "0");
	assert_false(told_start("warm:"));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	pool_step(2, av, 5, true, "0");
	assert_true(told_start("warm: took 1 entry"));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	run_epilog(2, av);
}

/*
 * A step's end that cannot start its detached work (fork fails) after the
 * step took its key from the pool: the error says so, the step's
 * directory stays with what it took and built, and the job's epilog puts
 * both back into the key, whose next step takes them.
 */
static void test_an_end_that_cannot_start_leaves_its_key_to_the_epilog(void **state)
{
	char *av[] = { base_arg, "pool=node" };

	(void)state;
	assert_int_equal(chmod(tmpdir, 0755), 0);
	pool_step(2, av, 0, false, NULL);
	make_step_build(0, "first");
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);

	/* the next step takes it, builds another, and its end gets no process */
	pool_step(2, av, 1, true, NULL);
	assert_true(told_start("warm: took 1 entry from the node pool (key "));
	make_step_build(1, "second");
	forks_to_fail = 1;
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	if (forks_to_fail != 0 ||
	    !fake_log_has("error", "cannot start the step's publish and pool move"))
		fake_log_dump();
	assert_int_equal(forks_to_fail, 0);
	assert_true(fake_log_has("error", "cannot start the step's publish and pool move: nothing is "
				 "published from this step; its directory is left for the job epilog"));
	assert_true(exists("%s/%d/77/1/torch_extensions/first/ext.so", base, JOB_UID));
	assert_true(exists("%s/%d/77/1/torch_extensions/second/ext.so", base, JOB_UID));

	/* the epilog returns the directory into the key before the job's tree goes */
	run_epilog(2, av);
	assert_false(exists("%s/%d/77", base, JOB_UID));
	pool_step(2, av, 2, true, NULL);
	if (!told_start("warm: took 2 entries from the node pool (key "))
		fake_log_dump();
	assert_true(told_start("warm: took 2 entries from the node pool (key "));
	assert_false(told_start("lost builds"));
	assert_true(exists("%s/%d/77/2/torch_extensions/first/ext.so", base, JOB_UID));
	assert_true(exists("%s/%d/77/2/torch_extensions/second/ext.so", base, JOB_UID));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	run_epilog(2, av);
}

/* A seed that cannot be used: the line says cold, and why. */
static void test_verbose_says_why_a_seed_is_cold(void **state)
{
	char *av[] = { base_arg };
	char seed[300];

	(void)state;
	assert_int_equal(chmod(tmpdir, 0755), 0);
	snprintf(seed, sizeof(seed), "%s/no-such-seed", tmpdir);
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("SLURM_EXT_CACHE_VERBOSE", "1");
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("local", 1), 0);
	assert_int_equal(fake_option_named("ext-cache-seed", seed, 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 1, av), 0);
	assert_int_equal(run_task_init(1, av), 0);
	if (!told_start("cold: --ext-cache-seed="))
		fake_log_dump();
	assert_true(told_start("cold: --ext-cache-seed="));
	assert_true(told_start("no-such-seed does not exist"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);

	/* no seed and no node pool: nothing could have seeded it */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("SLURM_EXT_CACHE_VERBOSE", "1");
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("local", 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 1, av), 0);
	assert_int_equal(run_task_init(1, av), 0);
	assert_true(told_start("cold: no seed directory was named and the node pool is off"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
	run_epilog(1, av);
}

/* Asking for a seed without a private directory is ignored, and the user told. */
static void test_seed_without_directory_is_ignored_with_a_message(void **state)
{
	char *av[] = { base_arg };

	(void)state;
	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option_named("ext-cache-seed", "/scratch/seed", 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 1, av), 0);
	assert_int_equal(slurm_spank_task_init(NULL, 1, av), 0);
	assert_true(fake_log_has("error", "--ext-cache-seed=/scratch/seed: ignored: this step has no "
				 "private cache directory"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
}

static void test_epilog_removes_its_job_and_leaves_others(void **state)
{
	char *av[] = { base_arg, "default=local" };
	struct fake_job job = step0;

	(void)state;
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(2, av, "job", NULL), 0);
	job.stepid = 1;
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(2, av, "local", NULL), 0);
	job = step0;
	job.jobid = 78;
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(2, av, "job", NULL), 0);

	job = step0;
	fake_reset(S_CTX_JOB_SCRIPT, &job);
	assert_int_equal(epilog_and_wait(NULL, 2, av), 0);
	assert_false(exists("%s/%d/77", base, JOB_UID));
	assert_true(exists("%s/%d/78/job", base, JOB_UID));

	/* the step of 78 ends (it held its job level), then its epilog takes the rest */
	fake_set_context(S_CTX_REMOTE);
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	job.jobid = 78;
	fake_reset(S_CTX_JOB_SCRIPT, &job);
	assert_int_equal(epilog_and_wait(NULL, 2, av), 0);
	assert_false(exists("%s/%d", base, JOB_UID));

	/* a bad argument in the epilog is logged, never returned: that would drain the node */
	char *bad[] = { "base=nope" };
	assert_int_equal(epilog_and_wait(NULL, 1, bad), 0);
	assert_true(fake_log_has("error", "base=nope"));
}

/* The node's last questions to slurmctld were asked long enough ago (fs_stamp.h's stamp, aged). */
static void sweep_interval_passes(void)
{
	char path[PATH_MAX], text[32];

	snprintf(path, sizeof(path), "%s/.trash", base);
	snprintf(text, sizeof(text), "%lld", (long long)time(NULL) - EXTC_CTL_SWEEP_INTERVAL_S - 1);
	assert_int_equal(setxattr(path, "trusted.ext-cache.sweep", text, strlen(text), 0), 0);
}

static void test_epilog_sweeps_leftovers_of_ended_jobs_only(void **state)
{
	char *av[] = { base_arg, "default=local" };
	struct fake_job job = step0;
	int exit_rc;

	(void)state;
	/* job 90: slurmstepd was SIGKILLed: its tree stays, no exit hook ran */
	job.jobid = 90;
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(2, av, "job", NULL), 0);
	assert_int_equal(slurm_spank_init(NULL, 2, av), 0);	/* drops the dead step's state */
	/* job 91: still running between steps; job 92: a step runs right now */
	job.jobid = 91;
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(2, av, "job", &exit_rc), 0);
	job.jobid = 92;
	fake_reset(S_CTX_REMOTE, &job);
	assert_int_equal(run_step(2, av, "job", NULL), 0);	/* no exit: still holding */

	/* job 93 ends here; the controller knows 91 runs, 92 and 90 are unknown to it */
	job.jobid = 93;
	fake_reset(S_CTX_JOB_SCRIPT, &job);
	fake_ctl_set_job(91, JOB_RUNNING);
	assert_int_equal(epilog_and_wait(NULL, 2, av), 0);
	assert_false(exists("%s/%d/90", base, JOB_UID));
	assert_true(exists("%s/%d/91/job", base, JOB_UID));
	assert_true(exists("%s/%d/92/job", base, JOB_UID));
	assert_true(fake_log_has("info", "moved the trees of 1 ended job whose epilog never ran"));

	/* E3.8: within the interval, another sweep asks nothing, whatever is left behind */
	fake_reset(S_CTX_JOB_SCRIPT, &job);
	fake_ctl_set_job(91, JOB_COMPLETE);
	assert_int_equal(epilog_and_wait(NULL, 2, av), 0);
	assert_true(exists("%s/%d/91/job", base, JOB_UID));

	/* a job the controller reports over, but still completing here, is its own epilog's */
	sweep_interval_passes();
	fake_reset(S_CTX_JOB_SCRIPT, &job);
	fake_ctl_set_job(91, JOB_COMPLETE | JOB_COMPLETING);
	assert_int_equal(epilog_and_wait(NULL, 2, av), 0);
	assert_true(exists("%s/%d/91/job", base, JOB_UID));
	sweep_interval_passes();
	fake_reset(S_CTX_JOB_SCRIPT, &job);
	fake_ctl_set_job(91, JOB_COMPLETE);
	assert_int_equal(epilog_and_wait(NULL, 2, av), 0);
	assert_false(exists("%s/%d/91", base, JOB_UID));
	assert_true(exists("%s/%d/92/job", base, JOB_UID));

	/* the step of 92 ends: the lock goes and its own epilog removes it */
	fake_set_context(S_CTX_REMOTE);
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	job.jobid = 92;
	fake_reset(S_CTX_JOB_SCRIPT, &job);
	assert_int_equal(epilog_and_wait(NULL, 2, av), 0);
	assert_false(exists("%s/%d", base, JOB_UID));
}

/* A task in another mount namespace (job_container/tmpfs): the directory is made in its view. */
static void test_task_in_a_private_namespace_gets_its_own_copy(void **state)
{
	char view[300], nodeview[320], arg[320], leaf[400];
	char *av[] = { arg };
	int status, i;
	pid_t pid;

	(void)state;
	snprintf(view, sizeof(view), "%s/view", tmpdir);
	snprintf(nodeview, sizeof(nodeview), "%s/view.node", tmpdir);
	snprintf(arg, sizeof(arg), "base=%s/base", view);
	snprintf(leaf, sizeof(leaf), "%s/base/%d/77/0", view, JOB_UID);
	assert_int_equal(mkdir(view, 0755), 0);

	fake_reset(S_CTX_REMOTE, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	assert_int_equal(fake_option("local", 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 1, av), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 1, av), 0);
	assert_dir(leaf, JOB_UID, JOB_GID, 0700);

	/* what the task sees: a /tmp of its own, owned by the job's user */
	assert_int_equal(rename(view, nodeview), 0);
	assert_int_equal(mkdir(view, 0700), 0);
	assert_int_equal(chown(view, JOB_UID, JOB_GID), 0);
	for (i = 0; i < 2; i++) {	/* the first task makes it, the second finds it */
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			enter_job_namespace();
			_exit(slurm_spank_task_init_privileged(NULL, 1, av) == 0 ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		assert_dir(leaf, JOB_UID, JOB_GID, 0700);
	}
	snprintf(leaf, sizeof(leaf), "%s/base/%d/77/0/torch_kernels", view, JOB_UID);
	assert_dir(leaf, JOB_UID, JOB_GID, 0700);
	snprintf(leaf, sizeof(leaf), "%s/base/%d/77/0/torch_extensions", view, JOB_UID);
	assert_false(exists("%s", leaf));
	snprintf(leaf, sizeof(leaf), "%s/base/%d", view, JOB_UID);
	assert_dir(leaf, 0, 0, 0711);

	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
}

/*
 * One task as slurmstepd runs it: task_init_privileged as root, then
 * task_init as the user. -1 for a task the plugin failed, else whether
 * 'var' was still set when the user's program would start.
 */
static int run_task(int ac, char **av, const char *var, bool own_namespace)
{
	int rc;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (own_namespace)
			enter_job_namespace();
		if (slurm_spank_task_init_privileged(NULL, ac, av) != 0)
			_exit(1);
		become_job_user();
		if (slurm_spank_task_init(NULL, ac, av) != 0)
			_exit(1);
		_exit(fake_env_get(var) != NULL ? 11 : 10);
	}
	rc = wait_task(pid);
	if (rc < 0)
		return (-1);
	assert_true(rc == 10 || rc == 11);
	return (rc - 10);
}

static int run_whole_task(int ac, char **av, const char *var)
{
	return (run_task(ac, av, var, false));
}

static int run_noexec_step(int ac, char **av, const char *option, const char *var)
{
	int rc;

	fake_reset(S_CTX_REMOTE, &step0);
	start_step(ac, av, option);
	rc = run_whole_task(ac, av, var);
	assert_int_equal(exit_and_wait(NULL, ac, av), 0);
	return (rc);
}

/* A base on a noexec mount: torch extensions, Triton and Inductor could not load what they build. */
static void test_noexec_base_fails_or_runs_without(void **state)
{
	char mnt[200], arg[260];
	char *av[] = { arg };
	char *av_default[] = { arg, "default=local" };
	char *av_warn[] = { arg, "on_error=warn" };
	char *av_data[] = { arg, "vars=MIOPEN_USER_DB_PATH" };
	char *av_kept[] = { arg, "default=local", "vars=MIOPEN_USER_DB_PATH,TORCH_EXTENSIONS_DIR" };

	(void)state;
	assert_int_equal(chmod(tmpdir, 0755), 0);	/* the task, as the user, reaches its leaf */
	snprintf(mnt, sizeof(mnt), "%s/noexec", tmpdir);
	snprintf(arg, sizeof(arg), "base=%s/base", mnt);
	assert_int_equal(mkdir(mnt, 0755), 0);
	assert_int_equal(mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			       "size=4m,mode=0755"), 0);

	/* slurmd's start says so in its log, and starts */
	fake_reset(S_CTX_SLURMD, &step0);
	assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
	fake_wait_background();
	/* one line at its start says which plugin and what it was told */
	assert_true(fake_log_has("info", "slurmd: version "));
	assert_true(fake_log_has("info", " loaded: base="));
	assert_true(fake_log_has("info", "/base default=off pool=off"));
	assert_true(fake_log_has("error", "noexec"));
	assert_true(fake_log_has("error", mnt));

	/* the user asked: the step fails, naming the directory and the mount */
	assert_int_equal(run_noexec_step(1, av, "local", "TORCH_EXTENSIONS_DIR"), -1);
	assert_true(fake_log_has("error", "failing the step"));
	assert_true(fake_log_has("error", "noexec"));
	assert_true(fake_log_has("error", mnt));

	/* only the admin default: the step runs, without the variables, and is told why */
	assert_int_equal(run_noexec_step(2, av_default, NULL, "TORCH_EXTENSIONS_DIR"), 0);
	assert_true(fake_log_has("error", "going on without"));
	assert_true(fake_log_has("error", "noexec"));

	/* on_error=warn: the same for a user who asked */
	assert_int_equal(run_noexec_step(2, av_warn, "local", "TRITON_CACHE_DIR"), 0);
	assert_true(fake_log_has("error", "going on without"));

	/* only a variable whose tool loads no code: nothing to refuse */
	assert_int_equal(run_noexec_step(2, av_data, "local", "MIOPEN_USER_DB_PATH"), 1);
	assert_false(fake_log_has("error", "noexec"));

	/* the user's own TORCH_EXTENSIONS_DIR is kept: the step's directory holds no code either */
	fake_reset(S_CTX_REMOTE, &step0);
	fake_env_set("TORCH_EXTENSIONS_DIR", "/home/u/te");
	start_step(3, av_kept, NULL);
	assert_int_equal(run_whole_task(3, av_kept, "TORCH_EXTENSIONS_DIR"), 1);
	assert_int_equal(exit_and_wait(NULL, 3, av_kept), 0);
	assert_false(fake_log_has("error", "noexec"));
}

/* A job's own /tmp mounted noexec (namespace/linux can): the task sees it where slurmstepd did not. */
static void test_noexec_job_namespace_fails_the_task(void **state)
{
	char view[300], nodeview[320], arg[320], opts[64];
	char *av[] = { arg };

	(void)state;
	assert_int_equal(chmod(tmpdir, 0755), 0);
	snprintf(view, sizeof(view), "%s/view", tmpdir);
	snprintf(nodeview, sizeof(nodeview), "%s/view.node", tmpdir);
	snprintf(arg, sizeof(arg), "base=%s/base", view);
	snprintf(opts, sizeof(opts), "size=4m,mode=0700,uid=%d,gid=%d", JOB_UID, JOB_GID);
	assert_int_equal(mkdir(view, 0755), 0);
	fake_reset(S_CTX_REMOTE, &step0);
	start_step(1, av, "local");
	assert_false(fake_log_has("error", "noexec"));

	assert_int_equal(rename(view, nodeview), 0);
	assert_int_equal(mkdir(view, 0700), 0);
	assert_int_equal(mount("tmpfs", view, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts), 0);
	assert_int_equal(run_task(1, av, "TORCH_EXTENSIONS_DIR", true), -1);
	assert_true(fake_log_has("error", "failing the step"));
	assert_true(fake_log_has("error", "noexec"));
	assert_int_equal(exit_and_wait(NULL, 1, av), 0);
}

/*
 * A user's directory 'leaf' holding one complete build, as a step (or a
 * requeued run) leaves it: torch_extensions/<name>/<name>.so.
 */
static void make_build(const char *leaf, const char *name)
{
	char dir[PATH_MAX], so[64], file[PATH_MAX + 64];

	snprintf(dir, sizeof(dir), "%s/torch_extensions/%s", leaf, name);
	assert_int_equal(fsfx_mkdirs_path(dir), 0);
	snprintf(so, sizeof(so), "%s.so", name);
	assert_int_equal(fsfx_write_at(AT_FDCWD, fsfx_join(file, sizeof(file), dir, so), "ELF\n",
				       0644), 0);
	assert_int_equal(fsfx_chown_tree(leaf, JOB_UID, JOB_GID), 0);
}

/* The step 'stepid' of job 'jobid' up to its tasks, with publish and (in 'av') the pool. */
static void late_end_step(int ac, char **av, uint32_t jobid, const char *pub, char *leaf,
			  size_t len)
{
	struct fake_job job = step0;
	gid_t groups[1] = { JOB_GID };

	job.jobid = jobid;
	fake_reset(S_CTX_REMOTE, &job);
	fake_set_groups(groups, 1);
	fake_env_set("SLURM_EXT_CACHE_KEY", "late-end");
	if (pub != NULL)
		fake_env_set("SLURM_EXT_CACHE_PUBLISH", pub);
	start_step(ac, av, "local");
	assert_int_equal(run_task_init(ac, av), 0);
	snprintf(leaf, len, "%s/%d/%u/0", base, JOB_UID, jobid);
	make_build(leaf, "first_run");
}

/*
 * What a requeued run of the job on this node does to the first run's
 * directory: its leaf (and with 'job_level', the job level too) moved out
 * of the way, new ones made at the same paths, the new leaf holding the
 * new run's build.
 */
static void requeue_over(const char *leaf, bool job_level)
{
	char level[PATH_MAX], away[PATH_MAX + 16];
	static int n;

	snprintf(level, sizeof(level), "%s", leaf);
	*strrchr(level, '/') = '\0';
	snprintf(away, sizeof(away), "%s/away%d", tmpdir, n++);
	if (job_level) {
		assert_int_equal(rename(level, away), 0);
		assert_int_equal(mkdir(level, 0711), 0);
	} else
		assert_int_equal(rename(leaf, away), 0);
	assert_int_equal(mkdir(leaf, 0700), 0);
	make_build(leaf, "second_run");
}

static bool second_run_whole(const char *leaf)
{
	return (exists("%s/torch_extensions/second_run/second_run.so", leaf) &&
		!exists("%s/torch_extensions/first_run", leaf));
}

/*
 * A late end acts on what its step made, not on a path: after a requeue
 * onto the same node made a new leaf (or a new job level) at the path, the
 * first run's end publishes, puts back and removes nothing; the new run's
 * directory and build are untouched, and one line says why. An end whose
 * leaf was not replaced still publishes and removes it.
 */
static void test_late_end_leaves_a_later_runs_directory(void **state)
{
	char *av[] = { base_arg, "pool=node" };
	char *no_pool[] = { base_arg };
	char pub[300], leaf[PATH_MAX];

	(void)state;
	assert_int_equal(chmod(tmpdir, 0755), 0);
	snprintf(pub, sizeof(pub), "%s/pub", tmpdir);
	assert_int_equal(mkdir(pub, 0755), 0);
	assert_int_equal(chown(pub, JOB_UID, JOB_GID), 0);

	/* the leaf replaced: the detached end (publish, put-back, removal) leaves it */
	late_end_step(2, av, 81, pub, leaf, sizeof(leaf));
	requeue_over(leaf, false);
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	assert_true(second_run_whole(leaf));
	assert_false(exists("%s/torch_extensions/second_run", pub));
	assert_false(exists("%s/torch_extensions/first_run", pub));
	if (!fake_log_has("info", "was replaced by a later run"))
		fake_log_dump();
	assert_true(fake_log_has("info", "was replaced by a later run"));

	/* the job level replaced, with a leaf of the same name below it */
	late_end_step(2, av, 82, pub, leaf, sizeof(leaf));
	requeue_over(leaf, true);
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	assert_true(second_run_whole(leaf));
	assert_false(exists("%s/torch_extensions", pub));
	assert_true(fake_log_has("info", "another job level has its path"));

	/* no publish, no pool: the hook's own removal leaves a replaced leaf too */
	late_end_step(1, no_pool, 83, NULL, leaf, sizeof(leaf));
	requeue_over(leaf, false);
	assert_int_equal(exit_and_wait(NULL, 1, no_pool), 0);
	assert_true(second_run_whole(leaf));
	assert_true(fake_log_has("info", "was replaced by a later run"));

	/* nothing replaced: the same end publishes and removes its leaf */
	late_end_step(2, av, 84, pub, leaf, sizeof(leaf));
	assert_int_equal(exit_and_wait(NULL, 2, av), 0);
	assert_false(fake_log_has("info", "replaced by a later run"));
	assert_true(exists("%s/torch_extensions/first_run/first_run.so", pub));
	assert_false(exists("%s", leaf));
	late_end_step(1, no_pool, 85, NULL, leaf, sizeof(leaf));
	assert_int_equal(exit_and_wait(NULL, 1, no_pool), 0);
	assert_false(exists("%s", leaf));
}

#define CASE(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		CASE(test_local_step_full_lifecycle),
		CASE(test_job_mode_shared_by_steps_until_epilog),
		CASE(test_environment_form_and_default),
		CASE(test_user_values_kept_or_replaced),
		CASE(test_flashinfer_cubin_store_stays_put),
		CASE(test_bad_remote_option_fails_tasks_not_hooks),
		CASE(test_squatted_base_fails_or_warns),
		CASE(test_on_error_overrides),
		CASE(test_special_steps),
		CASE(test_client_refuses_bad_input),
		CASE(test_repeated_option),
		CASE(test_epilog_removes_its_job_and_leaves_others),
		CASE(test_epilog_sweeps_leftovers_of_ended_jobs_only),
		CASE(test_task_in_a_private_namespace_gets_its_own_copy),
		CASE(test_noexec_base_fails_or_runs_without),
		CASE(test_noexec_job_namespace_fails_the_task),
		CASE(test_seed_and_publish_lifecycle),
		CASE(test_seed_without_directory_is_ignored_with_a_message),
		CASE(test_verbose_says_warm_or_cold),
		CASE(test_verbose_says_why_a_seed_is_cold),
		CASE(test_late_end_leaves_a_later_runs_directory),
		CASE(test_an_end_that_cannot_start_leaves_its_key_to_the_epilog),
	};

	return (TESTMAIN_ROOT_ONLY("lifecycle", "it hands directories to another uid", tests, NULL));
}
