/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the seed and publish directories and the cache key as users and admins name them, checked. */
#include <string.h>

#include "base/fdio.h"
#include "base/text.h"
#include "base/seed_path.h"

static bool has_control(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return (true);
	}
	return (false);
}

int extc_seed_path_check_dir(const char *value, const char *what, char *why, size_t whylen)
{
	const char *reason = NULL;
	char shown[96];

	if (value == NULL || value[0] == '\0')
		reason = "empty value";
	else if (strnlen(value, EXTC_WARM_PATH_MAX + 1) > EXTC_WARM_PATH_MAX)
		reason = "longer than 1024 bytes";
	else if (value[0] != '/')
		reason = "not an absolute path";
	else if (has_control(value))
		reason = "contains control characters";
	if (reason == NULL)
		return (0);
	extc_escape(value, 60, shown, sizeof(shown));
	extc_fmt(why, whylen, "%s=%s: %s: give an absolute directory path of at most %d bytes "
		 "without control characters", what, shown, reason, EXTC_WARM_PATH_MAX);
	return (-1);
}

int extc_seed_path_check_key(const char *value, char *why, size_t whylen)
{
	char shown[96];
	const char *p;

	if (strnlen(value, EXTC_WARM_KEY_MAX + 1) > EXTC_WARM_KEY_MAX) {
		extc_fmt(why, whylen, "%s is longer than %d bytes", EXTC_ENV_KEY, EXTC_WARM_KEY_MAX);
		return (-1);
	}
	for (p = value; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) {
			extc_escape(value, 60, shown, sizeof(shown));
			extc_fmt(why, whylen, "%s=%s: only printable ASCII is allowed", EXTC_ENV_KEY,
				 shown);
			return (-1);
		}
	}
	return (0);
}

int extc_seed_path_check_pattern(const char *pattern, char *why, size_t whylen)
{
	const char *p;

	if (pattern[0] != '/') {
		extc_fmt(why, whylen, "must be an absolute path");
		return (-1);
	}
	if (strlen(pattern) > EXTC_WARM_PATH_MAX / 2) {
		extc_fmt(why, whylen, "longer than %d bytes", EXTC_WARM_PATH_MAX / 2);
		return (-1);
	}
	if (has_control(pattern)) {
		extc_fmt(why, whylen, "contains control characters");
		return (-1);
	}
	for (p = pattern; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		if (p[1] != 'u' && p[1] != 'U' && p[1] != '%') {
			extc_fmt(why, whylen, "only %%u (uid), %%U (user name) and %%%% may follow a %%");
			return (-1);
		}
		p++;
	}
	return (0);
}

static bool plain_name(const char *name)
{
	return (name != NULL && name[0] != '\0' && strchr(name, '/') == NULL && !has_control(name) &&
		!extc_fdio_is_dot(name));
}

int extc_seed_path_expand(const char *pattern, uid_t uid, const char *user,
			  char *out, size_t outlen, char *why, size_t whylen)
{
	char num[16];
	size_t o = 0;
	const char *p;

	extc_fmt(num, sizeof(num), "%u", (unsigned)uid);
	for (p = pattern; *p != '\0'; p++) {
		const char *piece = p;
		size_t len = 1;

		if (*p == '%') {
			p++;
			if (*p == '\0') {
				/* extc_seed_path_check_pattern refuses this; never read past the end */
				extc_fmt(why, whylen, "the seed= pattern ends with a lone %%");
				return (-1);
			}
			if (*p == 'u')
				piece = num;
			else if (*p == 'U' && plain_name(user))
				piece = user;
			else if (*p == 'U') {
				extc_fmt(why, whylen, "the user name of uid %u cannot be part of a path",
					 (unsigned)uid);
				return (-1);
			}
			else
				piece = "%";
			len = strlen(piece);
		}
		if (o + len >= outlen || o + len > EXTC_WARM_PATH_MAX) {
			extc_fmt(why, whylen, "the seed directory for uid %u is too long",
				 (unsigned)uid);
			return (-1);
		}
		memcpy(out + o, piece, len);
		o += len;
	}
	out[o] = '\0';
	return (0);
}
