/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache benchmark 7e: the site tier's copies of a key, against
 * `cp -a` of the same generation, side by side.
 *
 *   tier_bench [-r RUNS] [-k KERNELS] [-f FILES] [-m SO_MB] WORKDIR
 *
 * Builds two keys below WORKDIR/keys/ once:
 *   triton  triton/ holding KERNELS (default 20) kernel directories of
 *           FILES (default 1000) small files each, one of them the group
 *           file (__grp__<kernel>.json, {"child_paths": {...}} naming the
 *           others by absolute path, as Triton writes it): a Triton cache
 *   torch   torch_extensions/op/: build.ninja, the ninja logs, an object
 *           file and an SO_MB (default 30) MB op.so: one extension's build
 * and publishes each once (extc_tier_publish) to the tier WORKDIR/tier/.
 * Then RUNS (default 5) runs, each doing for each key, in an order that
 * alternates from run to run, with a syncfs of WORKDIR's filesystem before
 * each timed copy:
 *   fetch    extc_tier_fetch of that generation into an empty key
 *            directory (every file's size and digest checked)
 *   cp       /bin/cp -a of the same generation directory to a new name
 *            (spawned: its fork and exec are in the time)
 *   publish  extc_tier_publish of the key: a new generation (its digests,
 *            the manifest, the fsyncs, the rename); removed again after
 *            the timing, so that the fetch always finds the first one
 * The copies are removed after each run, outside the timing. One line per
 * run and way:
 *
 *   run KEY I WAY NS FILES BYTES
 *
 * then per key the medians and the median of the per-run ratios fetch / cp:
 *
 *   median KEY RUNS FETCH_NS CP_NS PUBLISH_NS RATIO FILES BYTES
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "tier/tier_fetch.h"
#include "tier/tier_publish.h"

#include "benchlib.h"

#define MAX_RUNS 64
#define HOUR_NS (3600ull * 1000000000ull)

extern char **environ;

static const char *const suffixes[] = { ".cubin", ".ptx", ".ttir", ".ttgir", ".llir", ".json" };
static const size_t suffix_size[] = { 6144, 4096, 2500, 2048, 3072, 900 };

struct key {
	const char *name;	/* the key's label */
	const char *id;		/* its pool key name: 32 hex digits */
	char gen[EXTC_TIER_GEN_NAME_MAX];	/* its first generation */
	uint64_t files, bytes;
};

struct bench {
	const char *work;
	int workfd, keysfd, tierfd;
	struct extc_warm_opts o;
};

/* A Triton kernel directory: FILES-1 kernel files and the group file naming them. */
static void build_kernel(int tfd, const char *keydir, unsigned k, unsigned files)
{
	char hash[64], fname[96], path[PATH_MAX + 200];
	size_t cap = (size_t)files * (sizeof(path) + 100) + 64, len;
	char *grp = malloc(cap);
	unsigned f;
	int dfd, fd;

	if (grp == NULL)
		bench_die("malloc");
	snprintf(hash, sizeof(hash), "%08x%08xQ3HWK7ZPRBYGD2M5N4XT6VFJ%04uCS", k * 2654435761u,
		 k ^ 0x5bd1e995u, k);
	dfd = bench_make_dir(tfd, hash);
	len = (size_t)snprintf(grp, cap, "{\"child_paths\": {");
	for (f = 1; f < files; f++) {
		unsigned s = f % (sizeof(suffixes) / sizeof(suffixes[0]));

		snprintf(fname, sizeof(fname), "kernel_%04u%s", f / 6, suffixes[s]);
		bench_write_file(dfd, fname, suffix_size[s] + (f % 7) * 16);
		snprintf(path, sizeof(path), "%s/triton/%s/%s", keydir, hash, fname);
		len += (size_t)snprintf(grp + len, cap - len, "%s\"%s\": \"%s\"", f > 1 ? ", " : "",
					fname, path);
	}
	len += (size_t)snprintf(grp + len, cap - len, "}}");
	fd = openat(dfd, "__grp__kernel.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, grp, len) != (ssize_t)len)
		bench_die("__grp__kernel.json");
	close(fd);
	close(dfd);
	free(grp);
}

static void build_triton(struct bench *b, const char *id, unsigned kernels, unsigned files)
{
	char keydir[PATH_MAX];
	int kfd = bench_make_dir(b->keysfd, id), tfd = bench_make_dir(kfd, "triton");
	unsigned k;

	snprintf(keydir, sizeof(keydir), "%s/keys/%s", b->work, id);
	for (k = 0; k < kernels; k++)
		build_kernel(tfd, keydir, k, files);
	close(tfd);
	close(kfd);
}

static void build_torch(struct bench *b, const char *id, unsigned so_mb)
{
	int kfd = bench_make_dir(b->keysfd, id), tfd = bench_make_dir(kfd, "torch_extensions");
	int ofd = bench_make_dir(tfd, "op");

	bench_write_file(ofd, "build.ninja", 2048);
	bench_write_file(ofd, ".ninja_deps", 50 << 10);
	bench_write_file(ofd, ".ninja_log", 400);
	bench_write_file(ofd, "op.o", 1 << 20);
	bench_write_file(ofd, "op.so", (size_t)so_mb << 20);
	close(ofd);
	close(tfd);
	close(kfd);
}

/* Publish the key 'k' as a new generation: its time; the generation's name in 'gen'. */
static uint64_t publish(struct bench *b, struct key *k, char *gen)
{
	struct extc_tier_publish_in in = { k->id, "bench.1", MAX_RUNS + 2, HOUR_NS, 0, &b->o };
	struct extc_tier_publish_res res;
	char why[1024];
	uint64_t t0;
	int kfd = openat(b->keysfd, k->id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (kfd < 0)
		bench_die(k->id);
	if (syncfs(b->workfd) < 0)
		bench_die("syncfs");
	t0 = extc_clock_monotonic_ns();
	if (extc_tier_publish(kfd, b->tierfd, &in, &res, why, sizeof(why)) != EXTC_TIER_PUBLISHED)
		bench_dief(why);
	t0 = extc_clock_monotonic_ns() - t0;
	close(kfd);
	memcpy(gen, res.gen, sizeof(res.gen));
	k->files = res.files;
	k->bytes = res.bytes;
	return (t0);
}

static uint64_t fetch(struct bench *b, const struct key *k)
{
	struct extc_tier_fetch_in in = { k->id, "bench.2", 1, 0, 0, &b->o, NULL, NULL };
	struct extc_tier_fetch_res res;
	char why[1024];
	uint64_t t0;
	int dfd = bench_make_dir(b->workfd, "dst-fetch");

	if (syncfs(b->workfd) < 0)
		bench_die("syncfs");
	t0 = extc_clock_monotonic_ns();
	if (extc_tier_fetch(b->tierfd, dfd, &in, &res, why, sizeof(why)) != EXTC_TIER_FETCHED)
		bench_dief(why);
	t0 = extc_clock_monotonic_ns() - t0;
	close(dfd);
	if (strcmp(res.gen, k->gen) != 0 || res.files != k->files || res.bytes != k->bytes)
		bench_dief("the fetch did not copy the whole first generation");
	return (t0);
}

static uint64_t cp_a(struct bench *b, const struct key *k)
{
	char from[PATH_MAX + 200], to[PATH_MAX];
	char *argv[] = { (char *)"/bin/cp", (char *)"-a", "--", from, to, NULL };
	uint64_t t0;
	pid_t pid;
	int status;

	snprintf(from, sizeof(from), "%s/tier/%s/%s", b->work, k->id, k->gen);
	snprintf(to, sizeof(to), "%s/dst-cp", b->work);
	if (syncfs(b->workfd) < 0)
		bench_die("syncfs");
	t0 = extc_clock_monotonic_ns();
	errno = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
	if (errno != 0)
		bench_die(argv[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			bench_die("waitpid");
	t0 = extc_clock_monotonic_ns() - t0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_dief("cp -a failed");
	return (t0);
}

/* Remove 'name' in 'dirfd', outside any timing. */
static void clean(int dirfd, const char *name)
{
	struct extc_rm_report rep;

	if (extc_remove_tree_at(dirfd, name, NULL, &rep) < 0)
		bench_die(name);
}

static void bench_key(struct bench *b, struct key *k, int runs)
{
	static const char *const way_name[] = { "fetch", "cp", "publish" };
	uint64_t t[3][MAX_RUNS], ratio[MAX_RUNS];
	char gen[EXTC_TIER_GEN_NAME_MAX];
	int r, i;

	for (r = 0; r < runs; r++) {
		for (i = 0; i < 3; i++) {
			int way = (r + i) % 3;
			int kfd;

			if (way == 0)
				t[0][r] = fetch(b, k);
			else if (way == 1)
				t[1][r] = cp_a(b, k);
			else {
				t[2][r] = publish(b, k, gen);
				if ((kfd = openat(b->tierfd, k->id, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
					bench_die(k->id);
				clean(kfd, gen);
				close(kfd);
			}
			printf("run %s %d %s %llu %llu %llu\n", k->name, r, way_name[way],
			       (unsigned long long)t[way][r], (unsigned long long)k->files,
			       (unsigned long long)k->bytes);
			fflush(stdout);
		}
		ratio[r] = t[0][r] * 1000 / (t[1][r] > 0 ? t[1][r] : 1);
		clean(b->workfd, "dst-fetch");
		clean(b->workfd, "dst-cp");
	}
	printf("median %s %d", k->name, runs);
	for (i = 0; i < 3; i++)
		printf(" %llu", (unsigned long long)bench_median(t[i], (size_t)runs));
	printf(" %.3f %llu %llu\n", (double)bench_median(ratio, (size_t)runs) / 1000.0,
	       (unsigned long long)k->files, (unsigned long long)k->bytes);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const char *const subdirs[] = { "torch_extensions", "torchinductor", "triton" };
	struct key keys[2] = { { "triton", "e0000000000000000000000000000020", "", 0, 0 },
			       { "torch", "c0000000000000000000000000000001", "", 0, 0 } };
	unsigned kernels = 20, files = 1000, so_mb = 30;
	int opt, runs = 5, i;
	struct bench b;

	while ((opt = getopt(argc, argv, "r:k:f:m:")) != -1) {
		if (opt == 'r')
			runs = atoi(optarg);
		else if (opt == 'k')
			kernels = (unsigned)atoi(optarg);
		else if (opt == 'f')
			files = (unsigned)atoi(optarg);
		else if (opt == 'm')
			so_mb = (unsigned)atoi(optarg);
		else
			return (2);
	}
	if (optind + 1 != argc || runs < 1 || runs > MAX_RUNS || files < 2 || files > 100000) {
		fprintf(stderr, "usage: tier_bench [-r RUNS] [-k KERNELS] [-f FILES] [-m SO_MB] WORKDIR\n");
		return (2);
	}
	memset(&b, 0, sizeof(b));
	b.work = argv[optind];
	b.o.torch_subdir = "torch_extensions";
	b.o.inductor_subdir = "torchinductor";
	b.o.triton_subdir = "triton";
	b.o.subdirs = subdirs;
	b.o.nsubdirs = 3;
	b.o.tag = "bench.1";
	b.workfd = open(b.work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b.workfd < 0)
		bench_die(b.work);
	b.keysfd = bench_make_dir(b.workfd, "keys");
	b.tierfd = bench_make_dir(b.workfd, "tier");
	if (fchmod(b.tierfd, 0700) < 0)
		bench_die("tier");
	build_triton(&b, keys[0].id, kernels, files);
	build_torch(&b, keys[1].id, so_mb);
	for (i = 0; i < 2; i++) {
		publish(&b, &keys[i], keys[i].gen);
		printf("key %s %s %llu %llu\n", keys[i].name, keys[i].gen,
		       (unsigned long long)keys[i].files, (unsigned long long)keys[i].bytes);
	}
	for (i = 0; i < 2; i++)
		bench_key(&b, &keys[i], runs);
	return (0);
}
