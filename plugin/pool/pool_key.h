/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's key: which earlier builds a step may start from. */
#ifndef EXTC_POOL_KEY_H_
#define EXTC_POOL_KEY_H_

#include <stddef.h>

#define EXTC_POOL_KEY_LEN 32	/* hex digits of a key directory's name */
#define EXTC_POOL_FP_LEN 16	/* hex digits of an installation fingerprint */

/*
 * What a key hashes, as a number: raise it whenever extc_pool_key or
 * extc_pool_key_install_fp hashes anything else, so that no step is served a
 * key made by other rules. Root's record of a key says its version
 * (pool_hold.c writes it, pool_level.c reads it); the next eviction pass removes a key of any other.
 * 2: the container image joined the key.
 * 3: no device or inode numbers: the same software at the same paths on
 *    another node, or copied there with its times, gives the same key.
 * 4: the node's GPU architectures joined the key (pool_gpu.c), hashed on
 *    every node, "" where there is no GPU.
 */
#define EXTC_POOL_KEY_VERSION 4

/* What the fingerprint reads of a small file (version.py, version.json), and names of a directory. */
#define EXTC_POOL_TEXT_MAX 65536
#define EXTC_POOL_LIST_MAX 65536

/*
 * The job environment variables a derived key reads, in this order (the
 * man page lists them): what selects the Python, its packages, the
 * compilers and CUDA, and the container a job runs in. NULL-terminated.
 */
#define EXTC_POOL_KEY_NVARS 22
extern const char *const extc_pool_key_vars[EXTC_POOL_KEY_NVARS + 1];

/* The index of 'name' in extc_pool_key_vars, or -1. */
int extc_pool_key_var_index(const char *name);

struct extc_pool_key_in {
	const char *user_key;	/* SLURM_EXT_CACHE_KEY (checked), or NULL: derive one */
	const char *const *values;	/* one per extc_pool_key_vars entry, NULL when unset */
	const char *install;	/* extc_pool_key_install_fp of the job's software, "" if unknown */
	const char *arch;	/* uname machine */
	const char *isa;	/* extc_manifest_isa_fingerprint of the CPU */
	const char *container;	/* the image's identity, or NULL: the step runs on the host */
	const char *gpus;	/* extc_pool_gpu_archs of the node, "" without a GPU */
};

/*
 * The key directory's name: a hash of EXTC_POOL_KEY_VERSION; of the
 * user's key, or of the listed variables' values and the installation
 * fingerprint; of the container image's identity, if the step runs one;
 * and of the machine, the CPU's fingerprint and the GPU architectures
 * (models, not counts). A step in a container never
 * shares a key with one on the host. EXTC_POOL_KEY_LEN hex digits.
 */
int extc_pool_key(const struct extc_pool_key_in *in, char *out, size_t len);

/* Is 'name' a key directory's name (EXTC_POOL_KEY_LEN lowercase hex digits)? */
int extc_pool_key_name_ok(const char *name);

/*
 * Run as the job's user (it follows the user's paths): a fingerprint of
 * the installed software the variables point to, so that an upgrade in
 * place (pip, conda, apt) changes the key. It covers the size and
 * modification time of the first python3 on 'path' and of what it links
 * to, and the link's target; below each prefix (VIRTUAL_ENV, CONDA_PREFIX,
 * the python3's own prefix) the names installed in
 * lib/python3.X/site-packages, lib/python3.X/dist-packages and conda-meta,
 * and the text of each torch/version.py; the same of Debian's
 * /usr/lib/python3/dist-packages; and the text of CUDA's version.json
 * under 'cuda_home' (or /usr/local/cuda). Never a device or inode number:
 * the same installation on every node, or copied with its times, gives
 * the same fingerprint. EXTC_POOL_FP_LEN hex digits.
 */
int extc_pool_key_install_fp(const char *path, const char *venv, const char *conda,
			     const char *cuda_home, char *out, size_t len);

#endif /* EXTC_POOL_KEY_H_ */
