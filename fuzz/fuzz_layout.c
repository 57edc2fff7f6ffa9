/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache fuzz target: the path builder (security-cases.md case 14) and the
 * strict name parsers the sweep relies on (case 38), plus the log escaper
 * every user-controlled name goes through (case 27).
 *
 * Input: the first 13 bytes give uid, job id, step id and mode (so the
 * special step ids and the bounds are reached quickly); the whole input is
 * also parsed as a directory name and escaped into a buffer of a size it
 * chooses.
 *
 * Checked: every name built is a plain decimal or fixed word, short, with
 * no '/', never "." or "..", never for uid 0, job 0 or ids at or above
 * Slurm's NO_VAL range, and parses back to the same id; a name the parsers
 * accept is exactly the one the builder makes; escaped text is printable,
 * NUL-terminated and within its buffer.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "base/layout.h"
#include "base/text.h"

static uint32_t u32_at(const uint8_t *d)
{
	return ((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24);
}

static void check_plain_name(const char *name, size_t buflen, const char *what)
{
	size_t n = strnlen(name, buflen);

	if (n == 0 || n == buflen || n >= EXTC_NAME_LEN || n > NAME_MAX)
		fuzz_fail(what, "empty or overlong");
	if (strchr(name, '/') != NULL || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		fuzz_fail(what, name);
}

static void check_ids(uint32_t uid, uint32_t jobid, uint32_t stepid, unsigned modeb, size_t len)
{
	char name[EXTC_NAME_LEN + 8];
	enum extc_mode mode = (enum extc_mode)(modeb % 4);
	uint32_t back;
	uid_t uback;
	int rv;

	if (len > sizeof(name))
		len = sizeof(name);
	rv = extc_layout_uid_name((uid_t)uid, name, len);
	if (rv == 0) {
		check_plain_name(name, len, "uid name");
		if (uid == 0 || uid >= 0xfffffff0u)
			fuzz_fail("uid name for a reserved uid", name);
		if (extc_layout_parse_uid_name(name, &uback) < 0 || uback != (uid_t)uid)
			fuzz_fail("uid name does not parse back", name);
	} else if (uid != 0 && uid < 0xfffffff0u && len >= EXTC_NAME_LEN) {
		fuzz_fail("uid name refused for a valid uid", NULL);
	}
	rv = extc_layout_job_name(jobid, name, len);
	if (rv == 0) {
		check_plain_name(name, len, "job name");
		if (jobid == 0 || jobid >= 0xfffffff0u)
			fuzz_fail("job name for a reserved job id", name);
		if (extc_layout_parse_job_name(name, &back) < 0 || back != jobid)
			fuzz_fail("job name does not parse back", name);
	} else if (jobid != 0 && jobid < 0xfffffff0u && len >= EXTC_NAME_LEN) {
		fuzz_fail("job name refused for a valid job id", NULL);
	}
	rv = extc_layout_leaf_name(mode, stepid, name, len);
	if (rv == 0) {
		check_plain_name(name, len, "leaf name");
		if (mode != EXTC_MODE_LOCAL && mode != EXTC_MODE_JOB)
			fuzz_fail("leaf name in a mode without directory", name);
		if (stepid == EXTC_STEP_EXTERN || stepid == EXTC_STEP_PENDING)
			fuzz_fail("leaf name for the extern or pending step", name);
		if (mode == EXTC_MODE_JOB && strcmp(name, EXTC_LEAF_JOB) != 0)
			fuzz_fail("job mode leaf is not 'job'", name);
		if (mode == EXTC_MODE_LOCAL && stepid <= EXTC_STEP_MAX_NORMAL &&
		    (extc_parse_u32(name, EXTC_STEP_MAX_NORMAL, &back) < 0 || back != stepid))
			fuzz_fail("step leaf does not parse back", name);
	}
}

static void check_parsers(const char *s)
{
	char again[EXTC_NAME_LEN];
	uint32_t v;
	uid_t u;

	if (extc_layout_parse_job_name(s, &v) == 0) {
		if (extc_layout_job_name(v, again, sizeof(again)) < 0 || strcmp(again, s) != 0)
			fuzz_fail("parse_job_name accepted a name the builder never makes", s);
	}
	if (extc_layout_parse_uid_name(s, &u) == 0) {
		if (extc_layout_uid_name(u, again, sizeof(again)) < 0 || strcmp(again, s) != 0)
			fuzz_fail("parse_uid_name accepted a name the builder never makes", s);
	}
	if (extc_parse_u32(s, UINT32_MAX, &v) == 0) {
		snprintf(again, sizeof(again), "%u", v);
		if (strcmp(again, s) != 0)
			fuzz_fail("parse_u32 accepted a non-canonical number", s);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char esc[300];
	size_t esclen, maxin;
	char *s;

	if (size >= 13)
		check_ids(u32_at(data), u32_at(data + 4), u32_at(data + 8), data[12],
			  (size_t)1 + data[12] / 4 % 40);
	s = malloc(size + 1);
	if (s == NULL)
		return (0);
	memcpy(s, data, size);
	s[size] = '\0';
	check_parsers(s);
	if (size >= 13)
		check_parsers(s + 13);

	esclen = 1 + (size ? data[0] : 0) % sizeof(esc);
	maxin = size ? data[size - 1] : 0;
	memset(esc, 0x5a, sizeof(esc));
	extc_escape(s, maxin, esc, esclen);
	fuzz_check_text(esc, esclen, "escape output");
	if (strlen(esc) > 4 * maxin + 3)
		fuzz_fail("escape output longer than its input allows", NULL);
	free(s);
	return (0);
}
