/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: the main() tail shared by the root-only programs. */
#include <stdio.h>
#include <unistd.h>

#include "testmain.h"

enum { TESTMAIN_SKIP = 77 };	/* automake's skip */

int testmain_root_only(const char *group, const char *why_root,
		       const struct CMUnitTest *tests, size_t count,
		       int (*prepare)(void))
{
	if (geteuid() != 0) {
		fprintf(stderr, "test_%s: must run as root (%s)\n", group, why_root);
		return (TESTMAIN_SKIP);
	}
	if (prepare != NULL && prepare() != 0)
		return (1);
	return (_cmocka_run_group_tests(group, tests, count, NULL, NULL));
}
