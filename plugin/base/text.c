/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: small string helpers shared by the pure modules. */
#include <stdio.h>
#include <string.h>

#include "base/text.h"

void extc_escape(const char *in, size_t max_in, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	size_t i;

	if (outlen == 0)
		return;
	if (in == NULL)
		in = "(null)";
	for (i = 0; in[i] != '\0'; i++) {
		unsigned char c = (unsigned char)in[i];

		if (i >= max_in) {
			if (o + 4 > outlen)
				break;
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			if (o + 2 > outlen)
				break;
			out[o++] = (char)c;
		} else {
			if (o + 5 > outlen)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 0xf];
		}
	}
	out[o] = '\0';
}

void extc_sanitize(char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c >= 0x7f)
			*s = '?';
	}
}

int extc_vfmt(char *buf, size_t len, const char *fmt, va_list ap)
{
	int ret = vsnprintf(buf, len, fmt, ap);

	if (ret < 0 || (size_t)ret >= len)
		return (-1);
	return (0);
}

int extc_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int rv;

	va_start(ap, fmt);
	rv = extc_vfmt(buf, len, fmt, ap);
	va_end(ap);
	return (rv);
}

int extc_parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (s == NULL || s[0] == '\0' || (s[0] == '0' && s[1] != '\0'))
		return (-1);
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 10)
			return (-1);
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > max)
		return (-1);
	*out = (uint32_t)v;
	return (0);
}

bool extc_has_prefix(const char *str, const char *prefix)
{
	return (strncmp(str, prefix, strlen(prefix)) == 0);
}

int extc_text_field(const char *text, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name);
	const char *line = text;

	while (line != NULL && *line != '\0') {
		const char *end = strchr(line, '\n');

		if (end == NULL)
			return (-1);	/* a line not ended is not whole */
		if (strncmp(line, name, nlen) == 0 && line[nlen] == '=') {
			size_t vlen = (size_t)(end - line) - nlen - 1;

			if (vlen >= outlen)
				return (-1);
			memcpy(out, line + nlen + 1, vlen);
			out[vlen] = '\0';
			return (0);
		}
		line = end + 1;
	}
	return (-1);
}

/* Optimal string alignment distance: a table on the stack, so small inputs only. */
size_t extc_text_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[EXTC_TEXT_DISTANCE_MAX + 1][EXTC_TEXT_DISTANCE_MAX + 1];
	size_t i, j;

	if (la > EXTC_TEXT_DISTANCE_MAX || lb > EXTC_TEXT_DISTANCE_MAX)
		return ((size_t)-1);
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			size_t cost = (a[i - 1] == b[j - 1]) ? 0 : 1;
			size_t best = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < best)
				best = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return (d[la][lb]);
}
