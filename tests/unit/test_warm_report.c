/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: the --ext-cache-verbose line: warm, from where, how much; or cold, and why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "warm/warm_report.h"

static void test_warm_from_the_pool(void **state)
{
	struct extc_warm_report r;
	char key[16], where[64], line[1400];

	(void)state;
	extc_warm_report_key("41068273aabbccddeeff001122334455", key, sizeof(key));
	assert_string_equal(key, "41068273...");
	snprintf(where, sizeof(where), "the node pool (key %s)", key);
	extc_warm_report_warm(&r, where, 412, 3250586, 12000000);
	extc_warm_report_line(&r, "n1", line, sizeof(line));
	assert_string_equal(line, "node n1: warm: seeded 412 files, 3.1 MiB (3250586 bytes), from "
			    "the node pool (key 41068273...) in 0.012 s");
	extc_warm_report_taken(&r, where, 3, 1000000);
	extc_warm_report_line(&r, "n1", line, sizeof(line));
	assert_string_equal(line, "node n1: warm: took 3 entries from the node pool (key "
			    "41068273...) in 0.001 s (renamed in, no copy)");
	/* one is one: "1 entry", "1 file" */
	extc_warm_report_taken(&r, where, 1, 1000000);
	extc_warm_report_line(&r, "n1", line, sizeof(line));
	assert_string_equal(line, "node n1: warm: took 1 entry from the node pool (key "
			    "41068273...) in 0.001 s (renamed in, no copy)");
	extc_warm_report_warm(&r, where, 1, 100, 12000000);
	extc_warm_report_line(&r, "n1", line, sizeof(line));
	assert_string_equal(line, "node n1: warm: seeded 1 file, 100 bytes, from "
			    "the node pool (key 41068273...) in 0.012 s");
}

static void test_cold_says_why_and_the_latest_record_decides(void **state)
{
	struct extc_warm_report r;
	char line[1400];

	(void)state;
	extc_warm_report_warm(&r, "--ext-cache-seed=/scratch/jit", 3, 10, 1);
	extc_warm_report_cold(&r, "the node pool's key for this environment (%s) holds nothing yet",
			      "0123abcd...");
	extc_warm_report_line(&r, "n2", line, sizeof(line));
	assert_string_equal(line, "node n2: cold: the node pool's key for this environment "
			    "(0123abcd...) holds nothing yet");
	assert_int_equal(r.files, 0);
	extc_warm_report_kept(&r);
	extc_warm_report_line(&r, "n2", line, sizeof(line));
	assert_non_null(strstr(line, "node n2: warm: the job's directory already holds"));
}

static void test_nothing_recorded_and_a_short_buffer(void **state)
{
	struct extc_warm_report r;
	char line[1400], small[24];

	(void)state;
	memset(&r, 0, sizeof(r));
	extc_warm_report_line(&r, "n3", line, sizeof(line));
	assert_string_equal(line, "node n3: cold: no seed directory was named and the node pool is "
			    "off on this node");
	/* a long reason is cut, never overruns */
	extc_warm_report_cold(&r, "%0900d", 7);
	extc_warm_report_line(&r, "n3", small, sizeof(small));
	assert_true(strlen(small) < sizeof(small));
	/* a key is shown escaped, as any user text */
	extc_warm_report_key("\033[2Jx", small, sizeof(small));
	assert_null(strchr(small, '\033'));
}

/* A seed's result, as step_warm.c and step_pool.c hand it over. */
static void test_what_a_seed_did(void **state)
{
	static struct extc_warm_seed_res res;
	struct extc_warm_report r;
	char line[1400];

	(void)state;
	memset(&res, 0, sizeof(res));
	res.seed = EXTC_SEED_DONE;
	res.st.files = 12;
	res.st.bytes = 2048;
	res.ns = 250000000;
	extc_warm_report_seeded(&r, "--ext-cache-seed=/scratch/jit", &res);
	extc_warm_report_line(&r, "n1", line, sizeof(line));
	assert_string_equal(line, "node n1: warm: seeded 12 files, 2.0 KiB (2048 bytes), from "
			    "--ext-cache-seed=/scratch/jit in 0.250 s");
	res.st.files = 0;
	res.by_rename = true;
	extc_warm_report_seeded(&r, "the node pool (key 0123abcd...)", &res);
	res.by_rename = false;
	extc_warm_report_line(&r, "n1", line, sizeof(line));
	assert_string_equal(line, "node n1: cold: the node pool (key 0123abcd...) held nothing "
			    "when this step looked");
	res.seed = EXTC_SEED_REFUSED;
	snprintf(res.seed_why, sizeof(res.seed_why), "it holds 2.0 GiB, more than seed_max=");
	extc_warm_report_seeded(&r, "SLURM_EXT_CACHE_SEED=/s", &res);
	extc_warm_report_line(&r, "n2", line, sizeof(line));
	assert_string_equal(line, "node n2: cold: SLURM_EXT_CACHE_SEED=/s: not seeded: it holds "
			    "2.0 GiB, more than seed_max=");
	res.seed = EXTC_SEED_ABSENT;
	extc_warm_report_seeded(&r, "seed=/home/u/jit", &res);
	extc_warm_report_line(&r, "n2", line, sizeof(line));
	assert_string_equal(line, "node n2: cold: seed=/home/u/jit does not exist (yet)");
	res.seed = EXTC_SEED_NOT_FRESH;
	extc_warm_report_seeded(&r, "seed=/home/u/jit", &res);
	assert_int_equal(r.kind, EXTC_WARM_REPORT_KEPT);
}

static void test_option_over_environment(void **state)
{
	(void)state;
	assert_false(extc_warm_report_wanted(false, NULL));
	assert_false(extc_warm_report_wanted(false, ""));
	assert_false(extc_warm_report_wanted(false, "0"));
	assert_true(extc_warm_report_wanted(false, "1"));
	assert_true(extc_warm_report_wanted(false, "yes"));
	assert_true(extc_warm_report_wanted(true, NULL));
	assert_true(extc_warm_report_wanted(true, "0"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warm_from_the_pool),
		cmocka_unit_test(test_cold_says_why_and_the_latest_record_decides),
		cmocka_unit_test(test_nothing_recorded_and_a_short_buffer),
		cmocka_unit_test(test_what_a_seed_did),
		cmocka_unit_test(test_option_over_environment),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
