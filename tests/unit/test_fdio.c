/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: fdio.h, a listing that keeps its descriptor, whole writes, "." and "..". */
#include <dirent.h>
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fdio.h"

/* a fresh directory holding the files "a" and "b", opened O_DIRECTORY */
struct dir {
	char path[PATH_MAX];
	int fd;
};

static int dir_setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));
	const char *tmp = getenv("TMPDIR");
	int a, b;

	if (d == NULL)
		return (-1);
	*state = d;
	snprintf(d->path, sizeof(d->path), "%s/extc-fdio-XXXXXX", tmp ? tmp : "/tmp");
	if (mkdtemp(d->path) == NULL)
		return (-1);
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0)
		return (-1);
	a = openat(d->fd, "a", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	b = openat(d->fd, "b", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	return (a < 0 || b < 0 ? -1 : 0);
}

/* every name a case makes, then the directory: one left behind fails the case */
static int dir_teardown(void **state)
{
	static const char *const names[] = { "a", "b", "w", "short" };
	struct dir *d = *state;
	size_t i;
	int rv;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(d->fd, names[i], 0);
	close(d->fd);
	rv = rmdir(d->path);
	free(d);
	return (rv);
}

/* the entries of 'd' but "." and "..", read to the end and closed */
static int count_and_close(DIR *d)
{
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += !extc_fdio_is_dot(de->d_name);
	closedir(d);
	return (n);
}

/* the lowest free descriptor: the same before and after a call that leaves nothing open */
static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	close(fd);
	return (fd);
}

static void test_opendir_keeps_the_descriptor(void **state)
{
	struct dir *d = *state;
	struct stat sb;
	int fd;

	assert_int_equal(count_and_close(extc_fdio_opendir(d->fd)), 2);
	/* closedir closed the stream's own duplicate, not the caller's descriptor */
	assert_int_equal(fstat(d->fd, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	fd = openat(d->fd, "a", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);
}

/* the duplicate shares the file offset: each listing still starts at the first entry */
static void test_opendir_lists_from_the_start_every_time(void **state)
{
	struct dir *d = *state;
	DIR *first = extc_fdio_opendir(d->fd);
	DIR *second;

	assert_non_null(first);
	while (readdir(first) != NULL)
		;
	second = extc_fdio_opendir(d->fd);
	assert_int_equal(count_and_close(second), 2);
	closedir(first);
	assert_int_equal(count_and_close(extc_fdio_opendir(d->fd)), 2);
}

/* the stream's descriptor is not inherited by a program the process runs */
static void test_opendir_stream_is_close_on_exec(void **state)
{
	struct dir *d = *state;
	DIR *dir = extc_fdio_opendir(d->fd);

	assert_non_null(dir);
	assert_true(dirfd(dir) != d->fd);
	assert_true((fcntl(dirfd(dir), F_GETFD) & FD_CLOEXEC) != 0);
	closedir(dir);
}

/* NULL with the call's errno, and nothing left open */
static void test_opendir_refusals_leave_nothing_open(void **state)
{
	struct dir *d = *state;
	int before = lowest_free_fd();
	int file = openat(d->fd, "a", O_RDONLY | O_CLOEXEC);

	assert_true(file >= 0);
	errno = 0;
	assert_null(extc_fdio_opendir(-1));
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_null(extc_fdio_opendir(file));	/* fdopendir's refusal, after the dup */
	assert_int_equal(errno, ENOTDIR);
	close(file);
	assert_int_equal(lowest_free_fd(), before);
}

static void test_write_all_writes_every_byte(void **state)
{
	struct dir *d = *state;
	static char buf[1 << 20], back[1 << 20];
	struct stat sb;
	size_t i;
	int fd = openat(d->fd, "w", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7 + i / 251);
	assert_int_equal(extc_fdio_write_all(fd, buf, sizeof(buf)), 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, sizeof(buf));
	assert_int_equal(pread(fd, back, sizeof(back), 0), sizeof(back));
	assert_memory_equal(buf, back, sizeof(buf));
	/* nothing to write is done at once, whatever the descriptor */
	assert_int_equal(extc_fdio_write_all(-1, buf, 0), 0);
	close(fd);
}

static void test_write_all_fails_with_the_errno(void **state)
{
	int p[2];

	(void)state;
	errno = 0;
	assert_int_equal(extc_fdio_write_all(-1, "x", 1), -1);
	assert_int_equal(errno, EBADF);
	/* a pipe nobody reads: EPIPE (the signal ignored, as the plugin's helpers do) */
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	errno = 0;
	assert_int_equal(extc_fdio_write_all(p[1], "x", 1), -1);
	assert_int_equal(errno, EPIPE);
	signal(SIGPIPE, SIG_DFL);
	close(p[1]);
}

/*
 * A short write goes on from where it stopped: past RLIMIT_FSIZE the first
 * write is cut at the limit, and the next one fails with EFBIG. In a child,
 * so that the limit and the signal stay there.
 */
static void test_write_all_goes_on_after_a_short_write(void **state)
{
	struct dir *d = *state;
	static char buf[5000];
	struct stat sb;
	int status;
	pid_t pid;
	int fd = openat(d->fd, "short", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	memset(buf, 'x', sizeof(buf));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 1000, 1000 };

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(3);
		errno = 0;
		if (extc_fdio_write_all(fd, buf, sizeof(buf)) != -1)
			_exit(4);
		_exit(errno == EFBIG ? 0 : 5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, 1000);	/* the part the first write took */
	close(fd);
}

static void test_is_dot(void **state)
{
	static const char *const dots[] = { ".", ".." };
	static const char *const names[] = {
		"", "...", ".a", "..a", "a.", "a", ".hidden", "..hidden", ". ", ".. ", "./", "../",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(dots) / sizeof(dots[0]); i++)
		assert_true(extc_fdio_is_dot(dots[i]));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_false(extc_fdio_is_dot(names[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_opendir_keeps_the_descriptor, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(test_opendir_lists_from_the_start_every_time,
						dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_opendir_stream_is_close_on_exec, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(test_opendir_refusals_leave_nothing_open, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(test_write_all_writes_every_byte, dir_setup,
						dir_teardown),
		cmocka_unit_test(test_write_all_fails_with_the_errno),
		cmocka_unit_test_setup_teardown(test_write_all_goes_on_after_a_short_write, dir_setup,
						dir_teardown),
		cmocka_unit_test(test_is_dot),
	};

	return (cmocka_run_group_tests_name("fdio", tests, NULL, NULL));
}
