/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache fuzz targets: shared checks (see fuzz.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void fuzz_fail(const char *what, const char *detail)
{
	fprintf(stderr, "FUZZ FINDING: %s: %s\n", what, detail ? detail : "");
	abort();
}

void fuzz_check_text(const char *buf, size_t len, const char *what)
{
	size_t i;

	if (len == 0)
		return;
	if (memchr(buf, '\0', len) == NULL)
		fuzz_fail(what, "not NUL-terminated within its buffer");
	for (i = 0; buf[i] != '\0'; i++) {
		unsigned char c = (unsigned char)buf[i];

		/* a log line: printable ASCII only, user bytes escaped as \xNN */
		if (c < 0x20 || c >= 0x7f)
			fuzz_fail(what, "holds a control or non-ASCII byte");
	}
}
