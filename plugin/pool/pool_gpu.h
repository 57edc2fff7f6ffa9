/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node's GPU architectures, for the node pool's key. */
#ifndef EXTC_POOL_GPU_H_
#define EXTC_POOL_GPU_H_

#include <stddef.h>

#define EXTC_POOL_GPU_MAX 64	/* devices read, per vendor */
#define EXTC_POOL_GPU_LIST_MAX 256	/* names of a vendor's directory looked at */
#define EXTC_POOL_GPU_NAME_MAX 96	/* bytes of a model's name; a longer one is ignored */
#define EXTC_POOL_GPU_FILE_MAX 16384	/* bytes of a device's file; a larger one is ignored */
/* The longest text extc_pool_gpu_archs makes, with its NUL. */
#define EXTC_POOL_GPU_TEXT_MAX (2 * EXTC_POOL_GPU_MAX * (EXTC_POOL_GPU_NAME_MAX + 8) + 1)

/*
 * The node's GPU architectures, as text, from the trees 'proc' and 'sys'
 * ("/proc" and "/sys" on a node): each NVIDIA GPU's model, the "Model:"
 * line of <proc>/driver/nvidia/gpus/<bus>/information, as
 * "nvidia:<model>"; each AMD GPU's "gfx_target_version N" (N not 0: a
 * CPU's node has 0) of <sys>/class/kfd/kfd/topology/nodes/<n>/properties,
 * as "amd:N". The NVIDIA ones then the AMD ones, each sorted, without
 * repeats, joined by ';': "nvidia:NVIDIA A100-SXM4-80GB;amd:90400", or ""
 * on a node without any. Of each directory the first
 * EXTC_POOL_GPU_LIST_MAX names readdir gives are sorted and read in that
 * order, EXTC_POOL_GPU_MAX devices at most; a file that is not a regular
 * file (a symbolic link among them) or holds more than
 * EXTC_POOL_GPU_FILE_MAX bytes is ignored, and so is a line of an unknown
 * form. Returns how many architectures the text names, or -1 (out of
 * memory, or 'len' below EXTC_POOL_GPU_TEXT_MAX) with 'out' "".
 */
int extc_pool_gpu_archs(const char *proc, const char *sys, char *out, size_t len);

#endif /* EXTC_POOL_GPU_H_ */
