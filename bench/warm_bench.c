/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache benchmark: the seed copy engine (extc_warm_copy_tree, as
 * a seed runs it) against `cp -a` of the same cache-shaped tree.
 *
 *   warm_bench [-r RUNS] WORKDIR
 *
 * Builds WORKDIR/src once: a torch_extensions level with 3 extension
 * directories (build.ninja, .ninja_log, .ninja_deps, 4 objects of 1 MiB,
 * a 10 MiB .so) and a triton level of 1000 directories of 3 small files.
 * Every run copies it twice, once with the engine and once with a spawned
 * `cp -a` (its exec counted, as a script's would be), the order alternating
 * from run to run, with a syncfs before each copy and both copies removed
 * after the run. Each copy is checked to hold every file. One line per run:
 *
 *   run I ORDER ENGINE_NS CP_NS
 *
 * then the medians and the median of the per-run ratios ENGINE / CP:
 *
 *   median RUNS ENGINE_NS CP_NS RATIO FILES BYTES
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "fs/fs_remove.h"
#include "warm/warm_copy.h"

#include "benchlib.h"

extern char **environ;

static void die(const char *what)
{
	fprintf(stderr, "warm_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_file(int dirfd, const char *name, size_t size)
{
	static char chunk[1 << 16];
	int fd;

	if (chunk[0] == '\0')
		memset(chunk, 'o', sizeof(chunk));
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(name);
	while (size > 0) {
		size_t n = size < sizeof(chunk) ? size : sizeof(chunk);

		if (write(fd, chunk, n) != (ssize_t)n)
			die(name);
		size -= n;
	}
	close(fd);
}

static int mkdir_open(int parentfd, const char *name)
{
	int fd;

	if (mkdirat(parentfd, name, 0755) < 0 && errno != EEXIST)
		die(name);
	fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		die(name);
	return (fd);
}

/*
 * The build log of a finished ninja run that linked 'so' (log v5: start and
 * end in ms, the output's mtime in ns): what makes the engine count the
 * directory a complete build (warm_ninja.h), as torch's own builds are.
 */
static void write_ninja_log(int dirfd, const char *so)
{
	struct stat sb;
	char log[256];
	int fd, len;

	if (fstatat(dirfd, so, &sb, 0) < 0)
		die(so);
	len = snprintf(log, sizeof(log), "# ninja log v5\n0\t100\t%lld\t%s\t0123456789abcdef\n",
		       (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec, so);
	fd = openat(dirfd, ".ninja_log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, log, (size_t)len) != len)
		die(".ninja_log");
	close(fd);
}

static void build(int workfd)
{
	char name[80];
	int src, torch, triton, ext, d;
	int i, j;

	src = mkdir_open(workfd, "src");
	torch = mkdir_open(src, "torch_extensions");
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "op%d", i);
		ext = mkdir_open(torch, name);
		write_file(ext, "build.ninja", 2048);
		write_file(ext, ".ninja_deps", 50 << 10);
		for (j = 0; j < 4; j++) {
			snprintf(name, sizeof(name), "part%d.o", j);
			write_file(ext, name, 1 << 20);
		}
		snprintf(name, sizeof(name), "op%d.so", i);
		write_file(ext, name, 10 << 20);
		write_ninja_log(ext, name);
		close(ext);
	}
	triton = mkdir_open(src, "triton");
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "%064x", i);
		d = mkdir_open(triton, name);
		write_file(d, "kernel.json", 600);
		write_file(d, "kernel.ttir", 2500);
		write_file(d, "kernel.cubin", 6000);
		close(d);
	}
	close(triton);
	close(torch);
	close(src);
}

static uint64_t run_cp(const char *work)
{
	char from[4096], to[4096];
	char *argv[] = { "cp", "-a", from, to, NULL };
	uint64_t t0;
	pid_t pid;
	int status;

	snprintf(from, sizeof(from), "%s/src/.", work);
	snprintf(to, sizeof(to), "%s/dst-cp", work);
	t0 = extc_clock_monotonic_ns();
	if (posix_spawnp(&pid, "cp", NULL, NULL, argv, environ) != 0)
		die("spawn cp");
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("cp -a failed");
	return (extc_clock_monotonic_ns() - t0);
}

static uint64_t run_engine(int workfd, struct extc_copy_stats *st)
{
	struct extc_warm_opts o;
	const char *subdirs[] = { "torch_extensions", "triton" };
	char why[512];
	uint64_t t0;
	int src, dst;

	memset(&o, 0, sizeof(o));
	o.torch_subdir = "torch_extensions";
	o.subdirs = subdirs;
	o.nsubdirs = 2;
	src = openat(workfd, "src", O_RDONLY | O_DIRECTORY);
	dst = mkdir_open(workfd, "dst-engine");
	t0 = extc_clock_monotonic_ns();
	if (extc_warm_copy_tree(src, dst, &o, st, why, sizeof(why)) < 0) {
		fprintf(stderr, "warm_bench: engine: %s\n", why);
		exit(1);
	}
	t0 = extc_clock_monotonic_ns() - t0;
	close(src);
	close(dst);
	return (t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

static void clean(int workfd)
{
	struct extc_rm_report rep;

	if (extc_remove_tree_at(workfd, "dst-engine", NULL, &rep) < 0 ||
	    extc_remove_tree_at(workfd, "dst-cp", NULL, &rep) < 0)
		die("remove the copies");
}

int main(int argc, char **argv)
{
	uint64_t eng[64], cp[64], files = 0, bytes = 0;
	double ratio[64];
	struct extc_copy_stats st, check;
	int runs = 7, opt, i, workfd;
	const char *work;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt == 'r')
			runs = atoi(optarg);
		else
			return (2);
	}
	if (optind + 1 != argc || runs < 1 || runs > 64) {
		fprintf(stderr, "usage: warm_bench [-r RUNS (1-64)] WORKDIR\n");
		return (2);
	}
	work = argv[optind];
	workfd = open(work, O_RDONLY | O_DIRECTORY);
	if (workfd < 0)
		die(work);
	clean(workfd);
	if (extc_remove_tree_at(workfd, "src", NULL, &(struct extc_rm_report){ 0 }) < 0)
		die("remove the old source");
	build(workfd);
	for (i = 0; i < runs; i++) {
		bool engine_first = (i % 2) == 0;
		int dst;

		syncfs(workfd);
		if (engine_first) {
			eng[i] = run_engine(workfd, &st);
			syncfs(workfd);
			cp[i] = run_cp(work);
		} else {
			cp[i] = run_cp(work);
			syncfs(workfd);
			eng[i] = run_engine(workfd, &st);
		}
		/* both copies must hold what the source holds */
		dst = openat(workfd, "dst-cp", O_RDONLY | O_DIRECTORY);
		{
			struct extc_warm_opts o = { .torch_subdir = "torch_extensions" };
			char why[256];

			if (dst < 0 || extc_warm_copy_measure(dst, &o, &check, why, sizeof(why)) < 0 ||
			    check.files != st.files || check.bytes != st.bytes)
				die("the copies differ");
		}
		close(dst);
		files = st.files;
		bytes = st.bytes;
		ratio[i] = (double)eng[i] / (double)cp[i];
		printf("run %d %s %llu %llu\n", i, engine_first ? "engine-first" : "cp-first",
		       (unsigned long long)eng[i], (unsigned long long)cp[i]);
		fflush(stdout);
		clean(workfd);
	}
	qsort(eng, (size_t)runs, sizeof(eng[0]), bench_cmp_u64);
	qsort(cp, (size_t)runs, sizeof(cp[0]), bench_cmp_u64);
	qsort(ratio, (size_t)runs, sizeof(ratio[0]), cmp_double);
	printf("median %d %llu %llu %.3f %llu %llu\n", runs, (unsigned long long)eng[runs / 2],
	       (unsigned long long)cp[runs / 2], ratio[runs / 2], (unsigned long long)files,
	       (unsigned long long)bytes);
	return (0);
}
