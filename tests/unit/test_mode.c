/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: mode.h (mode names, user value validation, precedence). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mode.h"
#include "strassert.h"

/* A message is safe for a log line or a terminal: printable ASCII only. */
static bool printable_ascii(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return (false);
	}
	return (true);
}

static int parse(const char *value, enum extc_mode *mode, char *why, size_t whylen)
{
	why[0] = '\0';
	return (extc_mode_parse(value, "--ext-cache", mode, why, whylen));
}

/* ---- names ----------------------------------------------------------------- */

static void test_parse_every_valid_mode(void **state)
{
	static const struct {
		const char *name;
		enum extc_mode mode;
	} valid[] = {
		{ "off", EXTC_MODE_OFF },
		{ "local", EXTC_MODE_LOCAL },
		{ "job", EXTC_MODE_JOB },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		enum extc_mode mode = valid[i].mode == EXTC_MODE_OFF ? EXTC_MODE_JOB : EXTC_MODE_OFF;
		char why[256];

		assert_int_equal(parse(valid[i].name, &mode, why, sizeof(why)), 0);
		assert_int_equal(mode, valid[i].mode);
		assert_string_equal(extc_mode_name(valid[i].mode), valid[i].name);
	}
}

static void test_mode_name_out_of_range(void **state)
{
	(void)state;
	assert_string_equal(extc_mode_name((enum extc_mode)3), "?");
	assert_string_equal(extc_mode_name((enum extc_mode)99), "?");
	assert_string_equal(extc_mode_name((enum extc_mode)-1), "?");
}

static void test_mode_list_names_every_mode(void **state)
{
	(void)state;
	assert_string_equal(EXTC_MODE_LIST, "local, job, off");
	assert_string_equal(EXTC_ENV_REQUEST_NAME, "SLURM_EXT_CACHE");
}

/* ---- invalid values ----------------------------------------------------------- */

static void test_lcoal_names_value_hint_and_list(void **state)
{
	enum extc_mode mode = EXTC_MODE_JOB;
	char why[256];

	(void)state;
	assert_int_equal(parse("lcoal", &mode, why, sizeof(why)), -1);
	assert_contains(why, "lcoal");
	assert_contains(why, "did you mean 'local'");
	assert_contains(why, "local, job, off");
	assert_contains(why, "--ext-cache=lcoal");
	assert_int_equal(mode, EXTC_MODE_JOB);	/* untouched on failure */
}

static void test_near_misses_get_a_hint(void **state)
{
	static const struct {
		const char *typo, *meant;
	} cases[] = {
		{ "loacl", "local" }, { "locla", "local" }, { "Local", "local" },
		{ "lokal", "local" }, { "locl", "local" }, { "llocal", "local" },
		{ " local", "local" }, { "local ", "local" },
		{ "jbo", "job" }, { "jobs", "job" }, { "Job", "job" },
		{ "of", "off" }, { "offf", "off" }, { "0ff", "off" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum extc_mode mode = EXTC_MODE_OFF;
		char why[256], hint[64];

		assert_int_equal(parse(cases[i].typo, &mode, why, sizeof(why)), -1);
		snprintf(hint, sizeof(hint), "did you mean '%s'", cases[i].meant);
		assert_contains(why, hint);
		assert_contains(why, EXTC_MODE_LIST);
	}
}

static void test_far_values_get_no_hint(void **state)
{
	static const char *const values[] = { "xyzzy", "LOCAL", "shared", "node-local", "1",
					      "yes", "true", "persistent" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		enum extc_mode mode = EXTC_MODE_OFF;
		char why[256];

		assert_int_equal(parse(values[i], &mode, why, sizeof(why)), -1);
		assert_contains(why, values[i]);
		assert_contains(why, EXTC_MODE_LIST);
		assert_not_contains(why, "did you mean");
	}
}

static void test_empty_value(void **state)
{
	enum extc_mode mode = EXTC_MODE_LOCAL;
	char why[256];

	(void)state;
	assert_int_equal(parse("", &mode, why, sizeof(why)), -1);
	assert_contains(why, "empty");
	assert_contains(why, "--ext-cache");
	assert_contains(why, EXTC_MODE_LIST);
	assert_not_contains(why, "did you mean");
	assert_int_equal(mode, EXTC_MODE_LOCAL);
}

static void test_overlong_value_1mib(void **state)
{
	const size_t len = 1u << 20;
	char *value = malloc(len + 1);
	enum extc_mode mode = EXTC_MODE_JOB;
	char why[512];

	(void)state;
	assert_non_null(value);
	/* a valid mode followed by a megabyte: rejected, and the message stays short */
	memset(value, 'x', len);
	memcpy(value, "local", 5);
	value[len] = '\0';
	assert_int_equal(parse(value, &mode, why, sizeof(why)), -1);
	assert_int_equal(mode, EXTC_MODE_JOB);
	assert_contains(why, "--ext-cache=localxxx");
	assert_contains(why, "...");
	assert_contains(why, EXTC_MODE_LIST);
	assert_true(strlen(why) < 200);
	assert_true(printable_ascii(why));

	/* the same with bytes that need escaping: still bounded and printable */
	memset(value, '\n', len);
	assert_int_equal(parse(value, &mode, why, sizeof(why)), -1);
	assert_true(strlen(why) < 300);
	assert_true(printable_ascii(why));
	assert_contains(why, EXTC_MODE_LIST);
	free(value);
}

static void test_longest_values(void **state)
{
	char value[EXTC_MODE_VALUE_MAX + 2];
	enum extc_mode mode = EXTC_MODE_OFF;
	char why[256];

	(void)state;
	/* exactly at the limit and one past it: both invalid, both answered */
	memset(value, 'j', EXTC_MODE_VALUE_MAX);
	value[EXTC_MODE_VALUE_MAX] = '\0';
	assert_int_equal(parse(value, &mode, why, sizeof(why)), -1);
	assert_contains(why, EXTC_MODE_LIST);
	memset(value, 'j', EXTC_MODE_VALUE_MAX + 1);
	value[EXTC_MODE_VALUE_MAX + 1] = '\0';
	assert_int_equal(parse(value, &mode, why, sizeof(why)), -1);
	assert_contains(why, EXTC_MODE_LIST);
	assert_int_equal(mode, EXTC_MODE_OFF);
}

static void test_path_like_values(void **state)
{
	static const char *const values[] = { "/", "..", "../x", ".", "./local", "local/",
					      "/local", "local/../job", "/tmp/foo", "job/.." };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		enum extc_mode mode = EXTC_MODE_OFF;
		char why[256], named[64];

		assert_int_equal(parse(values[i], &mode, why, sizeof(why)), -1);
		assert_int_equal(mode, EXTC_MODE_OFF);
		snprintf(named, sizeof(named), "--ext-cache=%s:", values[i]);
		assert_contains(why, named);
		assert_contains(why, EXTC_MODE_LIST);
	}
}

static void test_control_characters_are_escaped(void **state)
{
	static const struct {
		const char *value, *shown;
	} cases[] = {
		{ "local\n", "local\\x0a" },
		{ "lo\ncal", "lo\\x0acal" },
		{ "\x1b[31mjob", "\\x1b[31mjob" },
		{ "job\r", "job\\x0d" },
		{ "\t", "\\x09" },
		{ "off\x7f", "off\\x7f" },
		{ "a\\b", "a\\x5cb" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum extc_mode mode = EXTC_MODE_OFF;
		char why[256];

		assert_int_equal(parse(cases[i].value, &mode, why, sizeof(why)), -1);
		assert_true(printable_ascii(why));
		assert_null(strchr(why, '\n'));
		assert_null(strchr(why, '\x1b'));
		assert_contains(why, cases[i].shown);
		assert_contains(why, EXTC_MODE_LIST);
	}
}

static void test_invalid_utf8_is_escaped(void **state)
{
	static const struct {
		const char *value, *shown;
	} cases[] = {
		{ "\xff\xfe", "\\xff\\xfe" },
		{ "loc\xc3" "al", "loc\\xc3al" },
		{ "\xc0\xaf", "\\xc0\\xaf" },
		{ "j\xe2\x80\xaeob", "j\\xe2\\x80\\xaeob" },	/* RIGHT-TO-LEFT OVERRIDE */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum extc_mode mode = EXTC_MODE_OFF;
		char why[256];

		assert_int_equal(parse(cases[i].value, &mode, why, sizeof(why)), -1);
		assert_true(printable_ascii(why));
		assert_contains(why, cases[i].shown);
	}
}

static void test_format_directives_are_literal(void **state)
{
	enum extc_mode mode = EXTC_MODE_OFF;
	char why[256];

	(void)state;
	assert_int_equal(parse("%n%s%s%x%p", &mode, why, sizeof(why)), -1);
	assert_contains(why, "--ext-cache=%n%s%s%x%p");
}

static void test_what_names_the_source(void **state)
{
	enum extc_mode mode = EXTC_MODE_OFF;
	char why[256];

	(void)state;
	assert_int_equal(extc_mode_parse("bad", "SLURM_EXT_CACHE", &mode, why, sizeof(why)), -1);
	assert_contains(why, "SLURM_EXT_CACHE=bad");
	assert_not_contains(why, "--ext-cache");
	assert_int_equal(extc_mode_parse("", "default", &mode, why, sizeof(why)), -1);
	assert_contains(why, "default");
}

static void test_small_why_buffer_is_respected(void **state)
{
	enum extc_mode mode = EXTC_MODE_OFF;
	char why[64];
	size_t i;

	(void)state;
	memset(why, 'Z', sizeof(why));
	assert_int_equal(extc_mode_parse("lcoal", "--ext-cache", &mode, why, 10), -1);
	assert_true(strlen(why) <= 9);
	for (i = 10; i < sizeof(why); i++)
		assert_int_equal(why[i], 'Z');
}

static void test_null_value_is_refused(void **state)
{
	enum extc_mode mode = EXTC_MODE_LOCAL;
	char why[256];

	(void)state;
	assert_int_equal(parse(NULL, &mode, why, sizeof(why)), -1);
	assert_int_equal(mode, EXTC_MODE_LOCAL);
	assert_contains(why, EXTC_MODE_LIST);
}

/* ---- precedence ----------------------------------------------------------------- */

static void test_resolve_default_applies_when_nothing_given(void **state)
{
	static const enum extc_mode defaults[] = { EXTC_MODE_OFF, EXTC_MODE_LOCAL, EXTC_MODE_JOB };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		struct extc_choice c = { .mode = (enum extc_mode)99, .user_asked = true };
		char why[256] = "";

		assert_int_equal(extc_mode_resolve(NULL, NULL, defaults[i], &c, why, sizeof(why)), 0);
		assert_int_equal(c.mode, defaults[i]);
		assert_false(c.user_asked);
		assert_string_equal(c.source, "default");
	}
}

static void test_resolve_option_wins_over_env_and_default(void **state)
{
	struct extc_choice c;
	char why[256];

	(void)state;
	assert_int_equal(extc_mode_resolve("job", "local", EXTC_MODE_OFF, &c, why, sizeof(why)), 0);
	assert_int_equal(c.mode, EXTC_MODE_JOB);
	assert_true(c.user_asked);
	assert_string_equal(c.source, "--ext-cache");

	/* an explicit off beats an env request and an admin default that is on */
	assert_int_equal(extc_mode_resolve("off", "local", EXTC_MODE_JOB, &c, why, sizeof(why)), 0);
	assert_int_equal(c.mode, EXTC_MODE_OFF);
	assert_true(c.user_asked);
	assert_string_equal(c.source, "--ext-cache");

	/* a valid option wins even over a garbage env value */
	assert_int_equal(extc_mode_resolve("local", "garbage\n", EXTC_MODE_OFF, &c, why,
					   sizeof(why)), 0);
	assert_int_equal(c.mode, EXTC_MODE_LOCAL);

	/* sbatch hands SLURM_EXT_CACHE on as the option: the same text is named as given */
	assert_int_equal(extc_mode_resolve("local", "local", EXTC_MODE_OFF, &c, why, sizeof(why)), 0);
	assert_int_equal(c.mode, EXTC_MODE_LOCAL);
	assert_string_equal(c.source, "SLURM_EXT_CACHE");
	assert_int_equal(extc_mode_resolve("lcoal", "lcoal", EXTC_MODE_OFF, &c, why, sizeof(why)),
			 -1);
	assert_contains(why, "SLURM_EXT_CACHE=lcoal: invalid mode");
}

static void test_resolve_env_wins_over_default(void **state)
{
	struct extc_choice c;
	char why[256];

	(void)state;
	assert_int_equal(extc_mode_resolve(NULL, "local", EXTC_MODE_OFF, &c, why, sizeof(why)), 0);
	assert_int_equal(c.mode, EXTC_MODE_LOCAL);
	assert_true(c.user_asked);
	assert_string_equal(c.source, "SLURM_EXT_CACHE");

	assert_int_equal(extc_mode_resolve(NULL, "off", EXTC_MODE_JOB, &c, why, sizeof(why)), 0);
	assert_int_equal(c.mode, EXTC_MODE_OFF);
	assert_true(c.user_asked);
	assert_string_equal(c.source, "SLURM_EXT_CACHE");
}

static void test_resolve_invalid_option_is_an_error_not_a_fallback(void **state)
{
	struct extc_choice c;
	char why[256] = "";

	(void)state;
	assert_int_equal(extc_mode_resolve("lcoal", "local", EXTC_MODE_JOB, &c, why, sizeof(why)),
			 -1);
	assert_true(c.user_asked);
	assert_string_equal(c.source, "--ext-cache");
	assert_contains(why, "--ext-cache=lcoal");
	assert_contains(why, "did you mean 'local'");
	assert_not_contains(why, "SLURM_EXT_CACHE");
	assert_int_not_equal(c.mode, EXTC_MODE_LOCAL);	/* the env value was not used */

	/* an empty option is a bad value, not "not given" */
	assert_int_equal(extc_mode_resolve("", "local", EXTC_MODE_OFF, &c, why, sizeof(why)), -1);
	assert_true(c.user_asked);
	assert_contains(why, "empty");
}

static void test_resolve_invalid_env_is_an_error(void **state)
{
	struct extc_choice c;
	char why[256] = "";

	(void)state;
	assert_int_equal(extc_mode_resolve(NULL, "bogus", EXTC_MODE_LOCAL, &c, why, sizeof(why)),
			 -1);
	assert_true(c.user_asked);
	assert_string_equal(c.source, "SLURM_EXT_CACHE");
	assert_contains(why, "SLURM_EXT_CACHE=bogus");
	assert_contains(why, EXTC_MODE_LIST);

	assert_int_equal(extc_mode_resolve(NULL, "../x", EXTC_MODE_OFF, &c, why, sizeof(why)), -1);
	assert_contains(why, "SLURM_EXT_CACHE=../x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_every_valid_mode),
		cmocka_unit_test(test_mode_name_out_of_range),
		cmocka_unit_test(test_mode_list_names_every_mode),
		cmocka_unit_test(test_lcoal_names_value_hint_and_list),
		cmocka_unit_test(test_near_misses_get_a_hint),
		cmocka_unit_test(test_far_values_get_no_hint),
		cmocka_unit_test(test_empty_value),
		cmocka_unit_test(test_overlong_value_1mib),
		cmocka_unit_test(test_longest_values),
		cmocka_unit_test(test_path_like_values),
		cmocka_unit_test(test_control_characters_are_escaped),
		cmocka_unit_test(test_invalid_utf8_is_escaped),
		cmocka_unit_test(test_format_directives_are_literal),
		cmocka_unit_test(test_what_names_the_source),
		cmocka_unit_test(test_small_why_buffer_is_respected),
		cmocka_unit_test(test_null_value_is_refused),
		cmocka_unit_test(test_resolve_default_applies_when_nothing_given),
		cmocka_unit_test(test_resolve_option_wins_over_env_and_default),
		cmocka_unit_test(test_resolve_env_wins_over_default),
		cmocka_unit_test(test_resolve_invalid_option_is_an_error_not_a_fallback),
		cmocka_unit_test(test_resolve_invalid_env_is_an_error),
	};

	return (cmocka_run_group_tests_name("mode", tests, NULL, NULL));
}
