/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache fuzz target: the plugstack.conf argument parser (security-cases.md
 * case 46) and the single-value validators it uses.
 *
 * Input: byte 0 picks the size of the message buffer (so truncation is
 * exercised), the rest is one plugstack.conf line after the plugin path,
 * split the way Slurm splits it (space, tab, newline; '#' ends the line).
 *
 * Checked: no crash or sanitizer report; an accepted configuration satisfies
 * every rule the parser promises (absolute base without '.', '..' or empty
 * components, valid and unique variable names, plain subdirectories); a
 * refusal always says why, in printable ASCII, within the buffer.
 */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/config_vars.h"
#include "fuzz.h"

#define MAX_ARGS 64

static void check_name(const char *name, size_t max, const char *extra, const char *what)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > max)
		fuzz_fail(what, name);
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)name[i]) && strchr(extra, name[i]) == NULL)
			fuzz_fail(what, name);
	}
}

static void check_accepted(const struct extc_config *cfg)
{
	const char *b = cfg->base;
	size_t i, j, len = strlen(b);

	if (b[0] != '/' || len < 2 || len > EXTC_BASE_MAX || b[len - 1] == '/' ||
	    strstr(b, "//") != NULL || strstr(b, "/./") != NULL || strstr(b, "/../") != NULL ||
	    (len >= 2 && strcmp(b + len - 2, "/.") == 0) ||
	    (len >= 3 && strcmp(b + len - 3, "/..") == 0) || strcmp(b, "/tmp") == 0)
		fuzz_fail("accepted a bad base", b);
	check_name(b, EXTC_BASE_MAX, "/._+-", "accepted a base with a bad byte");
	if (cfg->nvars == 0 || cfg->nvars > EXTC_VARS_MAX)
		fuzz_fail("accepted a variable count out of range", NULL);
	for (i = 0; i < cfg->nvars; i++) {
		const struct extc_var *v = &cfg->vars[i];

		check_name(v->name, EXTC_VAR_NAME_MAX, "_", "accepted a bad variable name");
		if (isdigit((unsigned char)v->name[0]))
			fuzz_fail("accepted a variable name starting with a digit", v->name);
		if (strncmp(v->name, "SLURM", 5) == 0 || strncmp(v->name, "LD_", 3) == 0 ||
		    strcmp(v->name, "PATH") == 0)
			fuzz_fail("accepted a reserved variable name", v->name);
		check_name(v->subdir, EXTC_SUBDIR_MAX, "._-", "accepted a bad subdirectory");
		if (strcmp(v->subdir, ".") == 0 || strcmp(v->subdir, "..") == 0)
			fuzz_fail("accepted . or .. as a subdirectory", v->subdir);
		for (j = 0; j < i; j++) {
			if (strcmp(cfg->vars[j].name, v->name) == 0)
				fuzz_fail("accepted a variable twice", v->name);
		}
	}
	/* the deepest exported path must fit, whatever the ids */
	if (len + 1 + 10 + 1 + 10 + 1 + 11 + 1 + EXTC_SUBDIR_MAX >= PATH_MAX)
		fuzz_fail("accepted a base too long for the tree", b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct extc_config cfg;
	struct extc_var vars[EXTC_VARS_MAX];
	char *line, *p, *av[MAX_ARGS];
	char why[600];
	size_t whylen, nvars = 0;
	int ac = 0, rv;

	if (size == 0)
		return (0);
	whylen = 1 + data[0] % sizeof(why);
	line = malloc(size);
	if (line == NULL)
		return (0);
	memcpy(line, data + 1, size - 1);
	line[size - 1] = '\0';

	/* the raw text as single values: the validators must cope with anything */
	memset(why, 0x5a, sizeof(why));
	if (extc_config_check_base(line, why, whylen) < 0)
		fuzz_check_text(why, whylen, "check_base why");
	memset(why, 0x5a, sizeof(why));
	if (extc_config_vars_parse(line, vars, &nvars, why, whylen) < 0)
		fuzz_check_text(why, whylen, "parse_vars why");
	else if (nvars == 0 || nvars > EXTC_VARS_MAX)
		fuzz_fail("parse_vars count", NULL);

	/* Slurm's split: a '#' ends the line, words are separated by blanks */
	p = strchr(line, '#');
	if (p != NULL)
		*p = '\0';
	for (p = strtok(line, " \t\n"); p != NULL && ac < MAX_ARGS; p = strtok(NULL, " \t\n"))
		av[ac++] = p;
	memset(why, 0x5a, sizeof(why));
	rv = extc_config_parse(&cfg, ac, av, why, whylen);
	if (rv == 0)
		check_accepted(&cfg);
	else if (rv == -1)
		fuzz_check_text(why, whylen, "config_parse why");
	else
		fuzz_fail("config_parse returned neither 0 nor -1", NULL);
	if (rv < 0 && whylen > 1 && why[0] == '\0')
		fuzz_fail("a refusal without a reason", NULL);
	free(line);
	return (0);
}
