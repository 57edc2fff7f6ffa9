/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: cmocka assertions on message text (include after <cmocka.h>). */
#ifndef EXTC_STRASSERT_H_
#define EXTC_STRASSERT_H_

#include <string.h>

#define assert_contains(hay, needle)                                                  \
	do {                                                                            \
		const char *hay_ = (hay), *needle_ = (needle);                          \
		if (strstr(hay_, needle_) == NULL) {                                    \
			print_error("\"%s\" does not contain \"%s\"\n", hay_, needle_); \
			fail();                                                         \
		}                                                                       \
	} while (0)

#define assert_not_contains(hay, needle)                                      \
	do {                                                                    \
		const char *hay_ = (hay), *needle_ = (needle);                  \
		if (strstr(hay_, needle_) != NULL) {                            \
			print_error("\"%s\" contains \"%s\"\n", hay_, needle_); \
			fail();                                                 \
		}                                                               \
	} while (0)

#define assert_starts_with(str, prefix)                                                 \
	do {                                                                              \
		const char *str_ = (str), *prefix_ = (prefix);                            \
		if (strncmp(str_, prefix_, strlen(prefix_)) != 0) {                       \
			print_error("\"%s\" does not start with \"%s\"\n", str_, prefix_); \
			fail();                                                           \
		}                                                                         \
	} while (0)

#endif /* EXTC_STRASSERT_H_ */
