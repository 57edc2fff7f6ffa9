/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: layout.h (directory names built from integers only). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "base/layout.h"

/* Slurm's ids that are never a job, step or user. */
#define ID_FIRST_INVALID 0xfffffff0u

static void expect_leaf(enum extc_mode mode, uint32_t stepid, const char *want)
{
	char buf[EXTC_NAME_LEN];

	memset(buf, 'Z', sizeof(buf));
	if (extc_layout_leaf_name(mode, stepid, buf, sizeof(buf)) != 0) {
		print_error("mode %d step %#x: refused, expected '%s'\n", (int)mode, stepid, want);
		fail();
	}
	assert_string_equal(buf, want);
}

static void expect_no_leaf(enum extc_mode mode, uint32_t stepid)
{
	char buf[EXTC_NAME_LEN];

	if (extc_layout_leaf_name(mode, stepid, buf, sizeof(buf)) != -1) {
		print_error("mode %d step %#x: got '%s', expected no directory\n", (int)mode,
			    stepid, buf);
		fail();
	}
}

/* ---- the special step ids are Slurm's ----------------------------------------------------- */

static void test_step_constants_match_slurm(void **state)
{
	(void)state;
	assert_int_equal(EXTC_STEP_MAX_NORMAL, SLURM_MAX_NORMAL_STEP_ID);
	assert_int_equal(EXTC_STEP_INTERACTIVE, SLURM_INTERACTIVE_STEP);
	assert_int_equal(EXTC_STEP_BATCH, SLURM_BATCH_SCRIPT);
	assert_int_equal(EXTC_STEP_EXTERN, SLURM_EXTERN_CONT);
	assert_int_equal(EXTC_STEP_PENDING, SLURM_PENDING_STEP);
}

/* ---- uid and job levels ----------------------------------------------------------------------- */

static void test_uid_name(void **state)
{
	static const struct {
		uid_t uid;
		const char *name;
	} ok[] = {
		{ 1, "1" }, { 1000, "1000" }, { 65534, "65534" },
		{ (uid_t)(ID_FIRST_INVALID - 1), "4294967279" },
	};
	static const uid_t bad[] = { 0, (uid_t)ID_FIRST_INVALID, (uid_t)NO_VAL, (uid_t)-1 };
	char buf[EXTC_NAME_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(extc_layout_uid_name(ok[i].uid, buf, sizeof(buf)), 0);
		assert_string_equal(buf, ok[i].name);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(extc_layout_uid_name(bad[i], buf, sizeof(buf)), -1);
}

static void test_job_name(void **state)
{
	static const struct {
		uint32_t jobid;
		const char *name;
	} ok[] = {
		{ 1, "1" }, { 9, "9" }, { 10, "10" }, { 12, "12" }, { 123456789, "123456789" },
		{ ID_FIRST_INVALID - 1, "4294967279" },
	};
	static const uint32_t bad[] = {
		0, ID_FIRST_INVALID, ID_FIRST_INVALID + 1, NO_VAL, INFINITE, UINT32_MAX,
	};
	char buf[EXTC_NAME_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		memset(buf, 'Z', sizeof(buf));
		assert_int_equal(extc_layout_job_name(ok[i].jobid, buf, sizeof(buf)), 0);
		assert_string_equal(buf, ok[i].name);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (extc_layout_job_name(bad[i], buf, sizeof(buf)) != -1) {
			print_error("job %#x: got '%s', expected no directory\n", bad[i], buf);
			fail();
		}
	}
}

/* ---- leaf level ----------------------------------------------------------------------------------- */

static void test_leaf_local_mode(void **state)
{
	(void)state;
	expect_leaf(EXTC_MODE_LOCAL, 0, "0");
	expect_leaf(EXTC_MODE_LOCAL, 7, "7");
	expect_leaf(EXTC_MODE_LOCAL, 4242, "4242");
	expect_leaf(EXTC_MODE_LOCAL, EXTC_STEP_MAX_NORMAL, "4294967280");
	expect_leaf(EXTC_MODE_LOCAL, EXTC_STEP_BATCH, "batch");
	expect_leaf(EXTC_MODE_LOCAL, EXTC_STEP_INTERACTIVE, "interactive");
}

static void test_leaf_job_mode_is_one_name_per_job(void **state)
{
	(void)state;
	expect_leaf(EXTC_MODE_JOB, 0, "job");
	expect_leaf(EXTC_MODE_JOB, 1, "job");
	expect_leaf(EXTC_MODE_JOB, 99999, "job");
	expect_leaf(EXTC_MODE_JOB, EXTC_STEP_MAX_NORMAL, "job");
	expect_leaf(EXTC_MODE_JOB, EXTC_STEP_BATCH, "job");
	expect_leaf(EXTC_MODE_JOB, EXTC_STEP_INTERACTIVE, "job");
	assert_string_equal(EXTC_LEAF_JOB, "job");
}

static void test_leaf_special_steps_get_none(void **state)
{
	static const enum extc_mode modes[] = { EXTC_MODE_LOCAL, EXTC_MODE_JOB };
	static const uint32_t steps[] = {
		EXTC_STEP_EXTERN, EXTC_STEP_PENDING, NO_VAL, INFINITE,
		EXTC_STEP_MAX_NORMAL + 1, 0xfffffff5u, 0xfffffff9u,
	};
	size_t m, s;

	(void)state;
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++)
			expect_no_leaf(modes[m], steps[s]);
	}
}

static void test_leaf_off_mode_gets_none(void **state)
{
	(void)state;
	expect_no_leaf(EXTC_MODE_OFF, 0);
	expect_no_leaf(EXTC_MODE_OFF, EXTC_STEP_BATCH);
	expect_no_leaf((enum extc_mode)7, 0);
	expect_no_leaf((enum extc_mode)7, EXTC_STEP_BATCH);
}

/* ---- buffers -------------------------------------------------------------------------------------- */

static void test_buffer_too_small(void **state)
{
	char buf[EXTC_NAME_LEN];

	(void)state;
	assert_int_equal(extc_layout_uid_name(1000, buf, 4), -1);
	assert_int_equal(extc_layout_uid_name(1000, buf, 5), 0);
	assert_string_equal(buf, "1000");
	assert_int_equal(extc_layout_job_name(12, buf, 2), -1);
	assert_int_equal(extc_layout_job_name(12, buf, 3), 0);
	assert_string_equal(buf, "12");
	assert_int_equal(extc_layout_job_name(ID_FIRST_INVALID - 1, buf, 10), -1);
	assert_int_equal(extc_layout_job_name(ID_FIRST_INVALID - 1, buf, 11), 0);
	assert_string_equal(buf, "4294967279");
	assert_int_equal(extc_layout_leaf_name(EXTC_MODE_LOCAL, EXTC_STEP_BATCH, buf, 5), -1);
	assert_int_equal(extc_layout_leaf_name(EXTC_MODE_LOCAL, EXTC_STEP_BATCH, buf, 6), 0);
	assert_int_equal(extc_layout_leaf_name(EXTC_MODE_LOCAL, EXTC_STEP_INTERACTIVE, buf, 11), -1);
	assert_int_equal(extc_layout_leaf_name(EXTC_MODE_LOCAL, EXTC_STEP_INTERACTIVE, buf, 12), 0);
	assert_int_equal(extc_layout_leaf_name(EXTC_MODE_LOCAL, 12345, buf, 5), -1);
	assert_int_equal(extc_layout_leaf_name(EXTC_MODE_JOB, 1, buf, 3), -1);
	assert_int_equal(extc_layout_leaf_name(EXTC_MODE_JOB, 1, buf, 4), 0);
}

/* ---- strict parsers (sweeping leftovers) ----------------------------------------------------------- */

static void test_parse_job_name_accepts_exactly_what_is_made(void **state)
{
	uint32_t jobid = 0;

	(void)state;
	assert_int_equal(extc_layout_parse_job_name("12", &jobid), 0);
	assert_int_equal(jobid, 12);
	assert_int_equal(extc_layout_parse_job_name("1", &jobid), 0);
	assert_int_equal(jobid, 1);
	assert_int_equal(extc_layout_parse_job_name("10", &jobid), 0);
	assert_int_equal(jobid, 10);
	assert_int_equal(extc_layout_parse_job_name("4294967279", &jobid), 0);
	assert_int_equal(jobid, ID_FIRST_INVALID - 1);
}

static void test_parse_job_name_rejects(void **state)
{
	static const char *const bad[] = {
		"", "0", "01", "12a", "12.", "12.0", "12.01", "-1", "4294967295", " 12", "12 ",
		"4294967280", "4294967296", "99999999999", "12.4294967280", "12.3.4", ".3", "12..3",
		"+12", "12.+3", "12.-3", "0.1", "00.1", "12/3", "12\n", "\t12", "1e3", "0x12",
		"12.3 ", "..", ".", "job", "batch", "12-3", "12.3a",
		/* the restart count is no longer part of the name: every dotted form is foreign */
		"12.3", "1.1", "4294967279.4294967279", "123456789.42", "77.2", "77.0", "12.1",
		"4294967279.1", "1.4294967279",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t jobid;

		if (extc_layout_parse_job_name(bad[i], &jobid) != -1) {
			print_error("'%s' was accepted as job %u\n", bad[i], jobid);
			fail();
		}
	}
}

static void test_job_name_round_trip(void **state)
{
	static const uint32_t jobs[] = {
		1, 9, 10, 12, 99, 100, 65535, 65536, 1234567, 123456789, 999999999, 1000000000,
		ID_FIRST_INVALID - 2, ID_FIRST_INVALID - 1,
	};
	size_t j;

	(void)state;
	for (j = 0; j < sizeof(jobs) / sizeof(jobs[0]); j++) {
		char name[EXTC_NAME_LEN];
		uint32_t jobid = 0;

		assert_int_equal(extc_layout_job_name(jobs[j], name, sizeof(name)), 0);
		assert_null(strchr(name, '.'));
		assert_int_equal(extc_layout_parse_job_name(name, &jobid), 0);
		assert_int_equal(jobid, jobs[j]);
	}
}

static void test_parse_uid_name(void **state)
{
	static const char *const bad[] = { "", "0", "01", "-1", "+1", " 1000", "1000 ", "1e3",
					   "4294967280", "4294967295", "4294967296", "1000.1",
					   "root", "0x3e8" };
	static const uid_t uids[] = { 1, 1000, 4242, 65534, (uid_t)(ID_FIRST_INVALID - 1) };
	uid_t uid = 7;
	size_t i;

	(void)state;
	assert_int_equal(extc_layout_parse_uid_name("1000", &uid), 0);
	assert_int_equal(uid, 1000);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uid = 7;
		if (extc_layout_parse_uid_name(bad[i], &uid) != -1) {
			print_error("'%s' was accepted as uid %u\n", bad[i], (unsigned)uid);
			fail();
		}
	}
	for (i = 0; i < sizeof(uids) / sizeof(uids[0]); i++) {
		char name[EXTC_NAME_LEN];

		assert_int_equal(extc_layout_uid_name(uids[i], name, sizeof(name)), 0);
		assert_int_equal(extc_layout_parse_uid_name(name, &uid), 0);
		assert_int_equal(uid, uids[i]);
	}
}

/* ---- node name ---------------------------------------------------------------------- */


static bool plain_host_name(const char *h)
{
	size_t i;

	if (h[0] == '\0' || h[0] == '.' || strlen(h) > EXTC_NODE_NAME_MAX)
		return (false);
	for (i = 0; h[i] != '\0'; i++) {
		if (!isalnum((unsigned char)h[i]) && strchr("-._", h[i]) == NULL)
			return (false);
	}
	return (true);
}

static void test_node_name_is_the_host_name(void **state)
{
	char host[256], buf[EXTC_NODE_NAME_MAX + 1];

	(void)state;
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	if (!plain_host_name(host)) {
		assert_int_equal(extc_layout_node_name(buf, sizeof(buf)), -1);
		return;
	}
	assert_int_equal(extc_layout_node_name(buf, sizeof(buf)), 0);
	assert_string_equal(buf, host);
	assert_int_equal(extc_layout_node_name(buf, strlen(host)), -1);	/* no room for the NUL */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_constants_match_slurm),
		cmocka_unit_test(test_uid_name),
		cmocka_unit_test(test_job_name),
		cmocka_unit_test(test_leaf_local_mode),
		cmocka_unit_test(test_leaf_job_mode_is_one_name_per_job),
		cmocka_unit_test(test_leaf_special_steps_get_none),
		cmocka_unit_test(test_leaf_off_mode_gets_none),
		cmocka_unit_test(test_buffer_too_small),
		cmocka_unit_test(test_parse_job_name_accepts_exactly_what_is_made),
		cmocka_unit_test(test_parse_job_name_rejects),
		cmocka_unit_test(test_job_name_round_trip),
		cmocka_unit_test(test_parse_uid_name),
		cmocka_unit_test(test_node_name_is_the_host_name),
	};

	return (cmocka_run_group_tests_name("layout", tests, NULL, NULL));
}
