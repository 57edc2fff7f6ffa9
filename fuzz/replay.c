/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache fuzz replay: feeds every file of a corpus to a target's
 * LLVMFuzzerTestOneInput without libFuzzer (the systemd fuzz-main.c pattern),
 * so `make check` runs every saved input with the normal compiler.
 *
 *   replay_<target> [FILE|DIR]...   no argument: the corpus compiled in (FUZZ_CORPUS)
 *
 * Prints one line per corpus and "N passed, 0 failed" at the end; a finding
 * aborts (the file being replayed is printed first).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static unsigned long replayed;

static int replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t done = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return (-1);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		close(fd);
		return (-1);
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	fprintf(stderr, "replay: %s\n", path);
	LLVMFuzzerTestOneInput(buf, done);
	free(buf);
	replayed++;
	return (0);
}

static int cmp_names(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

static int replay_path(const char *path)
{
	struct stat st;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	int rv = 0;
	DIR *d;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return (-1);
	}
	if (!S_ISDIR(st.st_mode))
		return (replay_file(path));
	d = opendir(path);
	if (d == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		char *full;

		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **grown = realloc(names, (cap = cap ? cap * 2 : 256) * sizeof(*names));

			if (grown == NULL) {
				rv = -1;
				break;
			}
			names = grown;
		}
		if (asprintf(&full, "%s/%s", path, de->d_name) < 0) {
			rv = -1;
			break;
		}
		names[n++] = full;
	}
	closedir(d);
	if (names != NULL)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		if (rv == 0 && replay_file(names[i]) < 0)
			rv = -1;
		free(names[i]);
	}
	free(names);
	if (n == 0) {
		fprintf(stderr, "replay: %s: empty corpus\n", path);
		rv = -1;
	}
	return (rv);
}

int main(int argc, char **argv)
{
	int failed = 0;
	int i;

	if (argc < 2) {
		const char *dir = getenv("FUZZ_CORPUS_DIR");

		if (dir == NULL)
			dir = FUZZ_CORPUS;
		failed = replay_path(dir) < 0;
	}
	for (i = 1; i < argc; i++)
		failed += replay_path(argv[i]) < 0;
	printf("replayed %lu input(s)\n%d passed, %d failed\n", replayed, failed ? 0 : 1,
	       failed ? 1 : 0);
	return (failed ? 1 : 0);
}
