/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: the node pool's key, and the fingerprint of an installation. */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsfixture.h"
#include "pool/pool_gpu.h"
#include "pool/pool_level.h"
#include "pool/pool_key.h"
#include "pool/pool_child.h"

static const char *values[EXTC_POOL_KEY_NVARS];

static void key_of(const struct extc_pool_key_in *in, char *out)
{
	assert_int_equal(extc_pool_key(in, out, EXTC_POOL_KEY_LEN + 1), 0);
	assert_int_equal(strlen(out), EXTC_POOL_KEY_LEN);
	assert_true(extc_pool_key_name_ok(out));
}

static void assert_key_differs(const struct extc_pool_key_in *in, const char *ref)
{
	char k[64];

	key_of(in, k);
	assert_string_not_equal(k, ref);
}

static struct extc_pool_key_in base_in(void)
{
	struct extc_pool_key_in in = { NULL, values, "fp0", "x86_64", "isa0", NULL, "" };

	memset(values, 0, sizeof(values));
	values[extc_pool_key_var_index("PATH")] = "/usr/bin:/bin";
	values[extc_pool_key_var_index("VIRTUAL_ENV")] = "/home/u/venv";
	return (in);
}

static void test_the_same_environment_gets_the_same_key(void **state)
{
	struct extc_pool_key_in in = base_in();
	char a[64], b[64];

	(void)state;
	key_of(&in, a);
	key_of(&in, b);
	assert_string_equal(a, b);
}

/*
 * The keys of this version are what they were: a node's pool holds builds
 * under them, so the hash (base/hash.c) and what it is fed change only
 * with EXTC_POOL_KEY_VERSION.
 */
static void test_the_keys_are_pinned(void **state)
{
	struct extc_pool_key_in in = base_in();
	char k[64];

	(void)state;
	key_of(&in, k);
	assert_string_equal(k, "67e31958935432262e68486c390ff080");
	in.user_key = "mykey";
	key_of(&in, k);
	assert_string_equal(k, "43b9176de8412d62d4b5f3a70777e9a6");
	in.user_key = NULL;
	in.container = "/img/a.sif";
	key_of(&in, k);
	assert_string_equal(k, "60344c5c0d60420e96a215c3636e4939");
	in.container = NULL;
	in.gpus = "nvidia:NVIDIA A100-SXM4-80GB;amd:90400";
	key_of(&in, k);
	assert_string_equal(k, "c36dc741049614bd6b3054fc35af3a19");
}

/* Each listed variable, changed or unset, and each other input, gives another key. */
static void test_every_input_changes_the_key(void **state)
{
	struct extc_pool_key_in in = base_in();
	char ref[64];
	size_t i;

	(void)state;
	key_of(&in, ref);
	for (i = 0; i < EXTC_POOL_KEY_NVARS; i++) {
		const char *was = values[i];

		values[i] = "something else";
		assert_key_differs(&in, ref);
		values[i] = was == NULL ? "" : NULL;	/* set-but-empty differs from unset */
		assert_key_differs(&in, ref);
		values[i] = was;
	}
	{
		/* the installation's fingerprint, the machine, the CPU, the image, the GPUs */
		const char **others[] = { &in.install, &in.arch, &in.isa, &in.container, &in.gpus };

		for (i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
			const char *was = *others[i];

			*others[i] = "changed";
			assert_key_differs(&in, ref);
			*others[i] = was;
		}
	}
}

/* An image's builds never share a key with the host's, nor with another image's. */
static void test_the_image_separates_keys(void **state)
{
	struct extc_pool_key_in in = base_in();
	char host[64], empty[64], a[64], a_user[64], host_user[64];

	(void)state;
	key_of(&in, host);
	in.container = "";	/* an image whose identity hashes to nothing is still not the host */
	key_of(&in, empty);
	assert_string_not_equal(empty, host);
	in.container = "file:1:2:3:4.000000005";
	key_of(&in, a);
	assert_string_not_equal(a, host);
	assert_string_not_equal(a, empty);
	in.user_key = "k";
	key_of(&in, a_user);
	in.container = NULL;
	key_of(&in, host_user);
	assert_string_not_equal(a_user, host_user);
}

static void test_field_boundaries_count(void **state)
{
	struct extc_pool_key_in in = base_in();
	char a[64], b[64];

	(void)state;
	values[0] = "ab";
	values[1] = "c";
	key_of(&in, a);
	values[0] = "a";
	values[1] = "bc";
	key_of(&in, b);
	assert_string_not_equal(a, b);
}

static void test_a_user_key_replaces_the_environment_not_the_machine(void **state)
{
	struct extc_pool_key_in in = base_in();
	char a[64], b[64], derived[64];

	(void)state;
	key_of(&in, derived);
	in.user_key = "k1";
	key_of(&in, a);
	assert_string_not_equal(a, derived);
	values[extc_pool_key_var_index("PATH")] = "/elsewhere";
	in.install = "fp9";
	key_of(&in, b);
	assert_string_equal(a, b);
	in.isa = "isa1";
	assert_key_differs(&in, a);
	in.isa = "isa0";
	in.user_key = "k2";
	assert_key_differs(&in, a);
}

static void test_key_names_and_the_variable_list(void **state)
{
	(void)state;
	assert_true(extc_pool_key_name_ok("0123456789abcdef0123456789abcdef"));
	assert_false(extc_pool_key_name_ok("0123456789abcdef0123456789abcde"));
	assert_false(extc_pool_key_name_ok("0123456789abcdef0123456789abcdef0"));
	assert_false(extc_pool_key_name_ok("0123456789ABCDEF0123456789abcdef"));
	assert_false(extc_pool_key_name_ok("0123456789abcdef0123456789abcde/"));
	assert_false(extc_pool_key_name_ok(""));
	assert_int_equal(extc_pool_key_var_index("VIRTUAL_ENV"), 0);
	assert_true(extc_pool_key_var_index("CUDA_HOME") > 0);
	assert_int_equal(extc_pool_key_var_index("HOME"), -1);
	assert_null(extc_pool_key_vars[EXTC_POOL_KEY_NVARS]);
}

/* ---- the installation's fingerprint, on a fake prefix ---- */

static char top[64];

static void put(const char *rel, const char *text, mode_t mode)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void make_dirs(const char *rel)
{
	char path[PATH_MAX];

	assert_int_equal(fsfx_mkdirs_path(fsfx_join(path, sizeof(path), top, rel)), 0);
}

static void fp_of(const char *prefix_rel, const char *venv_rel, char *out)
{
	char path[PATH_MAX], venv[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/bin:/nonexistent", top, prefix_rel);
	snprintf(venv, sizeof(venv), "%s/%s", top, venv_rel);
	assert_int_equal(extc_pool_key_install_fp(path, venv, NULL, NULL, out, EXTC_POOL_FP_LEN + 1), 0);
	assert_int_equal(strlen(out), EXTC_POOL_FP_LEN);
}

static void test_the_fingerprint_follows_the_installed_software(void **state)
{
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	char ref[32], k[32], path[PATH_MAX];

	(void)state;
	assert_int_equal(fsfx_tmpdir(top, sizeof(top)), 0);
	make_dirs("env/bin");
	make_dirs("env/lib/python3.11/site-packages/torch");
	make_dirs("other/bin");
	put("env/bin/python3", "#!/bin/sh\n", 0755);
	put("other/bin/python3", "#!/bin/sh\n# another\n", 0755);
	put("env/lib/python3.11/site-packages/torch/version.py", "__version__ = '2.6.0'\n", 0644);
	fp_of("env", "env", ref);
	fp_of("env", "env", k);
	assert_string_equal(k, ref);
	/* torch upgraded in place: version.py rewritten (other size and time) */
	put("env/lib/python3.11/site-packages/torch/version.py", "__version__ = '2.14.1'\n", 0644);
	snprintf(path, sizeof(path), "%s/env/lib/python3.11/site-packages/torch/version.py", top);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	fp_of("env", "env", k);
	assert_string_not_equal(k, ref);
	strcpy(ref, k);
	/* a package added: a name installed in site-packages */
	make_dirs("env/lib/python3.11/site-packages/newpkg");
	fp_of("env", "env", k);
	assert_string_not_equal(k, ref);
	strcpy(ref, k);
	make_dirs("env/lib/python3.11/site-packages/newpkg-1.0.dist-info");
	fp_of("env", "env", k);
	assert_string_not_equal(k, ref);
	strcpy(ref, k);
	/* what Python and editors make by themselves is not an installation */
	make_dirs("env/lib/python3.11/site-packages/__pycache__");
	make_dirs("env/lib/python3.11/site-packages/.hidden");
	fp_of("env", "env", k);
	assert_string_equal(k, ref);
	/* another python3 first on PATH */
	fp_of("other", "env", k);
	assert_string_not_equal(k, ref);
	assert_int_equal(fsfx_rmtree(top), 0);
}

/* Make 'rel' a file of 'text', its modification time 't' (as a copy made with its times). */
static void put_at(const char *rel, const char *text, mode_t mode, const struct timespec *t)
{
	struct timespec times[2] = { *t, *t };
	char path[PATH_MAX];

	put(rel, text, mode);
	snprintf(path, sizeof(path), "%s/%s", top, rel);
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* A prefix "env" with a python3 and torch installed, every file's time 'made'; python3's inode. */
static ino_t make_env(const struct timespec *made)
{
	char path[PATH_MAX];
	struct stat sb;

	make_dirs("env/bin");
	make_dirs("env/lib/python3.11/site-packages/torch");
	make_dirs("env/lib/python3.11/site-packages/torch-2.6.0.dist-info");
	put_at("env/bin/python3", "#!/bin/sh\n", 0755, made);
	put_at("env/lib/python3.11/site-packages/torch/version.py", "__version__ = '2.6.0'\n", 0644,
	       made);
	snprintf(path, sizeof(path), "%s/env/bin/python3", top);
	assert_int_equal(stat(path, &sb), 0);
	return (sb.st_ino);
}

/*
 * The same installation at the same paths on another node: every file a
 * new inode (made again here, the first one moved aside), the same names,
 * texts and times. The fingerprint is the same: it hashes no device or
 * inode number.
 */
static void test_the_fingerprint_is_the_same_for_a_copy_at_other_inodes(void **state)
{
	const struct timespec made = { 1700000000, 123456789 };
	char ref[32], k[32], first[PATH_MAX], aside[PATH_MAX];
	ino_t ino;

	(void)state;
	assert_int_equal(fsfx_tmpdir(top, sizeof(top)), 0);
	ino = make_env(&made);
	fp_of("env", "env", ref);
	snprintf(first, sizeof(first), "%s/env", top);
	snprintf(aside, sizeof(aside), "%s/env.first", top);
	assert_int_equal(rename(first, aside), 0);	/* still there: the next inodes differ */
	assert_true(make_env(&made) != ino);
	fp_of("env", "env", k);
	assert_string_equal(k, ref);
	/* the copy's python3 of another time is another installation */
	put_at("env/bin/python3", "#!/bin/sh\n", 0755, &(const struct timespec){ 1700000001, 0 });
	fp_of("env", "env", k);
	assert_string_not_equal(k, ref);
	assert_int_equal(fsfx_rmtree(top), 0);
}

/* The image file's identity, as the fingerprint process reads it. */
static void image_id_of(const char *rel, char *out, size_t len)
{
	char image[PATH_MAX];
	struct extc_pool_fp_res r;

	snprintf(image, sizeof(image), "%s/%s", top, rel);
	assert_int_equal(extc_pool_child_fp(&(struct extc_pool_fp_arg){ "", NULL, NULL, NULL, image },
					    &r, sizeof(r)), 0);
	snprintf(out, len, "%s", r.image_id);
}

/*
 * An image is known by what it holds, not where or when it was written:
 * the same bytes elsewhere or later are the same image; other bytes of the
 * same size are another; a directory or a FIFO is none (and no FIFO is
 * opened).
 */
static void test_an_image_is_known_by_its_content(void **state)
{
	char a[EXTC_POOL_IMAGE_ID_MAX], b[EXTC_POOL_IMAGE_ID_MAX], path[PATH_MAX];

	(void)state;
	assert_int_equal(fsfx_tmpdir(top, sizeof(top)), 0);
	put_at("a.sqsh", "image A\n", 0644, &(const struct timespec){ 1700000000, 0 });
	put_at("copy.sqsh", "image A\n", 0644, &(const struct timespec){ 1800000000, 5 });
	put_at("b.sqsh", "image B\n", 0644, &(const struct timespec){ 1700000000, 0 });
	image_id_of("a.sqsh", a, sizeof(a));
	assert_int_equal(strncmp(a, "file:8:", 7), 0);
	image_id_of("copy.sqsh", b, sizeof(b));
	assert_string_equal(a, b);
	image_id_of("b.sqsh", b, sizeof(b));
	assert_string_not_equal(a, b);
	make_dirs("sandbox");
	image_id_of("sandbox", b, sizeof(b));
	assert_string_equal(b, "");
	snprintf(path, sizeof(path), "%s/fifo", top);
	assert_int_equal(mkfifo(path, 0644), 0);
	image_id_of("fifo", b, sizeof(b));
	assert_string_equal(b, "");
	assert_int_equal(fsfx_rmtree(top), 0);
}

/* Root's record of a key: one written under other key rules is old; an empty one is not. */
static void test_the_record_says_the_key_version(void **state)
{
	static const struct {
		const char *text;
		bool old, unmeasurable;
		uint64_t bytes;
	} cases[] = {
		{ "", false, false, 0 },	/* held, not yet accounted */
		{ "bytes=10\ninodes=1\n", true, false, 10 },	/* before versions */
		{ "version=1\nbytes=10\ninodes=1\n", true, false, 10 },
		{ "version=2\nbytes=10\ninodes=1\n", true, false, 10 },
		{ "version=3\nbytes=10\ninodes=1\n", true, false, 10 },
		{ "version=4\nbytes=10\ninodes=1\n", false, false, 10 },
		{ "version=4\nunmeasurable: too deep\n", false, true, 0 },
		{ "unmeasurable: too deep\n", true, true, 0 },
	};
	char dir[PATH_MAX], text[64];
	size_t i;
	int dfd;

	(void)state;
	assert_int_equal(EXTC_POOL_KEY_VERSION, 4);	/* the cases above speak of version 4 */
	assert_int_equal(fsfx_tmpdir(dir, sizeof(dir)), 0);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct extc_pool_record rec;
		int fd;

		snprintf(text, sizeof(text), "r%zu", i);
		assert_int_equal(fsfx_write_at(dfd, text, cases[i].text, 0600), 0);
		fd = openat(dfd, text, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(extc_pool_level_read_record(fd, &rec), 0);
		close(fd);
		if (rec.old_version != cases[i].old || rec.unmeasurable != cases[i].unmeasurable ||
		    rec.bytes != cases[i].bytes)
			fail_msg("record \"%s\": old %d unmeasurable %d bytes %llu", cases[i].text,
				 rec.old_version, rec.unmeasurable, (unsigned long long)rec.bytes);
	}
	close(dfd);
	assert_int_equal(fsfx_rmtree(dir), 0);
}

/* ---- the node's GPU architectures, from a fake /proc and /sys ---- */

#define A100 "NVIDIA A100-SXM4-80GB"
#define NV_GPUS "proc/driver/nvidia/gpus"
#define KFD_NODES "sys/class/kfd/kfd/topology/nodes"

/* NVIDIA GPU number 'i' of model 'model', as its driver describes it in /proc. */
static void put_nvidia(int i, const char *model)
{
	char rel[PATH_MAX], text[512], path[PATH_MAX];

	snprintf(rel, sizeof(rel), NV_GPUS "/0000:%02x:00.0", i + 1);
	make_dirs(rel);
	snprintf(text, sizeof(text), "Model: \t\t %s\nIRQ:   \t\t 42\nGPU UUID: \t GPU-%d\n"
		 "Bus Type: \t PCIe\nDevice Minor: \t %d\n", model, i, i);
	strcat(rel, "/information");
	/* the driver's file is read-only: a test not run as root cannot open it to write it again */
	unlink(fsfx_join(path, sizeof(path), top, rel));
	put(rel, text, 0444);
}

/* kfd topology node 'i' of gfx_target_version 'target' (0: a CPU's node), as in /sys. */
static void put_kfd(int i, unsigned target)
{
	char rel[PATH_MAX], text[512];

	snprintf(rel, sizeof(rel), KFD_NODES "/%d", i);
	make_dirs(rel);
	snprintf(text, sizeof(text), "cpu_cores_count %u\nsimd_count %u\ngfx_target_version %u\n"
		 "vendor_id %u\n", target == 0 ? 64 : 0, target == 0 ? 0 : 304, target,
		 target == 0 ? 0 : 4098);
	strcat(rel, "/properties");
	put(rel, text, 0444);
}

/* The fake tree's GPU text, and how many architectures it names. */
static int gpus_of(char *out)
{
	char proc[PATH_MAX], sys[PATH_MAX];

	snprintf(proc, sizeof(proc), "%s/proc", top);
	snprintf(sys, sizeof(sys), "%s/sys", top);
	return (extc_pool_gpu_archs(proc, sys, out, EXTC_POOL_GPU_TEXT_MAX));
}

/* The key of base_in's environment on a node of GPUs 'gpus'. */
static void key_with_gpus(const char *gpus, char *out)
{
	struct extc_pool_key_in in = base_in();

	in.gpus = gpus;
	key_of(&in, out);
}

/*
 * Models, not counts: two A100 and eight A100 are one key; another model
 * is another key, and a node of both models a third. Builds target the
 * architecture, whichever and however many of the GPUs a step is given.
 */
static void test_gpu_models_not_counts_make_the_key(void **state)
{
	static char text[EXTC_POOL_GPU_TEXT_MAX];
	char two[64], eight[64], h100[64], mixed[64];
	int i;

	(void)state;
	assert_int_equal(fsfx_tmpdir(top, sizeof(top)), 0);
	for (i = 0; i < 2; i++)
		put_nvidia(i, A100);
	assert_int_equal(gpus_of(text), 1);
	assert_string_equal(text, "nvidia:" A100);
	key_with_gpus(text, two);
	for (i = 2; i < 8; i++)
		put_nvidia(i, A100);
	assert_int_equal(gpus_of(text), 1);
	key_with_gpus(text, eight);
	assert_string_equal(eight, two);
	/* one of them another model: both named, sorted */
	put_nvidia(7, "NVIDIA H100 80GB HBM3");
	assert_int_equal(gpus_of(text), 2);
	assert_string_equal(text, "nvidia:" A100 ";nvidia:NVIDIA H100 80GB HBM3");
	key_with_gpus(text, mixed);
	assert_string_not_equal(mixed, two);
	/* only the other model */
	for (i = 0; i < 7; i++)
		put_nvidia(i, "NVIDIA H100 80GB HBM3");
	assert_int_equal(gpus_of(text), 1);
	key_with_gpus(text, h100);
	assert_string_not_equal(h100, two);
	assert_string_not_equal(h100, mixed);
	assert_int_equal(fsfx_rmtree(top), 0);
}

/* AMD: each GPU's gfx target, a CPU's node (0) left out; with NVIDIA's after them. */
static void test_gpu_amd_targets(void **state)
{
	static char text[EXTC_POOL_GPU_TEXT_MAX];
	char none[64], k[64];

	(void)state;
	assert_int_equal(fsfx_tmpdir(top, sizeof(top)), 0);
	put_kfd(0, 0);
	assert_int_equal(gpus_of(text), 0);
	assert_string_equal(text, "");
	put_kfd(1, 90400);
	put_kfd(2, 90400);
	put_kfd(3, 90010);
	put_kfd(4, 0);
	assert_int_equal(gpus_of(text), 2);
	assert_string_equal(text, "amd:90010;amd:90400");
	key_with_gpus("", none);
	key_with_gpus(text, k);
	assert_string_not_equal(k, none);
	put_nvidia(0, A100);
	assert_int_equal(gpus_of(text), 3);
	assert_string_equal(text, "nvidia:" A100 ";amd:90010;amd:90400");
	assert_int_equal(fsfx_rmtree(top), 0);
}

/* No GPU: no driver's directory, or an empty one, is "" (the key of a GPU-less node). */
static void test_gpu_none_is_empty(void **state)
{
	static char text[EXTC_POOL_GPU_TEXT_MAX];
	char small[8] = "x";

	(void)state;
	assert_int_equal(fsfx_tmpdir(top, sizeof(top)), 0);
	assert_int_equal(gpus_of(text), 0);
	assert_string_equal(text, "");
	make_dirs(NV_GPUS);
	make_dirs(KFD_NODES);
	assert_int_equal(gpus_of(text), 0);
	assert_string_equal(text, "");
	/* a buffer that could not hold every node's text is refused, and left "" */
	assert_int_equal(extc_pool_gpu_archs("/proc", "/sys", small, sizeof(small)), -1);
	assert_string_equal(small, "");
	assert_int_equal(fsfx_rmtree(top), 0);
}

/*
 * What is not the driver's plain file is ignored: a symbolic link to a
 * file naming a model, a FIFO (never waited on), a directory, a file too
 * large, a line of another form; the plain file beside them still counts.
 */
static void test_gpu_odd_files_are_ignored(void **state)
{
	static char text[EXTC_POOL_GPU_TEXT_MAX];
	char path[PATH_MAX], target[PATH_MAX], *big;
	size_t n = EXTC_POOL_GPU_FILE_MAX + 1;

	(void)state;
	assert_int_equal(fsfx_tmpdir(top, sizeof(top)), 0);
	put_nvidia(0, A100);
	put("elsewhere", "Model: \t\t NVIDIA Planted\n", 0644);
	make_dirs(NV_GPUS "/0000:10:00.0");
	snprintf(path, sizeof(path), "%s/" NV_GPUS "/0000:10:00.0/information", top);
	snprintf(target, sizeof(target), "%s/elsewhere", top);
	assert_int_equal(symlink(target, path), 0);
	make_dirs(NV_GPUS "/0000:11:00.0");
	snprintf(path, sizeof(path), "%s/" NV_GPUS "/0000:11:00.0/information", top);
	assert_int_equal(mkfifo(path, 0644), 0);
	make_dirs(NV_GPUS "/0000:12:00.0/information");
	make_dirs(NV_GPUS "/0000:13:00.0");
	big = malloc(n + 64);
	assert_non_null(big);
	memset(big, 'x', n + 64);
	memcpy(big, "Model: NVIDIA Large\n", 20);
	big[n + 63] = '\0';
	put(NV_GPUS "/0000:13:00.0/information", big, 0444);
	free(big);
	make_dirs(NV_GPUS "/0000:14:00.0");
	put(NV_GPUS "/0000:14:00.0/information", "Model:\t\t \nModelName: NVIDIA Other\n", 0444);
	make_dirs(NV_GPUS "/0000:15:00.0");
	put(NV_GPUS "/0000:15:00.0/information", "Model: NVIDIA \x01Ctl\n", 0444);
	make_dirs(KFD_NODES "/1");
	put(KFD_NODES "/1/properties", "gfx_target_version 0x9040\n", 0444);
	make_dirs(KFD_NODES "/2");
	put(KFD_NODES "/2/properties", "gfx_target_versions 90400\n", 0444);
	assert_int_equal(gpus_of(text), 1);
	assert_string_equal(text, "nvidia:" A100);
	assert_int_equal(fsfx_rmtree(top), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_same_environment_gets_the_same_key),
		cmocka_unit_test(test_the_keys_are_pinned),
		cmocka_unit_test(test_every_input_changes_the_key),
		cmocka_unit_test(test_field_boundaries_count),
		cmocka_unit_test(test_the_image_separates_keys),
		cmocka_unit_test(test_the_record_says_the_key_version),
		cmocka_unit_test(test_a_user_key_replaces_the_environment_not_the_machine),
		cmocka_unit_test(test_key_names_and_the_variable_list),
		cmocka_unit_test(test_the_fingerprint_follows_the_installed_software),
		cmocka_unit_test(test_the_fingerprint_is_the_same_for_a_copy_at_other_inodes),
		cmocka_unit_test(test_an_image_is_known_by_its_content),
		cmocka_unit_test(test_gpu_models_not_counts_make_the_key),
		cmocka_unit_test(test_gpu_amd_targets),
		cmocka_unit_test(test_gpu_none_is_empty),
		cmocka_unit_test(test_gpu_odd_files_are_ignored),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
