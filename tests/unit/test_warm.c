/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: warm start (seed and publish copies, manifest, running as the user). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/as_user.h"
#include "testmain.h"
#include "base/clock.h"
#include "fs/fs_remove.h"
#include "fsfixture.h"
#include "warm/manifest.h"
#include "base/text.h"
#include "warm/warm_copy.h"
#include "warm/warm_child.h"
#include "warm/warm_data.h"
#include "base/seed_path.h"
#include "warm/warm_publish.h"
#include "warm/warm_seed.h"
#include "warm/warm_sweep.h"
#include "pool/pool_rename.h"

#define NOBODY 65534

static struct fsfx fx;		/* the directory every test works in */
static const char *const subdirs[] = { "torch_extensions", "triton" };

static int setup(void **state)
{
	(void)state;
	return (fsfx_setup(&fx, 0700));
}

static int teardown(void **state)
{
	(void)state;
	return (fsfx_teardown(&fx));
}

static void opts_init(struct extc_warm_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->torch_subdir = "torch_extensions";
	o->subdirs = subdirs;
	o->nsubdirs = 2;
	o->tag = "node.1";
}

static int mkdirs(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int mkdirs(const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	return (fsfx_mkdirs(&fx, rel));
}

static void put(const char *rel, const char *content)
{
	assert_int_equal(fsfx_write_at(fx.rootfd, rel, content, 0644), 0);
}

static int opendir_at(const char *rel)
{
	int fd = openat(fx.rootfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return (fd);
}

static bool there(const char *rel)
{
	return (fsfx_exists_at(fx.rootfd, rel));
}

/* A cache as a step leaves it: complete builds, a locked one, one without .so, Triton entries. */
static void make_cache(const char *root)
{
	char p[PATH_MAX];

	assert_int_equal(mkdirs("%s/torch_extensions/good", root), 0);
	assert_int_equal(mkdirs("%s/torch_extensions/locked", root), 0);
	assert_int_equal(mkdirs("%s/torch_extensions/noso", root), 0);
	assert_int_equal(mkdirs("%s/torch_extensions/py311_cpu/grouped", root), 0);
	assert_int_equal(mkdirs("%s/triton/abc", root), 0);
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/good/build.ninja"), "rule cxx\n");
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/good/good.so"), "ELF good");
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/good/main.o"), "obj");
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/locked/build.ninja"), "rule cxx\n");
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/locked/locked.so"), "ELF half");
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/locked/lock"), "");
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/noso/build.ninja"), "rule cxx\n");
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/noso/main.o"), "obj");
	put(fsfx_join(p, sizeof(p), root, "torch_extensions/py311_cpu/grouped/grouped.so"), "ELF g");
	put(fsfx_join(p, sizeof(p), root, "triton/abc/kernel.json"), "{}");
	put(fsfx_join(p, sizeof(p), root, "triton/abc/lock"), "");
	put(fsfx_join(p, sizeof(p), root, "triton/top.bin"), "bin");
}

static void test_filters_leave_out_locks_and_incomplete_builds(void **state)
{
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512];
	int src, dst;

	(void)state;
	opts_init(&o);
	make_cache("f/src");
	put("f/src/.ext-cache-manifest", "format=1\n");
	assert_int_equal(mkdirs("f/src/triton/.ext-cache-stage.n2.77.0"), 0);
	assert_int_equal(mkdirs("f/dst"), 0);
	src = opendir_at("f/src");
	dst = opendir_at("f/dst");
	assert_int_equal(extc_warm_copy_tree(src, dst, &o, &st, why, sizeof(why)), 0);
	assert_true(there("f/dst/torch_extensions/good/good.so"));
	assert_true(there("f/dst/torch_extensions/good/main.o"));
	assert_true(there("f/dst/torch_extensions/py311_cpu/grouped/grouped.so"));
	assert_false(there("f/dst/torch_extensions/locked"));
	assert_false(there("f/dst/torch_extensions/noso"));
	assert_true(there("f/dst/triton/abc/kernel.json"));
	assert_false(there("f/dst/triton/abc/lock"));
	assert_true(there("f/dst/triton/top.bin"));
	assert_false(there("f/dst/.ext-cache-manifest"));
	assert_false(there("f/dst/triton/.ext-cache-stage.n2.77.0"));
	assert_int_equal(st.skipped_incomplete, 2);
	assert_int_equal(st.skipped_locks, 1);	/* the locked build was left out whole */
	close(src);
	close(dst);
}

static void test_mtimes_kept_to_the_nanosecond(void **state)
{
	struct timespec ts[2] = { { 1600000000, 123456789 }, { 1500000000, 987654321 } };
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	struct stat a, b;
	char why[512];
	int src, dst;

	(void)state;
	opts_init(&o);
	make_cache("m/src");
	assert_int_equal(mkdirs("m/dst"), 0);
	assert_int_equal(symlinkat("good.so", fx.rootfd, "m/src/torch_extensions/good/alias.so"), 0);
	assert_int_equal(utimensat(fx.rootfd, "m/src/torch_extensions/good/main.o", ts, 0), 0);
	ts[1].tv_nsec = 111111111;
	assert_int_equal(utimensat(fx.rootfd, "m/src/torch_extensions/good/alias.so", ts,
				   AT_SYMLINK_NOFOLLOW), 0);
	ts[1].tv_nsec = 222222222;
	assert_int_equal(utimensat(fx.rootfd, "m/src/torch_extensions/good", ts, 0), 0);
	src = opendir_at("m/src");
	dst = opendir_at("m/dst");
	assert_int_equal(extc_warm_copy_tree(src, dst, &o, &st, why, sizeof(why)), 0);
	assert_int_equal(fstatat(fx.rootfd, "m/dst/torch_extensions/good/main.o", &b, 0), 0);
	assert_int_equal(b.st_mtim.tv_sec, 1500000000);
	assert_int_equal(b.st_mtim.tv_nsec, 987654321);
	assert_int_equal(fstatat(fx.rootfd, "m/dst/torch_extensions/good/alias.so", &b,
				 AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(b.st_mtim.tv_nsec, 111111111);
	/* the directory's own time, set after its contents were written */
	assert_int_equal(fstatat(fx.rootfd, "m/dst/torch_extensions/good", &b, 0), 0);
	assert_int_equal(b.st_mtim.tv_sec, 1500000000);
	assert_int_equal(b.st_mtim.tv_nsec, 222222222);
	/* every file: same mtime, same mode, same content size */
	assert_int_equal(fstatat(fx.rootfd, "m/src/triton/abc/kernel.json", &a, 0), 0);
	assert_int_equal(fstatat(fx.rootfd, "m/dst/triton/abc/kernel.json", &b, 0), 0);
	assert_int_equal(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
	assert_int_equal(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
	assert_int_equal(a.st_mode, b.st_mode);
	assert_int_equal(a.st_size, b.st_size);
	close(src);
	close(dst);
}

static void test_symlinks_copied_not_followed(void **state)
{
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512], target[PATH_MAX];
	struct stat sb;
	ssize_t n;
	int src, dst;

	(void)state;
	opts_init(&o);
	assert_int_equal(mkdirs("s/src/triton/k"), 0);
	assert_int_equal(mkdirs("s/outside"), 0);
	put("s/outside/secret", "secret");
	assert_int_equal(mkdirs("s/dst"), 0);
	assert_int_equal(symlinkat("../../../outside/secret", fx.rootfd, "s/src/triton/k/file"), 0);
	assert_int_equal(symlinkat("../../outside", fx.rootfd, "s/src/triton/dirlink"), 0);
	assert_int_equal(mkfifoat(fx.rootfd, "s/src/triton/k/fifo", 0600), 0);
	src = opendir_at("s/src");
	dst = opendir_at("s/dst");
	assert_int_equal(extc_warm_copy_tree(src, dst, &o, &st, why, sizeof(why)), 0);
	assert_int_equal(fstatat(fx.rootfd, "s/dst/triton/k/file", &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(sb.st_mode));
	n = readlinkat(fx.rootfd, "s/dst/triton/k/file", target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "../../../outside/secret");
	assert_int_equal(fstatat(fx.rootfd, "s/dst/triton/dirlink", &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(sb.st_mode));
	assert_false(there("s/dst/triton/k/fifo"));	/* special files are left out */
	assert_int_equal(st.links, 2);
	assert_int_equal(st.skipped_special, 1);
	assert_int_equal(st.bytes, 0);	/* nothing was read through a link */
	close(src);
	close(dst);
}

/* A leaf as slurmstepd makes it: one empty directory per variable. */
static int make_leaf(const char *rel)
{
	assert_int_equal(mkdirs("%s/torch_extensions", rel), 0);
	assert_int_equal(mkdirs("%s/triton", rel), 0);
	return (opendir_at(rel));
}

static void test_seed_copies_and_a_second_seed_does_nothing(void **state)
{
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512];
	int src, leaf;

	(void)state;
	opts_init(&o);
	make_cache("sd/src");
	src = opendir_at("sd/src");
	leaf = make_leaf("sd/leaf");
	assert_int_equal(extc_warm_seed(src, leaf, &o, &st, why, sizeof(why)), EXTC_SEED_DONE);
	assert_true(there("sd/leaf/torch_extensions/good/good.so"));
	assert_true(there("sd/leaf/triton/top.bin"));
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "sd/leaf"), 2);	/* no stage left */
	/* job mode: a later step finds files and seeds nothing over them */
	assert_int_equal(extc_warm_seed(src, leaf, &o, &st, why, sizeof(why)), EXTC_SEED_NOT_FRESH);
	close(src);
	close(leaf);
}

/*
 * The env file for container runtimes (container_envfile.h) is no build: a
 * leaf with it is still fresh. A build made in a container is one.
 */
static void test_seed_container_env_file_is_no_build(void **state)
{
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512];
	int src, leaf;

	(void)state;
	opts_init(&o);
	make_cache("ce/src");
	src = opendir_at("ce/src");
	leaf = make_leaf("ce/leaf");
	assert_int_equal(mkdirs("ce/leaf/container"), 0);
	assert_int_equal(mkdirs("ce/other/container/torch_extensions"), 0);
	close(openat(fx.rootfd, "ce/leaf/container/env", O_WRONLY | O_CREAT | O_EXCL, 0600));
	assert_true(there("ce/leaf/container/env"));
	assert_int_equal(extc_warm_seed(src, leaf, &o, &st, why, sizeof(why)), EXTC_SEED_DONE);
	assert_true(there("ce/leaf/torch_extensions/good/good.so"));
	close(leaf);
	leaf = make_leaf("ce/other");
	assert_int_equal(extc_warm_seed(src, leaf, &o, &st, why, sizeof(why)), EXTC_SEED_NOT_FRESH);
	close(src);
	close(leaf);
}

static void test_seed_max_exceeded_copies_nothing(void **state)
{
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512];
	int src, leaf;

	(void)state;
	opts_init(&o);
	make_cache("sm/src");
	src = opendir_at("sm/src");
	leaf = make_leaf("sm/leaf");
	o.max_bytes = 10;	/* the cache holds 30 bytes that would be copied */
	assert_int_equal(extc_warm_seed(src, leaf, &o, &st, why, sizeof(why)), EXTC_SEED_REFUSED);
	assert_non_null(strstr(why, "it holds 30 bytes, more than the 10 bytes the admin allows"));
	assert_non_null(strstr(why, "nothing was copied"));
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "sm/leaf"), 2);
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "sm/leaf/torch_extensions"), 0);
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "sm/leaf/triton"), 0);
	/* the same limit while copying: a tree that grew stops the copy */
	assert_int_equal(mkdirs("sm/dst"), 0);
	close(leaf);
	leaf = opendir_at("sm/dst");
	assert_int_equal(extc_warm_copy_tree(src, leaf, &o, &st, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "grew past 10 bytes"));
	o.max_bytes = 30;
	assert_int_equal(extc_warm_seed(src, opendir_at("sm/leaf"), &o, &st, why, sizeof(why)),
			 EXTC_SEED_DONE);
	close(src);
	close(leaf);
}

/* As the user (nobody), a file it cannot read fails the copy: nothing of it stays. */
static int seed_as_nobody(void *arg, void *res, size_t reslen)
{
	const char *rel = arg;
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char path[PATH_MAX];
	int src, leaf;

	opts_init(&o);
	extc_fmt(path, sizeof(path), "%s/%s/src", fx.root, rel);
	src = open(path, O_RDONLY | O_DIRECTORY);
	extc_fmt(path, sizeof(path), "%s/%s/leaf", fx.root, rel);
	leaf = open(path, O_RDONLY | O_DIRECTORY);
	if (src < 0 || leaf < 0)
		return (extc_fmt(res, reslen, "open: %s", strerror(errno)), -1);
	return (extc_warm_seed(src, leaf, &o, &st, res, reslen) == EXTC_SEED_REFUSED ? 0 : -1);
}

static void test_seed_failure_as_the_user_leaves_nothing(void **state)
{
	struct extc_creds cr = { NOBODY, NOBODY, NULL, 0 };
	char res[512], why[256], p[PATH_MAX];

	(void)state;
	make_cache("sf/src");
	put("sf/src/triton/private", "root's");
	assert_int_equal(fchmodat(fx.rootfd, "sf/src/triton/private", 0600, 0), 0);
	close(make_leaf("sf/leaf"));
	assert_int_equal(fsfx_chown_tree(fsfx_path(&fx, p, "sf/leaf"), NOBODY, (gid_t)-1), 0);
	assert_int_equal(chmod(fx.root, 0755), 0);
	assert_int_equal(chmod(fsfx_path(&fx, p, "sf"), 0755), 0);
	assert_int_equal(extc_as_user(&cr, 10000, seed_as_nobody, "sf", res, sizeof(res), why,
				      sizeof(why)), EXTC_AS_USER_DONE);
	assert_non_null(strstr(res, "triton/private: cannot open: Permission denied"));
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "sf/leaf"), 2);
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "sf/leaf/torch_extensions"), 0);
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "sf/leaf/triton"), 0);
}

/* ---- publishing ------------------------------------------------------------ */

static void local_manifest(struct extc_manifest *m, const char *key)
{
	char why[256];

	assert_int_equal(extc_manifest_local(m, key, 42, "n1", "/proc/cpuinfo", why, sizeof(why)), 0);
}

static void test_publish_only_complete_entries(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_manifest mf;
	struct extc_warm_opts o;
	char why[512];
	int leaf, dir;

	(void)state;
	opts_init(&o);
	local_manifest(&mf, "k1");
	make_cache("p/leaf");
	assert_int_equal(mkdirs("p/pub"), 0);
	leaf = opendir_at("p/leaf");
	dir = opendir_at("p/pub");
	assert_int_equal(extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)), 0);
	assert_true(there("p/pub/torch_extensions/good/good.so"));
	assert_true(there("p/pub/torch_extensions/py311_cpu/grouped/grouped.so"));
	assert_false(there("p/pub/torch_extensions/locked"));
	assert_false(there("p/pub/torch_extensions/noso"));
	assert_true(there("p/pub/triton/abc/kernel.json"));
	assert_false(there("p/pub/triton/abc/lock"));
	assert_true(there("p/pub/.ext-cache-manifest"));
	assert_int_equal(rep.published, 4);	/* good, grouped, triton/abc, triton/top.bin */
	assert_int_equal(rep.incomplete, 2);
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "p/pub"), 3);	/* no temporary manifest */
	/* again: everything is there already */
	assert_int_equal(extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.published, 0);
	assert_int_equal(rep.present, 4);
	close(leaf);
	close(dir);
}

/* An Inductor cache as a step leaves it (torch/_inductor/codecache.py), with a "locks" elsewhere. */
static void make_inductor_cache(const char *root)
{
	char p[PATH_MAX];

	assert_int_equal(mkdirs("%s/torchinductor/fxgraph/46/f4633", root), 0);
	assert_int_equal(mkdirs("%s/torchinductor/aotautograd/a5e4", root), 0);
	assert_int_equal(mkdirs("%s/torchinductor/4s", root), 0);
	assert_int_equal(mkdirs("%s/torchinductor/locks", root), 0);
	assert_int_equal(mkdirs("%s/triton/locks", root), 0);
	assert_int_equal(mkdirs("%s/torch_extensions", root), 0);
	put(fsfx_join(p, sizeof(p), root, "torchinductor/fxgraph/46/f4633/y3pj"), "graph");
	put(fsfx_join(p, sizeof(p), root, "torchinductor/aotautograd/a5e4/entry"), "aot");
	put(fsfx_join(p, sizeof(p), root, "torchinductor/4s/c4sm.cpp"), "cpp");
	put(fsfx_join(p, sizeof(p), root, "torchinductor/4s/c4sm.so"), "ELF");
	put(fsfx_join(p, sizeof(p), root, "torchinductor/locks/c4sm.lock"), "");
	put(fsfx_join(p, sizeof(p), root, "triton/locks/kept"), "not Inductor's");
}

static const char *const subdirs3[] = { "torch_extensions", "triton", "torchinductor" };

/* The options with Inductor's level among the variables'. */
static void opts_inductor(struct extc_warm_opts *o)
{
	opts_init(o);
	o->subdirs = subdirs3;
	o->nsubdirs = 3;
	o->inductor_subdir = "torchinductor";
}

static void test_inductor_locks_never_published_nor_seeded(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_manifest mf;
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512];
	int leaf, dir, src, dst;

	(void)state;
	opts_inductor(&o);
	local_manifest(&mf, "k1");
	make_inductor_cache("ind/leaf");
	assert_int_equal(mkdirs("ind/pub"), 0);
	leaf = opendir_at("ind/leaf");
	dir = opendir_at("ind/pub");
	assert_int_equal(extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)), 0);
	assert_true(there("ind/pub/torchinductor/fxgraph/46/f4633/y3pj"));
	assert_true(there("ind/pub/torchinductor/aotautograd/a5e4/entry"));
	assert_true(there("ind/pub/torchinductor/4s/c4sm.so"));
	assert_false(there("ind/pub/torchinductor/locks"));
	assert_true(there("ind/pub/triton/locks/kept"));	/* only Inductor's locks/ is special */
	assert_int_equal(rep.published, 4);	/* fxgraph, aotautograd, 4s, triton/locks */
	assert_int_equal(rep.copy.skipped_locks, 1);

	/* a seed that has Inductor's locks/ (an older publisher's): left out too */
	make_inductor_cache("ind/seed");
	src = opendir_at("ind/seed");
	assert_int_equal(mkdirs("ind/dst"), 0);
	dst = opendir_at("ind/dst");
	assert_int_equal(extc_warm_copy_tree(src, dst, &o, &st, why, sizeof(why)), 0);
	assert_true(there("ind/dst/torchinductor/fxgraph/46/f4633/y3pj"));
	assert_true(there("ind/dst/torchinductor/4s/c4sm.so"));
	assert_false(there("ind/dst/torchinductor/locks"));
	assert_true(there("ind/dst/triton/locks/kept"));
	assert_int_equal(st.skipped_locks, 1);

	/* with TORCHINDUCTOR_CACHE_DIR out of the list, its directory is nobody's: copied as is */
	o.inductor_subdir = NULL;
	assert_int_equal(mkdirs("ind/dst2"), 0);
	close(dst);
	dst = opendir_at("ind/dst2");
	assert_int_equal(extc_warm_copy_tree(src, dst, &o, &st, why, sizeof(why)), 0);
	assert_true(there("ind/dst2/torchinductor/locks/c4sm.lock"));
	close(leaf);
	close(dir);
	close(src);
	close(dst);
}

/*
 * Two jobs with new graphs publish to one DIR: the second's new hashes go
 * into Inductor's directories that the first made (fxgraph/, aotautograd/,
 * a code directory), each renamed in whole; a third job seeded from DIR has
 * both. What DIR already holds is never replaced.
 */
static void test_publish_merges_content_addressed_directories(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_manifest mf;
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512];
	int leaf, dir;

	(void)state;
	opts_inductor(&o);
	local_manifest(&mf, "k1");
	make_inductor_cache("mg/job1");
	assert_int_equal(mkdirs("mg/job2/torchinductor/fxgraph/46/f9999"), 0);
	assert_int_equal(mkdirs("mg/job2/torchinductor/fxgraph/7a/f7a00"), 0);
	assert_int_equal(mkdirs("mg/job2/torchinductor/aotautograd/b6f1"), 0);
	assert_int_equal(mkdirs("mg/job2/torchinductor/4s"), 0);
	put("mg/job2/torchinductor/fxgraph/46/f9999/k2", "graph 2");
	put("mg/job2/torchinductor/fxgraph/7a/f7a00/k3", "graph 3");
	put("mg/job2/torchinductor/aotautograd/b6f1/entry", "aot 2");
	put("mg/job2/torchinductor/4s/c4zz.so", "ELF 2");
	put("mg/job2/torchinductor/4s/c4sm.so", "ELF job 2's own");	/* DIR's stays */
	assert_int_equal(mkdirs("mg/dir"), 0);
	dir = opendir_at("mg/dir");
	leaf = opendir_at("mg/job1");
	assert_int_equal(extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)), 0);
	close(leaf);
	leaf = opendir_at("mg/job2");
	assert_int_equal(extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)), 0);
	close(leaf);
	assert_int_equal(rep.published, 4);	/* f9999, 7a, b6f1, c4zz.so */
	assert_int_equal(rep.present, 1);	/* c4sm.so */
	assert_int_equal(rep.failed, 0);
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "mg/dir/torchinductor/4s"), 3);
	/* a third job starts from both */
	assert_int_equal(mkdirs("mg/job3/torchinductor"), 0);
	leaf = opendir_at("mg/job3");
	assert_int_equal(extc_warm_seed(dir, leaf, &o, &st, why, sizeof(why)), EXTC_SEED_DONE);
	close(leaf);
	close(dir);
	assert_true(there("mg/job3/torchinductor/fxgraph/46/f4633/y3pj"));
	assert_true(there("mg/job3/torchinductor/fxgraph/46/f9999/k2"));
	assert_true(there("mg/job3/torchinductor/fxgraph/7a/f7a00/k3"));
	assert_true(there("mg/job3/torchinductor/aotautograd/a5e4/entry"));
	assert_true(there("mg/job3/torchinductor/aotautograd/b6f1/entry"));
	assert_true(there("mg/job3/torchinductor/4s/c4zz.so"));
	{
		char text[32] = "";

		assert_true(fsfx_read_at(fx.rootfd, "mg/job3/torchinductor/4s/c4sm.so", text,
					 sizeof(text)) > 0);
		assert_string_equal(text, "ELF");
	}
}

/*
 * The node pool's warm start by rename: the key's directories move into the
 * fresh leaf whole (same inodes: nothing copied), a second step of the key
 * finds nothing and starts cold, a leaf that is not fresh is left alone, and
 * a Triton kernel's group file names the leaf afterwards.
 */
static void test_take_renames_the_keys_builds_into_the_leaf(void **state)
{
	static const char *const subdirs4[] = { "torch_extensions", "triton", "torchinductor",
						"torch_kernels" };
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	struct stat before, after;
	char why[512], leaf[PATH_MAX], group[PATH_MAX + 64], text[2048] = "";
	int key, l1, l2;

	(void)state;
	opts_init(&o);
	o.subdirs = subdirs4;
	o.nsubdirs = 4;
	o.triton_subdir = "triton";
	o.inductor_subdir = "torchinductor";
	make_cache("tk/key");
	make_inductor_cache("tk/key");
	assert_int_equal(mkdirs("tk/key/triton/K1"), 0);
	assert_int_equal(mkdirs("tk/l1/torch_kernels"), 0);
	assert_int_equal(mkdirs("tk/l1/triton"), 0);
	assert_int_equal(mkdirs("tk/l2/torch_kernels"), 0);
	put("tk/key/triton/K1/k.json", "{}");
	snprintf(group, sizeof(group), "{\"child_paths\": {\"k.json\": \"%s/tk/key/triton/K1/k.json\"}}",
		 fx.root);
	put("tk/key/triton/K1/__grp__k.json", group);
	assert_int_equal(fstatat(fx.rootfd, "tk/key/torch_extensions", &before, 0), 0);
	fsfx_join(leaf, sizeof(leaf), fx.root, "tk/l1");
	o.dest = leaf;
	key = opendir_at("tk/key");
	l1 = opendir_at("tk/l1");
	assert_int_equal(extc_pool_rename_take(key, l1, &o, &st, why, sizeof(why)), EXTC_SEED_DONE);
	assert_int_equal(fstatat(fx.rootfd, "tk/l1/torch_extensions", &after, 0), 0);
	assert_int_equal(before.st_ino, after.st_ino);	/* renamed, not copied */
	assert_true(there("tk/l1/torchinductor/fxgraph/46/f4633/y3pj"));
	assert_true(there("tk/l1/triton/K1/k.json"));
	assert_false(there("tk/key/torch_extensions"));
	assert_false(there("tk/key/triton"));
	/* torch_extensions: good locked noso py311_cpu; triton: abc top.bin locks K1; inductor: 3 */
	assert_int_equal(st.files, 4 + 4 + 4);
	assert_true(fsfx_read_at(fx.rootfd, "tk/l1/triton/K1/__grp__k.json", text, sizeof(text)) > 0);
	snprintf(group, sizeof(group), "\"%s/triton/K1/k.json\"", leaf);
	assert_non_null(strstr(text, group));
	/* a second step of the key: nothing left to take, a cold start */
	l2 = opendir_at("tk/l2");
	assert_int_equal(extc_pool_rename_take(key, l2, &o, &st, why, sizeof(why)), EXTC_SEED_DONE);
	assert_int_equal(st.files, 0);
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "tk/l2"), 1);
	/* a leaf that holds builds already is not fresh */
	assert_int_equal(extc_pool_rename_take(l2, l1, &o, &st, why, sizeof(why)), EXTC_SEED_NOT_FRESH);
	close(key);
	close(l1);
	close(l2);
}

static ino_t ino_of(const char *rel)
{
	struct stat sb;

	assert_int_equal(fstatat(fx.rootfd, rel, &sb, AT_SYMLINK_NOFOLLOW), 0);
	return (sb.st_ino);
}

/* The task's take: the key's builds renamed into the leaf 'leaf'. */
static void take_into(const char *key, const char *leaf, const struct extc_warm_opts *o)
{
	struct extc_copy_stats st;
	char why[512];
	int kfd = opendir_at(key), lfd = opendir_at(leaf);

	assert_int_equal(extc_pool_rename_take(kfd, lfd, o, &st, why, sizeof(why)), EXTC_SEED_DONE);
	close(kfd);
	close(lfd);
}

/*
 * A key of the pool as earlier steps left it (a complete torch build, one
 * in a pyXY_cu group, an Inductor cache without its locks), taken into the
 * leaf 'leaf' at a time after 't' (the step's hold).
 */
static void key_taken(const char *key, const char *leaf, struct extc_warm_opts *o,
		      struct timespec *t)
{
	static const char *const aged[] = {
		"torch_extensions/good", "torch_extensions/py311_cpu/grouped",
		"torch_extensions/py311_cpu", "torch_extensions", "torchinductor",
	};
	char p[PATH_MAX];
	size_t i;

	assert_int_equal(mkdirs("%s/torch_extensions/good", key), 0);
	assert_int_equal(mkdirs("%s/torch_extensions/py311_cpu/grouped", key), 0);
	assert_int_equal(mkdirs("%s/torchinductor/fxgraph/46/f4633", key), 0);
	assert_int_equal(mkdirs("%s/torchinductor/aotautograd/a5e4", key), 0);
	assert_int_equal(mkdirs("%s/torchinductor/4s", key), 0);
	assert_int_equal(mkdirs("%s", leaf), 0);
	put(fsfx_join(p, sizeof(p), key, "torch_extensions/good/good.so"), "ELF");
	put(fsfx_join(p, sizeof(p), key, "torch_extensions/good/build.ninja"), "rule cxx\n");
	put(fsfx_join(p, sizeof(p), key, "torch_extensions/py311_cpu/grouped/grouped.so"), "ELF");
	put(fsfx_join(p, sizeof(p), key, "torchinductor/fxgraph/46/f4633/y3pj"), "graph");
	put(fsfx_join(p, sizeof(p), key, "torchinductor/aotautograd/a5e4/entry"), "aot");
	put(fsfx_join(p, sizeof(p), key, "torchinductor/4s/c4sm.so"), "ELF");
	for (i = 0; i < sizeof(aged) / sizeof(aged[0]); i++)
		assert_int_equal(fsfx_made_ago_at(fx.rootfd, fsfx_join(p, sizeof(p), key, aged[i]), 60), 0);
	opts_inductor(o);
	/* the hold's time, as the step's end is given it: before the take, after the builds */
	fsfx_coarse_past_now(t);
	take_into(key, leaf, o);
}

/* Put the leaf's builds back into the key since the hold at 't'; 0 or -1 as the put-back. */
static int put_back_since(const char *leaf, const char *key, const struct extc_warm_opts *o,
			  const struct timespec *t, struct extc_warm_walk_report *rep)
{
	const struct extc_pool_put_back_limits lim = { NULL, t };
	struct extc_manifest mf;
	char why[512];
	int kfd = opendir_at(key), lfd = opendir_at(leaf), rv;

	assert_int_equal(extc_manifest_local(&mf, "k1", 42, "n1", "/proc/cpuinfo", why, sizeof(why)), 0);
	rv = extc_pool_rename_put_back(lfd, kfd, o, &mf, &lim, rep, why, sizeof(why));
	close(kfd);
	close(lfd);
	return (rv);
}

/* A step that changed nothing: each directory goes back whole, by one rename, the same inode. */
static void test_put_back_moves_an_unchanged_directory_whole(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_warm_opts o;
	struct timespec t;
	ino_t torch, inductor;

	(void)state;
	key_taken("fw/key", "fw/leaf", &o, &t);
	torch = ino_of("fw/leaf/torch_extensions");
	inductor = ino_of("fw/leaf/torchinductor");
	assert_int_equal(put_back_since("fw/leaf", "fw/key", &o, &t, &rep), 0);
	assert_int_equal(rep.whole, 2);
	assert_int_equal(rep.published, 0);
	assert_int_equal(ino_of("fw/key/torch_extensions"), torch);
	assert_int_equal(ino_of("fw/key/torchinductor"), inductor);
	assert_true(there("fw/key/torchinductor/fxgraph/46/f4633/y3pj"));
	assert_true(there("fw/key/torch_extensions/py311_cpu/grouped/grouped.so"));
	assert_false(there("fw/leaf/torch_extensions"));
	assert_false(there("fw/leaf/torchinductor"));
}

/*
 * What the step changed still goes through the rules: a torch build it
 * left incomplete or locked stays out, Inductor's locks/ made at its top
 * level stays out, the rest comes back entry by entry.
 */
static void test_put_back_of_a_changed_directory_keeps_the_rules(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_warm_opts o;
	struct timespec t;
	ino_t torch;

	(void)state;
	key_taken("fc/key", "fc/leaf", &o, &t);
	torch = ino_of("fc/leaf/torch_extensions");
	assert_int_equal(mkdirs("fc/leaf/torch_extensions/half"), 0);
	put("fc/leaf/torch_extensions/half/build.ninja", "rule cxx\n");
	put("fc/leaf/torch_extensions/py311_cpu/grouped/lock", "");
	assert_int_equal(mkdirs("fc/leaf/torchinductor/locks"), 0);
	assert_int_equal(put_back_since("fc/leaf", "fc/key", &o, &t, &rep), 0);
	assert_int_equal(rep.whole, 0);
	assert_true(ino_of("fc/key/torch_extensions") != torch);
	assert_true(there("fc/key/torch_extensions/good/good.so"));
	assert_false(there("fc/key/torch_extensions/half"));
	assert_true(there("fc/leaf/torch_extensions/half"));
	/* a build the step locked (torch building it, one level down in a group) stays out too */
	assert_false(there("fc/key/torch_extensions/py311_cpu/grouped"));
	assert_true(there("fc/leaf/torch_extensions/py311_cpu/grouped/grouped.so"));
	assert_int_equal(rep.incomplete, 2);
	assert_true(there("fc/key/torchinductor/fxgraph/46/f4633/y3pj"));
	assert_false(there("fc/key/torchinductor/locks"));
}

/*
 * A step that only loaded its torch extensions: torch made and removed its
 * lock in each build's directory, and nothing else; the directory still
 * goes back whole.
 */
static void test_put_back_of_builds_only_loaded_is_whole(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_warm_opts o;
	struct timespec t;
	ino_t torch;

	(void)state;
	key_taken("fl/key", "fl/leaf", &o, &t);
	torch = ino_of("fl/leaf/torch_extensions");
	put("fl/leaf/torch_extensions/good/lock", "");
	assert_int_equal(unlinkat(fx.rootfd, "fl/leaf/torch_extensions/good/lock", 0), 0);
	put("fl/leaf/torch_extensions/py311_cpu/grouped/lock", "");
	assert_int_equal(unlinkat(fx.rootfd, "fl/leaf/torch_extensions/py311_cpu/grouped/lock", 0), 0);
	assert_int_equal(put_back_since("fl/leaf", "fl/key", &o, &t, &rep), 0);
	assert_int_equal(rep.whole, 2);
	assert_int_equal(ino_of("fl/key/torch_extensions"), torch);
	assert_true(there("fl/key/torch_extensions/good/good.so"));
	assert_true(there("fl/key/torch_extensions/py311_cpu/grouped/grouped.so"));
	/* a build made again (the linker replaces its file: a new change time) is not: the rules apply */
	key_taken("fr/key", "fr/leaf", &o, &t);
	put("fr/leaf/torch_extensions/good/lock", "");
	assert_int_equal(unlinkat(fx.rootfd, "fr/leaf/torch_extensions/good/lock", 0), 0);
	assert_int_equal(unlinkat(fx.rootfd, "fr/leaf/torch_extensions/good/good.so", 0), 0);
	put("fr/leaf/torch_extensions/good/good.so", "ELF2");
	assert_int_equal(put_back_since("fr/leaf", "fr/key", &o, &t, &rep), 0);
	assert_int_equal(rep.whole, 1);		/* Inductor's */
	assert_true(there("fr/key/torch_extensions/good/good.so"));
}

/*
 * What the site tier publishes is known from the put-back: the entries it
 * moved that hold a file written since the take. torch 1.13 rewrites each
 * build's build.ninja at every load (the same text) and makes and removes
 * its lock: such a build moves entry by entry but is not new. A build made
 * in the step is.
 */
static void test_put_back_counts_only_what_the_step_wrote(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_warm_opts o;
	struct timespec t;

	(void)state;
	key_taken("fn/key", "fn/leaf", &o, &t);
	assert_int_equal(unlinkat(fx.rootfd, "fn/leaf/torch_extensions/good/build.ninja", 0), 0);
	put("fn/leaf/torch_extensions/good/build.ninja", "rule cxx\n");
	put("fn/leaf/torch_extensions/good/lock", "");
	assert_int_equal(unlinkat(fx.rootfd, "fn/leaf/torch_extensions/good/lock", 0), 0);
	assert_int_equal(put_back_since("fn/leaf", "fn/key", &o, &t, &rep), 0);
	assert_int_equal(rep.whole, 1);		/* Inductor's */
	assert_int_equal(rep.published, 2);	/* good and the group, entry by entry */
	assert_int_equal(rep.fresh, 0);
	assert_true(there("fn/key/torch_extensions/good/good.so"));
	/* the next step builds another extension: that one is new */
	key_taken("fb/key", "fb/leaf", &o, &t);
	assert_int_equal(mkdirs("fb/leaf/torch_extensions/made"), 0);
	put("fb/leaf/torch_extensions/made/made.so", "ELF");
	assert_int_equal(put_back_since("fb/leaf", "fb/key", &o, &t, &rep), 0);
	assert_int_equal(rep.fresh, 1);
	assert_true(there("fb/key/torch_extensions/made/made.so"));
}

/* Torch's level looked into: a build locked a level down in a group is enough to walk it. */
static void test_put_back_sees_a_build_changed_in_a_group(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_warm_opts o;
	struct timespec t;

	(void)state;
	key_taken("fg/key", "fg/leaf", &o, &t);
	put("fg/leaf/torch_extensions/py311_cpu/grouped/lock", "");
	assert_int_equal(put_back_since("fg/leaf", "fg/key", &o, &t, &rep), 0);
	assert_int_equal(rep.whole, 1);		/* Inductor's */
	assert_int_equal(rep.incomplete, 1);
	assert_true(there("fg/key/torch_extensions/good/good.so"));
	assert_false(there("fg/key/torch_extensions/py311_cpu/grouped"));
}

/* A key that got a directory of that name meanwhile (another step's): merged entry by entry, as ever. */
static void test_put_back_merges_into_a_directory_the_key_got_meanwhile(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_warm_opts o;
	struct timespec t;
	ino_t theirs;

	(void)state;
	key_taken("fm/key", "fm/leaf", &o, &t);
	assert_int_equal(mkdirs("fm/key/torchinductor/fxgraph/99"), 0);
	put("fm/key/torchinductor/fxgraph/99/theirs", "graph");
	theirs = ino_of("fm/key/torchinductor");
	assert_int_equal(put_back_since("fm/leaf", "fm/key", &o, &t, &rep), 0);
	assert_int_equal(rep.whole, 1);		/* torch's, which the key has not */
	assert_int_equal(ino_of("fm/key/torchinductor"), theirs);
	assert_true(there("fm/key/torchinductor/fxgraph/99/theirs"));
	assert_true(there("fm/key/torchinductor/fxgraph/46/f4633/y3pj"));
	assert_true(there("fm/key/torchinductor/aotautograd/a5e4/entry"));
	assert_true(there("fm/key/torchinductor/4s/c4sm.so"));
}

/*
 * Triton entries survive seed, publish and the pool's move. The fixtures
 * are Triton 3.x's on-disk format and the lookup is this file's own port of
 * its rules, both read in triton-lang/triton at commit
 * 10852d2ef21250fd4ac56e44ff65f82fe88a45fa:
 * - python/triton/runtime/cache.py, FileCacheManager: a kernel's files in
 *   <cache>/<key>/, and put_group() writes "__grp__<name>" holding
 *   json.dumps({"child_paths": {file: absolute path}}); get_group() keeps
 *   only the children whose absolute path exists (os.path.exists);
 * - python/triton/compiler/compiler.py, compile(): the group is that of
 *   "<kernel>.json", and a hit needs that metadata file among its children.
 * Triton itself is not run here (it is not in Debian).
 */
#define TRITON_KEY "ZDYCXQGUYAT6EN2J6QW5Z3XVDOYP5VFU3T3XYGVTLD2JXONQOJXQ"	/* _base32 of a sha256 */
#define TRITON_KERNEL "add_kernel"

/* The seed's and publish's options with Triton's level, its group files naming 'dest'. */
static void opts_triton(struct extc_warm_opts *o, const char *dest)
{
	opts_init(o);
	o->triton_subdir = "triton";
	o->dest = dest;
}

/* '<fx.root>/<rel>' */
static const char *abs_of(char *buf, size_t len, const char *rel)
{
	return (fsfx_join(buf, len, fx.root, rel));
}

/*
 * One kernel as Triton 3.x leaves it in <root>/triton/<TRITON_KEY>: its metadata,
 * binary and IR, and the group file naming them by absolute path (as
 * json.dumps writes it: ", " and ": "). 'drop' names a child to leave
 * out of the directory (a broken entry); 'group' replaces the group text.
 */
static void make_kernel(const char *root, const char *drop, const char *group)
{
	static const char *const files[] = { TRITON_KERNEL ".json", TRITON_KERNEL ".cubin",
					     TRITON_KERNEL ".ptx", TRITON_KERNEL ".ttir" };
	char rel[PATH_MAX], dir[PATH_MAX], text[4 * PATH_MAX + 64];
	size_t i, n;

	snprintf(rel, sizeof(rel), "%s/triton/%s", root, TRITON_KEY);
	assert_int_equal(fsfx_mkdirs(&fx, rel), 0);
	abs_of(dir, sizeof(dir), rel);
	n = (size_t)snprintf(text, sizeof(text), "{\"child_paths\": {");
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char frel[PATH_MAX + 64];

		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"%s\": \"%s/%s\"",
				      i ? ", " : "", files[i], dir, files[i]);
		if (drop != NULL && strcmp(drop, files[i]) == 0)
			continue;
		snprintf(frel, sizeof(frel), "%s/%s", rel, files[i]);
		assert_int_equal(fsfx_write_at(fx.rootfd, frel, files[i], 0644), 0);
	}
	snprintf(text + n, sizeof(text) - n, "}}");
	snprintf(rel, sizeof(rel), "%s/triton/%s/__grp__%s.json", root, TRITON_KEY, TRITON_KERNEL);
	assert_int_equal(fsfx_write_at(fx.rootfd, rel, group != NULL ? group : text, 0644), 0);
}

/*
 * This test's port of Triton's lookup: get_group("<kernel>.json") in the
 * key directory of the cache at 'cache' (absolute), then compile()'s test.
 * Returns whether it is a hit; 'inside' says whether every kept child lies
 * below 'inside'. Reads only what json.dumps writes for plain ASCII paths.
 */
static bool triton_hit(const char *cache, const char *inside, bool *all_inside)
{
	char path[PATH_MAX], text[16384], name[PATH_MAX], child[PATH_MAX];
	const char *p;
	bool hit = false;
	FILE *f;
	size_t n;

	*all_inside = true;
	snprintf(path, sizeof(path), "%s/triton/%s/__grp__%s.json", cache, TRITON_KEY, TRITON_KERNEL);
	f = fopen(path, "r");
	if (f == NULL)
		return (false);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	p = strstr(text, "\"child_paths\": {");
	if (p == NULL)
		return (false);
	p += strlen("\"child_paths\": {");
	while (sscanf(p, " \"%[^\"]\": \"%[^\"]\"", name, child) == 2) {
		struct stat sb;

		if (stat(child, &sb) == 0) {	/* os.path.exists */
			hit |= strcmp(name, TRITON_KERNEL ".json") == 0;
			*all_inside &= strncmp(child, inside, strlen(inside)) == 0 &&
				       child[strlen(inside)] == '/';
		}
		p = strchr(p, ',');
		if (p == NULL)
			break;
		p++;
	}
	return (hit);
}

/* The rule the test relies on: an entry copied without the rewrite misses once its origin goes. */
static void test_a_copy_without_the_rewrite_misses(void **state)
{
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512], a[PATH_MAX], b[PATH_MAX];
	bool inside;
	int src, dst;

	(void)state;
	make_kernel("plain/a", NULL, NULL);
	assert_int_equal(fsfx_mkdirs(&fx, "plain/b"), 0);
	abs_of(a, sizeof(a), "plain/a");
	abs_of(b, sizeof(b), "plain/b");
	assert_true(triton_hit(a, a, &inside));
	assert_true(inside);
	opts_triton(&o, NULL);	/* no destination: no rewrite */
	src = openat(fx.rootfd, "plain/a", O_RDONLY | O_DIRECTORY);
	dst = openat(fx.rootfd, "plain/b", O_RDONLY | O_DIRECTORY);
	assert_int_equal(extc_warm_copy_tree(src, dst, &o, &st, why, sizeof(why)), 0);
	close(src);
	close(dst);
	/* while a is there, b's kernel reads a's files: outside the step's directory */
	assert_true(triton_hit(b, b, &inside));
	assert_false(inside);
	assert_int_equal(renameat(fx.rootfd, "plain/a", fx.rootfd, "gone"), 0);
	assert_false(triton_hit(b, b, &inside));
}

/* A seed's copy is a complete hit by Triton's rule, every child inside the new leaf. */
static void test_seed_rewrites_groups_into_the_leaf(void **state)
{
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512], a[PATH_MAX], leaf[PATH_MAX];
	bool inside;
	int src, leaffd;

	(void)state;
	make_kernel("seed/a", NULL, NULL);
	assert_int_equal(fsfx_mkdirs(&fx, "seed/leaf/triton"), 0);
	abs_of(a, sizeof(a), "seed/a");
	abs_of(leaf, sizeof(leaf), "seed/leaf");
	opts_triton(&o, leaf);
	src = openat(fx.rootfd, "seed/a", O_RDONLY | O_DIRECTORY);
	leaffd = openat(fx.rootfd, "seed/leaf", O_RDONLY | O_DIRECTORY);
	assert_int_equal(extc_warm_seed(src, leaffd, &o, &st, why, sizeof(why)), EXTC_SEED_DONE);
	close(src);
	close(leaffd);
	assert_int_equal(renameat(fx.rootfd, "seed/a", fx.rootfd, "gone2"), 0);
	assert_true(triton_hit(leaf, leaf, &inside));
	assert_true(inside);
	/* no temporary name of the rewrite is left */
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "seed/leaf/triton/" TRITON_KEY), 5);
}

/* A group that does not parse, or names a missing file: the entry is not copied. */
static void test_broken_entries_are_left_out(void **state)
{
	static const char *const groups[] = {
		"{\"child_paths\": {\"add_kernel.json\": ",	/* cut short */
		"{\"child_paths\": [\"add_kernel.json\"]}",	/* a remote cache's list */
		"{\"child_paths\": {}, \"extra\": 1}",
		"{\"child_paths\": {\"add_kernel.json\": \"relative/add_kernel.json\"}}",
		"{\"child_paths\": {\"../x\": \"/x/../x\"}}",
		"{\"child_paths\": {\"add_kernel.json\": \"/elsewhere/other.json\"}}",
	};
	struct extc_warm_opts o;
	struct extc_copy_stats st;
	char why[512], leaf[PATH_MAX], rel[128];
	size_t i;
	int src, leaffd;

	(void)state;
	for (i = 0; i <= sizeof(groups) / sizeof(groups[0]); i++) {
		snprintf(rel, sizeof(rel), "broken%zu/src", i);
		/* the last round: a well-formed group naming a file the entry lacks */
		if (i < sizeof(groups) / sizeof(groups[0]))
			make_kernel(rel, NULL, groups[i]);
		else
			make_kernel(rel, TRITON_KERNEL ".cubin", NULL);
		snprintf(rel, sizeof(rel), "broken%zu/leaf/triton", i);
		assert_int_equal(fsfx_mkdirs(&fx, rel), 0);
		snprintf(rel, sizeof(rel), "broken%zu/leaf", i);
		abs_of(leaf, sizeof(leaf), rel);
		opts_triton(&o, leaf);
		snprintf(rel, sizeof(rel), "broken%zu/src", i);
		src = openat(fx.rootfd, rel, O_RDONLY | O_DIRECTORY);
		snprintf(rel, sizeof(rel), "broken%zu/leaf", i);
		leaffd = openat(fx.rootfd, rel, O_RDONLY | O_DIRECTORY);
		assert_int_equal(extc_warm_seed(src, leaffd, &o, &st, why, sizeof(why)),
				 EXTC_SEED_DONE);
		if (st.skipped_incomplete != 1)
			fail_msg("group %zu: %llu left out, wanted 1", i,
				 (unsigned long long)st.skipped_incomplete);
		snprintf(rel, sizeof(rel), "broken%zu/leaf/triton/%s", i, TRITON_KEY);
		assert_false(fsfx_exists_at(fx.rootfd, rel));
		close(src);
		close(leaffd);
	}
}

/* Publishing copies into DIR naming DIR; the pool's put-back renames, naming the pool. */
static void test_publish_and_move_name_where_the_entry_goes(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_manifest mf;
	struct extc_warm_opts o;
	char why[512], dir[PATH_MAX], pool[PATH_MAX];
	bool inside;
	int leaf, dirfd;

	(void)state;
	assert_int_equal(extc_manifest_local(&mf, "k1", 42, "n1", "/proc/cpuinfo", why, sizeof(why)), 0);
	make_kernel("pub/leaf", NULL, NULL);
	assert_int_equal(fsfx_mkdirs(&fx, "pub/dir"), 0);
	abs_of(dir, sizeof(dir), "pub/dir");
	opts_triton(&o, dir);
	leaf = openat(fx.rootfd, "pub/leaf", O_RDONLY | O_DIRECTORY);
	dirfd = openat(fx.rootfd, "pub/dir", O_RDONLY | O_DIRECTORY);
	assert_int_equal(extc_warm_publish(leaf, dirfd, &o, &mf, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.published, 1);
	close(dirfd);
	assert_true(triton_hit(dir, dir, &inside));
	assert_true(inside);
	/* the pool: renamed, no copy; its group files name the pool */
	assert_int_equal(fsfx_mkdirs(&fx, "pub/pool"), 0);
	abs_of(pool, sizeof(pool), "pub/pool");
	opts_triton(&o, pool);
	dirfd = openat(fx.rootfd, "pub/pool", O_RDONLY | O_DIRECTORY);
	assert_int_equal(extc_pool_rename_put_back(leaf, dirfd, &o, &mf, &(struct extc_pool_put_back_limits){ NULL, NULL }, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.published, 1);
	assert_false(fsfx_exists_at(fx.rootfd, "pub/leaf/triton/" TRITON_KEY));
	assert_true(triton_hit(pool, pool, &inside));
	assert_true(inside);
	close(dirfd);
	close(leaf);
}

/*
 * A step that took a key's Triton kernels and added none: the directory
 * goes back whole, by one rename, its group files still naming the leaf
 * (nothing is rewritten at the end); the next take names its own leaf in
 * them, and Triton's lookup there is a complete hit inside that leaf.
 */
static void test_triton_taken_and_left_alone_goes_back_whole(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_warm_opts o;
	struct timespec t;
	char key[PATH_MAX], l1[PATH_MAX], l2[PATH_MAX];
	bool inside;
	ino_t taken;

	(void)state;
	make_kernel("tw/key", NULL, NULL);
	assert_int_equal(fsfx_made_ago_at(fx.rootfd, "tw/key/triton", 60), 0);
	assert_int_equal(mkdirs("tw/l1"), 0);
	assert_int_equal(mkdirs("tw/l2"), 0);
	abs_of(key, sizeof(key), "tw/key");
	abs_of(l1, sizeof(l1), "tw/l1");
	abs_of(l2, sizeof(l2), "tw/l2");
	fsfx_coarse_past_now(&t);
	opts_triton(&o, l1);
	take_into("tw/key", "tw/l1", &o);
	assert_true(triton_hit(l1, l1, &inside));
	assert_true(inside);
	taken = ino_of("tw/l1/triton");
	opts_triton(&o, key);	/* the end names the key, as the step's end does */
	assert_int_equal(put_back_since("tw/l1", "tw/key", &o, &t, &rep), 0);
	assert_int_equal(rep.whole, 1);
	assert_int_equal(rep.published, 0);
	assert_int_equal(ino_of("tw/key/triton"), taken);
	/* in the key, unread: its group file names the first leaf, which has it no more */
	assert_false(triton_hit(key, key, &inside));
	opts_triton(&o, l2);
	take_into("tw/key", "tw/l2", &o);
	assert_true(triton_hit(l2, l2, &inside));
	assert_true(inside);
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "tw/l2/triton/" TRITON_KEY), 5);
}

static void ctime_of(const char *rel, struct timespec *t)
{
	struct stat sb;

	assert_int_equal(fstatat(fx.rootfd, rel, &sb, AT_SYMLINK_NOFOLLOW), 0);
	*t = sb.st_ctim;
}

static void test_publish_removes_only_old_stages_of_this_user(void **state)
{
	const struct timespec pause = { 0, 50 * 1000 * 1000 };	/* past a coarse clock tick */
	struct extc_warm_walk_report rep;
	struct timespec old, fresh;
	struct extc_manifest mf;
	struct extc_warm_opts o;
	char why[512];
	int leaf, dir;

	(void)state;
	opts_init(&o);
	local_manifest(&mf, "k1");
	make_cache("s/leaf");
	/* what a killed publisher leaves at every level it stages in */
	assert_int_equal(mkdirs("s/pub/torch_extensions/.ext-cache-stage.n9.7.0/sub"), 0);
	assert_int_equal(mkdirs("s/pub/torch_extensions/py311_cpu/.ext-cache-stage.n9.7.1"), 0);
	assert_int_equal(mkdirs("s/pub/triton"), 0);
	put("s/pub/triton/.ext-cache-stage.n9.7.2", "half");
	put("s/pub/.ext-cache-manifest.n9.7", "half");
	/* another user's abandoned stage, and look-alikes that are not stages */
	assert_int_equal(mkdirs("s/pub/triton/.ext-cache-stage.n8.5.0"), 0);
	assert_int_equal(fchownat(fx.rootfd, "s/pub/triton/.ext-cache-stage.n8.5.0", NOBODY, NOBODY,
				  AT_SYMLINK_NOFOLLOW), 0);
	put("s/pub/triton/.ext-cache-stagex", "keep");
	put("s/pub/triton/keep.ext-cache-stage.1", "keep");
	ctime_of("s/pub/triton/keep.ext-cache-stage.1", &old);
	nanosleep(&pause, NULL);
	/* a publisher still at work on another node */
	assert_int_equal(mkdirs("s/pub/triton/.ext-cache-stage.n7.3.0"), 0);
	ctime_of("s/pub/triton/.ext-cache-stage.n7.3.0", &fresh);
	assert_true(old.tv_sec < fresh.tv_sec ||
		    (old.tv_sec == fresh.tv_sec && old.tv_nsec < fresh.tv_nsec));
	o.stale_before = fresh;
	leaf = opendir_at("s/leaf");
	dir = opendir_at("s/pub");
	assert_int_equal(extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.abandoned, 4);
	assert_false(there("s/pub/torch_extensions/.ext-cache-stage.n9.7.0"));
	assert_false(there("s/pub/torch_extensions/py311_cpu/.ext-cache-stage.n9.7.1"));
	assert_false(there("s/pub/triton/.ext-cache-stage.n9.7.2"));
	assert_false(there("s/pub/.ext-cache-manifest.n9.7"));
	assert_true(there("s/pub/.ext-cache-manifest"));
	assert_true(there("s/pub/triton/.ext-cache-stage.n8.5.0"));
	assert_true(there("s/pub/triton/.ext-cache-stagex"));
	assert_true(there("s/pub/triton/keep.ext-cache-stage.1"));
	assert_true(there("s/pub/triton/.ext-cache-stage.n7.3.0"));
	assert_int_equal(rep.published, 4);
	/* without a limit nothing is swept */
	put("s/pub/triton/.ext-cache-stage.n9.8.0", "half");
	memset(&o.stale_before, 0, sizeof(o.stale_before));
	assert_int_equal(extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.abandoned, 0);
	assert_true(there("s/pub/triton/.ext-cache-stage.n9.8.0"));
	close(leaf);
	close(dir);
}

static void test_stale_limit_is_twice_publish_timeout_at_least_an_hour(void **state)
{
	const struct timespec now = { 1800000000, 123 };
	struct timespec limit;

	(void)state;
	extc_warm_sweep_stale_limit(300, &now, &limit);
	assert_int_equal(limit.tv_sec, now.tv_sec - 3600);
	assert_int_equal(limit.tv_nsec, 123);
	extc_warm_sweep_stale_limit(7200, &now, &limit);
	assert_int_equal(limit.tv_sec, now.tv_sec - 14400);
	extc_warm_sweep_stale_limit(86400, &now, &limit);
	assert_int_equal(limit.tv_sec, now.tv_sec - 172800);
}

#define RACERS 3

struct race_result {
	uint64_t published, present, lost, failed;
};

static void test_concurrent_publish_one_wins(void **state)
{
	struct race_result *shared;
	struct extc_manifest mf;
	char big[1 << 16], buf[1 << 16], name[64];
	pid_t pids[RACERS];
	int go[2];
	int i, round, fd;

	(void)state;
	local_manifest(&mf, "k1");
	shared = mmap(NULL, sizeof(*shared) * RACERS, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(shared != MAP_FAILED);
	memset(big, 'x', sizeof(big));
	for (round = 0; round < 5; round++) {
		char leafrel[64], pubrel[64];

		extc_fmt(leafrel, sizeof(leafrel), "r%d/leaf", round);
		extc_fmt(pubrel, sizeof(pubrel), "r%d/pub", round);
		assert_int_equal(mkdirs("%s/torch_extensions/ext", leafrel), 0);
		assert_int_equal(mkdirs("%s/triton", leafrel), 0);
		assert_int_equal(mkdirs("%s", pubrel), 0);
		/* a few large objects widen the window in which the racers overlap */
		for (i = 0; i < 16; i++) {
			extc_fmt(name, sizeof(name), "%s/torch_extensions/ext/o%d.o", leafrel, i);
			fd = openat(fx.rootfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
			assert_true(fd >= 0);
			assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
			close(fd);
		}
		extc_fmt(name, sizeof(name), "%s/torch_extensions/ext/ext.so", leafrel);
		put(name, "ELF final");
		memset(shared, 0, sizeof(*shared) * RACERS);
		assert_int_equal(pipe(go), 0);
		for (i = 0; i < RACERS; i++) {
			pids[i] = fork();
			assert_true(pids[i] >= 0);
			if (pids[i] == 0) {
				struct extc_warm_walk_report rep;
				struct extc_warm_opts o;
				char tag[32], why[512], c;
				int leaf, dir;

				close(go[1]);
				opts_init(&o);
				extc_fmt(tag, sizeof(tag), "n%d.%ld", i, (long)getpid());
				o.tag = tag;
				leaf = openat(fx.rootfd, leafrel, O_RDONLY | O_DIRECTORY);
				dir = openat(fx.rootfd, pubrel, O_RDONLY | O_DIRECTORY);
				if (read(go[0], &c, 1) < 0 || leaf < 0 || dir < 0)
					_exit(2);
				if (extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)) < 0)
					_exit(3);
				shared[i].published = rep.published;
				shared[i].present = rep.present;
				shared[i].lost = rep.lost;
				shared[i].failed = rep.failed;
				_exit(0);
			}
		}
		close(go[0]);
		close(go[1]);	/* all go at once */
		for (i = 0; i < RACERS; i++) {
			int status;

			assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
			assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		}
		{
			uint64_t published = 0, others = 0, failed = 0;
			char rel[128];

			for (i = 0; i < RACERS; i++) {
				published += shared[i].published;
				others += shared[i].present + shared[i].lost;
				failed += shared[i].failed;
			}
			assert_int_equal(published, 1);
			assert_int_equal(others, RACERS - 1);
			assert_int_equal(failed, 0);
			extc_fmt(rel, sizeof(rel), "%s/torch_extensions", pubrel);
			assert_int_equal(fsfx_count_entries_at(fx.rootfd, rel), 1);	/* no stage left */
			extc_fmt(rel, sizeof(rel), "%s/torch_extensions/ext", pubrel);
			assert_int_equal(fsfx_count_entries_at(fx.rootfd, rel), 17);	/* complete */
			for (i = 0; i < 16; i++) {
				extc_fmt(name, sizeof(name), "%s/torch_extensions/ext/o%d.o", pubrel, i);
				assert_int_equal(fsfx_read_at(fx.rootfd, name, buf, sizeof(buf)),
						 (long)sizeof(big) - 1);
			}
			assert_int_equal(fsfx_count_entries_at(fx.rootfd, pubrel), 2);	/* + manifest */
		}
	}
	munmap(shared, sizeof(*shared) * RACERS);
}

static void test_publish_refuses_a_directory_of_another_key(void **state)
{
	struct extc_warm_walk_report rep;
	struct extc_manifest mf, other;
	struct extc_warm_opts o;
	char why[512];
	int leaf, dir;

	(void)state;
	opts_init(&o);
	local_manifest(&mf, "torch2.1-cu121-py311-sm90");
	local_manifest(&other, "torch2.0-cu118-py310-sm80");
	make_cache("pk/leaf");
	assert_int_equal(mkdirs("pk/pub"), 0);
	leaf = opendir_at("pk/leaf");
	dir = opendir_at("pk/pub");
	assert_int_equal(extc_manifest_write(dir, &other, true, "t", why, sizeof(why)),
			 EXTC_MANIFEST_OK);
	assert_int_equal(extc_warm_publish(leaf, dir, &o, &mf, &rep, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "SLURM_EXT_CACHE_KEY='torch2.0-cu118-py310-sm80'"));
	assert_non_null(strstr(why, "this job has 'torch2.1-cu121-py311-sm90'"));
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "pk/pub"), 1);	/* only the manifest */
	close(leaf);
	close(dir);
}

/* ---- manifest ---------------------------------------------------------------- */

static void test_manifest_round_trip_and_mismatch(void **state)
{
	struct extc_manifest a, b, c;
	char text[EXTC_MANIFEST_MAX], why[512];

	(void)state;
	local_manifest(&a, "torch1.13-cpu-py311");
	assert_int_equal(extc_manifest_format(&a, text, sizeof(text)), 0);
	assert_int_equal(extc_manifest_parse(text, &b, why, sizeof(why)), 0);
	assert_string_equal(a.key, b.key);
	assert_string_equal(a.isa, b.isa);
	assert_string_equal(b.job, "42");
	assert_string_equal(b.node, "n1");
	assert_int_equal(extc_manifest_compatible(&b, &a, why, sizeof(why)), 0);
	c = a;
	strcpy(c.key, "torch2.0-cpu-py311");
	assert_int_equal(extc_manifest_compatible(&b, &c, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "SLURM_EXT_CACHE_KEY='torch1.13-cpu-py311' (job 42 on n1)"));
	c = a;
	strcpy(c.isa, "0123456789abcdef");
	assert_int_equal(extc_manifest_compatible(&b, &c, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "another CPU"));
	assert_int_equal(extc_manifest_parse("key=x\n", &b, why, sizeof(why)), -1);
}

/* Only printable ASCII in 's': what a log line may carry. */
static void assert_printable(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			fail_msg("byte 0x%02x reaches a log line", (unsigned char)*s);
	}
}

/*
 * Every field of a manifest is the publisher's (the user's) text: none
 * reaches the reason that is logged (and told the user) unescaped
 * (issue 13, finding 3: job, node and isa were not).
 */
static void test_manifest_fields_are_escaped(void **state)
{
	static const char hostile[] = "format=1\nkey=k\x1b[2J\nar" "ch=x86\x1b]0;t\x07\n"
				      "isa=\x9b" "31m\xff\nj" "ob=\x1b[31m42\r\nnode=n\x1b[1;1H\x08\n";
	struct extc_manifest have, want;
	char why[512];

	(void)state;
	assert_int_equal(extc_manifest_parse(hostile, &have, why, sizeof(why)), 0);
	local_manifest(&want, "other-key");
	/* the key differs: job, node and key are shown */
	assert_int_equal(extc_manifest_compatible(&have, &want, why, sizeof(why)), -1);
	fprintf(stderr, "#   %s\n", why);
	assert_printable(why);
	assert_non_null(strstr(why, "\\x1b[31m42"));
	assert_non_null(strstr(why, "n\\x1b[1;1H\\x08"));
	/* the key matches, the CPU does not: arch, isa and node are shown */
	strcpy(want.key, have.key);
	assert_int_equal(extc_manifest_compatible(&have, &want, why, sizeof(why)), -1);
	fprintf(stderr, "#   %s\n", why);
	assert_printable(why);
	assert_non_null(strstr(why, "\\x9b31m\\xff"));
	assert_non_null(strstr(why, "x86\\x1b]0;t\\x07"));
}

static void test_seed_refused_on_manifest_mismatch_reads_the_file(void **state)
{
	struct extc_manifest mine, there;
	char why[512];
	int dir;

	(void)state;
	assert_int_equal(mkdirs("mm"), 0);
	dir = opendir_at("mm");
	assert_int_equal(extc_manifest_read(dir, &there, why, sizeof(why)), EXTC_MANIFEST_ABSENT);
	local_manifest(&mine, "a");
	assert_int_equal(extc_manifest_write(dir, &mine, false, "t", why, sizeof(why)),
			 EXTC_MANIFEST_OK);
	assert_int_equal(extc_manifest_read(dir, &there, why, sizeof(why)), EXTC_MANIFEST_OK);
	local_manifest(&mine, "b");
	assert_int_equal(extc_manifest_compatible(&there, &mine, why, sizeof(why)), -1);
	/* only_if_absent keeps the first one */
	assert_int_equal(extc_manifest_write(dir, &mine, true, "t", why, sizeof(why)),
			 EXTC_MANIFEST_EXISTS);
	assert_int_equal(extc_manifest_read(dir, &there, why, sizeof(why)), EXTC_MANIFEST_OK);
	assert_string_equal(there.key, "a");
	assert_int_equal(fsfx_count_entries_at(fx.rootfd, "mm"), 1);
	close(dir);
}

static void test_isa_fingerprint(void **state)
{
	char a[40], b[40], c[40];

	(void)state;
	put("cpu1", "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\nbugs\t: x\n");
	put("cpu2", "processor : 0\nflags : fpu  sse2 avx2\tavx512f\n");
	put("cpu3", "processor\t: 0\nflags\t\t: fpu sse2 avx2\n");
	assert_int_equal(extc_manifest_isa_fingerprint("/nonexistent/cpuinfo", a, sizeof(a)), -1);
	{
		char p[PATH_MAX];

		assert_int_equal(extc_manifest_isa_fingerprint(fsfx_join(p, sizeof(p), fx.root, "cpu1"), a, sizeof(a)), 0);
		assert_int_equal(extc_manifest_isa_fingerprint(fsfx_join(p, sizeof(p), fx.root, "cpu2"), b, sizeof(b)), 0);
		assert_int_equal(extc_manifest_isa_fingerprint(fsfx_join(p, sizeof(p), fx.root, "cpu3"), c, sizeof(c)), 0);
	}
	assert_string_equal(a, b);	/* spacing does not matter */
	assert_string_not_equal(a, c);	/* flags do */
	assert_int_equal(strlen(a), 16);
	/* what manifests already hold: the hash (base/hash.c) may not change */
	assert_string_equal(a, "ed43584f081f833f");
}

/* ---- as the user, with a deadline ---------------------------------------------- */

static int report_ids(void *arg, void *res, size_t reslen)
{
	(void)arg;
	extc_fmt(res, reslen, "%u %u %d", (unsigned)geteuid(), (unsigned)getuid(),
		 setuid(0) == 0 ? 1 : 0);
	return (0);
}

static int sleep_long(void *arg, void *res, size_t reslen)
{
	(void)arg;
	(void)res;
	(void)reslen;
	sleep(30);
	return (0);
}

static void test_as_user_drops_for_good_and_is_bounded(void **state)
{
	struct extc_creds cr = { NOBODY, NOBODY, NULL, 0 };
	struct extc_creds root = { 0, 0, NULL, 0 };
	char res[64], why[256];
	uint64_t t0;

	(void)state;
	assert_int_equal(extc_as_user(&cr, 5000, report_ids, NULL, res, sizeof(res), why,
				      sizeof(why)), EXTC_AS_USER_DONE);
	assert_string_equal(res, "65534 65534 0");
	assert_int_equal(extc_as_user(&root, 5000, report_ids, NULL, res, sizeof(res), why,
				      sizeof(why)), EXTC_AS_USER_FAILED);
	assert_non_null(strstr(why, "refusing to work for uid 0"));
	t0 = extc_clock_monotonic_ns();
	assert_int_equal(extc_as_user(&cr, 300, sleep_long, NULL, res, sizeof(res), why,
				      sizeof(why)), EXTC_AS_USER_FAILED);
	assert_non_null(strstr(why, "gave up after"));
	assert_true(extc_clock_monotonic_ns() - t0 < 5000000000ULL);
}

/*
 * The descriptors of the calling process, as "FD=TARGET " in order, and
 * its name: what a seed run through extc_warm_child_run_seed holds.
 */
static void list_fds(char *out, size_t outlen)
{
	char name[16] = "", link[PATH_MAX], target[PATH_MAX];
	size_t used;
	int fds[64], n = 0, i, j;
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");

	prctl(PR_GET_NAME, name, 0, 0, 0);
	used = (size_t)snprintf(out, outlen, "%s:", name);
	while (d != NULL && (de = readdir(d)) != NULL && n < 64) {
		/* the listing's own descriptor is not one the process held */
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d))
			fds[n++] = atoi(de->d_name);
	}
	for (i = 1; i < n; i++) {
		for (j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
			int t = fds[j];

			fds[j] = fds[j - 1];
			fds[j - 1] = t;
		}
	}
	for (i = 0; i < n && used < outlen; i++) {
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[i]);
		len = readlink(link, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = '\0';
		used += (size_t)snprintf(out + used, outlen - used, " %d=%s", fds[i], target);
	}
	if (d != NULL)
		closedir(d);
}

static int seed_lists_fds(void *arg, void *res, size_t reslen)
{
	struct extc_warm_seed_res *r = res;

	(void)arg;
	memset(r, 0, reslen);
	r->seed = EXTC_SEED_DONE;
	list_fds(r->seed_why, sizeof(r->seed_why));
	return (0);
}

/*
 * A seed run from a task holds nothing of what the task inherited from
 * slurmstepd: not a log open for append, not a directory held for its
 * lock, not a descriptor far up the table, none without CLOEXEC; only
 * /dev/null as stdio and its result pipe.
 */
static void test_seed_child_holds_only_its_pipe(void **state)
{
	struct extc_creds cr = { NOBODY, NOBODY, NULL, 0 };
	struct extc_warm_seed_res r;
	char p[PATH_MAX], here[600], want_log[PATH_MAX + 8];
	int log, level, high;
	const char *pipe_link;

	(void)state;
	assert_int_equal(mkdirs("fds/level"), 0);
	log = open(fsfx_path(&fx, p, "fds/slurmd.log"), O_WRONLY | O_CREAT | O_APPEND, 0600);
	level = open(fsfx_path(&fx, p, "fds/level"), O_RDONLY | O_DIRECTORY);
	assert_true(log >= 0 && level >= 0);
	high = dup2(log, 900);
	assert_int_equal(high, 900);
	/* the control: this process holds them, so a child that keeps all would show them */
	list_fds(here, sizeof(here));
	snprintf(want_log, sizeof(want_log), " %d=%s", log, fsfx_path(&fx, p, "fds/slurmd.log"));
	assert_non_null(strstr(here, want_log));
	assert_non_null(strstr(here, " 900="));

	assert_int_equal(extc_warm_child_run_seed(&cr, 10, seed_lists_fds, NULL, &r),
			 EXTC_AS_USER_DONE);
	/* stdio on /dev/null, the result pipe at 3, and nothing else */
	assert_true(extc_has_prefix(r.seed_why, EXTC_WARM_SEED_NAME ": 0=/dev/null 1=/dev/null "
				    "2=/dev/null 3=pipe:["));
	pipe_link = strstr(r.seed_why, " 3=pipe:[");
	assert_non_null(pipe_link);
	assert_null(strchr(pipe_link + 1, ' '));
	close(high);
	close(level);
	close(log);
}

/* Nothing comes back from a seed that runs out of time: it reads as refused, saying why. */
static void test_seed_child_out_of_time_is_a_refused_seed(void **state)
{
	struct extc_creds cr = { NOBODY, NOBODY, NULL, 0 };
	struct extc_warm_seed_res r;

	(void)state;
	assert_int_equal(extc_warm_child_run_seed(&cr, 0, sleep_long, NULL, &r),
			 EXTC_AS_USER_FAILED);
	assert_int_equal(r.seed, EXTC_SEED_REFUSED);
	assert_non_null(strstr(r.seed_why, "gave up after 0 s"));
}

/* ---- the values users and admins give ------------------------------------------ */

static void test_dir_values_and_pattern(void **state)
{
	char why[512], out[EXTC_WARM_PATH_MAX + 8], longv[EXTC_WARM_PATH_MAX + 8];

	(void)state;
	assert_int_equal(extc_seed_path_check_dir("/scratch/me/cache", "--ext-cache-seed", why,
						  sizeof(why)), 0);
	assert_int_equal(extc_seed_path_check_dir("cache", "--ext-cache-seed", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "--ext-cache-seed=cache: not an absolute path"));
	assert_int_equal(extc_seed_path_check_dir("/a\nb", "SLURM_EXT_CACHE_SEED", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "SLURM_EXT_CACHE_SEED=/a\\x0ab: contains control characters"));
	assert_int_equal(extc_seed_path_check_dir("", "--ext-cache-publish", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "empty value"));
	memset(longv, 'a', sizeof(longv));
	longv[0] = '/';
	longv[EXTC_WARM_PATH_MAX + 1] = '\0';
	assert_int_equal(extc_seed_path_check_dir(longv, "--ext-cache-publish", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "longer than 1024 bytes"));

	assert_int_equal(extc_seed_path_check_pattern("/shared/seeds/%U/%u/100%%", why, sizeof(why)), 0);
	assert_int_equal(extc_seed_path_check_pattern("/shared/%j", why, sizeof(why)), -1);
	assert_int_equal(extc_seed_path_check_pattern("shared/%u", why, sizeof(why)), -1);
	assert_int_equal(extc_seed_path_expand("/shared/seeds/%U/%u/100%%", 1001, "alice", out,
					       sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, "/shared/seeds/alice/1001/100%");
	assert_int_equal(extc_seed_path_expand("/s/%U", 1001, "..", out, sizeof(out), why,
					       sizeof(why)), -1);
	assert_int_equal(extc_seed_path_expand("/s/%U", 1001, "a/b", out, sizeof(out), why,
					       sizeof(why)), -1);
	assert_int_equal(extc_seed_path_expand("/s/%u", 1001, NULL, out, sizeof(out), why,
					       sizeof(why)), 0);
	assert_int_equal(extc_seed_path_check_key("torch2.1+cu121 py311 sm90", why, sizeof(why)), 0);
	assert_int_equal(extc_seed_path_check_key("a\tb", why, sizeof(why)), -1);
}

int main(void)
{
	/* make check: any uid; nothing here changes owner or drops privileges */
	const struct CMUnitTest any[] = {
		cmocka_unit_test(test_filters_leave_out_locks_and_incomplete_builds),
		cmocka_unit_test(test_mtimes_kept_to_the_nanosecond),
		cmocka_unit_test(test_symlinks_copied_not_followed),
		cmocka_unit_test(test_seed_copies_and_a_second_seed_does_nothing),
		cmocka_unit_test(test_seed_max_exceeded_copies_nothing),
		cmocka_unit_test(test_seed_container_env_file_is_no_build),
		cmocka_unit_test(test_publish_only_complete_entries),
		cmocka_unit_test(test_inductor_locks_never_published_nor_seeded),
		cmocka_unit_test(test_publish_merges_content_addressed_directories),
		cmocka_unit_test(test_take_renames_the_keys_builds_into_the_leaf),
		cmocka_unit_test(test_put_back_moves_an_unchanged_directory_whole),
		cmocka_unit_test(test_put_back_of_builds_only_loaded_is_whole),
		cmocka_unit_test(test_put_back_of_a_changed_directory_keeps_the_rules),
		cmocka_unit_test(test_put_back_counts_only_what_the_step_wrote),
		cmocka_unit_test(test_put_back_sees_a_build_changed_in_a_group),
		cmocka_unit_test(test_put_back_merges_into_a_directory_the_key_got_meanwhile),
		cmocka_unit_test(test_a_copy_without_the_rewrite_misses),
		cmocka_unit_test(test_seed_rewrites_groups_into_the_leaf),
		cmocka_unit_test(test_broken_entries_are_left_out),
		cmocka_unit_test(test_publish_and_move_name_where_the_entry_goes),
		cmocka_unit_test(test_triton_taken_and_left_alone_goes_back_whole),
		cmocka_unit_test(test_stale_limit_is_twice_publish_timeout_at_least_an_hour),
		cmocka_unit_test(test_concurrent_publish_one_wins),
		cmocka_unit_test(test_publish_refuses_a_directory_of_another_key),
		cmocka_unit_test(test_manifest_round_trip_and_mismatch),
		cmocka_unit_test(test_manifest_fields_are_escaped),
		cmocka_unit_test(test_seed_refused_on_manifest_mismatch_reads_the_file),
		cmocka_unit_test(test_isa_fingerprint),
		cmocka_unit_test(test_dir_values_and_pattern),
	};
	/* make check-root: files of another uid, and the drop to it */
	const struct CMUnitTest root[] = {
		cmocka_unit_test(test_seed_failure_as_the_user_leaves_nothing),
		cmocka_unit_test(test_publish_removes_only_old_stages_of_this_user),
		cmocka_unit_test(test_as_user_drops_for_good_and_is_bounded),
		cmocka_unit_test(test_seed_child_holds_only_its_pipe),
		cmocka_unit_test(test_seed_child_out_of_time_is_a_refused_seed),
	};

	return (TESTMAIN_TIERED("warm", "it drops to uid 65534 and hands it files", any, root,
				setup, teardown));
}
