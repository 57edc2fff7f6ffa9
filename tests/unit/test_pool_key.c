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
	struct extc_pool_key_in in = { NULL, values, "fp0", "x86_64", "isa0", NULL };

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
	assert_string_equal(k, "f47ede3d6d623b8918bbac3a3aff36c4");
	in.user_key = "mykey";
	key_of(&in, k);
	assert_string_equal(k, "47db97c65cf04029a80a67cf6a1c6676");
	in.user_key = NULL;
	in.container = "/img/a.sif";
	key_of(&in, k);
	assert_string_equal(k, "fda215d5eaa0e1e30665a8e15ad59b50");
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
		/* the installation's fingerprint, the machine, the CPU, the image */
		const char **others[] = { &in.install, &in.arch, &in.isa, &in.container };

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
		{ "version=3\nbytes=10\ninodes=1\n", false, false, 10 },
		{ "version=3\nunmeasurable: too deep\n", false, true, 0 },
		{ "unmeasurable: too deep\n", true, true, 0 },
	};
	char dir[PATH_MAX], text[64];
	size_t i;
	int dfd;

	(void)state;
	assert_int_equal(EXTC_POOL_KEY_VERSION, 3);	/* the cases above speak of version 3 */
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
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
