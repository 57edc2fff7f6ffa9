/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: which variables a noexec directory breaks, and what the step does then. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/config.h"
#include "base/noexec.h"
#include "strassert.h"
#include "base/text.h"

#define LEAF "/tmp/ext-cache/1000/77/0"

static void parse(struct extc_config *cfg, const char *arg)
{
	char buf[256], why[256];
	char *av[] = { buf };

	snprintf(buf, sizeof(buf), "%s", arg);
	assert_int_equal(extc_config_parse(cfg, arg[0] ? 1 : 0, av, why, sizeof(why)), 0);
}

static bool loads(const struct extc_config *cfg, const char *name)
{
	const struct extc_var *var = extc_config_find_var(cfg, name);

	assert_non_null(var);
	return (var->loads_code);
}

/* docs/cache-dirs.md's column: what each tool does with what it finds in its directory */
static void test_builtin_loaders(void **state)
{
	static const char *const loaders[] = {
		"TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
		"FLASHINFER_WORKSPACE_BASE", "DG_JIT_CACHE_DIR", "VLLM_CACHE_ROOT",
		"SGLANG_DG_CACHE_DIR", "SGLANG_JIT_CACHE_DIR", "TVM_FFI_CACHE_DIR",
		"TILELANG_CACHE_DIR", "EP_JIT_CACHE_DIR",
	};
	static const char *const data_only[] = {
		"PYTORCH_KERNEL_CACHE_PATH", "CUPY_CACHE_DIR", "MIOPEN_USER_DB_PATH",
		"MIOPEN_CUSTOM_CACHE_DIR", "AMD_COMGR_CACHE_DIR", "NUMBA_CACHE_DIR",
	};
	struct extc_config cfg;
	size_t i;

	(void)state;
	parse(&cfg, "");
	assert_int_equal(cfg.nvars, sizeof(loaders) / sizeof(loaders[0]) +
				    sizeof(data_only) / sizeof(data_only[0]));
	for (i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++)
		assert_true(loads(&cfg, loaders[i]));
	for (i = 0; i < sizeof(data_only) / sizeof(data_only[0]); i++)
		assert_false(loads(&cfg, data_only[i]));
}

/* an admin's vars= keeps the built-in flags; a name the plugin does not know is assumed to load */
static void test_vars_list_keeps_flags_and_assumes_unknown_loads(void **state)
{
	struct extc_config cfg;

	(void)state;
	parse(&cfg, "vars=MIOPEN_USER_DB_PATH:db,TRITON_CACHE_DIR,SGL_DG_CACHE_DIR");
	assert_false(loads(&cfg, "MIOPEN_USER_DB_PATH"));
	assert_true(loads(&cfg, "TRITON_CACHE_DIR"));
	assert_true(loads(&cfg, "SGL_DG_CACHE_DIR"));
	assert_true(extc_vars_builtin_loads_code("SOME_TOOL_CACHE"));
	assert_false(extc_vars_builtin_loads_code("NUMBA_CACHE_DIR"));
}

static void test_first_loader_among_exported(void **state)
{
	struct extc_config cfg;
	bool exported[EXTC_VARS_MAX] = { false };

	(void)state;
	parse(&cfg, "vars=MIOPEN_USER_DB_PATH,NUMBA_CACHE_DIR,TORCHINDUCTOR_CACHE_DIR");
	assert_string_equal(extc_noexec_first_loader(&cfg, NULL), "TORCHINDUCTOR_CACHE_DIR");
	/* the user's own value was kept: the step's directory does not hold Inductor's cache */
	exported[0] = exported[1] = true;
	assert_null(extc_noexec_first_loader(&cfg, exported));
	exported[2] = true;
	assert_string_equal(extc_noexec_first_loader(&cfg, exported), "TORCHINDUCTOR_CACHE_DIR");
	parse(&cfg, "vars=MIOPEN_USER_DB_PATH");
	assert_null(extc_noexec_first_loader(&cfg, NULL));
}

static enum extc_noexec_action decide(enum extc_exec_probe probe, enum extc_on_error on_error,
				      bool user_asked, char *why, size_t whylen)
{
	struct extc_config cfg;

	parse(&cfg, "");
	cfg.on_error = on_error;
	return (extc_noexec_decide(probe, LEAF, &cfg, NULL, user_asked, why, whylen));
}

/* the step's failure rule as every other failure of the step has it (on_error=) */
static void test_decision_follows_on_error(void **state)
{
	char why[EXTC_WHY_MAX];

	(void)state;
	assert_int_equal(decide(EXTC_EXEC_NOEXEC, EXTC_ON_ERROR_AUTO, true, why, sizeof(why)),
			 EXTC_NOEXEC_FAIL);
	assert_int_equal(decide(EXTC_EXEC_NOEXEC, EXTC_ON_ERROR_AUTO, false, why, sizeof(why)),
			 EXTC_NOEXEC_WARN);
	assert_int_equal(decide(EXTC_EXEC_NOEXEC, EXTC_ON_ERROR_WARN, true, why, sizeof(why)),
			 EXTC_NOEXEC_WARN);
	assert_int_equal(decide(EXTC_EXEC_NOEXEC, EXTC_ON_ERROR_FAIL, false, why, sizeof(why)),
			 EXTC_NOEXEC_FAIL);
	assert_true(extc_config_on_error_fails(EXTC_ON_ERROR_AUTO, true));
	assert_false(extc_config_on_error_fails(EXTC_ON_ERROR_AUTO, false));
	assert_true(extc_config_on_error_fails(EXTC_ON_ERROR_FAIL, false));
	assert_false(extc_config_on_error_fails(EXTC_ON_ERROR_WARN, true));
}

/* an exec mount, or one the task could not read, changes nothing; 'why' is left as it was */
static void test_exec_or_unknown_is_fine(void **state)
{
	char why[64] = "untouched";

	(void)state;
	assert_int_equal(decide(EXTC_EXEC_ALLOWED, EXTC_ON_ERROR_FAIL, true, why, sizeof(why)),
			 EXTC_NOEXEC_FINE);
	assert_int_equal(decide(EXTC_EXEC_UNKNOWN, EXTC_ON_ERROR_FAIL, true, why, sizeof(why)),
			 EXTC_NOEXEC_FINE);
	assert_string_equal(why, "untouched");
}

/* no exported variable loads code: nothing to refuse, even for a user who asked */
static void test_data_only_variables_are_fine(void **state)
{
	struct extc_config cfg;
	char why[EXTC_WHY_MAX];

	(void)state;
	parse(&cfg, "vars=MIOPEN_USER_DB_PATH,CUPY_CACHE_DIR");
	assert_int_equal(extc_noexec_decide(EXTC_EXEC_NOEXEC, LEAF, &cfg, NULL, true, why,
					    sizeof(why)), EXTC_NOEXEC_FINE);
}

/* what the user reads: the directory, "noexec", the variable, the loader's own words */
static void test_message_names_directory_and_noexec(void **state)
{
	char why[EXTC_WHY_MAX];

	(void)state;
	decide(EXTC_EXEC_NOEXEC, EXTC_ON_ERROR_AUTO, true, why, sizeof(why));
	assert_contains(why, LEAF);
	assert_contains(why, "noexec");
	assert_contains(why, "TORCH_EXTENSIONS_DIR");
	assert_contains(why, "failed to map segment");
}

static void test_message_escapes_and_fits(void **state)
{
	struct extc_config cfg;
	char why[48];
	char big[EXTC_WHY_MAX];

	(void)state;
	parse(&cfg, "");
	extc_noexec_decide(EXTC_EXEC_NOEXEC, "/srv/c\x1b[2Jache/1000/77/0", &cfg, NULL, true, big,
			   sizeof(big));
	assert_contains(big, "\\x1b");
	assert_not_contains(big, "\x1b");
	assert_int_equal(extc_noexec_decide(EXTC_EXEC_NOEXEC, LEAF, &cfg, NULL, true, why,
					    sizeof(why)), EXTC_NOEXEC_FAIL);
	assert_true(strlen(why) < sizeof(why));
}

/* the probe reads the mount of the directory itself, and refuses anything else */
static void test_probe(void **state)
{
	char dir[] = "/tmp/extc-noexec-XXXXXX", file[64], link[64];
	struct statvfs sv;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(statvfs(dir, &sv), 0);
	assert_int_equal(extc_noexec_probe_path(dir),
			 (sv.f_flag & ST_NOEXEC) ? EXTC_EXEC_NOEXEC : EXTC_EXEC_ALLOWED);
	/* slurmstepd asks through the descriptor of the job level it holds */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(extc_noexec_probe_fd(fd), extc_noexec_probe_path(dir));
	close(fd);
	assert_int_equal(extc_noexec_probe_fd(-1), EXTC_EXEC_UNKNOWN);
	snprintf(file, sizeof(file), "%s/f", dir);
	snprintf(link, sizeof(link), "%s/l", dir);
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(extc_noexec_probe_path(file), EXTC_EXEC_UNKNOWN);
	assert_int_equal(extc_noexec_probe_path(link), EXTC_EXEC_UNKNOWN);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(unlink(file), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(extc_noexec_probe_path(dir), EXTC_EXEC_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_loaders),
		cmocka_unit_test(test_vars_list_keeps_flags_and_assumes_unknown_loads),
		cmocka_unit_test(test_first_loader_among_exported),
		cmocka_unit_test(test_decision_follows_on_error),
		cmocka_unit_test(test_exec_or_unknown_is_fine),
		cmocka_unit_test(test_data_only_variables_are_fine),
		cmocka_unit_test(test_message_names_directory_and_noexec),
		cmocka_unit_test(test_message_escapes_and_fits),
		cmocka_unit_test(test_probe),
	};

	return (cmocka_run_group_tests_name("noexec", tests, NULL, NULL));
}
