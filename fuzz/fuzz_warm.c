/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache fuzz target: the --ext-cache-seed / --ext-cache-publish value
 * validator, SLURM_EXT_CACHE_KEY, and the admin's seed= pattern with its
 * expansion (security-cases.md cases 41 and 46 for the warm-start inputs).
 *
 * Input: byte 0 picks the message buffer size, bytes 1-4 a uid; the rest is
 * split at the first NUL into a value (tried as directory, key and pattern)
 * and a user name for %U.
 *
 * Checked: each validator accepts exactly what its documented rule allows;
 * a refusal is printable ASCII within the buffer and names its source; an
 * expanded pattern is itself an acceptable directory, and a user name never
 * adds a path component (no '/', never "." or "..").
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "base/seed_path.h"

static bool has_control(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return (true);
	}
	return (false);
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += (*s == c);
	return (n);
}

static void check_dir(const char *value, size_t whylen)
{
	size_t len = strlen(value);
	bool want = len > 0 && len <= EXTC_WARM_PATH_MAX && value[0] == '/' && !has_control(value);
	char why[600];
	int rv;

	memset(why, 0x5a, sizeof(why));
	rv = extc_seed_path_check_dir(value, "--ext-cache-seed", why, whylen);
	if ((rv == 0) != want)
		fuzz_fail(want ? "a valid directory was refused" : "an invalid directory was accepted",
			  NULL);
	if (rv < 0) {
		fuzz_check_text(why, whylen, "check_dir why");
		if (whylen > 17 && strncmp(why, "--ext-cache-seed", 16) != 0)
			fuzz_fail("a refusal that does not name its option", why);
	}
}

static void check_key(const char *value, size_t whylen)
{
	size_t len = strlen(value), i;
	bool want = len <= EXTC_WARM_KEY_MAX;
	char why[600];
	int rv;

	for (i = 0; i < len; i++)
		want = want && (unsigned char)value[i] >= 0x20 && (unsigned char)value[i] < 0x7f;
	memset(why, 0x5a, sizeof(why));
	rv = extc_seed_path_check_key(value, why, whylen);
	if ((rv == 0) != want)
		fuzz_fail(want ? "a valid key was refused" : "an invalid key was accepted", NULL);
	if (rv < 0)
		fuzz_check_text(why, whylen, "check_key why");
}

static bool pattern_ok(const char *p)
{
	if (p[0] != '/' || strlen(p) > EXTC_WARM_PATH_MAX / 2 || has_control(p))
		return (false);
	for (; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		if (p[1] != 'u' && p[1] != 'U' && p[1] != '%')
			return (false);
		p++;
	}
	return (true);
}

/* Whether a checked pattern holds a real %U (not the 'U' after a "%%"). */
static bool has_user_token(const char *p)
{
	for (; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		if (p[1] == 'U')
			return (true);
		p++;
	}
	return (false);
}

static void check_pattern(const char *pattern, uid_t uid, const char *user, size_t whylen)
{
	char why[600], out[EXTC_WARM_PATH_MAX + 64];
	bool want = pattern_ok(pattern);
	int rv;

	memset(why, 0x5a, sizeof(why));
	rv = extc_seed_path_check_pattern(pattern, why, whylen);
	if ((rv == 0) != want)
		fuzz_fail(want ? "a valid pattern was refused" : "an invalid pattern was accepted",
			  NULL);
	if (rv < 0) {
		fuzz_check_text(why, whylen, "check_pattern why");
		return;
	}
	memset(why, 0x5a, sizeof(why));
	rv = extc_seed_path_expand(pattern, uid, user, out, sizeof(out), why, whylen);
	if (rv < 0) {
		fuzz_check_text(why, whylen, "expand why");
		return;
	}
	if (extc_seed_path_check_dir(out, "seed=", why, sizeof(why)) != 0)
		fuzz_fail("an expanded pattern is not an acceptable directory", out);
	/* the name and the number never add or remove a path component */
	if (count_char(out, '/') != count_char(pattern, '/'))
		fuzz_fail("the expansion changed the path's components", out);
	if (has_user_token(pattern) &&
	    (strcmp(user, ".") == 0 || strcmp(user, "..") == 0 || user[0] == '\0'))
		fuzz_fail("a user name that is not a plain name was expanded", user);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *value, *user;
	char *buf, *nul;
	size_t whylen;
	uid_t uid;

	if (size < 5)
		return (0);
	whylen = 1 + (data[0] * 7u) % 600;
	uid = (uid_t)((uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
		      (uint32_t)data[4] << 24);
	buf = malloc(size - 5 + 2);
	if (buf == NULL)
		return (0);
	memcpy(buf, data + 5, size - 5);
	buf[size - 5] = '\0';
	buf[size - 4] = '\0';
	nul = buf + strlen(buf);
	value = buf;
	user = (nul < buf + size - 5) ? nul + 1 : nul;

	check_dir(value, whylen);
	check_key(value, whylen);
	check_pattern(value, uid, user, whylen);
	free(buf);
	return (0);
}
