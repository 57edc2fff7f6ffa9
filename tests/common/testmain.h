/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: the main() tail shared by the root-only cmocka
 * programs, so each program only lists its cases and says why it needs root.
 */
#ifndef EXTC_TESTMAIN_H_
#define EXTC_TESTMAIN_H_

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/*
 * Runs the cases of group `group` (program test_<group>) when root; fails
 * (exit 1, saying why) otherwise: these programs are make check-root's, and
 * that tier fails rather than skips. `prepare` (may be NULL) runs once
 * before the cases, as root;
 * a non-zero return fails the program (1) without running them.
 */
int testmain_root_only(const char *group, const char *why_root,
		       const struct CMUnitTest *tests, size_t count,
		       int (*prepare)(void));

#define TESTMAIN_ROOT_ONLY(group, why_root, tests, prepare) \
	testmain_root_only((group), (why_root), (tests), \
			   sizeof(tests) / sizeof((tests)[0]), (prepare))

#endif
