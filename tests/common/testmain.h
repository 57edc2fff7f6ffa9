/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: the main() tails of the cmocka programs that need
 * root, so each program only lists its cases and says why it needs root.
 *
 * Two tiers (Makefile.am): make check runs what any builder can, as any
 * uid, with no mount, no other user and no change to /dev/fuse; make
 * check-root runs the rest as root, with EXTC_TEST_TIER=root in the
 * environment. A program wholly of the root tier uses TESTMAIN_ROOT_ONLY;
 * a program with cases of both uses TESTMAIN_TIERED and is in both lists.
 */
#ifndef EXTC_TESTMAIN_H_
#define EXTC_TESTMAIN_H_

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* which tier this run is: EXTC_TEST_TIER=root is make check-root's */
enum testmain_tier {
	TESTMAIN_TIER_ANY,	/* make check: any uid, nothing privileged */
	TESTMAIN_TIER_ROOT,	/* make check-root: root only */
};

enum testmain_tier testmain_tier(void);

/*
 * Runs the cases of group `group` (program test_<group>) when root; fails
 * (exit 1, saying why) otherwise: these programs are make check-root's, and
 * that tier fails rather than skips. `prepare` (may be NULL) runs once
 * before the cases, as root; a non-zero return fails the program (1)
 * without running them.
 */
int testmain_root_only(const char *group, const char *why_root,
		       const struct CMUnitTest *tests, size_t count,
		       int (*prepare)(void));

#define TESTMAIN_ROOT_ONLY(group, why_root, tests, prepare) \
	testmain_root_only((group), (why_root), (tests), \
			   sizeof(tests) / sizeof((tests)[0]), (prepare))

/*
 * make check's run takes the `any` cases, whoever runs it; make
 * check-root's takes the `root` cases and fails (exit 1) when not root.
 * `setup` and `teardown` (may be NULL) are the group's fixture, as with
 * cmocka_run_group_tests.
 */
int testmain_tiered(const char *group, const char *why_root,
		    const struct CMUnitTest *any, size_t nany,
		    const struct CMUnitTest *root, size_t nroot,
		    CMFixtureFunction setup, CMFixtureFunction teardown);

#define TESTMAIN_TIERED(group, why_root, any, root, setup, teardown) \
	testmain_tiered((group), (why_root), (any), sizeof(any) / sizeof((any)[0]), \
			(root), sizeof(root) / sizeof((root)[0]), (setup), (teardown))

#endif
