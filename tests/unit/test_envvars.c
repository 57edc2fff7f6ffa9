/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: envvars.h (what happens to a cache variable already set). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "base/config.h"
#include "base/envvars.h"
#include "base/layout.h"

#define PREFIX "/tmp/ext-cache/1000/"

static void expect_action(const char *current, bool user_asked, const char *prefix,
			  enum extc_var_action want)
{
	enum extc_var_action got = extc_envvars_decide(current, user_asked, prefix);

	if (got != want) {
		print_error("current '%s', user_asked %d, prefix '%s': got action %d, expected %d\n",
			    current ? current : "(unset)", (int)user_asked, prefix, (int)got, (int)want);
		fail();
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(EXTC_ENV_DIR, "SLURM_EXT_CACHE_DIR");
	assert_string_equal(EXTC_ENV_MODE, "SLURM_EXT_CACHE_MODE");
	assert_string_equal(EXTC_ENV_REQUEST_NAME, "SLURM_EXT_CACHE");
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

/* ---- FLASHINFER_CUBIN_DIR: FlashInfer's store of downloaded cubins --------------------- */

#define BASE_PREFIX "/var/tmp/ec/"
#define CUBINS "/.cache/flashinfer/cubins"

static void parse_cfg(struct extc_config *cfg, const char *arg)
{
	char *av[] = { (char *)arg };
	char why[256];

	assert_int_equal(extc_config_parse(cfg, arg != NULL, av, why, sizeof(why)), 0);
}

/* Run the decision; 'want_out' is checked when the answer is a pin. */
static void expect_cubin(const struct extc_config *cfg, bool user_asked,
			 const struct extc_cubin_env *env, enum extc_cubin_action want,
			 const char *want_out)
{
	char out[256] = "untouched";
	enum extc_cubin_action got;

	got = extc_envvars_flashinfer_cubin_dir(cfg, user_asked, BASE_PREFIX, env, out, sizeof(out));
	if (got != want) {
		print_error("cubin '%s' base '%s' home '%s' pw '%s' user_asked %d: got %d, expected %d\n",
			    env->cubin ? env->cubin : "(unset)", env->base ? env->base : "(unset)",
			    env->home ? env->home : "(unset)", env->pw_home ? env->pw_home : "(unset)",
			    (int)user_asked, (int)got, (int)want);
		fail();
	}
	if (want == EXTC_CUBIN_PIN)
		assert_string_equal(out, want_out);
}

static void test_cubin_names(void **state)
{
	(void)state;
	assert_string_equal(EXTC_FLASHINFER_BASE, "FLASHINFER_WORKSPACE_BASE");
	assert_string_equal(EXTC_FLASHINFER_CUBIN, "FLASHINFER_CUBIN_DIR");
}

/* Nothing set but HOME: the store stays at ~/.cache/flashinfer/cubins, whoever asked. */
static void test_cubin_default_home(void **state)
{
	const struct extc_cubin_env env = { .home = "/home/u" };
	const struct extc_cubin_env no_home = { .pw_home = "/users/u" };
	struct extc_config cfg;

	(void)state;
	parse_cfg(&cfg, NULL);
	expect_cubin(&cfg, false, &env, EXTC_CUBIN_PIN, "/home/u" CUBINS);
	expect_cubin(&cfg, true, &env, EXTC_CUBIN_PIN, "/home/u" CUBINS);
	/* HOME unset: Python falls back to the password database, and so does this */
	expect_cubin(&cfg, true, &no_home, EXTC_CUBIN_PIN, "/users/u" CUBINS);
}

/* HOME as pathlib.Path.home() gives it: trailing slashes go, "" and "/" are the root. */
static void test_cubin_home_spellings(void **state)
{
	static const struct { const char *home, *want; } cases[] = {
		{ "/home/u/", "/home/u" CUBINS },
		{ "/home/u//", "/home/u" CUBINS },
		{ "/", CUBINS },
		{ "//", CUBINS },
		{ "", CUBINS },
		{ "rel/home", "rel/home" CUBINS },
	};
	struct extc_config cfg;
	size_t i;

	(void)state;
	parse_cfg(&cfg, NULL);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct extc_cubin_env env = { .home = cases[i].home, .pw_home = "/pw" };

		expect_cubin(&cfg, true, &env, EXTC_CUBIN_PIN, cases[i].want);
	}
}

/*
 * The user's own FLASHINFER_WORKSPACE_BASE: kept (and so nothing to pin)
 * when only the admin default applies; replaced when the user asked for a
 * mode, and then the store is the one under the user's base, not HOME.
 */
static void test_cubin_user_base(void **state)
{
	const struct extc_cubin_env env = { .base = "/scratch/u/fi/", .home = "/home/u" };
	const struct extc_cubin_env empty = { .base = "", .home = "/home/u" };
	struct extc_config cfg;

	(void)state;
	parse_cfg(&cfg, NULL);
	expect_cubin(&cfg, false, &env, EXTC_CUBIN_NOT_MOVED, NULL);
	expect_cubin(&cfg, true, &env, EXTC_CUBIN_PIN, "/scratch/u/fi" CUBINS);
	/* set but empty: FlashInfer's Path("") is the working directory */
	expect_cubin(&cfg, true, &empty, EXTC_CUBIN_PIN, "." CUBINS);
	expect_cubin(&cfg, false, &empty, EXTC_CUBIN_PIN, "." CUBINS);
}

/* A base this plugin set for an enclosing step is not the user's: HOME decides. */
static void test_cubin_enclosing_step_base(void **state)
{
	const struct extc_cubin_env env = {
		.base = BASE_PREFIX "1000/12/batch/flashinfer", .home = "/home/u",
	};
	const struct extc_cubin_env pinned = {
		.base = BASE_PREFIX "1000/12/batch/flashinfer", .home = "/home/u",
		.cubin = "/home/u" CUBINS,
	};
	struct extc_config cfg;

	(void)state;
	parse_cfg(&cfg, NULL);
	expect_cubin(&cfg, false, &env, EXTC_CUBIN_PIN, "/home/u" CUBINS);
	/* the batch step's pin reaches srun's steps as a set value: it is kept */
	expect_cubin(&cfg, false, &pinned, EXTC_CUBIN_USER, NULL);
}

/* The user's own FLASHINFER_CUBIN_DIR is never touched; an empty one is none. */
static void test_cubin_user_cubin_kept(void **state)
{
	const struct extc_cubin_env env = { .cubin = "/opt/cubins", .home = "/home/u" };
	const struct extc_cubin_env both = {
		.cubin = "/opt/cubins", .base = "/scratch/u", .home = "/home/u",
	};
	const struct extc_cubin_env empty = { .cubin = "", .home = "/home/u" };
	const struct extc_cubin_env ours = {
		.cubin = BASE_PREFIX "1000/12/batch/cubins", .home = "/home/u",
	};
	struct extc_config cfg;

	(void)state;
	parse_cfg(&cfg, NULL);
	expect_cubin(&cfg, false, &env, EXTC_CUBIN_USER, NULL);
	expect_cubin(&cfg, true, &env, EXTC_CUBIN_USER, NULL);
	expect_cubin(&cfg, true, &both, EXTC_CUBIN_USER, NULL);
	expect_cubin(&cfg, true, &empty, EXTC_CUBIN_PIN, "/home/u" CUBINS);
	/* one this plugin set in an enclosing step (vars= named it there) is not the user's */
	expect_cubin(&cfg, true, &ours, EXTC_CUBIN_PIN, "/home/u" CUBINS);
}

/* vars= decides: no FLASHINFER_WORKSPACE_BASE, nothing moved; FLASHINFER_CUBIN_DIR named, the admin's. */
static void test_cubin_vars_lists(void **state)
{
	const struct extc_cubin_env env = { .home = "/home/u" };
	struct extc_config cfg;

	(void)state;
	parse_cfg(&cfg, "vars=TORCH_EXTENSIONS_DIR,TRITON_CACHE_DIR");
	expect_cubin(&cfg, true, &env, EXTC_CUBIN_NOT_MOVED, NULL);
	parse_cfg(&cfg, "vars=flashinfer_workspace_base");	/* names are case-sensitive */
	expect_cubin(&cfg, true, &env, EXTC_CUBIN_NOT_MOVED, NULL);
	parse_cfg(&cfg, "vars=FLASHINFER_WORKSPACE_BASE:fi");
	expect_cubin(&cfg, true, &env, EXTC_CUBIN_PIN, "/home/u" CUBINS);
	parse_cfg(&cfg, "vars=FLASHINFER_WORKSPACE_BASE,FLASHINFER_CUBIN_DIR:cubins");
	expect_cubin(&cfg, true, &env, EXTC_CUBIN_MANAGED, NULL);
	parse_cfg(&cfg, "vars=FLASHINFER_CUBIN_DIR");
	expect_cubin(&cfg, true, &env, EXTC_CUBIN_NOT_MOVED, NULL);
}

static void test_cubin_no_home_and_too_long(void **state)
{
	const struct extc_cubin_env none = { 0 };
	const struct extc_cubin_env env = { .home = "/home/u" };
	struct extc_config cfg;
	char small[sizeof("/home/u" CUBINS)];

	(void)state;
	parse_cfg(&cfg, NULL);
	expect_cubin(&cfg, true, &none, EXTC_CUBIN_NO_HOME, NULL);
	assert_int_equal(extc_envvars_flashinfer_cubin_dir(&cfg, true, BASE_PREFIX, &env, small,
							   sizeof(small)), EXTC_CUBIN_PIN);
	assert_string_equal(small, "/home/u" CUBINS);
	assert_int_equal(extc_envvars_flashinfer_cubin_dir(&cfg, true, BASE_PREFIX, &env, small,
							   sizeof(small) - 1), EXTC_CUBIN_TOO_LONG);
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
		cmocka_unit_test(test_cubin_names),
		cmocka_unit_test(test_cubin_default_home),
		cmocka_unit_test(test_cubin_home_spellings),
		cmocka_unit_test(test_cubin_user_base),
		cmocka_unit_test(test_cubin_enclosing_step_base),
		cmocka_unit_test(test_cubin_user_cubin_kept),
		cmocka_unit_test(test_cubin_vars_lists),
		cmocka_unit_test(test_cubin_no_home_and_too_long),
	};

	return (cmocka_run_group_tests_name("envvars", tests, NULL, NULL));
}
