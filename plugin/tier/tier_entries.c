/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: reading a tier manifest's lines strictly, entry by entry. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "tier/tier_entries.h"

#define VERSION_WORD "ext-cache-generation "

/* One line, without its newline. */
struct line {
	const char *p, *end;
};

static int bad(struct extc_tier_entries *c, enum extc_tier_manifest_result *res,
	       const char *what, char *why, size_t whylen)
{
	*res = EXTC_TIER_MANIFEST_INVALID;
	extc_fmt(why, whylen, "its manifest is not one: line %lu: %s", c->line, what);
	return (-1);
}

/* The next space-separated field of 'l' (the last runs to the end of the line). */
static bool field(struct line *l, bool last, const char **f, size_t *n)
{
	const char *sp = last ? l->end : memchr(l->p, ' ', (size_t)(l->end - l->p));

	if (sp == NULL || sp == l->p)
		return (false);
	*f = l->p;
	*n = (size_t)(sp - l->p);
	l->p = sp == l->end ? sp : sp + 1;
	return (true);
}

/* Strict decimal: digits only, no leading zero but in "0", no overflow. */
static bool decimal(const char *f, size_t n, uint64_t *v)
{
	size_t i;

	if (n == 0 || n > 20 || (n > 1 && f[0] == '0'))
		return (false);
	*v = 0;
	for (i = 0; i < n; i++) {
		if (f[i] < '0' || f[i] > '9' || *v > (UINT64_MAX - (uint64_t)(f[i] - '0')) / 10)
			return (false);
		*v = *v * 10 + (uint64_t)(f[i] - '0');
	}
	return (true);
}

static bool mode_field(const char *f, size_t n, unsigned *mode)
{
	size_t i;

	if (n != 4 || f[0] != '0')
		return (false);
	*mode = 0;
	for (i = 1; i < 4; i++) {
		if (f[i] < '0' || f[i] > '7')
			return (false);
		*mode = *mode * 8 + (unsigned)(f[i] - '0');
	}
	return (true);
}

/* <tv_sec>.<9 digits>, tv_sec maybe negative (a file dated before 1970). */
static bool time_field(const char *f, size_t n, struct timespec *ts)
{
	const char *dot = memchr(f, '.', n);
	bool neg = n > 0 && f[0] == '-';
	uint64_t sec, nsec;

	if (dot == NULL || (size_t)(f + n - dot) != 10 || dot[1] == '-' ||
	    !decimal(f + neg, (size_t)(dot - f) - neg, &sec) || sec > INT64_MAX)
		return (false);
	nsec = 0;
	for (size_t i = 1; i < 10; i++) {
		if (dot[i] < '0' || dot[i] > '9')
			return (false);
		nsec = nsec * 10 + (uint64_t)(dot[i] - '0');
	}
	ts->tv_sec = neg ? -(time_t)sec : (time_t)sec;
	ts->tv_nsec = (long)nsec;
	return (true);
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return (ch - '0');
	return (ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1);
}

static bool digest_field(const char *f, size_t n, uint64_t *d)
{
	size_t i;

	if (n != 16)
		return (false);
	*d = 0;
	for (i = 0; i < n; i++) {
		if (hexval(f[i]) < 0)
			return (false);
		*d = *d << 4 | (uint64_t)hexval(f[i]);
	}
	return (true);
}

/* Unescape a path as extc_tier_manifest_add wrote it, and only so written. */
static bool path_field(const char *f, size_t n, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 1 < outlen; i++) {
		unsigned char ch = (unsigned char)f[i];

		if (ch == '\\' && i + 1 < n && (f[i + 1] == '\\' || f[i + 1] == 'n')) {
			ch = f[++i] == 'n' ? '\n' : '\\';
		} else if (ch == '\\' && i + 3 < n && f[i + 1] == 'x' &&
			   hexval(f[i + 2]) >= 0 && hexval(f[i + 3]) >= 0) {
			ch = (unsigned char)(hexval(f[i + 2]) << 4 | hexval(f[i + 3]));
			i += 3;
			if (ch == '\0' || ch == '\n' || ch == '\\' || (ch > 0x20 && ch < 0x7f))
				return (false);	/* written otherwise: not as a publisher writes it */
		} else if (ch < 0x21 || ch >= 0x7f || ch == '\\') {
			return (false);
		}
		out[o++] = (char)ch;
	}
	out[o] = '\0';
	return (i == n && o > 0);
}

/* Components neither "", ".", ".." nor the plugin's own; depth within bounds. */
static bool path_ok(const char *path, unsigned *depth, const char **name)
{
	const char *comp = path;

	*depth = 0;
	for (;;) {
		const char *slash = strchr(comp, '/');
		size_t n = slash ? (size_t)(slash - comp) : strlen(comp);

		if (n == 0 || n > NAME_MAX || (comp[0] == '.' && (n == 1 || (n == 2 && comp[1] == '.'))) ||
		    strncmp(comp, EXTC_OWN_PREFIX, strlen(EXTC_OWN_PREFIX)) == 0)
			return (false);
		if (slash == NULL)
			break;
		if (++*depth >= EXTC_TIER_MANIFEST_MAX_DEPTH)
			return (false);
		comp = slash + 1;
	}
	*name = comp;
	return (true);
}

/* Paths compared as their components are: '/' sorts below every byte of a name. */
static int path_cmp(const char *a, const char *b)
{
	unsigned ca, cb;

	while (*a != '\0' && *a == *b) {
		a++;
		b++;
	}
	ca = *a == '\0' ? 0u : *a == '/' ? 1u : (unsigned)(unsigned char)*a + 2u;
	cb = *b == '\0' ? 0u : *b == '/' ? 1u : (unsigned)(unsigned char)*b + 2u;
	return (ca < cb ? -1 : ca > cb);
}

/* After its predecessor, and below the last directory listed at its depth. */
static bool in_place(struct extc_tier_entries *c, const struct extc_tier_entry *e)
{
	if (c->entries > 0 && path_cmp(c->prev, e->path) >= 0)
		return (false);
	if (e->depth > c->ndirs)
		return (false);
	if (e->depth > 0) {
		size_t plen = c->dirlen[e->depth - 1];

		if (strncmp(e->path, c->chain, plen) != 0 || e->path[plen] != '/')
			return (false);
	}
	c->ndirs = e->depth;
	if (e->type == EXTC_TIER_ENTRY_DIR) {
		snprintf(c->chain, sizeof(c->chain), "%s", e->path);
		c->dirlen[c->ndirs++] = strlen(e->path);
	}
	snprintf(c->prev, sizeof(c->prev), "%s", e->path);
	return (true);
}

/* An entry's fields after its type letter; false: not as a publisher writes them. */
static bool entry_fields(struct line *l, struct extc_tier_entry *e)
{
	const char *f;
	size_t n;
	uint64_t v = 0;

	memset(e, 0, offsetof(struct extc_tier_entry, path));
	e->type = l->p[0] == 'd' ? EXTC_TIER_ENTRY_DIR : EXTC_TIER_ENTRY_FILE;
	l->p += 2;
	if (!field(l, false, &f, &n) || !mode_field(f, n, &e->mode))
		return (false);
	if (e->type == EXTC_TIER_ENTRY_FILE && (!field(l, false, &f, &n) || !decimal(f, n, &v)))
		return (false);
	e->size = e->type == EXTC_TIER_ENTRY_FILE ? v : 0;
	if (!field(l, false, &f, &n) || !time_field(f, n, &e->mtime))
		return (false);
	if (e->type == EXTC_TIER_ENTRY_FILE && (!field(l, false, &f, &n) ||
						!digest_field(f, n, &e->digest)))
		return (false);
	return (field(l, true, &f, &n) && path_field(f, n, e->path, sizeof(e->path)) &&
		path_ok(e->path, &e->depth, &e->name));
}

/* The end line: its counts are what was read, and nothing follows it. */
static int end_line(struct extc_tier_entries *c, struct line *l,
		    enum extc_tier_manifest_result *res, char *why, size_t whylen)
{
	uint64_t entries, bytes;
	const char *f;
	size_t n;

	l->p += 4;
	if (!field(l, false, &f, &n) || !decimal(f, n, &entries) ||
	    !field(l, true, &f, &n) || !decimal(f, n, &bytes))
		return (bad(c, res, "an end line not of the form \"end <entries> <bytes>\"", why,
			    whylen));
	if (entries != c->entries || bytes != c->bytes)
		return (bad(c, res, "the end line's counts are not those of the entries above it",
			    why, whylen));
	if (c->off != c->len)
		return (bad(c, res, "more after the end line", why, whylen));
	return (0);
}

void extc_tier_entries_begin(struct extc_tier_entries *c, const char *text, size_t len)
{
	memset(c, 0, sizeof(*c));
	c->text = text;
	c->len = len;
}

int extc_tier_entries_next(struct extc_tier_entries *c, struct extc_tier_entry *e,
			   enum extc_tier_manifest_result *res, char *why, size_t whylen)
{
	const char *nl = c->off < c->len ? memchr(c->text + c->off, '\n', c->len - c->off) : NULL;
	struct line l = { c->text + c->off, nl };

	c->line++;
	if (nl == NULL)
		return (bad(c, res, "missing or cut short (no end line)", why, whylen));
	c->off = (size_t)(nl - c->text) + 1;
	if (c->line == 1) {
		char version[40];

		snprintf(version, sizeof(version), "%s%d", VERSION_WORD, EXTC_TIER_MANIFEST_VERSION);
		if ((size_t)(l.end - l.p) == strlen(version) && memcmp(l.p, version, strlen(version)) == 0)
			return (extc_tier_entries_next(c, e, res, why, whylen));
		if (!extc_has_prefix(l.p, VERSION_WORD))
			return (bad(c, res, "no version line", why, whylen));
		*res = EXTC_TIER_MANIFEST_OTHER_VERSION;
		extc_fmt(why, whylen, "its manifest is of another version than %d",
			 EXTC_TIER_MANIFEST_VERSION);
		return (-1);
	}
	if (l.end - l.p >= 4 && memcmp(l.p, "end ", 4) == 0)
		return (end_line(c, &l, res, why, whylen));
	if (l.end - l.p < 3 || (l.p[0] != 'd' && l.p[0] != 'f') || l.p[1] != ' ' ||
	    !entry_fields(&l, e))
		return (bad(c, res, "not an entry as a publisher writes one", why, whylen));
	if (c->entries >= EXTC_TIER_MANIFEST_MAX_ENTRIES || c->bytes + e->size < c->bytes)
		return (bad(c, res, "more entries or bytes than a manifest may have", why, whylen));
	if (!in_place(c, e))
		return (bad(c, res, "an entry out of order, or not below the directory before it",
			    why, whylen));
	c->entries++;
	c->bytes += e->size;
	return (1);
}

enum extc_tier_manifest_result extc_tier_entries_check(const char *text, size_t len,
							uint64_t *entries, uint64_t *bytes,
							char *why, size_t whylen)
{
	struct extc_tier_entries c;
	struct extc_tier_entry e;
	enum extc_tier_manifest_result res = EXTC_TIER_MANIFEST_OK;
	int more;

	extc_tier_entries_begin(&c, text, len);
	while ((more = extc_tier_entries_next(&c, &e, &res, why, whylen)) > 0)
		;
	*entries = c.entries;
	*bytes = c.bytes;
	return (more == 0 ? EXTC_TIER_MANIFEST_OK : res);
}
