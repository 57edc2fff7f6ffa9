/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: background.h (the detached emptier's process).
 * The work function reports, from inside the detached grandchild, which
 * descriptors it still has and at what priority it runs, into a regular
 * file it inherited (regular files are the ones kept).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/background.h"

#define IOPRIO_IDLE (3 << 13)	/* class idle, level 0, as ioprio_get reports it */

struct fx {
	char path[64];
	int report;		/* the regular file the grandchild writes to */
	int reg_high;		/* another regular file, at a high number: kept */
	int pipefd[2], sockfd[2];
	int pipe_high;		/* a pipe end at the top of the open-files limit: closed */
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct rlimit rl;
	int top;

	if (fx == NULL)
		return (-1);
	strcpy(fx->path, "/tmp/extc-background.XXXXXX");
	fx->report = mkstemp(fx->path);
	if (fx->report < 0 || pipe(fx->pipefd) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, fx->sockfd) < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return (-1);
	top = rl.rlim_cur > 65536 ? 65535 : (int)rl.rlim_cur - 1;
	fx->pipe_high = dup2(fx->pipefd[1], top);
	fx->reg_high = dup2(fx->report, top - 1);
	if (fx->pipe_high < 0 || fx->reg_high < 0)
		return (-1);
	*state = fx;
	return (0);
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	close(fx->report);
	close(fx->reg_high);
	close(fx->pipefd[0]);
	close(fx->pipefd[1]);
	close(fx->pipe_high);
	close(fx->sockfd[0]);
	close(fx->sockfd[1]);
	unlink(fx->path);
	free(fx);
	extc_background_fd_dir = "/proc/self/fd";
	return (0);
}

/* In the grandchild: "fds 0:n 1:r ... nice N ioprio N", one line, appended. */
static void report(void *arg)
{
	const struct fx *fx = arg;
	char line[4096];
	size_t len = 0;
	struct dirent *de;
	DIR *dir = opendir("/proc/self/fd");
	long ioprio;
	int nice;

	len += (size_t)snprintf(line + len, sizeof(line) - len, "fds");
	while (dir != NULL && (de = readdir(dir)) != NULL && len < sizeof(line) - 32) {
		struct stat sb;
		int fd = atoi(de->d_name);
		char kind = 'o';

		if (de->d_name[0] == '.' || fd == dirfd(dir) || fstat(fd, &sb) < 0)
			continue;
		if (S_ISREG(sb.st_mode))
			kind = 'r';
		else if (S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(1, 3))
			kind = 'n';
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %d:%c", fd, kind);
	}
	if (dir != NULL)
		closedir(dir);
	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	ioprio = syscall(SYS_ioprio_get, 1, 0);
	snprintf(line + len, sizeof(line) - len, " nice %d ioprio %ld\n", nice, ioprio);
	if (write(fx->report, line, strlen(line)) < 0)
		_exit(1);
}

/* The report line, waited for (the grandchild is not ours to wait for). */
static void read_report(const struct fx *fx, char *buf, size_t len)
{
	int i;

	for (i = 0; i < 1000; i++) {
		ssize_t n = pread(fx->report, buf, len - 1, 0);

		if (n > 0 && buf[n - 1] == '\n') {
			buf[n] = '\0';
			return;
		}
		poll(NULL, 0, 10);
	}
	fail_msg("the detached work never reported");
}

static void check_report(const struct fx *fx, const char *line)
{
	char want[64];
	const char *p;
	int fd, n;
	char kind;

	p = strstr(line, "nice ");
	assert_non_null(p);
	assert_int_equal(atoi(p + 5), EXTC_BACKGROUND_NICE);
	p = strstr(line, "ioprio ");
	assert_non_null(p);
	assert_int_equal(atol(p + 7), IOPRIO_IDLE);
	/* stdio on /dev/null unless a regular file (make check's log); the two regular files */
	for (p = line + 3; sscanf(p, " %d:%c%n", &fd, &kind, &n) == 2; p += n) {
		if (fd <= 2) {
			if (kind != 'n' && kind != 'r')
				fail_msg("stdio %d is kept as %c: %s", fd, kind, line);
		} else if ((fd != fx->report && fd != fx->reg_high) || kind != 'r') {
			fail_msg("descriptor %d (%c) was left open: %s", fd, kind, line);
		}
	}
	snprintf(want, sizeof(want), " %d:r", fx->report);
	assert_non_null(strstr(line, want));
	snprintf(want, sizeof(want), " %d:r ", fx->reg_high);
	assert_non_null(strstr(line, want));
	assert_non_null(strstr(line, " 0:"));
	assert_non_null(strstr(line, " 1:"));
	assert_non_null(strstr(line, " 2:"));
}

/*
 * The helper child starts from the fixture's descriptors alone: whatever
 * else its caller had open (make's jobserver, a build wrapper's `flock 9`
 * on a regular file) is not this test's to account for.
 */
static void only_fixture_fds(const struct fx *fx)
{
	const int keep[] = { fx->report, fx->reg_high, fx->pipefd[0], fx->pipefd[1],
			     fx->sockfd[0], fx->sockfd[1], fx->pipe_high };
	int fd, top = fx->pipe_high;
	size_t i;

	for (fd = 3; fd <= top; fd++) {
		bool kept = false;

		for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			kept = kept || keep[i] == fd;
		if (!kept)
			close(fd);
	}
}

/* Run the work detached from a helper child (so that stdio and filters stay its own). */
static void run_detached_from_child(struct fx *fx, bool no_close_range)
{
	char line[4096];
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		only_fixture_fds(fx);
		close(0);	/* a free stdio slot must end up on /dev/null too */
		if (no_close_range) {
			/* close_range(2) fails as on a kernel before 5.9 */
			struct sock_filter filter[] = {
				BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
				BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
				BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
				BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
				BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
				BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			};
			struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };

			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
			    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0 ||
			    syscall(SYS_close_range, 1000000u, 1000001u, 0u) != -1 || errno != ENOSYS)
				_exit(2);
		}
		_exit(extc_background_run_detached(report, fx) > 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	read_report(fx, line, sizeof(line));
	check_report(fx, line);
}

static void test_keeps_only_regular_files(void **state)
{
	run_detached_from_child(*state, false);
}

static void test_without_a_descriptor_listing(void **state)
{
	extc_background_fd_dir = "/nonexistent/fd";
	run_detached_from_child(*state, false);
}

#ifdef __x86_64__
static void test_without_close_range(void **state)
{
	run_detached_from_child(*state, true);
}

static void test_without_close_range_or_listing(void **state)
{
	extc_background_fd_dir = "/nonexistent/fd";
	run_detached_from_child(*state, true);
}
#endif

/* A caller that ignores SIGCHLD has no child to wait for: the wait must end (ECHILD). */
static void test_sigchld_ignored_does_not_spin(void **state)
{
	struct fx *fx = *state;
	char line[4096];
	int status = 0, i;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		only_fixture_fds(fx);
		signal(SIGCHLD, SIG_IGN);
		_exit(extc_background_run_detached(report, fx) > 0 ? 0 : 1);
	}
	/* a bound: extc_background_run_detached returns in milliseconds unless it spins */
	for (i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; i++)
		poll(NULL, 0, 10);
	if (i == 1000) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("extc_background_run_detached did not return with SIGCHLD ignored (waitpid loop on ECHILD)");
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	read_report(fx, line, sizeof(line));
	check_report(fx, line);
}

/* What extc_background_detach's work sees and does: told through the fixture's report file. */
struct detach_fx {
	struct fx *fx;
	int kept;		/* a pipe's read end the caller asks to keep */
	int release;		/* the work waits for this to be readable before it ends */
	bool say_done;		/* call extc_background_done() first */
	pid_t caller;		/* the process that called extc_background_detach, a subreaper when set */
};

static void detach_work(void *arg)
{
	const struct detach_fx *d = arg;
	struct pollfd pfd = { .fd = d->release, .events = POLLIN };
	char name[32] = "", line[128];
	struct stat sb;

	prctl(PR_GET_NAME, name, 0, 0, 0);
	snprintf(line, sizeof(line), "name %s kept %s%s\n", name,
		 fstat(d->kept, &sb) == 0 && S_ISFIFO(sb.st_mode) ? "yes" : "no",
		 d->caller <= 0 ? "" : getppid() == d->caller ? " parent caller" : " parent other");
	if (write(d->fx->report, line, strlen(line)) < 0)
		_exit(1);
	/* after the report: the caller, gone once told, is the parent it names */
	if (d->say_done)
		extc_background_done();
	/* bounded: the test releases it, or it gives up after 10 s */
	poll(&pfd, 1, 10000);
}

/* Run extc_background_detach in a helper child; its result (and the report) come back through 'out'. */
static enum extc_detach_result detach_from_child(struct detach_fx *d, unsigned wait_ms)
{
	const int keep[] = { d->kept, d->release };
	const struct extc_detach_opts o = { .name = "extc-test", .keep = keep, .nkeep = 2,
					    .wait_ms = wait_ms };
	int status;
	pid_t pid, gc;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the work's orphaning is seen as its parent becoming this process */
		if (d->caller == -1) {
			d->caller = getpid();
			if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
				_exit(20);
		}
		_exit((int)extc_background_detach(detach_work, d, &o, &gc) + (gc > 0 ? 0 : 10));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_true(WEXITSTATUS(status) < 10);
	return ((enum extc_detach_result)WEXITSTATUS(status));
}

static void detach_fixture(struct fx *fx, struct detach_fx *d, int gate[2], bool say_done)
{
	assert_int_equal(pipe(gate), 0);
	d->fx = fx;
	d->kept = fx->pipefd[0];
	d->release = gate[0];
	d->say_done = say_done;
	d->caller = 0;
}

/* The work that says it is done is waited for no longer; its kept pipe and its name are there. */
static void test_detach_done_early(void **state)
{
	struct detach_fx d;
	char line[4096];
	int gate[2];

	detach_fixture(*state, &d, gate, true);
	assert_int_equal(detach_from_child(&d, 5000), EXTC_DETACH_DONE);
	read_report(d.fx, line, sizeof(line));
	assert_string_equal(line, "name extc-test kept yes\n");
	/* it was still running (waiting on the gate) when the caller went on */
	assert_int_equal(write(gate[1], "x", 1), 1);
	close(gate[0]);
	close(gate[1]);
}

/* Work that does not say so, and does not end, is left running after wait_ms. */
static void test_detach_left_running(void **state)
{
	struct detach_fx d;
	char line[4096];
	int gate[2];

	detach_fixture(*state, &d, gate, false);
	/* the work waits on the gate, which is opened only below: the caller gave up first */
	assert_int_equal(detach_from_child(&d, 300), EXTC_DETACH_RUNNING);
	read_report(d.fx, line, sizeof(line));
	assert_string_equal(line, "name extc-test kept yes\n");
	assert_int_equal(write(gate[1], "x", 1), 1);
	close(gate[0]);
	close(gate[1]);
}

/* Work that ends within wait_ms is done, without calling extc_background_done(). */
static void test_detach_ended_is_done(void **state)
{
	struct detach_fx d;
	char line[4096];
	int gate[2];

	detach_fixture(*state, &d, gate, false);
	assert_int_equal(write(gate[1], "x", 1), 1);	/* released before it starts */
	assert_int_equal(detach_from_child(&d, 5000), EXTC_DETACH_DONE);
	read_report(d.fx, line, sizeof(line));
	assert_string_equal(line, "name extc-test kept yes\n");
	close(gate[0]);
	close(gate[1]);
}

/*
 * The work starts, and takes its name, only once the intermediate child
 * has exited: until then it is in slurmstepd's process tree, where
 * proctrack/linuxproc signals whatever is not named like slurmstepd. The
 * intermediate lingers 300 ms here; the caller is a subreaper, so the
 * work's parent is the caller once it is an orphan, the intermediate
 * before.
 */
static void test_detach_work_starts_orphaned(void **state)
{
	struct detach_fx d;
	char line[4096];
	int gate[2];

	detach_fixture(*state, &d, gate, true);
	d.caller = -1;
	extc_background_linger_ms = 300;
	assert_int_equal(detach_from_child(&d, 5000), EXTC_DETACH_DONE);
	extc_background_linger_ms = 0;
	read_report(d.fx, line, sizeof(line));
	assert_string_equal(line, "name extc-test kept yes parent caller\n");
	assert_int_equal(write(gate[1], "x", 1), 1);
	close(gate[0]);
	close(gate[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keeps_only_regular_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_a_descriptor_listing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sigchld_ignored_does_not_spin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detach_done_early, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detach_left_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detach_ended_is_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detach_work_starts_orphaned, setup, teardown),
#ifdef __x86_64__
		cmocka_unit_test_setup_teardown(test_without_close_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_close_range_or_listing, setup, teardown),
#endif
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
