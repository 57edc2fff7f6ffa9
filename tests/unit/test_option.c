/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: which value of the --ext-cache* options wins, when
 * Slurm calls their callback as srun, sbatch and salloc do: #SBATCH lines
 * (sbatch only), then the environment form, then the command line, for each
 * component of a heterogeneous job in turn. The last value wins; no value
 * is refused for being a second one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <slurm/spank.h>

#include "fake_spank.h"
#include "spank/option.h"
#include "strassert.h"

#define SLURM_FORM_MODE "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache"
#define SLURM_FORM_SEED "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_seed"
#define SLURM_FORM_VERBOSE "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_verbose"

static const char *const own_forms[] = {
	"SLURM_EXT_CACHE", "SLURM_EXT_CACHE_SEED", "SLURM_EXT_CACHE_PUBLISH",
	"SLURM_EXT_CACHE_VERBOSE", SLURM_FORM_MODE, SLURM_FORM_SEED,
	"SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_publish", SLURM_FORM_VERBOSE,
};

static const struct fake_job client = { .uid = 1000, .gid = 1000, .jobid = 0, .stepid = 0 };

static void clear_env(void)
{
	size_t i;

	for (i = 0; i < sizeof(own_forms) / sizeof(own_forms[0]); i++)
		unsetenv(own_forms[i]);
}

static int setup(void **state)
{
	(void)state;
	clear_env();
	return (0);
}

static int teardown(void **state)
{
	(void)state;
	clear_env();
	return (0);
}

/* init in srun (S_CTX_LOCAL) or sbatch/salloc (S_CTX_ALLOCATOR), as client.c does it */
static void client_init(spank_context_t ctx)
{
	fake_reset(ctx, &client);
	assert_int_equal(extc_option_register(NULL), 0);
	if (ctx == S_CTX_ALLOCATOR)
		extc_option_map_env_form();
}

/* spank_process_env_options: the value of Slurm's environment form, if set */
static void environment_phase(void)
{
	if (getenv(SLURM_FORM_MODE) != NULL)
		assert_int_equal(fake_option(getenv(SLURM_FORM_MODE), 0), 0);
	if (getenv(SLURM_FORM_SEED) != NULL)
		assert_int_equal(fake_option_named("ext-cache-seed", getenv(SLURM_FORM_SEED), 0), 0);
	if (getenv(SLURM_FORM_VERBOSE) != NULL)
		assert_int_equal(fake_option_named("ext-cache-verbose", getenv(SLURM_FORM_VERBOSE), 0),
				 0);
}

static int post_opt(void)
{
	char why[256];

	return (extc_option_check(why, sizeof(why)));
}

static void test_last_value_on_one_command_line_wins(void **state)
{
	(void)state;
	client_init(S_CTX_LOCAL);
	assert_int_equal(fake_option("job", 0), 0);
	assert_int_equal(fake_option("local", 0), 0);
	assert_string_equal(extc_option_value(), "local");
	assert_int_equal(fake_option("job", 0), 0);
	assert_string_equal(extc_option_value(), "job");
	assert_int_equal(fake_option_named("ext-cache-seed", "/scratch/a", 0), 0);
	assert_int_equal(fake_option_named("ext-cache-seed", "/scratch/b", 0), 0);
	assert_string_equal(extc_option_seed(), "/scratch/b");
	assert_int_equal(post_opt(), 0);
	assert_false(fake_log_has("error", ""));
}

static void test_bad_value_is_refused_and_not_kept(void **state)
{
	(void)state;
	client_init(S_CTX_LOCAL);
	assert_int_equal(fake_option("local", 0), 0);
	assert_int_equal(fake_option("lcoal", 0), -1);
	assert_true(fake_log_has("error",
				 "ext-cache: --ext-cache=lcoal: invalid mode (did you mean 'local'?)"));
	assert_string_equal(extc_option_value(), "local");
	assert_int_equal(fake_option_named("ext-cache-publish", "relative/dir", 0), -1);
	assert_true(fake_log_has("error", "--ext-cache-publish=relative/dir: not an absolute path"));
	assert_null(extc_option_publish());
	assert_int_equal(fake_option("off", 0), 0);
	assert_string_equal(extc_option_value(), "off");
}

/* srun in a job: Slurm passes the job's value (environment form), then the step's own */
static void test_step_command_line_beats_the_jobs_value(void **state)
{
	(void)state;
	setenv(SLURM_FORM_MODE, "job", 1);
	client_init(S_CTX_LOCAL);
	environment_phase();
	assert_string_equal(extc_option_value(), "job");
	assert_int_equal(fake_option("local", 0), 0);
	assert_string_equal(extc_option_value(), "local");
	assert_int_equal(post_opt(), 0);
	/* srun maps nothing: the step ranks the option over SLURM_EXT_CACHE itself */
	unsetenv(SLURM_FORM_MODE);
	setenv("SLURM_EXT_CACHE", "off", 1);
	client_init(S_CTX_LOCAL);
	assert_null(getenv(SLURM_FORM_MODE));
	assert_null(extc_option_value());
}

/* sbatch: #SBATCH lines, then the environment form, then the command line */
static void test_sbatch_command_line_beats_environment_beats_script(void **state)
{
	(void)state;
	/* #SBATCH --ext-cache=job; SLURM_EXT_CACHE=local: local */
	setenv("SLURM_EXT_CACHE", "local", 1);
	client_init(S_CTX_ALLOCATOR);
	assert_string_equal(getenv(SLURM_FORM_MODE), "local");
	assert_int_equal(fake_option("job", 0), 0);
	environment_phase();
	assert_string_equal(extc_option_value(), "local");
	assert_int_equal(post_opt(), 0);
	/* ... and sbatch --ext-cache=off on top: off */
	assert_int_equal(fake_option("off", 0), 0);
	assert_string_equal(extc_option_value(), "off");
	assert_int_equal(post_opt(), 0);

	/* two #SBATCH lines, then the command line */
	unsetenv(SLURM_FORM_MODE);
	unsetenv("SLURM_EXT_CACHE");
	client_init(S_CTX_ALLOCATOR);
	assert_null(getenv(SLURM_FORM_MODE));
	assert_int_equal(fake_option("local", 0), 0);
	assert_int_equal(fake_option("off", 0), 0);
	assert_string_equal(extc_option_value(), "off");
	environment_phase();
	assert_int_equal(fake_option("job", 0), 0);
	assert_string_equal(extc_option_value(), "job");
	assert_int_equal(post_opt(), 0);
}

/* sbatch or salloc inside a job: the job's own value stays Slurm's environment form */
static void test_jobs_value_is_not_replaced_by_the_variable(void **state)
{
	(void)state;
	setenv(SLURM_FORM_MODE, "job", 1);
	setenv("SLURM_EXT_CACHE", "local", 1);
	client_init(S_CTX_ALLOCATOR);
	assert_string_equal(getenv(SLURM_FORM_MODE), "job");
	environment_phase();
	assert_string_equal(extc_option_value(), "job");
	assert_int_equal(post_opt(), 0);
}

/* a bad SLURM_EXT_CACHE is refused only if nothing on the command line replaces it */
static void test_bad_environment_form_refused_unless_replaced(void **state)
{
	char why[256];

	(void)state;
	setenv("SLURM_EXT_CACHE", "bogus", 1);
	setenv("SLURM_EXT_CACHE_SEED", "seeds", 1);
	client_init(S_CTX_ALLOCATOR);
	environment_phase();
	assert_int_equal(extc_option_check(why, sizeof(why)), -1);
	assert_contains(why, "SLURM_EXT_CACHE=bogus: invalid mode");
	assert_int_equal(fake_option("job", 0), 0);
	assert_int_equal(extc_option_check(why, sizeof(why)), -1);
	assert_contains(why, "SLURM_EXT_CACHE_SEED=seeds: not an absolute path");
	assert_int_equal(fake_option_named("ext-cache-seed", "/scratch/s", 0), 0);
	assert_int_equal(extc_option_check(why, sizeof(why)), 0);
	assert_string_equal(extc_option_value(), "job");
	assert_string_equal(extc_option_seed(), "/scratch/s");
	/* the same bad text typed on the command line is refused at once */
	assert_int_equal(fake_option("lcoal", 0), -1);
	assert_true(fake_log_has("error", "--ext-cache=lcoal: invalid mode"));
}

/* SLURM_EXT_CACHE_VERBOSE=0 asks for nothing: it is not handed to Slurm */
static void test_verbose_variable_maps_only_when_on(void **state)
{
	(void)state;
	setenv("SLURM_EXT_CACHE_VERBOSE", "0", 1);
	client_init(S_CTX_ALLOCATOR);
	assert_null(getenv(SLURM_FORM_VERBOSE));
	environment_phase();
	assert_false(extc_option_verbose());
	setenv("SLURM_EXT_CACHE_VERBOSE", "1", 1);
	client_init(S_CTX_ALLOCATOR);
	assert_string_equal(getenv(SLURM_FORM_VERBOSE), "1");
	environment_phase();
	assert_true(extc_option_verbose());
}

/*
 * A heterogeneous job: each component's sources come in the same order, one
 * component after the other, with a post-option call after each; Slurm keeps
 * one value for the whole command, the last one given.
 */
static void test_heterogeneous_components_in_turn(void **state)
{
	(void)state;
	setenv(SLURM_FORM_MODE, "job", 1);
	client_init(S_CTX_LOCAL);
	environment_phase();
	assert_int_equal(fake_option("local", 0), 0);
	assert_int_equal(post_opt(), 0);
	assert_string_equal(extc_option_value(), "local");
	environment_phase();
	assert_string_equal(extc_option_value(), "job");
	assert_int_equal(fake_option("off", 0), 0);
	assert_int_equal(post_opt(), 0);
	assert_string_equal(extc_option_value(), "off");

	/* sbatch: the second component's #SBATCH line comes after the first's command line */
	unsetenv(SLURM_FORM_MODE);
	client_init(S_CTX_ALLOCATOR);
	assert_int_equal(fake_option("job", 0), 0);
	assert_int_equal(fake_option("local", 0), 0);
	assert_int_equal(post_opt(), 0);
	assert_int_equal(fake_option("off", 0), 0);
	assert_int_equal(post_opt(), 0);
	assert_string_equal(extc_option_value(), "off");
}

/* slurmstepd only stores what it is given, even a bad value (the step reports it) */
static void test_step_stores_the_last_value(void **state)
{
	(void)state;
	fake_reset(S_CTX_REMOTE, &client);
	assert_int_equal(extc_option_register(NULL), 0);
	assert_int_equal(fake_option("job", 1), 0);
	assert_int_equal(fake_option("lcoal", 1), 0);
	assert_string_equal(extc_option_value(), "lcoal");
	assert_false(fake_log_has("error", ""));
}

#define CASE(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		CASE(test_last_value_on_one_command_line_wins),
		CASE(test_bad_value_is_refused_and_not_kept),
		CASE(test_step_command_line_beats_the_jobs_value),
		CASE(test_sbatch_command_line_beats_environment_beats_script),
		CASE(test_jobs_value_is_not_replaced_by_the_variable),
		CASE(test_bad_environment_form_refused_unless_replaced),
		CASE(test_verbose_variable_maps_only_when_on),
		CASE(test_heterogeneous_components_in_turn),
		CASE(test_step_stores_the_last_value),
	};

	return (cmocka_run_group_tests_name("option", tests, NULL, NULL));
}
