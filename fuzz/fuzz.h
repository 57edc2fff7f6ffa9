/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache fuzz targets: the libFuzzer entry point, and the helpers the
 * targets share. Every target is built twice: with clang -fsanitize=fuzzer
 * (tests/run-hardening.sh --fuzz) and, without libFuzzer, linked to replay.c
 * so that `make check` feeds it every file of its corpus (fuzz/corpus/<target>/).
 *
 * A target reports a finding by calling fuzz_fail(), which aborts: libFuzzer
 * saves the input, and the replay driver dies with the file name printed.
 */
#ifndef EXTC_FUZZ_H_
#define EXTC_FUZZ_H_

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Print what was violated and abort. */
void fuzz_fail(const char *what, const char *detail) __attribute__((noreturn));

/* Abort unless 'buf' is NUL-terminated within 'len' and holds printable ASCII only. */
void fuzz_check_text(const char *buf, size_t len, const char *what);

#endif /* EXTC_FUZZ_H_ */
