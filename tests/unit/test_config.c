/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: config.h (plugstack.conf arguments) and the text helpers it uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/config_vars.h"
#include "strassert.h"
#include "base/text.h"

static bool printable_ascii(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return (false);
	}
	return (true);
}

/* Parse a NULL-terminated list of arguments. */
static int parse_list(struct extc_config *cfg, char *why, size_t whylen, const char *const *args)
{
	char *av[64];
	int ac = 0;

	while (args[ac] != NULL) {
		assert_true(ac < 64);
		av[ac] = (char *)args[ac];
		ac++;
	}
	why[0] = '\0';
	return (extc_config_parse(cfg, ac, av, why, whylen));
}

static int parse1(struct extc_config *cfg, const char *arg, char *why, size_t whylen)
{
	const char *args[] = { arg, NULL };

	return (parse_list(cfg, why, whylen, args));
}

/* Every argument that fails names itself: "<key>=<value>: <why>". */
static void expect_refused(const char *arg, const char *reason)
{
	struct extc_config cfg;
	char why[512], prefix[256];

	if (parse1(&cfg, arg, why, sizeof(why)) != -1) {
		print_error("'%s' was accepted\n", arg);
		fail();
	}
	snprintf(prefix, sizeof(prefix), "%s: ", arg);
	assert_starts_with(why, prefix);
	assert_contains(why, reason);
	assert_true(printable_ascii(why));
}

static const struct extc_var *find_var(const struct extc_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nvars; i++) {
		if (strcmp(cfg->vars[i].name, name) == 0)
			return (&cfg->vars[i]);
	}
	return (NULL);
}

/* ---- defaults --------------------------------------------------------------------- */

static void test_defaults(void **state)
{
	const struct extc_var *builtin;
	struct extc_config cfg;
	char why[256];
	size_t n, i;

	(void)state;
	memset(&cfg, 0xa5, sizeof(cfg));
	assert_int_equal(extc_config_parse(&cfg, 0, NULL, why, sizeof(why)), 0);
	assert_string_equal(cfg.base, "/tmp/ext-cache");
	assert_string_equal(EXTC_DEFAULT_BASE, "/tmp/ext-cache");
	assert_int_equal(cfg.default_mode, EXTC_MODE_OFF);
	assert_int_equal(cfg.on_error, EXTC_ON_ERROR_AUTO);
	assert_false(cfg.allow_shared_fs);
	assert_string_equal(cfg.seed, "");
	assert_int_equal(cfg.seed_max, 4ULL << 30);
	assert_int_equal(cfg.seed_timeout, 300);
	assert_int_equal(cfg.publish_timeout, 300);
	assert_false(cfg.pool);
	assert_int_equal(cfg.pool_max, 20ULL << 30);
	assert_int_equal(cfg.pool_total_max, 100ULL << 30);
	assert_int_equal(cfg.pool_ttl, 14);
	assert_string_equal(cfg.tier, "");
	assert_int_equal(cfg.tier_timeout, 30);
	assert_int_equal(cfg.tier_keep, 3);
	n = extc_vars_builtin(&builtin);
	assert_int_equal(cfg.nvars, n);
	for (i = 0; i < n; i++) {
		assert_string_equal(cfg.vars[i].name, builtin[i].name);
		assert_string_equal(cfg.vars[i].subdir, builtin[i].subdir);
		assert_int_equal(cfg.vars[i].make_dir, builtin[i].make_dir);
	}
}

/*
 * Every built-in tool makes its own directory but PyTorch's jiterator,
 * which refuses to create PYTORCH_KERNEL_CACHE_PATH (docs/cache-dirs.md).
 */
static void test_builtin_vars_make_dir(void **state)
{
	const struct extc_var *builtin;
	size_t n, i, made = 0;

	(void)state;
	n = extc_vars_builtin(&builtin);
	for (i = 0; i < n; i++) {
		bool want = strcmp(builtin[i].name, "PYTORCH_KERNEL_CACHE_PATH") == 0;

		if (builtin[i].make_dir != want) {
			print_error("%s: make_dir is %d, expected %d\n", builtin[i].name,
				    (int)builtin[i].make_dir, (int)want);
			fail();
		}
		made += builtin[i].make_dir;
	}
	assert_int_equal(made, 1);
}

/* vars=: a name the plugin does not know gets its directory, a built-in keeps its flag. */
static void test_vars_make_dir(void **state)
{
	struct extc_config cfg;
	char why[256];

	(void)state;
	assert_int_equal(parse1(&cfg, "vars=TORCH_EXTENSIONS_DIR:te,MY_JIT_CACHE,"
				"PYTORCH_KERNEL_CACHE_PATH:pk,NUMBA_CACHE_DIR,HF_HOME:hf",
				why, sizeof(why)), 0);
	assert_int_equal(cfg.nvars, 5);
	assert_false(find_var(&cfg, "TORCH_EXTENSIONS_DIR")->make_dir);
	assert_true(find_var(&cfg, "MY_JIT_CACHE")->make_dir);
	assert_true(find_var(&cfg, "PYTORCH_KERNEL_CACHE_PATH")->make_dir);
	assert_false(find_var(&cfg, "NUMBA_CACHE_DIR")->make_dir);
	assert_true(find_var(&cfg, "HF_HOME")->make_dir);	/* not a built-in */
	/* names are case-sensitive: this one is not the built-in */
	assert_int_equal(parse1(&cfg, "vars=torch_extensions_dir", why, sizeof(why)), 0);
	assert_true(cfg.vars[0].make_dir);
}

static void test_builtin_vars_follow_cache_dirs_md(void **state)
{
	static const char *const wanted[] = {
		"TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "PYTORCH_KERNEL_CACHE_PATH",
		"TORCHINDUCTOR_CACHE_DIR", "CUPY_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE",
		"DG_JIT_CACHE_DIR", "MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR",
		"AMD_COMGR_CACHE_DIR", "NUMBA_CACHE_DIR", "VLLM_CACHE_ROOT", "SGLANG_DG_CACHE_DIR",
		"SGLANG_JIT_CACHE_DIR", "TVM_FFI_CACHE_DIR", "TILELANG_CACHE_DIR", "EP_JIT_CACHE_DIR",
	};
	/*
	 * Data caches (a per-job copy downloads models again), caches that
	 * setting a variable switches on, Triton's home (also its override
	 * input), the CUDA driver's PTX cache (a per-step one re-JITs in every
	 * step), and FlashInfer's cubin store, which is pinned, not moved.
	 */
	static const char *const never[] = {
		"HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "TRANSFORMERS_CACHE", "TORCH_HOME",
		"XDG_CACHE_HOME", "PYTHONPYCACHEPREFIX", "JAX_COMPILATION_CACHE_DIR",
		"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "XLA_FLAGS", "TMPDIR", "TRITON_HOME",
		"CUDA_CACHE_PATH", "TF_XLA_FLAGS", "ROCFFT_RTC_CACHE_PATH", "FLASHINFER_CUBIN_DIR",
	};
	const struct extc_var *builtin;
	struct extc_config cfg;
	char why[256];
	size_t n, i, j;

	(void)state;
	n = extc_vars_builtin(&builtin);
	assert_int_equal(n, sizeof(wanted) / sizeof(wanted[0]));
	assert_int_equal(extc_config_parse(&cfg, 0, NULL, why, sizeof(why)), 0);
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		const struct extc_var *v = find_var(&cfg, wanted[i]);

		if (v == NULL) {
			print_error("%s is not in the built-in list\n", wanted[i]);
			fail();
		}
		assert_true(v->subdir[0] != '\0');
	}
	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		if (find_var(&cfg, never[i]) != NULL) {
			print_error("%s must never be set by default\n", never[i]);
			fail();
		}
	}
	for (i = 0; i < n; i++) {
		assert_false(extc_has_prefix(builtin[i].name, "JAX"));
		assert_false(extc_has_prefix(builtin[i].name, "XLA"));
		assert_false(extc_has_prefix(builtin[i].name, "HF_"));
		for (j = i + 1; j < n; j++) {
			assert_string_not_equal(builtin[i].name, builtin[j].name);
			assert_string_not_equal(builtin[i].subdir, builtin[j].subdir);
		}
	}
	assert_string_equal(find_var(&cfg, "TORCH_EXTENSIONS_DIR")->subdir, "torch_extensions");
	assert_string_equal(find_var(&cfg, "NUMBA_CACHE_DIR")->subdir, "numba");
	assert_ptr_equal(extc_config_find_var(&cfg, "NUMBA_CACHE_DIR"), find_var(&cfg, "NUMBA_CACHE_DIR"));
	assert_null(extc_config_find_var(&cfg, "TRITON_HOME"));
}

/* The ML-stack tools (docs/cache-dirs.md): the names their sources read, and where they point. */
static void test_builtin_ml_stack_vars(void **state)
{
	static const struct { const char *name, *subdir; } want[] = {
		{ "VLLM_CACHE_ROOT", "vllm" },
		{ "SGLANG_DG_CACHE_DIR", "sglang_deep_gemm" },
		{ "SGLANG_JIT_CACHE_DIR", "sglang_jit" },
		{ "TVM_FFI_CACHE_DIR", "tvm_ffi" },
		{ "TILELANG_CACHE_DIR", "tilelang" },
		{ "EP_JIT_CACHE_DIR", "deep_ep" },
		{ "DG_JIT_CACHE_DIR", "deep_gemm" },
		{ "FLASHINFER_WORKSPACE_BASE", "flashinfer" },
	};
	struct extc_config cfg;
	char why[256];
	size_t i;

	(void)state;
	assert_int_equal(extc_config_parse(&cfg, 0, NULL, why, sizeof(why)), 0);
	assert_int_equal(cfg.nvars, 17);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct extc_var *v = extc_config_find_var(&cfg, want[i].name);

		if (v == NULL) {
			print_error("%s is not in the built-in list\n", want[i].name);
			fail();
		}
		assert_string_equal(v->subdir, want[i].subdir);
		/* every one of these tools makes its own directory: no mkdir at launch */
		assert_false(v->make_dir);
		assert_false(extc_vars_builtin_makes_dir(want[i].name));
	}
	/* the tools' own spellings only: lower case or an old prefix is an unknown name */
	assert_true(extc_vars_builtin_makes_dir("SGL_DG_CACHE_DIR"));
	assert_true(extc_vars_builtin_makes_dir("vllm_cache_root"));
}

/* The built-in list passes the same validation an admin's list gets. */
static void test_builtin_vars_pass_their_own_validation(void **state)
{
	const struct extc_var *builtin;
	struct extc_var parsed[EXTC_VARS_MAX];
	char list[2048] = "", why[256];
	size_t n, nparsed = 0, i;

	(void)state;
	n = extc_vars_builtin(&builtin);
	for (i = 0; i < n; i++) {
		char item[160];

		snprintf(item, sizeof(item), "%s%s:%s", i ? "," : "", builtin[i].name,
			 builtin[i].subdir);
		assert_true(strlen(list) + strlen(item) < sizeof(list));
		strcat(list, item);
	}
	assert_int_equal(extc_config_vars_parse(list, parsed, &nparsed, why, sizeof(why)), 0);
	assert_int_equal(nparsed, n);
	for (i = 0; i < n; i++) {
		assert_string_equal(parsed[i].name, builtin[i].name);
		assert_string_equal(parsed[i].subdir, builtin[i].subdir);
		assert_int_equal(parsed[i].make_dir, builtin[i].make_dir);
	}
}

/* ---- every key, valid ------------------------------------------------------------------ */

static void test_every_key_valid(void **state)
{
	const char *args[] = { "base=/var/tmp/ext-cache", "default=local", "vars=FOO,BAR:bee",
			       "on_error=warn", "allow_shared_fs=yes", NULL };
	struct extc_config cfg;
	char why[256];

	(void)state;
	assert_int_equal(parse_list(&cfg, why, sizeof(why), args), 0);
	assert_string_equal(cfg.base, "/var/tmp/ext-cache");
	assert_int_equal(cfg.default_mode, EXTC_MODE_LOCAL);
	assert_int_equal(cfg.nvars, 2);
	assert_string_equal(cfg.vars[0].name, "FOO");
	assert_string_equal(cfg.vars[0].subdir, "foo");
	assert_string_equal(cfg.vars[1].name, "BAR");
	assert_string_equal(cfg.vars[1].subdir, "bee");
	assert_int_equal(cfg.on_error, EXTC_ON_ERROR_WARN);
	assert_true(cfg.allow_shared_fs);
}

static void test_warm_start_arguments(void **state)
{
	static const struct {
		const char *arg;
		uint64_t bytes;
	} sizes[] = {
		{ "seed_max=0", 0 }, { "seed_max=512", 512 }, { "seed_max=64K", 64ULL << 10 },
		{ "seed_max=300M", 300ULL << 20 }, { "seed_max=2G", 2ULL << 30 },
		{ "seed_max=1T", 1ULL << 40 },
	};
	const char *args[] = { "seed=/shared/jit-seeds/%U/%u/100%%", "seed_timeout=60",
			       "publish_timeout=900", NULL };
	struct extc_config cfg;
	char why[256];
	size_t i;

	(void)state;
	assert_int_equal(parse_list(&cfg, why, sizeof(why), args), 0);
	assert_string_equal(cfg.seed, "/shared/jit-seeds/%U/%u/100%%");
	assert_int_equal(cfg.seed_timeout, 60);
	assert_int_equal(cfg.publish_timeout, 900);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(parse1(&cfg, sizes[i].arg, why, sizeof(why)), 0);
		assert_int_equal(cfg.seed_max, sizes[i].bytes);
	}
	expect_refused("seed=relative/%u", "absolute");
	expect_refused("seed=/shared/%j", "only %u (uid), %U (user name) and %% may follow a %");
	expect_refused("seed=/shared/50%", "may follow a %");
	expect_refused("seed_max=2GB", "expected a size such as 4G");
	expect_refused("seed_max=-1", "expected a size such as 4G");
	expect_refused("seed_max=", "expected a size such as 4G");
	expect_refused("seed_max=2P", "expected a size such as 4G");
	expect_refused("seed_max=99999999T", "larger than 1P");
	expect_refused("seed_timeout=0", "seconds from 1 to 86400");
	expect_refused("seed_timeout=86401", "seconds from 1 to 86400");
	expect_refused("publish_timeout=5m", "seconds from 1 to 86400");
	expect_refused("publish_timeout=", "seconds from 1 to 86400");
}

static void test_pool_arguments(void **state)
{
	const char *args[] = { "pool=node", "pool_max=512M", "pool_total_max=2G", "pool_ttl=3650",
			       NULL };
	const char *both[] = { "pool_max=2G", "pool_total_max=1G", NULL };
	struct extc_config cfg;
	char why[512];

	(void)state;
	assert_int_equal(parse_list(&cfg, why, sizeof(why), args), 0);
	assert_true(cfg.pool);
	assert_int_equal(cfg.pool_max, 512ULL << 20);
	assert_int_equal(cfg.pool_total_max, 2ULL << 30);
	assert_int_equal(cfg.pool_ttl, 3650);
	assert_int_equal(parse1(&cfg, "pool=off", why, sizeof(why)), 0);
	assert_false(cfg.pool);
	expect_refused("pool=yes", "expected off or node");
	expect_refused("pool=", "expected off or node");
	expect_refused("pool_max=0", "expected a size of at least 1 such as 20G (pool=off turns the pool off)");
	expect_refused("pool_max=1GB", "expected a size such as 4G");
	expect_refused("pool_total_max=-5", "expected a size such as 4G");
	expect_refused("pool_ttl=0", "expected a number of days from 1 to 3650");
	expect_refused("pool_ttl=3651", "expected a number of days from 1 to 3650");
	expect_refused("pool_ttl=2w", "expected a number of days from 1 to 3650");
	/* one user's pool larger than the node's: both named, in bytes */
	assert_int_equal(parse_list(&cfg, why, sizeof(why), both), -1);
	assert_string_equal(why, "pool_max=2147483648 bytes: larger than pool_total_max=1073741824 "
			    "bytes; one user's pool cannot be larger than the node's");
	/* the default pool_total_max bounds a pool_max given alone */
	assert_int_equal(parse1(&cfg, "pool_max=200G", why, sizeof(why)), -1);
	assert_contains(why, "larger than pool_total_max=107374182400 bytes");
}

static void test_tier_arguments(void **state)
{
	const char *args[] = { "pool=node", "tier=/shared/%U/.ext-cache-tier", "tier_timeout=45",
			       "tier_keep=5", NULL };
	const char *alone[] = { "tier=/shared/%u/t", NULL };
	const char *with_off[] = { "tier=/shared/%u/t", "pool=off", NULL };
	struct extc_config cfg;
	char why[512];

	(void)state;
	assert_int_equal(parse_list(&cfg, why, sizeof(why), args), 0);
	assert_string_equal(cfg.tier, "/shared/%U/.ext-cache-tier");
	assert_int_equal(cfg.tier_timeout, 45);
	assert_int_equal(cfg.tier_keep, 5);
	expect_refused("tier=shared/%u", "must be an absolute path");
	expect_refused("tier=/shared/%x", "only %u (uid), %U (user name) and %% may follow a %");
	expect_refused("tier_timeout=0", "seconds from 1 to 3600");
	expect_refused("tier_timeout=3601", "seconds from 1 to 3600");
	expect_refused("tier_timeout=30s", "seconds from 1 to 3600");
	expect_refused("tier_keep=0", "generations from 1 to 64");
	expect_refused("tier_keep=65", "generations from 1 to 64");
	/* the tier fills the node pool and is filled from it: without the pool it is refused */
	assert_int_equal(parse_list(&cfg, why, sizeof(why), alone), -1);
	assert_string_equal(why, "tier=/shared/%u/t: needs pool=node (the site tier fills the node "
			    "pool and is filled from it)");
	assert_int_equal(parse_list(&cfg, why, sizeof(why), with_off), -1);
	assert_contains(why, "needs pool=node");
}

static void test_default_every_mode(void **state)
{
	static const struct {
		const char *arg;
		enum extc_mode mode;
	} cases[] = {
		{ "default=off", EXTC_MODE_OFF },
		{ "default=local", EXTC_MODE_LOCAL },
		{ "default=job", EXTC_MODE_JOB },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct extc_config cfg;
		char why[256];

		assert_int_equal(parse1(&cfg, cases[i].arg, why, sizeof(why)), 0);
		assert_int_equal(cfg.default_mode, cases[i].mode);
	}
}

static void test_default_bad_values(void **state)
{
	(void)state;
	expect_refused("default=lcoal", "local, job, off");
	expect_refused("default=", "local, job, off");
	expect_refused("default=LOCAL", "local, job, off");
	expect_refused("default=on", "local, job, off");
	expect_refused("default=../x", "local, job, off");
	expect_refused("default=local ", "local, job, off");
}

static void test_on_error_values(void **state)
{
	struct extc_config cfg;
	char why[256];

	(void)state;
	assert_int_equal(parse1(&cfg, "on_error=fail", why, sizeof(why)), 0);
	assert_int_equal(cfg.on_error, EXTC_ON_ERROR_FAIL);
	assert_int_equal(parse1(&cfg, "on_error=warn", why, sizeof(why)), 0);
	assert_int_equal(cfg.on_error, EXTC_ON_ERROR_WARN);
	expect_refused("on_error=abort", "expected fail or warn");
	expect_refused("on_error=", "expected fail or warn");
	expect_refused("on_error=FAIL", "expected fail or warn");
	expect_refused("on_error=fail ", "expected fail or warn");
	expect_refused("on_error=auto", "expected fail or warn");
}

static void test_allow_shared_fs_values(void **state)
{
	static const struct {
		const char *arg;
		bool value;
	} cases[] = {
		{ "allow_shared_fs=yes", true }, { "allow_shared_fs=true", true },
		{ "allow_shared_fs=1", true }, { "allow_shared_fs=no", false },
		{ "allow_shared_fs=false", false }, { "allow_shared_fs=0", false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct extc_config cfg;
		char why[256];

		memset(&cfg, 0, sizeof(cfg));
		cfg.allow_shared_fs = !cases[i].value;
		assert_int_equal(parse1(&cfg, cases[i].arg, why, sizeof(why)), 0);
		assert_int_equal(cfg.allow_shared_fs, cases[i].value);
	}
	expect_refused("allow_shared_fs=maybe", "expected yes or no");
	expect_refused("allow_shared_fs=", "expected yes or no");
	expect_refused("allow_shared_fs=YES", "expected yes or no");
	expect_refused("allow_shared_fs=2", "expected yes or no");
	expect_refused("allow_shared_fs=yes ", "expected yes or no");
}

/* ---- structure of the argument list ---------------------------------------------------- */

static void test_bad_value_of_every_key_names_key_and_value(void **state)
{
	(void)state;
	expect_refused("base=relative/path", "absolute");
	expect_refused("default=sometimes", "expected one of local, job, off");
	expect_refused("vars=1BAD", "start with a letter or _");
	expect_refused("vars=MY_CACHE:container", "the subdirectory container is the plugin's own");
	expect_refused("vars=CONTAINER", "the subdirectory container is the plugin's own");
	expect_refused("on_error=explode", "expected fail or warn");
	expect_refused("allow_shared_fs=perhaps", "expected yes or no");
}

/* The line slurmd logs at its start: base, default and pool always, the rest that differ. */
static void test_describe(void **state)
{
	char *av[] = { (char *)"pool_ttl=3", (char *)"base=/var/tmp/x", (char *)"default=local",
		       (char *)"seed=/home/%u/jit", (char *)"seed_max=4G", (char *)"pool_ttl=14",
		       (char *)"on_error=warn" };
	struct extc_config cfg;
	char why[512], line[512];

	(void)state;
	assert_int_equal(extc_config_parse(&cfg, 0, NULL, why, sizeof(why)), 0);
	extc_config_describe(&cfg, 0, NULL, line, sizeof(line));
	assert_string_equal(line, "base=/tmp/ext-cache default=off pool=off");
	assert_int_equal(extc_config_parse(&cfg, 4, av, why, sizeof(why)), 0);
	extc_config_describe(&cfg, 4, av, line, sizeof(line));
	assert_string_equal(line, "base=/var/tmp/x default=local pool=off pool_ttl=3 "
			    "seed=/home/%u/jit");
	/* an argument given at its default value is not one that differs from it */
	assert_int_equal(extc_config_parse(&cfg, 3, av + 4, why, sizeof(why)), 0);
	extc_config_describe(&cfg, 3, av + 4, line, sizeof(line));
	assert_string_equal(line, "base=/tmp/ext-cache default=off pool=off on_error=warn");
}

static void test_unknown_key(void **state)
{
	(void)state;
	expect_refused("bsae=/x", "unknown argument");
	expect_refused("bsae=/x", "base=");		/* the valid keys are listed */
	expect_refused("bsae=/x", "unknown argument (did you mean 'base='?); valid arguments are "
		       "base=, default=, vars=, on_error=, allow_shared_fs=, seed=, seed_max=, "
		       "seed_timeout=, publish_timeout=");
	/* a misspelt key gets the nearest one, as a misspelt mode does; a far one gets none */
	expect_refused("defualt=off", "unknown argument (did you mean 'default='?)");
	expect_refused("pool_ttll=3", "unknown argument (did you mean 'pool_ttl='?)");
	expect_refused("mode=local", "unknown argument; valid arguments are base=");
	expect_refused("bas=/var/tmp/x", "(did you mean 'base='?)");
	expect_refused("bsae", "not of the form key=value; valid arguments are base=, default=, "
		       "vars=, on_error=, allow_shared_fs=, seed=, seed_max=, seed_timeout=, "
		       "publish_timeout=");
	expect_refused("BASE=/var/tmp/x", "unknown argument");
	expect_refused("base_dir=/var/tmp/x", "unknown argument");
	expect_refused("bas=/var/tmp/x", "unknown argument");
	expect_refused("=local", "unknown argument");
	expect_refused("mode=local", "unknown argument");
}

static void test_argument_without_equals(void **state)
{
	static const char *const args[] = { "base", "local", "optional", "allow_shared_fs" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		struct extc_config cfg;
		char why[256], prefix[64];

		assert_int_equal(parse1(&cfg, args[i], why, sizeof(why)), -1);
		snprintf(prefix, sizeof(prefix), "%s: ", args[i]);
		assert_starts_with(why, prefix);
		assert_contains(why, "key=value");
	}
}

static void test_duplicate_keys(void **state)
{
	static const char *const pairs[][2] = {
		{ "base=/var/tmp/a", "base=/var/tmp/b" },
		{ "base=/var/tmp/a", "base=/var/tmp/a" },
		{ "default=local", "default=job" },
		{ "vars=A", "vars=B" },
		{ "on_error=fail", "on_error=warn" },
		{ "allow_shared_fs=no", "allow_shared_fs=no" },
		{ "seed=/a/%u", "seed=/b/%u" },
		{ "seed_max=1G", "seed_max=2G" },
		{ "seed_timeout=1", "seed_timeout=1" },
		{ "publish_timeout=1", "publish_timeout=2" },
		{ "pool=node", "pool=off" },
		{ "pool_ttl=7", "pool_ttl=7" },
		{ "tier=/a/%u", "tier=/b/%u" },
		{ "tier_timeout=5", "tier_timeout=6" },
		{ "tier_keep=2", "tier_keep=2" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const char *args[] = { pairs[i][0], "default=off", pairs[i][1], NULL };
		struct extc_config cfg;
		char why[256], prefix[64];

		if (strncmp(pairs[i][0], "default", 7) == 0)
			args[1] = "on_error=fail";
		assert_int_equal(parse_list(&cfg, why, sizeof(why), args), -1);
		snprintf(prefix, sizeof(prefix), "%s: ", pairs[i][1]);
		assert_starts_with(why, prefix);
		assert_contains(why, "more than once");
	}
}

static void test_first_bad_argument_is_reported(void **state)
{
	const char *args[] = { "default=job", "colour=blue", "base=relative", NULL };
	struct extc_config cfg;
	char why[256];

	(void)state;
	assert_int_equal(parse_list(&cfg, why, sizeof(why), args), -1);
	assert_starts_with(why, "colour=blue: ");
}

/* ---- base -------------------------------------------------------------------------------- */

static void test_base_valid(void **state)
{
	static const char *const bases[] = {
		"/tmp/ext-cache", "/var/tmp/ext-cache", "/a", "/scratch/local/ext_cache+1.d-x",
		"/.hidden", "/a/..b", "/a/b..", "/a/.b", "/var/tmpx", "/tmp/tmp", "/dev/shm/ext",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		struct extc_config cfg;
		char why[256], arg[600];

		assert_int_equal(extc_config_check_base(bases[i], why, sizeof(why)), 0);
		snprintf(arg, sizeof(arg), "base=%s", bases[i]);
		assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), 0);
		assert_string_equal(cfg.base, bases[i]);
	}
}

static void test_base_invalid(void **state)
{
	static const struct {
		const char *base, *reason;
	} cases[] = {
		{ "", "absolute" },
		{ "relative", "absolute" },
		{ "relative/x", "absolute" },
		{ "./x", "absolute" },
		{ "~/x", "absolute" },
		{ "/", "root directory" },
		{ "/tmp", "world-writable" },
		{ "/var/tmp", "world-writable" },
		{ "/dev/shm", "world-writable" },
		{ "/run/user", "world-writable" },
		{ "/tmp/", "trailing or doubled" },
		{ "/var/tmp/x/", "trailing or doubled" },
		{ "//", "trailing or doubled" },
		{ "//tmp/x", "trailing or doubled" },
		{ "/a//b", "trailing or doubled" },
		{ "/a/../b", "'.' and '..'" },
		{ "/a/./b", "'.' and '..'" },
		{ "/a/..", "'.' and '..'" },
		{ "/a/.", "'.' and '..'" },
		{ "/..", "'.' and '..'" },
		{ "/./a", "'.' and '..'" },
		{ "/tmp/..", "'.' and '..'" },
		{ "/a b", "only letters" },
		{ "/a%b", "only letters" },
		{ "/a$b", "only letters" },
		{ "/a:b", "only letters" },
		{ "/a*b", "only letters" },
		{ "/a\\b", "only letters" },
		{ "/a\nb", "only letters" },
		{ "/a#b", "only letters" },
		{ "/caf\xc3\xa9", "only letters" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[256], arg[600];

		why[0] = '\0';
		if (extc_config_check_base(cases[i].base, why, sizeof(why)) != -1) {
			print_error("base '%s' was accepted\n", cases[i].base);
			fail();
		}
		assert_contains(why, cases[i].reason);
		snprintf(arg, sizeof(arg), "base=%s", cases[i].base);
		if (printable_ascii(cases[i].base) && strchr(cases[i].base, '\\') == NULL) {
			expect_refused(arg, cases[i].reason);
		} else {
			struct extc_config cfg;

			assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), -1);
			assert_true(printable_ascii(why));
			assert_contains(why, cases[i].reason);
		}
	}
}

static void test_base_length_limit(void **state)
{
	char base[EXTC_BASE_MAX + 2], arg[EXTC_BASE_MAX + 16];
	struct extc_config cfg;
	char why[512];

	(void)state;
	memset(base, 'a', sizeof(base));
	base[0] = '/';
	base[EXTC_BASE_MAX] = '\0';	/* exactly EXTC_BASE_MAX bytes */
	assert_int_equal(extc_config_check_base(base, why, sizeof(why)), 0);
	snprintf(arg, sizeof(arg), "base=%s", base);
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), 0);
	assert_string_equal(cfg.base, base);

	base[EXTC_BASE_MAX] = 'a';
	base[EXTC_BASE_MAX + 1] = '\0';	/* one byte too long */
	assert_int_equal(extc_config_check_base(base, why, sizeof(why)), -1);
	assert_contains(why, "longer than 512");
	snprintf(arg, sizeof(arg), "base=%s", base);
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), -1);
	assert_starts_with(why, "base=/aaaa");
	assert_contains(why, "...");	/* the value is shortened in the message */
	assert_contains(why, "longer than 512");
}

/* ---- vars ------------------------------------------------------------------------------------ */

static void test_vars_with_subdirs(void **state)
{
	struct extc_config cfg;
	char why[256];

	(void)state;
	assert_int_equal(parse1(&cfg, "vars=FOO:foo_dir,BAR_BAZ:bar.d,_X9:x-9,lower:Mixed.Case",
				why, sizeof(why)), 0);
	assert_int_equal(cfg.nvars, 4);
	assert_string_equal(cfg.vars[0].name, "FOO");
	assert_string_equal(cfg.vars[0].subdir, "foo_dir");
	assert_string_equal(cfg.vars[1].name, "BAR_BAZ");
	assert_string_equal(cfg.vars[1].subdir, "bar.d");
	assert_string_equal(cfg.vars[2].name, "_X9");
	assert_string_equal(cfg.vars[2].subdir, "x-9");
	assert_string_equal(cfg.vars[3].name, "lower");
	assert_string_equal(cfg.vars[3].subdir, "Mixed.Case");
	/* the list replaces the built-in one */
	assert_null(find_var(&cfg, "TORCH_EXTENSIONS_DIR"));
}

static void test_vars_default_subdir_is_lowercased_name(void **state)
{
	struct extc_config cfg;
	char why[256];

	(void)state;
	assert_int_equal(parse1(&cfg, "vars=TORCH_EXTENSIONS_DIR,My_Var2,_LEAD", why, sizeof(why)),
			 0);
	assert_int_equal(cfg.nvars, 3);
	assert_string_equal(cfg.vars[0].subdir, "torch_extensions_dir");
	assert_string_equal(cfg.vars[1].subdir, "my_var2");
	assert_string_equal(cfg.vars[2].subdir, "_lead");
}

static void test_vars_admin_may_choose_non_default_caches(void **state)
{
	struct extc_config cfg;
	char why[256];

	(void)state;
	/* "never by default" is not "never": an admin can list them explicitly */
	assert_int_equal(parse1(&cfg, "vars=HF_HOME:hf,TORCH_HOME", why, sizeof(why)), 0);
	assert_int_equal(cfg.nvars, 2);
	assert_string_equal(cfg.vars[1].subdir, "torch_home");
}

static void test_vars_bad_names(void **state)
{
	char longest[EXTC_VAR_NAME_MAX + 1], too_long[EXTC_VAR_NAME_MAX + 2], arg[128];
	struct extc_config cfg;
	char why[256];

	(void)state;
	expect_refused("vars=1ABC", "start with a letter or _");
	expect_refused("vars=A-B", "only letters, digits and _");
	expect_refused("vars=A.B", "only letters, digits and _");
	expect_refused("vars=A B", "only letters, digits and _");
	expect_refused("vars=A$", "only letters, digits and _");
	expect_refused("vars=A=B", "only letters, digits and _");
	expect_refused("vars=:sub", "empty variable name");
	expect_refused("vars=A,,B", "empty variable name");
	expect_refused("vars=A,", "empty variable name");
	expect_refused("vars=,A", "empty variable name");

	memset(longest, 'V', sizeof(longest));
	longest[EXTC_VAR_NAME_MAX] = '\0';
	snprintf(arg, sizeof(arg), "vars=%s:v", longest);
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), 0);
	assert_string_equal(cfg.vars[0].name, longest);

	memset(too_long, 'V', sizeof(too_long));
	too_long[EXTC_VAR_NAME_MAX + 1] = '\0';
	snprintf(arg, sizeof(arg), "vars=%s:v", too_long);
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), -1);
	assert_starts_with(why, "vars=VVV");
	assert_contains(why, "limited to 64");
}

static void test_vars_reserved_names(void **state)
{
	static const char *const names[] = {
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TMPDIR", "TMP", "TEMP",
		"XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "SLURM_EXT_CACHE_DIR", "SLURM_EXT_CACHE",
		"SLURM_JOB_ID", "SLURMD_NODENAME", "SLURM", "SPANK_X", "LD_PRELOAD",
		"LD_LIBRARY_PATH", "_SLURM_SPANK_OPTION_ext_cache_ext_cache",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char arg[128];

		snprintf(arg, sizeof(arg), "vars=TRITON_CACHE_DIR,%s", names[i]);
		expect_refused(arg, "reserved");
	}
}

static void test_vars_bad_subdirs(void **state)
{
	char longest[EXTC_SUBDIR_MAX + 1], too_long[EXTC_SUBDIR_MAX + 2], arg[128];
	struct extc_config cfg;
	char why[256];

	(void)state;
	expect_refused("vars=A:.", "plain name");
	expect_refused("vars=A:..", "plain name");
	expect_refused("vars=A:", "plain name");
	expect_refused("vars=A:a/b", "only letters, digits and . _ -");
	expect_refused("vars=A:/abs", "only letters, digits and . _ -");
	expect_refused("vars=A:../x", "only letters, digits and . _ -");
	expect_refused("vars=A:a b", "only letters, digits and . _ -");
	expect_refused("vars=A:a:b", "only letters, digits and . _ -");
	expect_refused("vars=A:%s%n", "only letters, digits and . _ -");

	memset(longest, 's', sizeof(longest));
	longest[EXTC_SUBDIR_MAX] = '\0';
	snprintf(arg, sizeof(arg), "vars=A:%s", longest);
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), 0);
	assert_string_equal(cfg.vars[0].subdir, longest);

	memset(too_long, 's', sizeof(too_long));
	too_long[EXTC_SUBDIR_MAX + 1] = '\0';
	snprintf(arg, sizeof(arg), "vars=A:%s", too_long);
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), -1);
	assert_contains(why, "limited to 64");
}

static void test_vars_duplicates(void **state)
{
	(void)state;
	expect_refused("vars=A,B,A", "A is listed twice");
	expect_refused("vars=A:x,A:y", "A is listed twice");
	expect_refused("vars=TRITON_CACHE_DIR,TRITON_CACHE_DIR:t", "listed twice");
}

static void test_vars_count_limit(void **state)
{
	char list[EXTC_VARS_MAX * 8 + 16], arg[sizeof(list) + 8];
	struct extc_config cfg;
	char why[512];
	size_t i;

	(void)state;
	list[0] = '\0';
	for (i = 0; i < EXTC_VARS_MAX; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%sV%zu", i ? "," : "", i);
	snprintf(arg, sizeof(arg), "vars=%s", list);
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), 0);
	assert_int_equal(cfg.nvars, EXTC_VARS_MAX);
	assert_string_equal(cfg.vars[EXTC_VARS_MAX - 1].name, "V31");
	assert_string_equal(cfg.vars[EXTC_VARS_MAX - 1].subdir, "v31");

	snprintf(arg, sizeof(arg), "vars=%s,V32", list);
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), -1);
	assert_starts_with(why, "vars=V0,V1,");
	assert_contains(why, "more than 32");
}

static void test_vars_empty_list(void **state)
{
	struct extc_var vars[EXTC_VARS_MAX];
	size_t n = 99;
	char why[256];

	(void)state;
	expect_refused("vars=", "empty list");
	assert_int_equal(extc_config_vars_parse("", vars, &n, why, sizeof(why)), -1);
	assert_int_equal(n, 99);	/* untouched on failure */
}

static void test_vars_overlong_entry(void **state)
{
	char arg[400];
	struct extc_config cfg;
	char why[256];

	(void)state;
	memset(arg, 'X', sizeof(arg));
	memcpy(arg, "vars=", 5);
	arg[sizeof(arg) - 1] = '\0';
	assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), -1);
	assert_starts_with(why, "vars=XXXX");
	assert_contains(why, "longer than");
}

static void test_parse_vars_direct(void **state)
{
	struct extc_var vars[EXTC_VARS_MAX];
	size_t n = 0;
	char why[256];

	(void)state;
	assert_int_equal(extc_config_vars_parse("ONE,TWO:2", vars, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(vars[0].name, "ONE");
	assert_string_equal(vars[0].subdir, "one");
	assert_string_equal(vars[1].subdir, "2");
	assert_int_equal(extc_config_vars_parse("PATH", vars, &n, why, sizeof(why)), -1);
	assert_contains(why, "PATH is reserved");
	assert_int_equal(n, 2);
}

/* ---- hostile input ---------------------------------------------------------------------------- */

static void test_hostile_values_are_escaped(void **state)
{
	static const struct {
		const char *arg, *shown;
	} cases[] = {
		{ "base=/a\nb%n%s", "base=/a\\x0ab%n%s: " },
		{ "default=%n%n%n%s", "default=%n%n%n%s: " },
		{ "vars=%s%n", "vars=%s%n: " },
		{ "on_error=\x1b[2J", "on_error=\\x1b[2J: " },
		{ "allow_shared_fs=\r\n", "allow_shared_fs=\\x0d\\x0a: " },
		{ "ba\nse=x", "ba\\x0ase=x: " },
		{ "%n%s=1", "%n%s=1: " },
		{ "\xff\xfe=\xc0\xaf", "\\xff\\xfe=\\xc0\\xaf: " },
		{ "vars=A:\x1b]0;pwned\x07", "vars=A:\\x1b]0;pwned\\x07: " },
		{ "base=/x\\y", "base=/x\\x5cy: " },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct extc_config cfg;
		char why[512];

		assert_int_equal(parse1(&cfg, cases[i].arg, why, sizeof(why)), -1);
		assert_true(printable_ascii(why));
		assert_starts_with(why, cases[i].shown);
	}
}

static void test_overlong_arguments(void **state)
{
	static const char *const keys[] = { "base=/", "default=", "vars=", "on_error=",
					    "allow_shared_fs=", "" };
	const size_t len = 1u << 20;
	char *arg = malloc(len + 1);
	size_t i;

	(void)state;
	assert_non_null(arg);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct extc_config cfg;
		char why[512];

		memset(arg, i % 2 ? 'a' : '\n', len);
		memcpy(arg, keys[i], strlen(keys[i]));
		arg[len] = '\0';
		assert_int_equal(parse1(&cfg, arg, why, sizeof(why)), -1);
		assert_true(printable_ascii(why));
		assert_true(strlen(why) < 400);
		if (keys[i][0] != '\0')
			assert_starts_with(why, keys[i]);
	}
	free(arg);
}

static void test_small_why_buffer_is_respected(void **state)
{
	struct extc_config cfg;
	char why[64];
	char *av[] = { (char *)"base=relative/but/quite/long/indeed" };
	size_t i;

	(void)state;
	memset(why, 'Z', sizeof(why));
	assert_int_equal(extc_config_parse(&cfg, 1, av, why, 16), -1);
	assert_true(strlen(why) <= 15);
	for (i = 16; i < sizeof(why); i++)
		assert_int_equal(why[i], 'Z');
}

/* ---- text helpers the messages rely on ------------------------------------------------------- */

static void test_escape(void **state)
{
	char out[64];

	(void)state;
	extc_escape("plain-text_1.2", 100, out, sizeof(out));
	assert_string_equal(out, "plain-text_1.2");
	extc_escape("a\nb\x1b\\\x7f\xff", 100, out, sizeof(out));
	assert_string_equal(out, "a\\x0ab\\x1b\\x5c\\x7f\\xff");
	extc_escape("abcdef", 3, out, sizeof(out));
	assert_string_equal(out, "abc...");
	extc_escape("abc", 3, out, sizeof(out));
	assert_string_equal(out, "abc");
	extc_escape(NULL, 10, out, sizeof(out));
	assert_string_equal(out, "(null)");
	extc_escape("abcdef", 100, out, 4);
	assert_string_equal(out, "abc");
	extc_escape("\n\n", 100, out, 6);	/* never half an escape */
	assert_string_equal(out, "\\x0a");
	extc_escape("abc", 100, out, 1);
	assert_string_equal(out, "");
	out[0] = 'Q';
	extc_escape("abc", 100, out, 0);
	assert_int_equal(out[0], 'Q');
}

static void test_fmt_reports_truncation(void **state)
{
	char buf[8];

	(void)state;
	assert_int_equal(extc_fmt(buf, sizeof(buf), "%s", "1234567"), 0);
	assert_string_equal(buf, "1234567");
	assert_int_equal(extc_fmt(buf, sizeof(buf), "%s", "12345678"), -1);
	assert_int_equal(extc_fmt(buf, sizeof(buf), "%d-%d", 12, 34), 0);
	assert_string_equal(buf, "12-34");
}

static void test_parse_u32(void **state)
{
	static const char *const bad[] = { "", "00", "01", "+1", "-1", " 1", "1 ", "1a", "0x10",
					   "4294967296", "12345678901", "99999999999999999999" };
	uint32_t v = 7;
	size_t i;

	(void)state;
	assert_int_equal(extc_parse_u32("0", 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(extc_parse_u32("4294967295", UINT32_MAX, &v), 0);
	assert_int_equal(v, UINT32_MAX);
	assert_int_equal(extc_parse_u32("11", 10, &v), -1);
	assert_int_equal(extc_parse_u32("10", 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(extc_parse_u32(NULL, 10, &v), -1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		if (extc_parse_u32(bad[i], UINT32_MAX, &v) != -1) {
			print_error("'%s' was accepted\n", bad[i]);
			fail();
		}
		assert_int_equal(v, 7);
	}
	assert_true(extc_has_prefix("/tmp/ext-cache/1000/x", "/tmp/ext-cache/1000/"));
	assert_false(extc_has_prefix("/tmp/ext-cache/1000", "/tmp/ext-cache/1000/"));
	assert_true(extc_has_prefix("abc", ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_builtin_vars_make_dir),
		cmocka_unit_test(test_builtin_vars_follow_cache_dirs_md),
		cmocka_unit_test(test_builtin_ml_stack_vars),
		cmocka_unit_test(test_builtin_vars_pass_their_own_validation),
		cmocka_unit_test(test_every_key_valid),
		cmocka_unit_test(test_warm_start_arguments),
		cmocka_unit_test(test_pool_arguments),
		cmocka_unit_test(test_default_every_mode),
		cmocka_unit_test(test_default_bad_values),
		cmocka_unit_test(test_on_error_values),
		cmocka_unit_test(test_allow_shared_fs_values),
		cmocka_unit_test(test_bad_value_of_every_key_names_key_and_value),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_argument_without_equals),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_first_bad_argument_is_reported),
		cmocka_unit_test(test_base_valid),
		cmocka_unit_test(test_base_invalid),
		cmocka_unit_test(test_base_length_limit),
		cmocka_unit_test(test_vars_with_subdirs),
		cmocka_unit_test(test_vars_make_dir),
		cmocka_unit_test(test_vars_default_subdir_is_lowercased_name),
		cmocka_unit_test(test_tier_arguments),
		cmocka_unit_test(test_vars_admin_may_choose_non_default_caches),
		cmocka_unit_test(test_vars_bad_names),
		cmocka_unit_test(test_vars_reserved_names),
		cmocka_unit_test(test_vars_bad_subdirs),
		cmocka_unit_test(test_vars_duplicates),
		cmocka_unit_test(test_vars_count_limit),
		cmocka_unit_test(test_vars_empty_list),
		cmocka_unit_test(test_vars_overlong_entry),
		cmocka_unit_test(test_parse_vars_direct),
		cmocka_unit_test(test_hostile_values_are_escaped),
		cmocka_unit_test(test_overlong_arguments),
		cmocka_unit_test(test_small_why_buffer_is_respected),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_fmt_reports_truncation),
		cmocka_unit_test(test_parse_u32),
	};

	return (cmocka_run_group_tests_name("config", tests, NULL, NULL));
}
