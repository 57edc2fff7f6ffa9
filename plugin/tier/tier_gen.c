/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a key's generations on the site tier: their names, their listing, their bad marks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "pool/pool_key.h"
#include "tier/tier_copy.h"
#include "tier/tier_gen.h"
#include "tier/tier_manifest.h"

bool extc_tier_gen_tag_ok(const char *tag)
{
	size_t i;

	for (i = 0; tag[i] != '\0'; i++) {
		char ch = tag[i];

		if (i >= EXTC_TIER_TAG_MAX ||
		    !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return (false);
	}
	return (i > 0);
}

int extc_tier_gen_name(uint64_t ns, const char *tag, char *out, size_t len)
{
	if (!extc_tier_gen_tag_ok(tag))
		return (-1);
	return (extc_fmt(out, len, "g%020" PRIu64 ".%s", ns, tag));
}

bool extc_tier_gen_name_ok(const char *name, uint64_t *ns)
{
	uint64_t v = 0;
	int i;

	if (name[0] != 'g' || strlen(name) < 23 || name[21] != '.' || !extc_tier_gen_tag_ok(name + 22))
		return (false);
	for (i = 1; i <= 20; i++) {
		unsigned digit = (unsigned)(name[i] - '0');

		if (digit > 9 || v > (UINT64_MAX - digit) / 10)
			return (false);
		v = v * 10 + digit;
	}
	if (ns != NULL)
		*ns = v;
	return (true);
}

/* Newer first: the later publish, then the greater name. */
static int gen_newer_first(const void *pa, const void *pb)
{
	const struct extc_tier_gen *a = pa, *b = pb;

	if (a->ns != b->ns)
		return (a->ns > b->ns ? -1 : 1);
	return (-strcmp(a->name, b->name));
}

/* A generation directory holding a manifest, not a link: what a listing takes. */
static bool read_gen(int keyfd, const char *name, struct extc_tier_gen *g)
{
	struct stat sb;
	int fd = openat(keyfd, name, EXTC_DIR_OPEN_FLAGS);
	bool ok;

	if (fd < 0)
		return (false);
	ok = fstatat(fd, EXTC_TIER_MANIFEST_NAME, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	     S_ISREG(sb.st_mode);
	g->bad = ok && fstatat(fd, EXTC_TIER_BAD_MARK, &sb, AT_SYMLINK_NOFOLLOW) == 0;
	if (g->bad)
		g->bad_since = sb.st_ctim;
	close(fd);
	return (ok);
}

/* Where a newly found generation goes when 'gens' is full: over the oldest, if it is newer. */
static size_t slot_for(const struct extc_tier_gen *gens, size_t max, size_t n,
		       const struct extc_tier_gen *g)
{
	size_t i, oldest = 0;

	if (n < max)
		return (n);
	for (i = 1; i < n; i++)
		if (gen_newer_first(&gens[i], &gens[oldest]) > 0)
			oldest = i;
	return (gen_newer_first(g, &gens[oldest]) < 0 ? oldest : max);
}

int extc_tier_gen_list(int keyfd, struct extc_tier_gen *gens, size_t max, size_t *n, char *why,
		       size_t whylen)
{
	struct extc_tier_gen g;
	struct dirent *de;
	DIR *d = extc_fdio_opendir(keyfd);

	*n = 0;
	if (d == NULL) {
		extc_fmt(why, whylen, "cannot read the key's directory on the tier: %s",
			 strerror(errno));
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		size_t at;

		memset(&g, 0, sizeof(g));
		if (!extc_tier_gen_name_ok(de->d_name, &g.ns) ||
		    extc_fmt(g.name, sizeof(g.name), "%s", de->d_name) < 0 ||
		    !read_gen(keyfd, de->d_name, &g))
			continue;
		at = slot_for(gens, max, *n, &g);
		if (at < max) {
			gens[at] = g;
			if (at == *n)
				(*n)++;
		}
	}
	closedir(d);
	qsort(gens, *n, sizeof(*gens), gen_newer_first);
	return (0);
}

void extc_tier_gen_mark_bad(int keyfd, const char *name)
{
	int gfd = openat(keyfd, name, EXTC_DIR_OPEN_FLAGS);
	int fd = gfd >= 0 ? openat(gfd, EXTC_TIER_BAD_MARK,
				   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;

	if (fd >= 0)
		close(fd);
	if (gfd >= 0)
		close(gfd);
}

int extc_tier_gen_open_key(int tierfd, const char *key, bool make, int *fd, char *why,
			   size_t whylen)
{
	struct stat tier, sb;
	int kfd;

	*fd = -1;
	if (!extc_pool_key_name_ok(key)) {
		extc_fmt(why, whylen, "the key is not %d lowercase hex digits", EXTC_POOL_KEY_LEN);
		return (-1);
	}
	if (make && mkdirat(tierfd, key, 0700) < 0 && errno != EEXIST) {
		extc_fmt(why, whylen, "cannot make the key's directory on the tier: %s",
			 extc_tier_copy_write_error(errno));
		return (-1);
	}
	kfd = openat(tierfd, key, EXTC_DIR_OPEN_FLAGS);
	if (kfd < 0 && errno == ENOENT && !make)
		return (1);
	if (kfd < 0) {
		extc_fmt(why, whylen, "cannot open the key's directory on the tier: %s",
			 strerror(errno));
		return (-1);
	}
	if (fstat(tierfd, &tier) < 0 || fstat(kfd, &sb) < 0 || sb.st_dev != tier.st_dev) {
		extc_fmt(why, whylen, "the key's directory on the tier is on another filesystem "
			 "than the tier");
		close(kfd);
		return (-1);
	}
	*fd = kfd;
	return (0);
}
