/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the step's env file, for container runtimes that read variables from a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/layout.h"
#include "container/container_envfile.h"
#include "base/text.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/*
 * What both readers take literally. Podman skips lines starting with '#'
 * and trims leading blanks; ch-run strips single quotes around a value and
 * expands an item that starts with '$' (its doc/ch-run.rst). A newline
 * would end the line. So: a name of [A-Za-z0-9_] not starting with a digit,
 * a value with no newline, no '$', and not starting with a quote.
 */
static bool line_is_literal(const char *name, const char *value)
{
	size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

	if (n == 0 || name[n] != '\0' || (name[0] >= '0' && name[0] <= '9'))
		return (false);
	return (strpbrk(value, "\n$") == NULL && value[0] != '\'');
}

/*
 * The whole file in one write: the first task of each node writes it while
 * the node's other tasks wait to exec, and four writes a line were about 80
 * system calls on that path.
 */
static int write_lines(int fd, const struct extc_cenv_list *lines)
{
	size_t i, len = 0, at = 0;
	char *text;
	int rv;

	for (i = 0; i < lines->npairs; i++)
		len += strlen(lines->pairs[i].name) + 1 + strlen(lines->pairs[i].value) + 1;
	text = malloc(len + 1);	/* +1: never malloc(0) for an empty list */
	if (text == NULL)
		return (-1);
	for (i = 0; i < lines->npairs; i++) {
		const struct extc_cenv_pair *p = &lines->pairs[i];
		size_t name_len = strlen(p->name), value_len = strlen(p->value);

		memcpy(text + at, p->name, name_len);
		text[at + name_len] = '=';
		memcpy(text + at + name_len + 1, p->value, value_len);
		text[at + name_len + 1 + value_len] = '\n';
		at += name_len + 1 + value_len + 1;
	}
	rv = extc_fdio_write_all(fd, text, at);
	free(text);
	return (rv);
}

/* Closes fd whatever happens; -1 (errno set) if a line or the close failed. */
static int write_and_close(int fd, const struct extc_cenv_list *lines)
{
	int rv = write_lines(fd, lines);
	int saved = errno;

	if (close(fd) < 0 && rv == 0)
		return (-1);
	errno = saved;
	return (rv);
}

/* The sub-tree, made if missing; never a symbolic link planted in its place. */
static int open_subtree(int leaffd)
{
	if (mkdirat(leaffd, EXTC_CONTAINER_SUBTREE, 0700) < 0 && errno != EEXIST)
		return (-1);
	return (openat(leaffd, EXTC_CONTAINER_SUBTREE, DIR_FLAGS));
}

enum extc_envfile_result extc_container_envfile_write(int leaffd, const struct extc_cenv_list *lines,
						      char *why, size_t whylen)
{
	char tmp[64];
	int dirfd = -1, fd = -1;
	size_t i;
	enum extc_envfile_result rv = EXTC_ENVFILE_BAD_LINE;

	for (i = 0; i < lines->npairs; i++) {
		if (!line_is_literal(lines->pairs[i].name, lines->pairs[i].value)) {
			extc_fmt(why, whylen, "%s: its value cannot be written literally",
				 lines->pairs[i].name);
			goto out;
		}
	}
	rv = EXTC_ENVFILE_IO;
	extc_fmt(tmp, sizeof(tmp), ".%s.%ld", EXTC_CONTAINER_ENVFILE, (long)getpid());
	dirfd = open_subtree(leaffd);
	if (dirfd < 0) {
		extc_fmt(why, whylen, "cannot open %s/: %s", EXTC_CONTAINER_SUBTREE, strerror(errno));
		goto out;
	}
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write_and_close(fd, lines) < 0 ||
	    renameat(dirfd, tmp, dirfd, EXTC_CONTAINER_ENVFILE) < 0) {
		extc_fmt(why, whylen, "cannot write %s/%s: %s", EXTC_CONTAINER_SUBTREE,
			 EXTC_CONTAINER_ENVFILE, strerror(errno));
		if (fd >= 0)
			unlinkat(dirfd, tmp, 0);
		goto out;
	}
	rv = EXTC_ENVFILE_WRITTEN;
out:
	if (dirfd >= 0)
		close(dirfd);
	return (rv);
}
