/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache benchmarks: the helpers several bench programs share. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "benchlib.h"

void bench_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
	exit(1);
}

void bench_dief(const char *msg)
{
	fprintf(stderr, "%s: %s\n", program_invocation_short_name, msg);
	exit(1);
}

/* Deterministic filler: small files get realistic text-ish bytes, big ones a pattern. */
static char small_buf[8192];
static char *big_buf;
#define BIG_CHUNK (1u << 20)

static void fill_buffers(void)
{
	uint32_t x = 2463534242u;
	size_t i;

	for (i = 0; i < sizeof(small_buf); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		small_buf[i] = (char)(' ' + x % 90);
	}
	big_buf = malloc(BIG_CHUNK);
	if (big_buf == NULL)
		bench_die("malloc");
	for (i = 0; i < BIG_CHUNK; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		big_buf[i] = (char)x;
	}
}

void bench_write_file(int dfd, const char *name, size_t size)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (big_buf == NULL)
		fill_buffers();
	if (fd < 0)
		bench_die(name);
	while (size > 0) {
		const char *src = size >= BIG_CHUNK ? big_buf : small_buf;
		size_t chunk = size >= BIG_CHUNK ? BIG_CHUNK : (size < sizeof(small_buf) ? size : sizeof(small_buf));
		ssize_t n = write(fd, src, chunk);

		if (n < 0)
			bench_die("write");
		size -= (size_t)n;
	}
	close(fd);
}

int bench_make_dir(int pfd, const char *name)
{
	int fd;

	if (mkdirat(pfd, name, 0755) < 0)
		bench_die(name);
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		bench_die(name);
	return (fd);
}

int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y ? -1 : x > y);
}

uint64_t bench_median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_u64);
	return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}
