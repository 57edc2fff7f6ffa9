/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: a torch extension is complete when ninja logged its .so, whatever its lock. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "warm/warm_copy.h"
#include "warm/warm_ninja.h"

#define T0_NS 1795456129541495554ULL	/* a start time as ninja 1.12 logs it */

static char dir[64];
static int dirfd_;

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/extc-ninja.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return (-1);
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
	return (dirfd_ < 0 ? -1 : 0);
}

static int teardown(void **state)
{
	const char *names[] = { "ext.so", "ext_v1.so", ".ninja_log", "lock", "build.ninja", "real_log" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(dirfd_, names[i], 0);
	close(dirfd_);
	return (rmdir(dir));
}

static void put(const char *name, const char *text)
{
	int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* A .so with its mtime at 'ns' nanoseconds since the epoch. */
static void put_so(const char *name, uint64_t ns, struct stat *sb)
{
	struct timespec ts[2] = {
		{ .tv_sec = (time_t)(ns / 1000000000ULL), .tv_nsec = (long)(ns % 1000000000ULL) },
		{ .tv_sec = (time_t)(ns / 1000000000ULL), .tv_nsec = (long)(ns % 1000000000ULL) },
	};

	put(name, "ELF");
	assert_int_equal(utimensat(dirfd_, name, ts, 0), 0);
	assert_int_equal(fstatat(dirfd_, name, sb, 0), 0);
}

static void log_entry(const char *header, uint64_t start_ms, uint64_t end_ms, uint64_t mtime,
		      const char *out)
{
	char text[512];

	snprintf(text, sizeof(text), "%s\n0\t5\t1\tmain.o\tabc\n%llu\t%llu\t%llu\t%s\t0123456789abcdef\n",
		 header, (unsigned long long)start_ms, (unsigned long long)end_ms,
		 (unsigned long long)mtime, out);
	put(EXTC_NINJA_LOG, text);
}

static void test_v5_records_the_output_mtime(void **state)
{
	struct stat sb;

	(void)state;
	put_so("ext.so", T0_NS, &sb);
	log_entry("# ninja log v5", 100, 900, T0_NS, "ext.so");
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_BUILT);
	/* rewritten after the logged link: a relink killed half way */
	put_so("ext.so", T0_NS + 5000000000ULL, &sb);
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_NOT_BUILT);
}

static void test_v6_records_the_start_of_the_command(void **state)
{
	struct stat sb;

	(void)state;
	/* the link ran 2 s; the .so was written 1.9 s after it started */
	put_so("ext.so", T0_NS + 1900000000ULL, &sb);
	log_entry("# ninja log v6", 1000, 3000, T0_NS, "ext.so");
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_BUILT);
	/* older than the command that produced it: not this entry's output */
	put_so("ext.so", T0_NS - 1, &sb);
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_NOT_BUILT);
	put_so("ext.so", T0_NS + 60000000000ULL, &sb);
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_NOT_BUILT);
}

static void test_entries_names_and_malformed_lines(void **state)
{
	struct stat sb;

	(void)state;
	put_so("ext.so", T0_NS, &sb);
	/* no entry for it (the link never finished), a prefix of its name, garbage */
	put(EXTC_NINJA_LOG, "# ninja log v7\n0\t5\t1\tmain.o\tabc\n1\t2\t3\text.s\tabc\n"
			    "x\t2\t3\text.so\tabc\n1\t2\n");
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_NOT_BUILT);
	/* a later entry replaces an earlier one */
	put(EXTC_NINJA_LOG, "# ninja log v5\n0\t5\t1795456129541495554\text.so\tabc\n"
			    "0\t5\t1\text.so\tabc\n");
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_NOT_BUILT);
}

static void test_no_readable_log(void **state)
{
	struct stat sb;

	(void)state;
	put_so("ext.so", T0_NS, &sb);
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_NO_LOG);
	/* a symlink is not followed */
	log_entry("# ninja log v5", 100, 900, T0_NS, "ext.so");
	assert_int_equal(renameat(dirfd_, EXTC_NINJA_LOG, dirfd_, "real_log"), 0);
	assert_int_equal(symlinkat("real_log", dirfd_, EXTC_NINJA_LOG), 0);
	assert_int_equal(extc_ninja_built(dirfd_, "ext.so", &sb), EXTC_NINJA_NO_LOG);
}

/* The rule warm start applies, per torch version's lock. */
static void test_extension_state_with_and_without_the_lock(void **state)
{
	struct stat sb;

	(void)state;
	put("build.ninja", "rule cxx\n");
	put_so("ext.so", T0_NS, &sb);
	put("lock", "");
	/* torch 2.14: the lock file stays after every build */
	log_entry("# ninja log v7", 100, 900, T0_NS, "ext.so");
	assert_int_equal(extc_warm_ninja_ext_state(dirfd_), EXTC_EXT_COMPLETE);
	/* ... and a relink killed half way is still incomplete */
	put_so("ext.so", T0_NS + 9000000000ULL, &sb);
	assert_int_equal(extc_warm_ninja_ext_state(dirfd_), EXTC_EXT_INCOMPLETE);
	/* without a log the lock decides, as for a 1.13 build killed before ninja ran */
	assert_int_equal(unlinkat(dirfd_, EXTC_NINJA_LOG, 0), 0);
	assert_int_equal(extc_warm_ninja_ext_state(dirfd_), EXTC_EXT_INCOMPLETE);
	assert_int_equal(unlinkat(dirfd_, "lock", 0), 0);
	assert_int_equal(extc_warm_ninja_ext_state(dirfd_), EXTC_EXT_COMPLETE);
	/* a second .so ninja did not finish spoils the directory */
	log_entry("# ninja log v5", 100, 900, T0_NS + 9000000000ULL, "ext.so");
	put_so("ext_v1.so", T0_NS, &sb);
	assert_int_equal(extc_warm_ninja_ext_state(dirfd_), EXTC_EXT_INCOMPLETE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v5_records_the_output_mtime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v6_records_the_start_of_the_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entries_names_and_malformed_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_readable_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extension_state_with_and_without_the_lock, setup,
						teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
