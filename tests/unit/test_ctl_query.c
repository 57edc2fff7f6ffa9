/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: the leftover sweep's question to slurmctld, and what a failing Slurm API does to it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/spank.h>

#include "spank/ctl_query.h"
#include "fake_spank.h"

static const struct fake_job epilog_job = { .uid = 4242, .gid = 4343, .jobid = 5, .stepid = 0 };

static int setup(void **state)
{
	(void)state;
	fake_reset(S_CTX_JOB_SCRIPT, &epilog_job);
	return (0);
}

static void test_states_the_controller_reports(void **state)
{
	(void)state;
	fake_ctl_set_job(10, JOB_PENDING);
	fake_ctl_set_job(11, JOB_RUNNING);
	fake_ctl_set_job(12, JOB_COMPLETE | JOB_COMPLETING);
	fake_ctl_set_job(13, JOB_COMPLETE);
	fake_ctl_set_job(14, JOB_CANCELLED);
	assert_int_equal(extc_ctl_query_ask(10, 5000), EXTC_CTL_ALIVE);
	assert_int_equal(extc_ctl_query_ask(11, 5000), EXTC_CTL_ALIVE);
	assert_int_equal(extc_ctl_query_ask(12, 5000), EXTC_CTL_ALIVE);
	assert_int_equal(extc_ctl_query_ask(13, 5000), EXTC_CTL_OVER);
	assert_int_equal(extc_ctl_query_ask(14, 5000), EXTC_CTL_OVER);
	/* unknown to slurmctld: long gone (MinJobAge passed) */
	assert_int_equal(extc_ctl_query_ask(15, 5000), EXTC_CTL_OVER);
}

static void test_an_unreachable_controller_is_doubt(void **state)
{
	(void)state;
	fake_ctl_set_error(SLURM_COMMUNICATIONS_CONNECTION_ERROR);
	assert_int_equal(extc_ctl_query_ask(15, 5000), EXTC_CTL_UNKNOWN);
}

/*
 * 24.11 ends an uninitialised API call in fatal(), 26.05 in SIGSEGV; the
 * question runs in a child, so the caller gets doubt and lives on.
 */
static void test_a_dying_or_hanging_query_never_takes_the_caller_with_it(void **state)
{
	(void)state;
	fake_ctl_set_job(13, JOB_COMPLETE);
	fake_ctl_set_fault(FAKE_CTL_CRASHES);
	assert_int_equal(extc_ctl_query_ask(13, 5000), EXTC_CTL_UNKNOWN);
	fake_ctl_set_fault(FAKE_CTL_FATAL);
	assert_int_equal(extc_ctl_query_ask(13, 5000), EXTC_CTL_UNKNOWN);
	fake_ctl_set_fault(FAKE_CTL_HANGS);
	assert_int_equal(extc_ctl_query_ask(13, 200), EXTC_CTL_TIMEOUT);
	fake_ctl_set_fault(FAKE_CTL_ANSWERS);
	assert_int_equal(extc_ctl_query_ask(13, 5000), EXTC_CTL_OVER);
}

static void test_a_sweep_stops_asking_after_the_first_doubt(void **state)
{
	struct extc_ctl_session s = { .timeout_ms = 200, .max_asks = EXTC_CTL_ASKS_PER_SWEEP };

	(void)state;
	fake_ctl_set_job(13, JOB_COMPLETE);
	assert_false(extc_ctl_query_job_alive(13, &s));
	fake_ctl_set_fault(FAKE_CTL_HANGS);
	assert_true(extc_ctl_query_job_alive(13, &s));
	assert_true(s.gave_up);
	assert_true(fake_log_has("info", "did not say whether job 13 is over (no answer in time)"));
	/* the controller would answer now, but this sweep no longer asks: job 13 is kept */
	fake_ctl_set_fault(FAKE_CTL_ANSWERS);
	assert_true(extc_ctl_query_job_alive(13, &s));
}

/* E3.8: however many ended jobs users leave behind, one sweep asks a bounded number of questions. */
static void test_a_sweep_asks_at_most_its_budget(void **state)
{
	struct extc_ctl_session s = { .timeout_ms = 5000, .max_asks = 3 };
	struct extc_ctl_session none = { .timeout_ms = 5000 };
	unsigned i, over = 0;

	(void)state;
	fake_ctl_set_job(13, JOB_COMPLETE);
	for (i = 0; i < 10; i++)
		over += !extc_ctl_query_job_alive(13, &s);
	/* the first three were asked and are over; the other seven are kept for a later sweep */
	assert_int_equal(over, 3);
	assert_int_equal(s.asked, 3);
	assert_false(s.gave_up);
	/* a sweep with no budget (asked too recently on this node) asks nothing */
	assert_true(extc_ctl_query_job_alive(13, &none));
	assert_int_equal(none.asked, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_states_the_controller_reports, setup),
		cmocka_unit_test_setup(test_an_unreachable_controller_is_doubt, setup),
		cmocka_unit_test_setup(test_a_dying_or_hanging_query_never_takes_the_caller_with_it, setup),
		cmocka_unit_test_setup(test_a_sweep_stops_asking_after_the_first_doubt, setup),
		cmocka_unit_test_setup(test_a_sweep_asks_at_most_its_budget, setup),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
