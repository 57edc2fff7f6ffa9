/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: which container image a step runs, from pyxis' options and the argv. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "container/container_id.h"

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Case 'n' (argv cases from 100) told 'got' and 'spec'; an unknown always says why. */
static void check(size_t n, enum extc_ctr_kind got, const char *spec, enum extc_ctr_kind want,
		  const char *want_spec)
{
	if (got != want)
		fail_msg("case %zu: kind %d, wanted %d (%s)", n, got, want, spec);
	if (want_spec != NULL && strcmp(spec, want_spec) != 0)
		fail_msg("case %zu: spec \"%s\", wanted \"%s\"", n, spec, want_spec);
	if (got == EXTC_CTR_UNKNOWN && spec[0] == '\0')
		fail_msg("case %zu: unknown without a reason", n);
}

struct pyxis_case {
	const char *image, *name, *cwd;
	enum extc_ctr_kind want;
	const char *spec;	/* for a file or a digest; NULL: not checked */
};

static void test_pyxis_options(void **state)
{
	static const struct pyxis_case cases[] = {
		{ NULL, NULL, "/home/u", EXTC_CTR_HOST, "" },
		{ "", NULL, "/home/u", EXTC_CTR_HOST, "" },
		{ "/images/a.sqsh", NULL, "/home/u", EXTC_CTR_FILE, "/images/a.sqsh" },
		{ "./a.sqsh", NULL, "/home/u", EXTC_CTR_FILE, "/home/u/./a.sqsh" },
		{ "./a.sqsh", NULL, NULL, EXTC_CTR_UNKNOWN, NULL },
		{ "./a.sqsh", NULL, "relative", EXTC_CTR_UNKNOWN, NULL },
		{ "nvcr.io#nvidia/pytorch:24.05-py3", NULL, "/", EXTC_CTR_UNKNOWN, NULL },
		{ "ubuntu", NULL, "/", EXTC_CTR_UNKNOWN, NULL },
		{ "ubuntu@" DIGEST, NULL, "/", EXTC_CTR_DIGEST, "ubuntu@" DIGEST },
		{ "ubuntu@sha256:0123", NULL, "/", EXTC_CTR_UNKNOWN, NULL },
		{ "ubuntu@" DIGEST "0", NULL, "/", EXTC_CTR_UNKNOWN, NULL },
		{ "ubuntu@SHA256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL,
		  "/", EXTC_CTR_UNKNOWN, NULL },
		{ NULL, "mine", "/", EXTC_CTR_UNKNOWN, NULL },
		{ "/images/a.sqsh", "mine", "/", EXTC_CTR_UNKNOWN, NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char spec[PATH_MAX];
		enum extc_ctr_kind got = extc_container_id_from_pyxis(cases[i].image, cases[i].name, cases[i].cwd,
								      spec, sizeof(spec));

		check(i, got, spec, cases[i].want, cases[i].spec);
	}
}

struct argv_case {
	const char *argv[12];	/* ends at NULL */
	enum extc_ctr_kind want;
	const char *spec;
};

static void test_the_steps_own_argv(void **state)
{
	static const struct argv_case cases[] = {
		{ { "python3", "train.py", NULL }, EXTC_CTR_HOST, "" },
		{ { "/bin/bash", "job.sh", NULL }, EXTC_CTR_HOST, "" },
		{ { "apptainer", "exec", "a.sif", "python3", NULL }, EXTC_CTR_FILE, "/w/a.sif" },
		{ { "/usr/bin/apptainer", "exec", "/i/a.sif", "true", NULL }, EXTC_CTR_FILE, "/i/a.sif" },
		{ { "singularity", "run", "/i/a.sif", NULL }, EXTC_CTR_FILE, "/i/a.sif" },
		/* options with and without values, short and long, global and the subcommand's */
		{ { "apptainer", "-q", "exec", "-B", "/data", "--cleanenv", "--env=A=1", "-c", "/i/a.sif",
		    "true", NULL }, EXTC_CTR_FILE, "/i/a.sif" },
		{ { "apptainer", "-c", "/etc/a.conf", "exec", "--containall", "/i/a.sif", NULL },
		  EXTC_CTR_FILE, "/i/a.sif" },
		{ { "apptainer", "exec", "--no-mount", "tmp", "--", "/i/a.sif", NULL }, EXTC_CTR_FILE,
		  "/i/a.sif" },
		/* the program's own options after the image are not the runtime's */
		{ { "apptainer", "exec", "/i/a.sif", "--weird", NULL }, EXTC_CTR_FILE, "/i/a.sif" },
		{ { "apptainer", "exec", "--weird", "/i/a.sif", NULL }, EXTC_CTR_UNKNOWN, NULL },
		{ { "apptainer", "exec", "docker://ubuntu:24.04", NULL }, EXTC_CTR_UNKNOWN, NULL },
		{ { "apptainer", "exec", "docker://ubuntu@" DIGEST, NULL }, EXTC_CTR_DIGEST,
		  "docker://ubuntu@" DIGEST },
		{ { "apptainer", "exec", "instance://x", NULL }, EXTC_CTR_UNKNOWN, NULL },
		{ { "apptainer", "build", "a.sif", "def", NULL }, EXTC_CTR_UNKNOWN, NULL },
		{ { "apptainer", "exec", NULL }, EXTC_CTR_UNKNOWN, NULL },
		{ { "apptainer", "exec", "-B", NULL }, EXTC_CTR_UNKNOWN, NULL },
		{ { "ch-run", "/i/img", "--", "true", NULL }, EXTC_CTR_UNKNOWN, NULL },
		{ { "podman", "run", "img", NULL }, EXTC_CTR_UNKNOWN, NULL },
		{ { "/opt/enroot/bin/enroot", "start", "img", NULL }, EXTC_CTR_UNKNOWN, NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char spec[PATH_MAX];
		int argc = 0;
		enum extc_ctr_kind got;

		while (cases[i].argv[argc] != NULL)
			argc++;
		got = extc_container_id_from_argv(argc, (char *const *)cases[i].argv, "/w", spec, sizeof(spec));
		check(100 + i, got, spec, cases[i].want, cases[i].spec);
	}
}

/* A huge argv is read no further than its first EXTC_CTR_ARGV_MAX words. */
static void test_a_long_argv_is_bounded(void **state)
{
	static char *argv[EXTC_CTR_ARGV_MAX * 4];
	char spec[PATH_MAX];
	size_t i;

	(void)state;
	argv[0] = "apptainer";
	argv[1] = "exec";
	for (i = 2; i < sizeof(argv) / sizeof(argv[0]) - 1; i++)
		argv[i] = "--nv";
	argv[i] = "/i/a.sif";
	assert_int_equal(extc_container_id_from_argv((int)(i + 1), argv, "/", spec, sizeof(spec)),
			 EXTC_CTR_UNKNOWN);
	argv[2] = "/i/a.sif";
	assert_int_equal(extc_container_id_from_argv((int)(i + 1), argv, "/", spec, sizeof(spec)),
			 EXTC_CTR_FILE);
	argv[0] = "python3";
	assert_int_equal(extc_container_id_from_argv((int)(i + 1), argv, "/", spec, sizeof(spec)),
			 EXTC_CTR_HOST);
	assert_int_equal(extc_container_id_from_argv(0, argv, "/", spec, sizeof(spec)), EXTC_CTR_HOST);
}

/* What does not fit the caller's buffer is unknown, never cut short into another name. */
static void test_a_spec_too_long_is_unknown(void **state)
{
	char spec[16];

	(void)state;
	assert_int_equal(extc_container_id_from_pyxis("/images/a-long-name.sqsh", NULL, "/", spec, sizeof(spec)),
			 EXTC_CTR_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pyxis_options),
		cmocka_unit_test(test_the_steps_own_argv),
		cmocka_unit_test(test_a_long_argv_is_bounded),
		cmocka_unit_test(test_a_spec_too_long_is_unknown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
