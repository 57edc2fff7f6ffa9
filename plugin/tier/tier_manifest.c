/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a tier generation's manifest: every entry with its mode, mtime, size and digest, as text. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/text.h"
#include "tier/tier_manifest.h"

#define VERSION_WORD "ext-cache-generation"

/* A byte a path carries as itself in a line; every other is escaped. */
static bool plain_byte(unsigned char c)
{
	return (c > 0x20 && c < 0x7f && c != '\\');
}

static int grow(struct extc_tier_manifest_out *m, size_t more, char *why, size_t whylen)
{
	size_t cap = m->cap ? m->cap : 65536;
	char *text;

	if (m->len + more + 1 > EXTC_TIER_MANIFEST_MAX_BYTES) {
		extc_fmt(why, whylen, "the manifest would be longer than %lu bytes",
			 EXTC_TIER_MANIFEST_MAX_BYTES);
		return (-1);
	}
	if (m->len + more + 1 <= m->cap)
		return (0);
	while (cap < m->len + more + 1)
		cap *= 2;
	text = realloc(m->text, cap);
	if (text == NULL) {
		extc_fmt(why, whylen, "out of memory for the manifest");
		return (-1);
	}
	m->text = text;
	m->cap = cap;
	return (0);
}

static int mf_append(struct extc_tier_manifest_out *m, const char *s, size_t n, char *why,
		  size_t whylen)
{
	if (grow(m, n, why, whylen) < 0)
		return (-1);
	memcpy(m->text + m->len, s, n);
	m->len += n;
	m->text[m->len] = '\0';
	return (0);
}

int extc_tier_manifest_out_init(struct extc_tier_manifest_out *m, char *why, size_t whylen)
{
	char line[64];

	memset(m, 0, sizeof(*m));
	snprintf(line, sizeof(line), "%s %d\n", VERSION_WORD, EXTC_TIER_MANIFEST_VERSION);
	return (mf_append(m, line, strlen(line), why, whylen));
}

int extc_tier_manifest_add(struct extc_tier_manifest_out *m, const struct extc_tier_entry *e,
			   char *why, size_t whylen)
{
	char head[160], esc[5];
	const unsigned char *p;

	if (m->entries >= EXTC_TIER_MANIFEST_MAX_ENTRIES) {
		extc_fmt(why, whylen, "more than %lu entries", EXTC_TIER_MANIFEST_MAX_ENTRIES);
		return (-1);
	}
	if (e->type == EXTC_TIER_ENTRY_DIR)
		snprintf(head, sizeof(head), "d %04o %lld.%09ld ", e->mode & 0777u,
			 (long long)e->mtime.tv_sec, (long)e->mtime.tv_nsec);
	else
		snprintf(head, sizeof(head), "f %04o %" PRIu64 " %lld.%09ld %016" PRIx64 " ",
			 e->mode & 0777u, e->size, (long long)e->mtime.tv_sec,
			 (long)e->mtime.tv_nsec, e->digest);
	if (mf_append(m, head, strlen(head), why, whylen) < 0)
		return (-1);
	for (p = (const unsigned char *)e->path; *p != '\0'; p++) {
		if (*p == '/' || plain_byte(*p))
			snprintf(esc, sizeof(esc), "%c", *p);
		else if (*p == '\\' || *p == '\n')
			snprintf(esc, sizeof(esc), "\\%c", *p == '\n' ? 'n' : '\\');
		else
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
		if (mf_append(m, esc, strlen(esc), why, whylen) < 0)
			return (-1);
	}
	m->entries++;
	if (e->type == EXTC_TIER_ENTRY_FILE)
		m->bytes += e->size;
	return (mf_append(m, "\n", 1, why, whylen));
}

int extc_tier_manifest_write(int dirfd, struct extc_tier_manifest_out *m, char *why,
			     size_t whylen)
{
	char line[80];
	int fd, rv = -1;

	snprintf(line, sizeof(line), "end %" PRIu64 " %" PRIu64 "\n", m->entries, m->bytes);
	if (mf_append(m, line, strlen(line), why, whylen) < 0) {
		errno = EFBIG;
		return (-1);
	}
	fd = openat(dirfd, EXTC_TIER_MANIFEST_NAME,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		extc_fmt(why, whylen, "cannot create the manifest: %s", strerror(errno));
		return (-1);
	}
	if (extc_fdio_write_all(fd, m->text, m->len) < 0 || fsync(fd) < 0) {
		int err = errno;

		close(fd);
		errno = err;
	} else if (close(fd) == 0) {	/* NFS reports a failed write back at the close */
		rv = 0;
	}
	if (rv < 0)
		extc_fmt(why, whylen, "cannot write the manifest: %s", strerror(errno));
	return (rv);
}

void extc_tier_manifest_out_free(struct extc_tier_manifest_out *m)
{
	free(m->text);
	memset(m, 0, sizeof(*m));
}

enum extc_tier_manifest_result extc_tier_manifest_read(int genfd, char **text, size_t *len,
						       char *why, size_t whylen)
{
	enum extc_tier_manifest_result rv = EXTC_TIER_MANIFEST_UNREADABLE;
	size_t have = 0, cap;
	struct stat sb;
	char *buf = NULL;
	int fd;

	*text = NULL;
	*len = 0;
	fd = openat(genfd, EXTC_TIER_MANIFEST_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		extc_fmt(why, whylen, "cannot open its manifest: %s", strerror(errno));
		return (errno == ENOENT || errno == ELOOP ? EXTC_TIER_MANIFEST_INVALID : rv);
	}
	if (fstat(fd, &sb) < 0) {
		extc_fmt(why, whylen, "cannot stat its manifest: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > EXTC_TIER_MANIFEST_MAX_BYTES) {
		extc_fmt(why, whylen, "its manifest is not a regular file of %lu bytes at most",
			 EXTC_TIER_MANIFEST_MAX_BYTES);
		rv = EXTC_TIER_MANIFEST_INVALID;
		goto out;
	}
	cap = (size_t)sb.st_size + 2;	/* one more byte than it should hold shows it grew */
	buf = malloc(cap);
	if (buf == NULL) {
		extc_fmt(why, whylen, "out of memory for its manifest");
		goto out;
	}
	while (have < cap - 1) {
		ssize_t n = read(fd, buf + have, cap - 1 - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			extc_fmt(why, whylen, "cannot read its manifest: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	if (have != (size_t)sb.st_size) {
		extc_fmt(why, whylen, "its manifest changed size while it was read");
		rv = EXTC_TIER_MANIFEST_INVALID;
		goto out;
	}
	buf[have] = '\0';
	*text = buf;
	*len = have;
	buf = NULL;
	rv = EXTC_TIER_MANIFEST_OK;
out:
	free(buf);
	close(fd);
	return (rv);
}
