/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: small string helpers shared by the pure modules. */
#ifndef EXTC_TEXT_H_
#define EXTC_TEXT_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The size of every buffer that carries a reason ("why") up to a log line;
 * log.c renders a line into 1024 bytes, so a longer reason could not be
 * shown anyway.
 */
#define EXTC_WHY_MAX 1024

/*
 * Copy 'in' into 'out' so that it is safe to put in a log line: bytes
 * outside printable ASCII become \xNN, and anything past 'max_in' input
 * bytes is replaced by "...". User-controlled values (option values,
 * directory entry names) are only ever logged through this.
 */
void extc_escape(const char *in, size_t max_in, char *out, size_t outlen);

/*
 * Replace, in place, every byte outside printable ASCII by '?'. The last
 * line of defence of log.c: a line that escaped everything a user wrote is
 * unchanged by it; one that missed something loses its control bytes.
 */
void extc_sanitize(char *s);

/* snprintf that reports truncation: 0 on success, -1 if it did not fit. */
int extc_fmt(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int extc_vfmt(char *buf, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Strict unsigned decimal parser: no sign, no spaces, no leading zeros
 * (except "0" itself), no trailing bytes, value <= max. */
int extc_parse_u32(const char *s, uint32_t max, uint32_t *out);

/* Does 'str' start with 'prefix'? */
bool extc_has_prefix(const char *str, const char *prefix);

/*
 * The value of the line "<name>=<value>" of 'text' (lines end in '\n'),
 * copied into 'out': 0, or -1 when there is no such line or it does not fit.
 */
int extc_text_field(const char *text, const char *name, char *out, size_t outlen);

/* Strings this long at most are compared by extc_text_edit_distance (a mode, a plugstack key). */
#define EXTC_TEXT_DISTANCE_MAX 32

/*
 * How many single-character edits (insert, delete, replace, swap two
 * neighbours) turn 'a' into 'b', for "did you mean" hints; (size_t)-1 when
 * either is longer than EXTC_TEXT_DISTANCE_MAX.
 */
size_t extc_text_edit_distance(const char *a, const char *b);

#endif /* EXTC_TEXT_H_ */
