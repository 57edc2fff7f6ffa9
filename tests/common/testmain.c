/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: the main() tails of the programs that need root for some or all cases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testmain.h"

enum { TESTMAIN_NOT_ROOT = 1 };	/* a failure: make check-root never skips */

static int refuse_unless_root(const char *group, const char *why_root)
{
	if (geteuid() == 0)
		return (0);
	fprintf(stderr, "test_%s: must run as root (%s); it belongs to make check-root\n",
		group, why_root);
	return (TESTMAIN_NOT_ROOT);
}

int testmain_root_only(const char *group, const char *why_root,
		       const struct CMUnitTest *tests, size_t count,
		       int (*prepare)(void))
{
	int rv = refuse_unless_root(group, why_root);

	if (rv != 0)
		return (rv);
	if (prepare != NULL && prepare() != 0)
		return (1);
	return (_cmocka_run_group_tests(group, tests, count, NULL, NULL));
}

enum testmain_tier testmain_tier(void)
{
	const char *tier = getenv("EXTC_TEST_TIER");

	return (tier != NULL && strcmp(tier, "root") == 0 ? TESTMAIN_TIER_ROOT : TESTMAIN_TIER_ANY);
}

int testmain_tiered(const char *group, const char *why_root,
		    const struct CMUnitTest *any, size_t nany,
		    const struct CMUnitTest *root, size_t nroot,
		    CMFixtureFunction setup, CMFixtureFunction teardown)
{
	int rv;

	if (testmain_tier() == TESTMAIN_TIER_ANY)
		return (_cmocka_run_group_tests(group, any, nany, setup, teardown));
	rv = refuse_unless_root(group, why_root);
	if (rv != 0)
		return (rv);
	return (_cmocka_run_group_tests(group, root, nroot, setup, teardown));
}
