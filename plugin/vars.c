/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the built-in list of cache variables, each read from its tool's source. */
#include <string.h>

#include "vars.h"

/*
 * Per-job-safe JIT caches only, each read from its tool's source
 * (docs/cache-dirs.md). Never here: data caches (HF_HOME, TORCH_HOME,
 * XDG_CACHE_HOME would re-download models per job), JAX/XLA/TF/rocFFT
 * variables (setting one switches a cache on), TRITON_HOME (also the root
 * of Triton's override input) and CUDA_CACHE_PATH (a per-step driver cache
 * re-JITs PTX in every step).
 */
static const struct extc_var builtin_vars[] = {
	{ "TORCH_EXTENSIONS_DIR", "torch_extensions", false },
	{ "TRITON_CACHE_DIR", "triton", false },
	/* jit_utils.cpp refuses to make a base directory the user named */
	{ "PYTORCH_KERNEL_CACHE_PATH", "torch_kernels", true },
	{ "TORCHINDUCTOR_CACHE_DIR", "torchinductor", false },
	{ "CUPY_CACHE_DIR", "cupy", false },
	/* moves FlashInfer's cubin store too: see extc_flashinfer_cubin_dir() */
	{ "FLASHINFER_WORKSPACE_BASE", "flashinfer", false },
	{ "DG_JIT_CACHE_DIR", "deep_gemm", false },
	{ "MIOPEN_USER_DB_PATH", "miopen_db", false },
	{ "MIOPEN_CUSTOM_CACHE_DIR", "miopen_cache", false },
	{ "AMD_COMGR_CACHE_DIR", "comgr", false },
	{ "NUMBA_CACHE_DIR", "numba", false },
	/* vLLM re-points Inductor's and Triton's variables below this root */
	{ "VLLM_CACHE_ROOT", "vllm", false },
	/* SGLang overwrites DG_JIT_CACHE_DIR with this one */
	{ "SGLANG_DG_CACHE_DIR", "sglang_deep_gemm", false },
	{ "SGLANG_JIT_CACHE_DIR", "sglang_jit", false },
	{ "TVM_FFI_CACHE_DIR", "tvm_ffi", false },
	{ "TILELANG_CACHE_DIR", "tilelang", false },
	{ "EP_JIT_CACHE_DIR", "deep_ep", false },
};

_Static_assert(sizeof(builtin_vars) / sizeof(builtin_vars[0]) <= EXTC_VARS_MAX,
	       "the built-in list must fit a struct extc_config");

size_t extc_config_builtin_vars(const struct extc_var **vars)
{
	*vars = builtin_vars;
	return (sizeof(builtin_vars) / sizeof(builtin_vars[0]));
}

/* A name the plugin does not know is an unknown tool: it gets its directory. */
bool extc_config_builtin_makes_dir(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(builtin_vars) / sizeof(builtin_vars[0]); i++) {
		if (strcmp(builtin_vars[i].name, name) == 0)
			return (builtin_vars[i].make_dir);
	}
	return (true);
}
