/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache benchmark: the removal engine (extc_remove_tree_at, with the
 * limits the epilog's emptier uses) against GNU `rm -rf` on the same
 * cache-shaped trees, built afresh for every run.
 *
 *   rm_bench [-r RUNS] [-R RM] [-d] WORKDIR SHAPE
 *
 * SHAPE: triton  20000 directories of 5 small files (a Triton cache)
 *        torch   3 extension directories: build.ninja, ninja logs, object
 *                files and a 50 MB .so each (a torch_extensions cache)
 *        chain   a chain of 10000 nested directories
 *
 * Every run builds two identical trees in WORKDIR (same filesystem), flushes
 * them to disk (syncfs), then removes one with the engine and the other with
 * `RM -rf` (spawned, so its exec is counted, as a script's would be), with
 * a syncfs before each removal; the order alternates from run to run. Each
 * removal is checked to have left nothing. One line per run on stdout:
 *
 *   run SHAPE I ORDER ENGINE_NS RM_NS ENTRIES
 *
 * then one summary line (medians over the runs, and their ratio):
 *
 *   median SHAPE RUNS ENGINE_NS RM_NS RATIO SPAWN_NS
 *
 * RATIO is the median of the per-run ratios ENGINE_NS / RM_NS (each pair
 * measured back to back under the same conditions); SPAWN_NS is the median time of `RM -rf` on a name that does not
 * exist (the fixed cost of spawning rm). -d: the engine gets a deadline, as
 * the epilog's emptier does (the default); -D: no deadline.
 *
 * For profiling one side alone (perf, strace -c):
 *   rm_bench -B WORKDIR SHAPE NAME   build one tree WORKDIR/NAME
 *   rm_bench -X WORKDIR NAME         remove WORKDIR/NAME with the engine
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

#include "benchlib.h"

extern char **environ;

/* A Triton cache: <cache>/<52-char hash>/{kernel files}, flat, small files. */
static uint64_t build_triton(int pfd, const char *name)
{
	static const struct {
		const char *suffix;
		size_t size;
	} files[5] = {
		{ ".json", 900 }, { ".cubin", 6144 }, { ".ptx", 4096 },
		{ ".ttgir", 2048 }, { ".llir", 3072 },
	};
	int top = bench_make_dir(pfd, name);
	uint64_t entries = 1;
	char hash[64], fname[96];
	unsigned d, f;

	for (d = 0; d < 20000; d++) {
		int dfd;

		snprintf(hash, sizeof(hash), "%08x%08xQ3HWK7ZPRBYGD2M5N4XT6VFJ%04uCS", d * 2654435761u,
			 d ^ 0x5bd1e995u, d % 10000);
		dfd = bench_make_dir(top, hash);
		for (f = 0; f < 5; f++) {
			snprintf(fname, sizeof(fname), "%s_kernel%s", f == 0 ? "__grp__" : "triton",
				 files[f].suffix);
			bench_write_file(dfd, fname, files[f].size + (d % 7) * 16);
		}
		close(dfd);
		entries += 6;
	}
	close(top);
	return (entries);
}

/* A torch_extensions cache: <cache>/py311_cu121/<ext>/{build files, objects, .so}. */
static uint64_t build_torch(int pfd, const char *name)
{
	static const char *exts[3] = { "fused_adam", "transformer_inference", "flash_attn_ext" };
	int top = bench_make_dir(pfd, name);
	int py = bench_make_dir(top, "py311_cu121");
	uint64_t entries = 2;
	char fname[96];
	unsigned e;

	for (e = 0; e < 3; e++) {
		int dfd = bench_make_dir(py, exts[e]);

		bench_write_file(dfd, "build.ninja", 2300);
		bench_write_file(dfd, ".ninja_deps", 48 * 1024);
		bench_write_file(dfd, ".ninja_log", 400);
		snprintf(fname, sizeof(fname), "%s.o", exts[e]);
		bench_write_file(dfd, fname, 3u << 20);
		bench_write_file(dfd, "kernels.cuda.o", 6u << 20);
		bench_write_file(dfd, "bindings.o", 1u << 20);
		snprintf(fname, sizeof(fname), "%s.so", exts[e]);
		bench_write_file(dfd, fname, 50u << 20);
		close(dfd);
		entries += 8;
	}
	close(py);
	close(top);
	return (entries);
}

/* A chain of nested directories, one small file at the bottom. */
static uint64_t build_chain(int pfd, const char *name)
{
	int fd = bench_make_dir(pfd, name);
	unsigned i;

	for (i = 0; i < 10000; i++) {
		int next = bench_make_dir(fd, "d");

		close(fd);
		fd = next;
	}
	bench_write_file(fd, "bottom", 100);
	close(fd);
	return (10002);
}

static uint64_t build(int wfd, const char *shape, const char *name)
{
	if (strcmp(shape, "triton") == 0)
		return (build_triton(wfd, name));
	if (strcmp(shape, "torch") == 0)
		return (build_torch(wfd, name));
	if (strcmp(shape, "chain") == 0)
		return (build_chain(wfd, name));
	bench_dief("unknown shape (triton, torch, chain)");
	return (0);
}

static uint64_t time_engine(int wfd, const char *name, int with_deadline)
{
	struct extc_rm_limits limits;
	struct extc_rm_report report;
	uint64_t t0, t1;
	char text[256];

	extc_rm_limits_default(&limits);
	t0 = extc_clock_monotonic_ns();
	if (with_deadline)
		limits.deadline_ns = t0 + 3600ull * 1000000000ull;	/* as the epilog's emptier */
	if (extc_remove_tree_at(wfd, name, &limits, &report) < 0) {
		extc_rm_report_text(&report, text, sizeof(text));
		fprintf(stderr, "rm_bench: engine failed on %s: %s\n", name, text);
		exit(1);
	}
	t1 = extc_clock_monotonic_ns();
	return (t1 - t0);
}

static uint64_t time_rm(const char *rm, const char *workdir, const char *name)
{
	char path[4096];
	char *argv[] = { (char *)rm, (char *)"-rf", "--", path, NULL };
	uint64_t t0, t1;
	pid_t pid;
	int status;

	snprintf(path, sizeof(path), "%s/%s", workdir, name);
	t0 = extc_clock_monotonic_ns();
	errno = posix_spawn(&pid, rm, NULL, NULL, argv, environ);
	if (errno != 0)
		bench_die(rm);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			bench_die("waitpid");
	}
	t1 = extc_clock_monotonic_ns();
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_dief("rm -rf failed");
	return (t1 - t0);
}

static void must_be_gone(int wfd, const char *name, const char *who)
{
	struct stat sb;

	if (fstatat(wfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
		fprintf(stderr, "rm_bench: %s left %s behind\n", who, name);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *rm = "/bin/rm", *workdir, *shape;
	int runs = 7, with_deadline = 1, opt, wfd, i;
	uint64_t *eng, *rmt, *spawn, *ratio, entries = 0;

	int only = 0;

	while ((opt = getopt(argc, argv, "r:R:dDBX")) != -1) {
		switch (opt) {
		case 'r':
			runs = atoi(optarg);
			break;
		case 'R':
			rm = optarg;
			break;
		case 'd':
			with_deadline = 1;
			break;
		case 'D':
			with_deadline = 0;
			break;
		case 'B':
		case 'X':
			only = opt;
			break;
		default:
			bench_dief("usage: rm_bench [-r RUNS] [-R RM] [-d|-D] WORKDIR triton|torch|chain");
		}
	}
	if (only == 'B' && argc - optind == 3) {
		wfd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (wfd < 0)
			bench_die(argv[optind]);
		printf("%llu entries\n", (unsigned long long)build(wfd, argv[optind + 1], argv[optind + 2]));
		return (0);
	}
	if (only == 'X' && argc - optind == 2) {
		wfd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (wfd < 0)
			bench_die(argv[optind]);
		printf("%.3f ms\n", (double)time_engine(wfd, argv[optind + 1], with_deadline) / 1e6);
		return (0);
	}
	if (argc - optind != 2 || runs < 1)
		bench_dief("usage: rm_bench [-r RUNS] [-R RM] [-d|-D] WORKDIR triton|torch|chain");
	workdir = argv[optind];
	shape = argv[optind + 1];
	wfd = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		bench_die(workdir);
	eng = calloc((size_t)runs, sizeof(*eng));
	rmt = calloc((size_t)runs, sizeof(*rmt));
	spawn = calloc((size_t)runs, sizeof(*spawn));
	ratio = calloc((size_t)runs, sizeof(*ratio));
	if (eng == NULL || rmt == NULL || spawn == NULL || ratio == NULL)
		bench_die("calloc");
	for (i = 0; i < runs; i++) {
		char a[64], b[64];
		int engine_first = (i % 2 == 0);

		snprintf(a, sizeof(a), "%s.engine.%d", shape, i);
		snprintf(b, sizeof(b), "%s.rm.%d", shape, i);
		/* the tree removed second is built first, so neither is always the fresher */
		if (engine_first) {
			build(wfd, shape, b);
			entries = build(wfd, shape, a);
		} else {
			build(wfd, shape, a);
			entries = build(wfd, shape, b);
		}
		if (syncfs(wfd) < 0)
			bench_die("syncfs");
		if (engine_first) {
			eng[i] = time_engine(wfd, a, with_deadline);
			if (syncfs(wfd) < 0)
				bench_die("syncfs");
			rmt[i] = time_rm(rm, workdir, b);
		} else {
			rmt[i] = time_rm(rm, workdir, b);
			if (syncfs(wfd) < 0)
				bench_die("syncfs");
			eng[i] = time_engine(wfd, a, with_deadline);
		}
		must_be_gone(wfd, a, "the engine");
		must_be_gone(wfd, b, "rm -rf");
		spawn[i] = time_rm(rm, workdir, "rm_bench.does-not-exist");
		ratio[i] = eng[i] * 1000000ull / (rmt[i] ? rmt[i] : 1);	/* ppm */
		printf("run %s %d %s %llu %llu %llu\n", shape, i, engine_first ? "engine-first" : "rm-first",
		       (unsigned long long)eng[i], (unsigned long long)rmt[i],
		       (unsigned long long)entries);
		fflush(stdout);
		if (syncfs(wfd) < 0)
			bench_die("syncfs");
	}
	{
		uint64_t me = bench_median(eng, (size_t)runs), mr = bench_median(rmt, (size_t)runs);
		uint64_t ms = bench_median(spawn, (size_t)runs);

		uint64_t mq = bench_median(ratio, (size_t)runs);

		printf("median %s %d %llu %llu %.3f %llu\n", shape, runs, (unsigned long long)me,
		       (unsigned long long)mr, (double)mq / 1e6, (unsigned long long)ms);
	}
	close(wfd);
	return (0);
}
