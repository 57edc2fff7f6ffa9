/* spank-ext-cache unit tests: envvars.h (what happens to a cache variable already set). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "envvars.h"
#include "layout.h"

#define PREFIX "/tmp/ext-cache/1000/"

static void expect_action(const char *current, bool user_asked, const char *prefix,
			  enum extc_var_action want)
{
	enum extc_var_action got = extc_var_decide(current, user_asked, prefix);

	if (got != want) {
		print_error("current '%s', user_asked %d, prefix '%s': got '%s', expected '%s'\n",
			    current ? current : "(unset)", (int)user_asked, prefix,
			    extc_var_action_name(got), extc_var_action_name(want));
		fail();
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(EXTC_ENV_DIR, "SLURM_EXT_CACHE_DIR");
	assert_string_equal(EXTC_ENV_MODE, "SLURM_EXT_CACHE_MODE");
	assert_string_equal(EXTC_ENV_REQUEST, "SLURM_EXT_CACHE");
}

static void test_unset_is_set(void **state)
{
	(void)state;
	expect_action(NULL, false, PREFIX, EXTC_VAR_SET);
	expect_action(NULL, true, PREFIX, EXTC_VAR_SET);
}

static void test_empty_is_set(void **state)
{
	(void)state;
	expect_action("", false, PREFIX, EXTC_VAR_SET);
	expect_action("", true, PREFIX, EXTC_VAR_SET);
}

static void test_user_value_kept_under_admin_default(void **state)
{
	(void)state;
	expect_action("/home/u/.cache/torch_extensions", false, PREFIX, EXTC_VAR_KEEP_USER);
	expect_action("relative/dir", false, PREFIX, EXTC_VAR_KEEP_USER);
	expect_action(" ", false, PREFIX, EXTC_VAR_KEEP_USER);
}

static void test_user_value_replaced_when_user_asked(void **state)
{
	(void)state;
	expect_action("/home/u/.cache/torch_extensions", true, PREFIX, EXTC_VAR_REPLACE_USER);
	expect_action("relative/dir", true, PREFIX, EXTC_VAR_REPLACE_USER);
}

static void test_value_of_an_enclosing_step_is_always_replaced(void **state)
{
	static const char *const ours[] = {
		PREFIX,
		PREFIX "12/batch",
		PREFIX "12/batch/torch_extensions",
		PREFIX "12.3/job/triton",
		PREFIX "12/0/numba",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++) {
		expect_action(ours[i], false, PREFIX, EXTC_VAR_REPLACE_OURS);
		expect_action(ours[i], true, PREFIX, EXTC_VAR_REPLACE_OURS);
	}
}

static void test_string_prefix_without_slash_is_not_ours(void **state)
{
	static const char *const not_ours[] = {
		"/tmp/ext-cache/1000",			/* the level itself, without the slash */
		"/tmp/ext-cache/10000/12/batch/triton",	/* another user sharing the digits */
		"/tmp/ext-cache/1000x/12/batch",
		"/tmp/ext-cache/100/12/batch",
		"/tmp/ext-cache/1001/12/batch",
		"/tmp/ext-cache-old/1000/12/batch",
		"/TMP/ext-cache/1000/12/batch",
		"//tmp/ext-cache/1000/12/batch",
		"x/tmp/ext-cache/1000/12/batch",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++) {
		expect_action(not_ours[i], false, PREFIX, EXTC_VAR_KEEP_USER);
		expect_action(not_ours[i], true, PREFIX, EXTC_VAR_REPLACE_USER);
	}
}

/* The glue passes "<base>/": anything below the base is ours, whatever node or uid level. */
static void test_with_base_prefix(void **state)
{
	(void)state;
	expect_action("/var/tmp/ec/4242/77/batch/triton", false, "/var/tmp/ec/", EXTC_VAR_REPLACE_OURS);
	expect_action("/var/tmp/ec/n1/4242/77/0/triton", false, "/var/tmp/ec/", EXTC_VAR_REPLACE_OURS);
	expect_action("/var/tmp/ec2/4242/77/0/triton", false, "/var/tmp/ec/", EXTC_VAR_KEEP_USER);
	expect_action("/var/tmp/ec", false, "/var/tmp/ec/", EXTC_VAR_KEEP_USER);
}

static void test_action_names(void **state)
{
	static const enum extc_var_action all[] = { EXTC_VAR_SET, EXTC_VAR_KEEP_USER,
						    EXTC_VAR_REPLACE_USER, EXTC_VAR_REPLACE_OURS };
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		const char *name = extc_var_action_name(all[i]);

		assert_non_null(name);
		assert_string_not_equal(name, "?");
		for (j = i + 1; j < sizeof(all) / sizeof(all[0]); j++)
			assert_string_not_equal(name, extc_var_action_name(all[j]));
	}
	assert_string_equal(extc_var_action_name(EXTC_VAR_SET), "set");
	assert_string_equal(extc_var_action_name(EXTC_VAR_KEEP_USER), "kept the user's value");
	assert_string_equal(extc_var_action_name((enum extc_var_action)42), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_unset_is_set),
		cmocka_unit_test(test_empty_is_set),
		cmocka_unit_test(test_user_value_kept_under_admin_default),
		cmocka_unit_test(test_user_value_replaced_when_user_asked),
		cmocka_unit_test(test_value_of_an_enclosing_step_is_always_replaced),
		cmocka_unit_test(test_string_prefix_without_slash_is_not_ours),
		cmocka_unit_test(test_with_base_prefix),
		cmocka_unit_test(test_action_names),
	};

	return (cmocka_run_group_tests_name("envvars", tests, NULL, NULL));
}
