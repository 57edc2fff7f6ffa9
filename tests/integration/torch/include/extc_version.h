/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Stands for a header of an installed package that a JIT op includes.
 * tests/integration/test_torch.bats scenario 4 replaces it with a newer
 * version that keeps an old mtime, as package managers do. */
#ifndef EXTC_VERSION_H
#define EXTC_VERSION_H
#define EXTC_OP_VERSION 1
#endif
