/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: run one cmocka case, or a few, by name.
 *
 * Every cmocka program links this file. When EXTC_TEST_FILTER is set (a
 * shell-style pattern such as "test_seed_*"), only the cases whose names
 * match it run: cmocka 1.1.5, Debian 12's, has the setter but reads no
 * environment variable of its own. Unset, every case runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

/* a constructor: the programs' main() stays as it is */
__attribute__((constructor)) static void casefilter_from_environment(void)
{
	const char *pattern = getenv("EXTC_TEST_FILTER");

	if (pattern != NULL && pattern[0] != '\0')
		cmocka_set_test_filter(pattern);
}
