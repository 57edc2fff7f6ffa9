/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the built-in list of cache variables, each read from its tool's source. */
#include <string.h>

#include "base/vars.h"

/*
 * Per-job-safe JIT caches only, each read from its tool's source
 * (docs/cache-dirs.md). Never here: data caches (HF_HOME, TORCH_HOME,
 * XDG_CACHE_HOME would re-download models per job), JAX/XLA/TF/rocFFT
 * variables (setting one switches a cache on), TRITON_HOME (also the root
 * of Triton's override input) and CUDA_CACHE_PATH (a per-step driver cache
 * re-JITs PTX in every step).
 */
static const struct extc_var builtin_vars[] = {
	/* { name, subdir, make_dir, loads_code }; why each loads code or not: docs/cache-dirs.md */
	{ "TORCH_EXTENSIONS_DIR", "torch_extensions", false, true },
	/* the launcher Triton compiles is a shared object in the cache, imported from there */
	{ "TRITON_CACHE_DIR", "triton", false, true },
	/* jit_utils.cpp refuses to make a base directory the user named; kernels are read as data */
	{ "PYTORCH_KERNEL_CACHE_PATH", "torch_kernels", true, false },
	{ "TORCHINDUCTOR_CACHE_DIR", "torchinductor", false, true },
	/* cubins read into memory and handed to the driver */
	{ "CUPY_CACHE_DIR", "cupy", false, false },
	/* moves FlashInfer's cubin store too: see extc_envvars_flashinfer_cubin_dir() */
	{ "FLASHINFER_WORKSPACE_BASE", "flashinfer", false, true },
	/* releases before the C++ JIT load a kernel.so with ctypes */
	{ "DG_JIT_CACHE_DIR", "deep_gemm", false, true },
	{ "MIOPEN_USER_DB_PATH", "miopen_db", false, false },
	{ "MIOPEN_CUSTOM_CACHE_DIR", "miopen_cache", false, false },
	{ "AMD_COMGR_CACHE_DIR", "comgr", false, false },
	/* object code linked in memory by llvmlite, never mapped from the file */
	{ "NUMBA_CACHE_DIR", "numba", false, false },
	/* vLLM re-points Inductor's and Triton's variables below this root */
	{ "VLLM_CACHE_ROOT", "vllm", false, true },
	/* SGLang overwrites DG_JIT_CACHE_DIR with this one */
	{ "SGLANG_DG_CACHE_DIR", "sglang_deep_gemm", false, true },
	{ "SGLANG_JIT_CACHE_DIR", "sglang_jit", false, true },
	{ "TVM_FFI_CACHE_DIR", "tvm_ffi", false, true },
	{ "TILELANG_CACHE_DIR", "tilelang", false, true },
	{ "EP_JIT_CACHE_DIR", "deep_ep", false, true },
};

_Static_assert(sizeof(builtin_vars) / sizeof(builtin_vars[0]) <= EXTC_VARS_MAX,
	       "the built-in list must fit a struct extc_config");

size_t extc_vars_builtin(const struct extc_var **vars)
{
	*vars = builtin_vars;
	return (sizeof(builtin_vars) / sizeof(builtin_vars[0]));
}

static const struct extc_var *builtin_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(builtin_vars) / sizeof(builtin_vars[0]); i++) {
		if (strcmp(builtin_vars[i].name, name) == 0)
			return (&builtin_vars[i]);
	}
	return (NULL);
}

/* A name the plugin does not know is an unknown tool: it gets its directory. */
bool extc_vars_builtin_makes_dir(const char *name)
{
	const struct extc_var *var = builtin_find(name);

	return (var == NULL || var->make_dir);
}

/* ... and is assumed to load code from it: a wrong guess costs a message, the other a crash. */
bool extc_vars_builtin_loads_code(const char *name)
{
	const struct extc_var *var = builtin_find(name);

	return (var == NULL || var->loads_code);
}
