/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache benchmark 7d: a step's end on a node pool key when the
 * step added nothing, the old way against the new, side by side.
 *
 *   end_bench [-r RUNS] [-t] WORKDIR FILES...
 *
 * As root. For each FILES, builds once (and reuses on a later call) a key
 * of uid 65534 below WORKDIR/base/.pool/: a torchinductor directory of
 * FILES/10 directories of 10 empty files each (an Inductor-shaped cache),
 * and a torch_extensions level with one complete build.
 * With -t the key is a Triton cache instead: FILES/10 kernel directories
 * of 10 files, none a group file (so the old way's rewrite finds nothing
 * to rewrite: the least its kernel-by-kernel put-back costs); its keys
 * are named apart.
 * Every run does, for each way, in an order that alternates from run to
 * run: hold the key (extc_pool_hold, as a step's start), take its builds
 * into a fresh leaf (extc_pool_rename_take, as the task does), then the
 * step's end, timed: the put-back and root's record.
 *   old: extc_pool_rename_put_back entry by entry (no time limit given),
 *        then extc_pool_hold_account measuring the whole key
 *   new: extc_pool_rename_put_back given the hold's time (whole
 *        directories by one rename), then extc_pool_hold_account with the
 *        put-back's word (root's look at the key's top level)
 * The plugin runs the put-back in a child as the user; here both ways run
 * it in this process (the child's fork and exec cost the same either way).
 * The hold is timed too (the new way's note of the key's top level is in
 * it: it must not grow with the key). One line per run and way:
 *
 *   run FILES I WAY HOLD_NS END_NS END_CPU_NS WHOLE PUBLISHED ACCOUNT
 *
 * then per FILES and way the medians:
 *
 *   median FILES WAY RUNS HOLD_NS END_NS END_CPU_NS
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "fs/fs_remove.h"
#include "fs/fs_tree.h"
#include "pool/pool_hold.h"
#include "pool/pool_rename.h"
#include "warm/manifest.h"

#define BENCH_UID 65534
#define FILES_PER_DIR 10
#define MAX_RUNS 64

static const char *const subdirs[] = { "torch_extensions", "torchinductor" };
static const char *const triton_subdirs[] = { "triton" };
static bool triton;	/* -t: the key is a Triton cache */

static void die(const char *what, const char *why)
{
	fprintf(stderr, "end_bench: %s: %s\n", what, why != NULL ? why : strerror(errno));
	exit(1);
}

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
		(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull);
}

/* The median of a few runs, sorted in place by insertion. */
static uint64_t median(uint64_t *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++) {
		uint64_t x = v[i];

		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

static void make_file(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		die(name, NULL);
	close(fd);
}

/* A built extension's library: a few bytes (torch's completeness rules read no more). */
static int write_so(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC);
	int rv = fd >= 0 && write(fd, "ELF", 3) == 3 ? 0 : -1;

	if (fd >= 0)
		close(fd);
	return (rv);
}

static int sub_dir(int dirfd, const char *name)
{
	int fd;

	if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
		die(name, NULL);
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die(name, NULL);
	return (fd);
}

/* The key's builds, made once: a torch build, FILES/10 Inductor-like directories of 10 files. */
static void fill_key(const char *dir, unsigned long files)
{
	char name[32];
	unsigned long i, j;
	int kfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), tfd, bfd, ifd, dfd;

	if (kfd < 0)
		die(dir, NULL);
	tfd = sub_dir(kfd, triton ? "triton" : "torch_extensions");
	bfd = sub_dir(tfd, "op");
	make_file(bfd, "op.so");
	if (write_so(bfd, "op.so") < 0)
		die("op.so", NULL);
	ifd = triton ? dup(tfd) : sub_dir(kfd, "torchinductor");
	for (i = 0; i < files / FILES_PER_DIR; i++) {
		snprintf(name, sizeof(name), "d%06lu", i);
		dfd = sub_dir(ifd, name);
		for (j = 0; j < FILES_PER_DIR; j++) {
			snprintf(name, sizeof(name), "f%lu", j);
			make_file(dfd, name);
		}
		close(dfd);
	}
	close(bfd);
	close(tfd);
	close(ifd);
	if (fchownat(kfd, "", BENCH_UID, BENCH_UID, AT_EMPTY_PATH) < 0)
		die("chown", NULL);
	close(kfd);
}

struct bench {
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_tree tree;
	struct extc_ids ids;
	struct extc_warm_opts o;
	struct extc_manifest mf;
	int workfd;		/* WORKDIR, where the step's leaf is made and removed */
	char leaf[PATH_MAX];
};

/* One step of the key, its end done the old or the new way: what it cost. */
struct step_cost {
	uint64_t hold_ns, end_ns, end_cpu_ns;
	struct extc_warm_walk_report rep;
	enum extc_pool_account_result acc;
};

static void one_step(struct bench *b, const char *key, bool new_way, struct step_cost *c)
{
	struct extc_pool_put_back_limits lim = { NULL, NULL };
	struct extc_copy_stats st;
	struct extc_pool_hold h;
	struct extc_rm_report rm;
	char why[1024];
	uint64_t t0, cpu0;
	int kfd, lfd;

	extc_remove_tree_at(b->workfd, "leaf", NULL, &rm);
	if (mkdirat(b->workfd, "leaf", 0700) < 0)
		die(b->leaf, NULL);
	t0 = extc_clock_monotonic_ns();
	if (extc_pool_hold(&b->tree, &b->ids, key, &h, why, sizeof(why)) != EXTC_POOL_HELD)
		die("hold", why);
	c->hold_ns = extc_clock_monotonic_ns() - t0;
	kfd = open(h.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	lfd = open(b->leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (kfd < 0 || lfd < 0)
		die("open", NULL);
	b->o.dest = b->leaf;
	if (extc_pool_rename_take(kfd, lfd, &b->o, &st, why, sizeof(why)) != EXTC_SEED_DONE)
		die("take", why);
	b->o.dest = h.dir;
	if (new_way)
		lim.taken_after = &h.since.at;
	t0 = extc_clock_monotonic_ns();
	cpu0 = cpu_ns();
	if (extc_pool_rename_put_back(lfd, kfd, &b->o, &b->mf, &lim, &c->rep, why, sizeof(why)) < 0)
		die("put-back", why);
	c->acc = extc_pool_hold_account(&h, &b->tree,
					new_way && c->rep.published == 0 && c->rep.failed == 0, why,
					sizeof(why));
	c->end_ns = extc_clock_monotonic_ns() - t0;
	c->end_cpu_ns = cpu_ns() - cpu0;
	if (c->acc != EXTC_POOL_ACCOUNTED && c->acc != EXTC_POOL_ACCOUNT_KEPT)
		die("account", why);
	extc_pool_hold_release(&h);
	close(kfd);
	close(lfd);
}

static void bench_size(struct bench *b, const char *work, unsigned long files, int runs)
{
	static const char *const way_name[] = { "old", "new" };
	uint64_t hold[2][MAX_RUNS], end[2][MAX_RUNS], cpu[2][MAX_RUNS];
	struct extc_pool_hold h;
	struct step_cost c;
	char key[64], why[1024];
	struct stat sb;
	int r, k;

	/* a key name is 32 hex digits: the size in them, Triton's apart */
	snprintf(key, sizeof(key), "%c%031lx", triton ? 'e' : '0', files);
	snprintf(b->leaf, sizeof(b->leaf), "%s/leaf", work);
	if (extc_pool_hold(&b->tree, &b->ids, key, &h, why, sizeof(why)) != EXTC_POOL_HELD)
		die("hold", why);
	/* made once: a later call on the same WORKDIR finds it */
	if (fstatat(AT_FDCWD, h.dir, &sb, 0) == 0 && sb.st_nlink <= 2) {
		fill_key(h.dir, files);
		if (extc_pool_hold_account(&h, &b->tree, false, why, sizeof(why)) != EXTC_POOL_ACCOUNTED)
			die("first account", why);
	}
	extc_pool_hold_release(&h);
	for (r = 0; r < runs; r++) {
		for (k = 0; k < 2; k++) {
			int way = (r + k) % 2;

			one_step(b, key, way == 1, &c);
			hold[way][r] = c.hold_ns;
			end[way][r] = c.end_ns;
			cpu[way][r] = c.end_cpu_ns;
			printf("run %lu %d %s %llu %llu %llu %llu %llu %s\n", files, r, way_name[way],
			       (unsigned long long)c.hold_ns, (unsigned long long)c.end_ns,
			       (unsigned long long)c.end_cpu_ns, (unsigned long long)c.rep.whole,
			       (unsigned long long)c.rep.published,
			       c.acc == EXTC_POOL_ACCOUNT_KEPT ? "kept" : "measured");
			fflush(stdout);
		}
	}
	for (k = 0; k < 2; k++)
		printf("median %lu %s %d %llu %llu %llu\n", files, way_name[k], runs,
		       (unsigned long long)median(hold[k], runs), (unsigned long long)median(end[k], runs),
		       (unsigned long long)median(cpu[k], runs));
}

int main(int argc, char **argv)
{
	static struct bench b;
	char base_arg[PATH_MAX + 16], why[1024], *av[2];
	int opt, runs = 5, i;

	while ((opt = getopt(argc, argv, "r:t")) != -1) {
		if (opt == 't')
			triton = true;
		else if (opt == 'r')
			runs = atoi(optarg);
		else
			return (2);
	}
	if (optind + 2 > argc || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: end_bench [-r RUNS] [-t] WORKDIR FILES...\n");
		return (2);
	}
	snprintf(base_arg, sizeof(base_arg), "base=%s/base", argv[optind]);
	av[0] = base_arg;
	av[1] = (char *)"pool=node";
	if (extc_config_parse(&b.cfg, 2, av, why, sizeof(why)) != 0)
		die("config", why);
	b.pol.owner = 0;
	b.pol.owner_gid = 0;
	b.tree = (struct extc_tree){ &b.cfg, &b.pol };
	b.workfd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b.workfd < 0)
		die(argv[optind], NULL);
	if (extc_tree_prepare_base(&b.tree, why, sizeof(why)) < 0)
		die("base", why);
	b.ids = (struct extc_ids){ .uid = BENCH_UID, .gid = BENCH_UID };
	b.o.torch_subdir = "torch_extensions";
	b.o.inductor_subdir = "torchinductor";
	b.o.triton_subdir = triton ? "triton" : NULL;
	b.o.subdirs = triton ? triton_subdirs : subdirs;
	b.o.nsubdirs = triton ? 1 : 2;
	b.o.tag = "bench.1";
	if (extc_manifest_local(&b.mf, "bench", 1, "bench", "/proc/cpuinfo", why, sizeof(why)) < 0)
		die("manifest", why);
	for (i = optind + 1; i < argc; i++)
		bench_size(&b, argv[optind], strtoul(argv[i], NULL, 10), runs);
	return (0);
}
