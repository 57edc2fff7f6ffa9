/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: how a step's directory started, warm or cold, as one line for the user. */
#ifndef EXTC_WARM_REPORT_H_
#define EXTC_WARM_REPORT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/text.h"
#include "warm/warm_child.h"

/* The environment form of --ext-cache-verbose. */
#define EXTC_ENV_VERBOSE "SLURM_EXT_CACHE_VERBOSE"

enum extc_warm_report_kind {
	EXTC_WARM_REPORT_NOTHING,	/* no seed named, no node pool: nothing could seed it */
	EXTC_WARM_REPORT_WARM,		/* seeded by copy: 'where', 'files', 'bytes', 'ns' */
	EXTC_WARM_REPORT_TAKEN,		/* seeded by rename: 'where', 'files' (entries), 'ns' */
	EXTC_WARM_REPORT_KEPT,		/* a job's directory an earlier step of the job filled */
	EXTC_WARM_REPORT_COLD,		/* started empty: 'why' */
};

/*
 * What the step's directory started from on this node. Recorded as the
 * step goes (the node pool's key in init_post_opt, the seed in task_init);
 * the latest record is the one that decided, as a seed attempt comes
 * after the reasons it overrides.
 */
struct extc_warm_report {
	enum extc_warm_report_kind kind;
	char where[200];	/* "the node pool (key 1a2b3c4d...)", "--ext-cache-seed=DIR" */
	uint64_t files, bytes, ns;
	char why[EXTC_WHY_MAX];
};

/* Started empty, for the reason the format gives (user text in it already escaped). */
void extc_warm_report_cold(struct extc_warm_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Seeded from 'where': 'files' files, 'bytes' bytes, in 'ns' nanoseconds. */
void extc_warm_report_warm(struct extc_warm_report *r, const char *where, uint64_t files,
			   uint64_t bytes, uint64_t ns);

/* Seeded by renaming 'entries' entries of 'where' into the directory, in 'ns' nanoseconds. */
void extc_warm_report_taken(struct extc_warm_report *r, const char *where, uint64_t entries,
			    uint64_t ns);

/*
 * What a seed from 'where' (escaped: "the node pool (key ...)",
 * "--ext-cache-seed=DIR") did: warm (by rename when res->by_rename), kept, or
 * cold with the seed's reason.
 */
void extc_warm_report_seeded(struct extc_warm_report *r, const char *where,
			     const struct extc_warm_seed_res *res);

/* Not seeded: the job's directory already held an earlier step's files. */
void extc_warm_report_kept(struct extc_warm_report *r);

/* The line for node 'node' (a plain name): "node n1: warm: seeded 412 files, 3.1 MiB ...". */
void extc_warm_report_line(const struct extc_warm_report *r, const char *node, char *buf,
			   size_t len);

/* "1a2b3c4d...": a pool key shortened for the user, enough to tell keys apart by eye. */
void extc_warm_report_key(const char *key, char *buf, size_t len);

/*
 * Does the user want the line? The option given wins; otherwise the
 * environment form, on for any value but an empty one or "0".
 */
bool extc_warm_report_wanted(bool option, const char *env);

#endif /* EXTC_WARM_REPORT_H_ */
