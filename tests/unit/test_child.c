/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: bounded reaping of the plugin's helper children. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/child.h"

/* A child that waits for a signal, after telling us (through 'ready') that it is running. */
static pid_t start_waiting_child(void)
{
	int ready[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (write(ready[1], "r", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return (pid);
}

/* gone: waitpid no longer knows the pid */
static bool reaped(pid_t pid)
{
	return (waitpid(pid, NULL, WNOHANG) < 0);
}

static void test_exited_child_is_reaped(void **state)
{
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_true(extc_child_reap(pid, 1000, 2000));
	assert_true(reaped(pid));
}

static void test_running_child_is_killed_at_once_with_no_grace(void **state)
{
	pid_t pid = start_waiting_child();

	(void)state;
	assert_true(extc_child_reap(pid, 0, 5000));
	assert_true(reaped(pid));
}

/* The bound holds: a child that outlives total_ms is left, and reported as still there. */
static void test_bound_reached_before_the_grace_reports_still_there(void **state)
{
	pid_t pid = start_waiting_child();
	int status = 0;

	(void)state;
	assert_false(extc_child_reap(pid, 60000, 30));
	assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
}

/* A pid that is not our child (already reaped) counts as gone rather than waited for. */
static void test_not_our_child_counts_as_gone(void **state)
{
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_true(extc_child_reap(pid, 0, 1000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exited_child_is_reaped),
		cmocka_unit_test(test_running_child_is_killed_at_once_with_no_grace),
		cmocka_unit_test(test_bound_reached_before_the_grace_reports_still_there),
		cmocka_unit_test(test_not_our_child_counts_as_gone),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
