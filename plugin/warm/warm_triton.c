/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: Triton's group files, which name their kernel's files by absolute path. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/text.h"
#include "warm/warm_names.h"
#include "warm/warm_triton.h"

#define GROUP_TEMP EXTC_OWN_PREFIX "grp."	/* a rewrite on its way in: copies skip it */

/* One group file being read: its text, and where the parse stands. */
struct json {
	const char *s;
	size_t len, at;
};

/* A child of a group: its file name, and the path the group gives it. */
struct child {
	char name[NAME_MAX + 1];
	char path[PATH_MAX];
};

/* What the parse does with each child: check it, or write it out anew. */
struct group_walk {
	int keyfd;
	const char *final_dir;	/* NULL: check only */
	char *out;
	size_t outlen, outcap;
	unsigned children;
};

static void skip_ws(struct json *j)
{
	while (j->at < j->len && strchr(" \t\r\n", j->s[j->at]) != NULL && j->s[j->at] != '\0')
		j->at++;
}

static bool take(struct json *j, char c)
{
	skip_ws(j);
	if (j->at >= j->len || j->s[j->at] != c)
		return (false);
	j->at++;
	return (true);
}

static int hex4(const char *p)
{
	int v = 0, i;

	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return (-1);
	}
	return (v);
}

/* One \uXXXX of the basic plane, as UTF-8 (json.dumps escapes every non-ASCII byte so). */
static bool put_code(int code, char *out, size_t cap, size_t *n)
{
	unsigned char b[3];
	size_t k = 0, i;

	if (code <= 0 || (code >= 0xd800 && code <= 0xdfff))
		return (false);	/* NUL ends no path; a surrogate pair is no file name here */
	if (code < 0x80) {
		b[k++] = (unsigned char)code;
	} else if (code < 0x800) {
		b[k++] = (unsigned char)(0xc0 | (code >> 6));
		b[k++] = (unsigned char)(0x80 | (code & 0x3f));
	} else {
		b[k++] = (unsigned char)(0xe0 | (code >> 12));
		b[k++] = (unsigned char)(0x80 | ((code >> 6) & 0x3f));
		b[k++] = (unsigned char)(0x80 | (code & 0x3f));
	}
	if (*n + k >= cap)
		return (false);
	for (i = 0; i < k; i++)
		out[(*n)++] = (char)b[i];
	return (true);
}

/* A JSON string into 'out' (NUL-terminated), escapes decoded; false if it is not one or too long. */
static bool take_string(struct json *j, char *out, size_t cap)
{
	static const char plain[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
	size_t n = 0;

	if (!take(j, '"'))
		return (false);
	while (j->at < j->len && j->s[j->at] != '"') {
		char c = j->s[j->at++];

		if ((unsigned char)c < 0x20)
			return (false);
		if (c == '\\') {
			const char *e;

			if (j->at >= j->len)
				return (false);
			c = j->s[j->at++];
			if (c == 'u') {
				int code = j->at + 4 <= j->len ? hex4(j->s + j->at) : -1;

				j->at += 4;
				if (!put_code(code, out, cap, &n))
					return (false);
				continue;
			}
			e = strchr(plain, c);
			if (e == NULL || c == '\0')
				return (false);
			c = decoded[e - plain];
		}
		if (n + 1 >= cap)
			return (false);
		out[n++] = c;
	}
	out[n] = '\0';
	return (take(j, '"'));
}

/* Append 'text' to the new group file. */
static bool put_raw(struct group_walk *g, const char *text)
{
	size_t n = strlen(text);

	if (g->outlen + n >= g->outcap)
		return (false);
	memcpy(g->out + g->outlen, text, n + 1);
	g->outlen += n;
	return (true);
}

/* 'text' as a JSON string, as json.dumps writes it for ASCII (UTF-8 passes as it is). */
static bool put_string(struct group_walk *g, const char *text)
{
	char esc[8];
	const char *p;

	if (!put_raw(g, "\""))
		return (false);
	for (p = text; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			snprintf(esc, sizeof(esc), "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned char)*p);
		else
			snprintf(esc, sizeof(esc), "%c", *p);
		if (!put_raw(g, esc))
			return (false);
	}
	return (put_raw(g, "\""));
}

/* A child names a plain file of the entry, as the end of its own path; the new path is built. */
static bool child_ok(struct group_walk *g, const struct child *c)
{
	const char *slash = strrchr(c->path, '/');
	char path[PATH_MAX];
	struct stat sb;

	if (c->name[0] == '\0' || strchr(c->name, '/') != NULL || extc_fdio_is_dot(c->name) ||
	    c->path[0] != '/' || slash == NULL || strcmp(slash + 1, c->name) != 0)
		return (false);
	if (fstatat(g->keyfd, c->name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode))
		return (false);
	if (g->final_dir == NULL)
		return (true);
	if (extc_fmt(path, sizeof(path), "%s/%s", g->final_dir, c->name) < 0)
		return (false);
	return ((g->children == 0 || put_raw(g, ", ")) && put_string(g, c->name) &&
		put_raw(g, ": ") && put_string(g, path));
}

/* {"child_paths": {"<file>": "<path>", ...}}, and nothing else, each child checked. */
static bool walk_group(const char *text, size_t len, struct group_walk *g)
{
	struct json j = { text, len, 0 };
	struct child *c = malloc(sizeof(*c));
	bool ok = false;

	if (c == NULL)
		return (false);
	if (!take(&j, '{') || !take_string(&j, c->name, sizeof(c->name)) ||
	    strcmp(c->name, "child_paths") != 0 || !take(&j, ':') || !take(&j, '{'))
		goto out;
	if (g->final_dir != NULL && !put_raw(g, "{\"child_paths\": {"))
		goto out;
	if (!take(&j, '}')) {
		do {
			if (!take_string(&j, c->name, sizeof(c->name)) || !take(&j, ':') ||
			    !take_string(&j, c->path, sizeof(c->path)) || !child_ok(g, c))
				goto out;
			g->children++;
		} while (take(&j, ','));
		if (!take(&j, '}'))
			goto out;
	}
	ok = take(&j, '}') && (g->final_dir == NULL || put_raw(g, "}}"));
	skip_ws(&j);
	ok = ok && j.at == j.len;
out:
	free(c);
	return (ok);
}

/* The group file 'name' of 'keyfd', whole, into 'buf' (NUL-terminated); its length, or -1. */
static ssize_t read_group(int keyfd, const char *name, char *buf, size_t cap, struct stat *sb)
{
	int fd = openat(keyfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	size_t n = 0;
	ssize_t got = 0;

	if (fd < 0)
		return (-1);
	if (fstat(fd, sb) < 0 || !S_ISREG(sb->st_mode) || (size_t)sb->st_size >= cap) {
		close(fd);
		return (-1);
	}
	while (n + 1 < cap && (got = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)got;
	close(fd);
	if (got < 0 || memchr(buf, '\0', n) != NULL)
		return (-1);
	buf[n] = '\0';
	return ((ssize_t)n);
}

/* The new text in place of the group file, whole: a temporary name, then a rename over it. */
static enum extc_triton_result replace_group(int keyfd, const char *name, const struct group_walk *g,
					     mode_t mode, char *why, size_t whylen)
{
	char tmp[64];
	int fd;
	enum extc_triton_result rv = EXTC_TRITON_FAILED;

	extc_fmt(tmp, sizeof(tmp), "%s%ld", GROUP_TEMP, (long)getpid());
	unlinkat(keyfd, tmp, 0);	/* our own pid's, left by a killed run */
	fd = openat(keyfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		extc_fmt(why, whylen, "cannot write a group file: %s", strerror(errno));
		return (EXTC_TRITON_FAILED);
	}
	if (extc_fdio_write_all(fd, g->out, g->outlen) < 0 || fchmod(fd, mode & 0777) < 0)
		extc_fmt(why, whylen, "cannot write a group file: %s", strerror(errno));
	else if (renameat(keyfd, tmp, keyfd, name) < 0)
		extc_fmt(why, whylen, "cannot put a group file in place: %s", strerror(errno));
	else
		rv = EXTC_TRITON_OK;
	close(fd);
	if (rv != EXTC_TRITON_OK)
		unlinkat(keyfd, tmp, 0);
	return (rv);
}

/* Each group file of 'keyfd', checked (final_dir NULL) or rewritten to 'final_dir'. */
static enum extc_triton_result each_group(int keyfd, const char *final_dir, char *why,
					  size_t whylen)
{
	/* a rewrite may lengthen every path: twice the largest group file is room enough */
	char *text = malloc(EXTC_TRITON_GROUP_MAX);
	char *out = final_dir != NULL ? malloc(EXTC_TRITON_GROUP_MAX * 2) : NULL;
	enum extc_triton_result rv = EXTC_TRITON_NO_GROUP;
	struct dirent *de;
	DIR *d = extc_fdio_opendir(keyfd);

	if (text == NULL || d == NULL || (final_dir != NULL && out == NULL)) {
		extc_fmt(why, whylen, "cannot read a Triton entry: %s", strerror(errno));
		rv = EXTC_TRITON_FAILED;
		goto out;
	}
	while ((de = readdir(d)) != NULL && rv != EXTC_TRITON_BROKEN && rv != EXTC_TRITON_FAILED) {
		struct group_walk g = { keyfd, final_dir, out, 0, EXTC_TRITON_GROUP_MAX * 2, 0 };
		struct stat sb;
		ssize_t len;

		if (!extc_has_prefix(de->d_name, EXTC_TRITON_GROUP_PREFIX))
			continue;
		len = read_group(keyfd, de->d_name, text, EXTC_TRITON_GROUP_MAX, &sb);
		if (len < 0 || !walk_group(text, (size_t)len, &g)) {
			extc_fmt(why, whylen, "a group file does not parse or names a missing file");
			rv = EXTC_TRITON_BROKEN;
		} else {
			rv = final_dir == NULL ? EXTC_TRITON_OK :
						 replace_group(keyfd, de->d_name, &g, sb.st_mode, why, whylen);
		}
	}
out:
	if (d != NULL)
		closedir(d);
	free(text);
	free(out);
	return (rv);
}

enum extc_triton_result extc_triton_check(int keyfd)
{
	char why[8];

	return (each_group(keyfd, NULL, why, sizeof(why)));
}

enum extc_triton_result extc_triton_rewrite(int keyfd, const char *final_dir, char *why,
					    size_t whylen)
{
	return (each_group(keyfd, final_dir, why, whylen));
}
