/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what a step takes out of the pool is noted first, and returned before its directory goes. */
#ifndef EXTC_POOL_TAKEN_H_
#define EXTC_POOL_TAKEN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "fs/fs_policy.h"

#define EXTC_POOL_TAKEN_SUFFIX ".out"	/* <jobid>.<stepid>.out, or <jobid>.out for a job-mode job */
#define EXTC_POOL_LOST_SUFFIX ".lost"	/* <key>.lost: what the key lost, for its next step */
#define EXTC_POOL_NOTE_MAX 4200		/* a note's text: a key, a path, a few numbers */

enum extc_pool_taken_result {
	EXTC_POOL_TAKEN_NOTED,	/* the step may take: the note is there */
	EXTC_POOL_TAKEN_OTHER,	/* job mode: another key of the job was noted here first */
	EXTC_POOL_TAKEN_FAILED,	/* no note ('why'): the step must take nothing */
};

/*
 * init_post_opt, as root, before any task of the step can take 'key's
 * builds into 'dir' (the leaf, or its container/): note "key K may be in
 * dir D" beside the user's keys, root's own file, so that whatever later
 * retires the tree (the step's end, the epilog, the sweep of a crashed
 * job) returns them first. A job-mode job has one note per node: its
 * steps share one directory, so only the first key noted may take.
 */
enum extc_pool_taken_result extc_pool_taken_note(const struct extc_tree *tree,
						 const struct extc_ids *ids, bool per_job,
						 const char *key, const char *dir, char *why,
						 size_t whylen);

/* Everything the note names is back in its key (the step's end, the job-mode put-back): it goes. */
void extc_pool_taken_drop(const struct extc_tree *tree, const struct extc_ids *ids, bool per_job);

struct extc_pool_taken_report {
	unsigned notes;		/* notes of the job found */
	unsigned returned;	/* whole */
	unsigned lost;		/* not returned, or not whole: each noted in <key>.lost */
	uint64_t entries;	/* moved back */
	uint64_t changed;	/* left out as changed during the job (a mixed job-mode job) */
	char first_why[256];
};

/*
 * The epilog, or the sweep of a crashed job, as root, before the job's
 * tree goes: every note of job 'jobid' of 'uid' is read and dropped, and
 * what it names is returned to its key (extc_pool_return). For the job's
 * per-job note, 'mixed_since' (not NULL when the job's steps ran with
 * different keys) returns only what was not changed since the job's first
 * step here: what the take brought, as it was. What cannot be returned
 * whole is said in the key's <key>.lost, for its next step.
 */
void extc_pool_taken_return_job(const struct extc_tree *tree, uid_t uid, uint32_t jobid,
				const char *node, const struct timespec *mixed_since,
				struct extc_pool_taken_report *rep);

/*
 * A step that holds 'key': what the key lost since, said once (the note is
 * read and dropped). true and 'text' filled when there was a note.
 */
bool extc_pool_taken_lost(const struct extc_tree *tree, const struct extc_ids *ids, const char *key,
			  char *text, size_t len);

#endif /* EXTC_POOL_TAKEN_H_ */
