/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache fuzz target: the --ext-cache / SLURM_EXT_CACHE value validator
 * (security-cases.md case 41) and the option-over-environment resolution.
 *
 * Input: byte 0 picks the message buffer size and which values are given;
 * the rest is split at the first NUL into the option value and the
 * environment value (both may hold any byte: newlines, '=', invalid UTF-8,
 * format directives, 1 MiB of text).
 *
 * Checked: a value is accepted exactly when it is one of the mode names; a
 * refusal says why in printable ASCII within the buffer; resolution takes the
 * option over the environment over the default.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "base/mode.h"

static bool is_mode_name(const char *v, enum extc_mode *m)
{
	if (strcmp(v, "off") == 0)
		*m = EXTC_MODE_OFF;
	else if (strcmp(v, "local") == 0)
		*m = EXTC_MODE_LOCAL;
	else if (strcmp(v, "job") == 0)
		*m = EXTC_MODE_JOB;
	else
		return (false);
	return (true);
}

static void check_parse(const char *value, size_t whylen)
{
	char why[400];
	enum extc_mode got = (enum extc_mode)99, want;
	int rv;

	memset(why, 0x5a, sizeof(why));
	rv = extc_mode_parse(value, "--ext-cache", &got, why, whylen);
	if (is_mode_name(value, &want)) {
		if (rv != 0 || got != want)
			fuzz_fail("a valid mode was refused", value);
		if (strcmp(extc_mode_name(got), value) != 0)
			fuzz_fail("mode name does not round-trip", value);
	} else {
		if (rv != -1)
			fuzz_fail("an invalid mode was accepted", NULL);
		if (got != (enum extc_mode)99)
			fuzz_fail("a refused value changed the mode", NULL);
		fuzz_check_text(why, whylen, "mode_parse why");
		/* truncation keeps the start: the message always names its source */
		if (whylen > 12 && strncmp(why, "--ext-cache", 11) != 0)
			fuzz_fail("a refusal that does not name --ext-cache", why);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct extc_choice choice;
	const char *opt, *env;
	enum extc_mode want;
	char *buf, *nul;
	char why[400];
	size_t whylen;
	unsigned flags;
	int rv;

	if (size == 0)
		return (0);
	flags = data[0];
	whylen = 1 + (flags * 7u) % sizeof(why);
	buf = malloc(size + 1);
	if (buf == NULL)
		return (0);
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	buf[size] = '\0';
	nul = buf + strlen(buf);
	opt = buf;
	env = (nul < buf + size - 1) ? nul + 1 : nul;

	check_parse(opt, whylen);
	check_parse(env, whylen);

	memset(why, 0x5a, sizeof(why));
	rv = extc_mode_resolve((flags & 1) ? opt : NULL, (flags & 2) ? env : NULL,
			       (enum extc_mode)((flags >> 2) % 3), &choice, why, whylen);
	if (flags & 1) {
		/* an option equal to SLURM_EXT_CACHE is named SLURM_EXT_CACHE (mode.h) */
		const char *named = (flags & 2) && strcmp(opt, env) == 0 ? "SLURM_EXT_CACHE"
									 : "--ext-cache";

		if (!choice.user_asked || strcmp(choice.source, named) != 0)
			fuzz_fail("the option did not win", NULL);
		if ((rv == 0) != is_mode_name(opt, &want) || (rv == 0 && choice.mode != want))
			fuzz_fail("option resolution disagrees with parse", opt);
	} else if (flags & 2) {
		if (!choice.user_asked || strcmp(choice.source, "SLURM_EXT_CACHE") != 0)
			fuzz_fail("the environment did not win over the default", NULL);
		if ((rv == 0) != is_mode_name(env, &want) || (rv == 0 && choice.mode != want))
			fuzz_fail("environment resolution disagrees with parse", env);
	} else if (rv != 0 || choice.user_asked || choice.mode != (enum extc_mode)((flags >> 2) % 3)) {
		fuzz_fail("the default was not applied", NULL);
	}
	if (rv < 0)
		fuzz_check_text(why, whylen, "mode_resolve why");
	free(buf);
	return (0);
}
