/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the manifest of a published cache, and whether a job may reuse it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/hash.h"
#include "warm/manifest.h"
#include "base/text.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define FORMAT_LINE "format=1"

static void copy_field(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

int extc_manifest_isa_fingerprint(const char *cpuinfo, char *out, size_t len)
{
	static const char *const keys[] = { "flags", "Features", "isa" };
	char line[8192];
	uint64_t h = EXTC_HASH_START;
	bool found = false, space = false;
	size_t k;
	FILE *f = fopen(cpuinfo, "re");

	if (f == NULL)
		return (-1);
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]) && !found; k++) {
			size_t kl = strlen(keys[k]);
			const char *p;

			if (strncmp(line, keys[k], kl) != 0 || strchr(line, ':') == NULL ||
			    strspn(line + kl, " \t") != (size_t)(strchr(line, ':') - line - (long)kl))
				continue;
			found = true;
			/* the same flags in the same order whatever the spacing */
			for (p = strchr(line, ':') + 1; *p != '\0' && *p != '\n'; p++) {
				if (*p == ' ' || *p == '\t') {
					space = true;
					continue;
				}
				if (space)
					h = extc_hash_fnv1a(h, " ", 1);
				space = false;
				h = extc_hash_fnv1a(h, p, 1);
			}
		}
	}
	fclose(f);
	if (!found)
		return (-1);
	return (extc_fmt(out, len, "%016llx", (unsigned long long)h));
}

int extc_manifest_local(struct extc_manifest *m, const char *key, uint32_t jobid,
			const char *node, const char *cpuinfo, char *why, size_t whylen)
{
	struct utsname u;
	struct tm tm;
	time_t now = time(NULL);

	memset(m, 0, sizeof(*m));
	copy_field(m->key, sizeof(m->key), key ? key : "");
	if (uname(&u) < 0) {
		extc_fmt(why, whylen, "uname: %s", strerror(errno));
		return (-1);
	}
	copy_field(m->arch, sizeof(m->arch), u.machine);
	if (extc_manifest_isa_fingerprint(cpuinfo, m->isa, sizeof(m->isa)) < 0) {
		extc_fmt(why, whylen, "%s: no CPU flags line to fingerprint", cpuinfo);
		return (-1);
	}
	extc_fmt(m->job, sizeof(m->job), "%u", jobid);
	copy_field(m->node, sizeof(m->node), node ? node : "");
	if (gmtime_r(&now, &tm) != NULL)
		strftime(m->time, sizeof(m->time), "%Y-%m-%dT%H:%M:%SZ", &tm);
	copy_field(m->plugin, sizeof(m->plugin), PACKAGE_VERSION);
	return (0);
}

int extc_manifest_format(const struct extc_manifest *m, char *buf, size_t len)
{
	return (extc_fmt(buf, len,
			 "# spank-ext-cache: what the builds in this directory were made for.\n"
			 "# Jobs whose SLURM_EXT_CACHE_KEY, machine or CPU differ do not seed from it.\n"
			 FORMAT_LINE "\nkey=%s\narch=%s\nisa=%s\njob=%s\nnode=%s\ntime=%s\nplugin=%s\n",
			 m->key, m->arch, m->isa, m->job, m->node, m->time, m->plugin));
}

int extc_manifest_parse(const char *text, struct extc_manifest *m, char *why, size_t whylen)
{
	const struct {
		const char *name;
		char *field;
		size_t len;
	} fields[] = {
		{ "key", m->key, sizeof(m->key) }, { "arch", m->arch, sizeof(m->arch) },
		{ "isa", m->isa, sizeof(m->isa) }, { "job", m->job, sizeof(m->job) },
		{ "node", m->node, sizeof(m->node) }, { "time", m->time, sizeof(m->time) },
		{ "plugin", m->plugin, sizeof(m->plugin) },
	};
	bool format = false;
	const char *p = text;
	size_t i;

	memset(m, 0, sizeof(*m));
	while (*p != '\0') {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[512];

		if (len < sizeof(line) && p[0] != '#') {
			memcpy(line, p, len);
			line[len] = '\0';
			if (strcmp(line, FORMAT_LINE) == 0)
				format = true;
			for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
				size_t nl = strlen(fields[i].name);

				if (strncmp(line, fields[i].name, nl) == 0 && line[nl] == '=')
					copy_field(fields[i].field, fields[i].len, line + nl + 1);
			}
		}
		p += len + (end ? 1 : 0);
	}
	if (!format || m->arch[0] == '\0' || m->isa[0] == '\0') {
		extc_fmt(why, whylen, "not a manifest of this plugin (no %s, arch= or isa= line)",
			 FORMAT_LINE);
		return (-1);
	}
	return (0);
}

int extc_manifest_compatible(const struct extc_manifest *have, const struct extc_manifest *want,
			     char *why, size_t whylen)
{
	/* every field of 'have' was written by a user: escaped before it reaches a log line */
	char job[72], node[96];

	extc_escape(have->job, 15, job, sizeof(job));
	extc_escape(have->node, 71, node, sizeof(node));
	if (strcmp(have->key, want->key) != 0) {
		char a[96], b[96];

		extc_escape(have->key, 80, a, sizeof(a));
		extc_escape(want->key, 80, b, sizeof(b));
		extc_fmt(why, whylen, "it was published with SLURM_EXT_CACHE_KEY='%s' (job %s on %s), "
			 "this job has '%s'", a, job, node, b);
		return (-1);
	}
	if (strcmp(have->arch, want->arch) != 0 || strcmp(have->isa, want->isa) != 0) {
		char arch[48], isa[64], warch[48], wisa[64];

		extc_escape(have->arch, 31, arch, sizeof(arch));
		extc_escape(have->isa, 39, isa, sizeof(isa));
		extc_escape(want->arch, 31, warch, sizeof(warch));
		extc_escape(want->isa, 39, wisa, sizeof(wisa));
		extc_fmt(why, whylen, "it was built on another CPU (%s, ISA %s, node %s; this node: %s, ISA %s)",
			 arch, isa, node, warch, wisa);
		return (-1);
	}
	return (0);
}

enum extc_manifest_result extc_manifest_read(int dirfd, struct extc_manifest *m, char *why,
					     size_t whylen)
{
	char text[EXTC_MANIFEST_MAX + 1];
	struct stat sb;
	ssize_t n;
	size_t got = 0;
	int fd;
	enum extc_manifest_result rv = EXTC_MANIFEST_FAILED;

	fd = openat(dirfd, EXTC_MANIFEST_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return (EXTC_MANIFEST_ABSENT);
	if (fd < 0) {
		extc_fmt(why, whylen, "%s: cannot open: %s", EXTC_MANIFEST_NAME, strerror(errno));
		return (EXTC_MANIFEST_FAILED);
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > EXTC_MANIFEST_MAX) {
		extc_fmt(why, whylen, "%s: not a manifest (not a small regular file)",
			 EXTC_MANIFEST_NAME);
		goto out;
	}
	while (got < EXTC_MANIFEST_MAX && (n = read(fd, text + got, EXTC_MANIFEST_MAX - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			extc_fmt(why, whylen, "%s: cannot read: %s", EXTC_MANIFEST_NAME,
				 strerror(errno));
			goto out;
		}
		got += (size_t)n;
	}
	text[got] = '\0';
	if (extc_manifest_parse(text, m, why, whylen) < 0)
		goto out;
	rv = EXTC_MANIFEST_OK;
out:
	close(fd);
	return (rv);
}

enum extc_manifest_result extc_manifest_write(int dirfd, const struct extc_manifest *m,
					      bool only_if_absent, const char *tag, char *why,
					      size_t whylen)
{
	char text[EXTC_MANIFEST_MAX], tmp[128];
	size_t len;
	int fd;
	enum extc_manifest_result rv = EXTC_MANIFEST_FAILED;

	if (extc_manifest_format(m, text, sizeof(text)) < 0 ||
	    extc_fmt(tmp, sizeof(tmp), "%s.%s", EXTC_MANIFEST_NAME, tag) < 0) {
		extc_fmt(why, whylen, "the manifest does not fit");
		return (EXTC_MANIFEST_FAILED);
	}
	len = strlen(text);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		extc_fmt(why, whylen, "%s: cannot create: %s", tmp, strerror(errno));
		return (EXTC_MANIFEST_FAILED);
	}
	if (extc_fdio_write_all(fd, text, len) < 0) {
		extc_fmt(why, whylen, "%s: cannot write: %s", tmp, strerror(errno));
		goto out;
	}
	/* readers on other nodes see the old manifest or the new one, never half of one */
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		extc_fmt(why, whylen, "%s: cannot write: %s", tmp, strerror(errno));
		goto out;
	}
	if (only_if_absent) {
		if (linkat(dirfd, tmp, dirfd, EXTC_MANIFEST_NAME, 0) == 0)
			rv = EXTC_MANIFEST_OK;
		else if (errno == EEXIST)
			rv = EXTC_MANIFEST_EXISTS;
		else
			extc_fmt(why, whylen, "%s: cannot create: %s", EXTC_MANIFEST_NAME,
				 strerror(errno));
	} else if (renameat(dirfd, tmp, dirfd, EXTC_MANIFEST_NAME) == 0) {
		rv = EXTC_MANIFEST_OK;
	} else {
		extc_fmt(why, whylen, "%s: cannot replace: %s", EXTC_MANIFEST_NAME, strerror(errno));
	}
out:
	close(fd);
	if (rv != EXTC_MANIFEST_OK || only_if_absent)
		unlinkat(dirfd, tmp, 0);
	return (rv);
}

enum extc_manifest_result extc_manifest_check(int dirfd, const struct extc_manifest *want,
					      char *why, size_t whylen)
{
	struct extc_manifest have;
	enum extc_manifest_result ret = extc_manifest_read(dirfd, &have, why, whylen);

	if (ret == EXTC_MANIFEST_OK && extc_manifest_compatible(&have, want, why, whylen) < 0)
		ret = EXTC_MANIFEST_FAILED;
	return (ret);
}
