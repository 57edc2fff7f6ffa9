/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the manifest of a published cache, and whether a job may reuse it. */
#ifndef EXTC_MANIFEST_H_
#define EXTC_MANIFEST_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "warm/warm_names.h"

#define EXTC_MANIFEST_NAME EXTC_OWN_PREFIX "manifest"
#define EXTC_MANIFEST_MAX 4096	/* a longer file is not ours */

struct extc_manifest {
	char key[257];		/* SLURM_EXT_CACHE_KEY of the publisher ("" if unset) */
	char arch[32];		/* uname machine */
	char isa[40];		/* CPU ISA fingerprint (torch builds with -march=native) */
	char job[16];
	char node[72];
	char time[32];		/* UTC, ISO 8601 */
	char plugin[32];	/* plugin version */
};

/*
 * This node and job: arch from uname, the ISA fingerprint of 'cpuinfo'
 * (/proc/cpuinfo in production), the time now. 'key' must be checked.
 */
int extc_manifest_local(struct extc_manifest *m, const char *key, uint32_t jobid,
			const char *node, const char *cpuinfo, char *why, size_t whylen);

/*
 * A fingerprint of the CPU's instruction set: a hash of the flags line of
 * 'cpuinfo' ("flags" on x86, "Features" on Arm, "isa" elsewhere), in hex.
 */
int extc_manifest_isa_fingerprint(const char *cpuinfo, char *out, size_t len);

int extc_manifest_format(const struct extc_manifest *m, char *buf, size_t len);
int extc_manifest_parse(const char *text, struct extc_manifest *m, char *why, size_t whylen);

/*
 * May builds described by 'have' be used by a job described by 'want'?
 * The key, the machine and the ISA must be equal. 0 yes; -1 no, and 'why'
 * names what differs with both values.
 */
int extc_manifest_compatible(const struct extc_manifest *have, const struct extc_manifest *want,
			     char *why, size_t whylen);

enum extc_manifest_result {
	EXTC_MANIFEST_OK,	/* read, or written */
	EXTC_MANIFEST_ABSENT,	/* read: the directory has none */
	EXTC_MANIFEST_EXISTS,	/* written only_if_absent: another came first, and stays */
	EXTC_MANIFEST_FAILED,	/* unreadable, not a manifest, or not written: 'why' says why */
};

/* Read EXTC_MANIFEST_NAME in 'dirfd': _OK, _ABSENT or _FAILED. */
enum extc_manifest_result extc_manifest_read(int dirfd, struct extc_manifest *m, char *why,
					     size_t whylen);

/*
 * Read EXTC_MANIFEST_NAME in 'dirfd' and hold it against 'want'
 * (extc_manifest_compatible): _OK when its builds may be used, _ABSENT
 * when it has none, _FAILED ('why') when it cannot be read or differs.
 */
enum extc_manifest_result extc_manifest_check(int dirfd, const struct extc_manifest *want,
					      char *why, size_t whylen);

/*
 * Write EXTC_MANIFEST_NAME in 'dirfd' atomically: a temporary file named
 * after 'tag', then a rename over the old one or, with 'only_if_absent', a
 * link that fails if one is already there (then EXTC_MANIFEST_EXISTS is
 * returned, and the existing one stays). _OK, _EXISTS or _FAILED.
 */
enum extc_manifest_result extc_manifest_write(int dirfd, const struct extc_manifest *m,
					      bool only_if_absent, const char *tag, char *why,
					      size_t whylen);

#endif /* EXTC_MANIFEST_H_ */
