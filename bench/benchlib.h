/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache benchmarks: the helpers several bench programs share. */
#ifndef EXTC_BENCHLIB_H_
#define EXTC_BENCHLIB_H_

#include <stddef.h>
#include <stdint.h>

/* "<program>: what: <errno's text>" on stderr, and exit 1. */
void bench_die(const char *what) __attribute__((noreturn));

/* "<program>: msg" on stderr, and exit 1. */
void bench_dief(const char *msg) __attribute__((noreturn));

/*
 * A new file 'name' in 'dfd' (O_EXCL) of 'size' bytes, deterministic
 * filler: text-like bytes in small files, a binary pattern in big ones.
 */
void bench_write_file(int dfd, const char *name, size_t size);

/* A new directory 'name' in 'pfd' (mode 0755), opened. */
int bench_make_dir(int pfd, const char *name);

/* qsort's comparison of two uint64_t. */
int bench_cmp_u64(const void *a, const void *b);

/* The median of 'n' values ('v' is sorted in place). */
uint64_t bench_median(uint64_t *v, size_t n);

#endif /* EXTC_BENCHLIB_H_ */
