/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: the main() tail shared by the root-only programs (make check-root). */
#include <stdio.h>
#include <unistd.h>

#include "testmain.h"

enum { TESTMAIN_NOT_ROOT = 1 };	/* a failure: make check-root never skips */

int testmain_root_only(const char *group, const char *why_root,
		       const struct CMUnitTest *tests, size_t count,
		       int (*prepare)(void))
{
	if (geteuid() != 0) {
		fprintf(stderr, "test_%s: must run as root (%s); it belongs to make check-root\n",
			group, why_root);
		return (TESTMAIN_NOT_ROOT);
	}
	if (prepare != NULL && prepare() != 0)
		return (1);
	return (_cmocka_run_group_tests(group, tests, count, NULL, NULL));
}
