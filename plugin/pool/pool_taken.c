/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what a step takes out of the pool is noted first, and returned before its directory goes. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/text.h"
#include "pool/pool_key.h"
#include "pool/pool_level.h"
#include "pool/pool_return.h"
#include "pool/pool_taken.h"

#define NAME_MAX_LEN 48
#define NOTES_PER_READ 32
#define NOTE_ROUNDS_MAX 64	/* a job's notes on a node: one per step, 2048 in all */

static int taken_note_name(const struct extc_ids *ids, bool per_job, char *buf, size_t len)
{
	if (per_job)
		return (extc_fmt(buf, len, "%u%s", ids->jobid, EXTC_POOL_TAKEN_SUFFIX));
	return (extc_fmt(buf, len, "%u.%u%s", ids->jobid, ids->stepid, EXTC_POOL_TAKEN_SUFFIX));
}

/* A job's note is there already: is it for this key? */
static enum extc_pool_taken_result first_key_is(const struct extc_pool_fds *p, const char *name,
						const struct extc_fs_policy *pol, const char *key,
						char *why, size_t whylen)
{
	char text[EXTC_POOL_NOTE_MAX + 1], there[EXTC_POOL_KEY_LEN + 1];

	if (extc_pool_level_read_note(p->uid, name, pol, text, EXTC_POOL_NOTE_MAX, false) < 0 ||
	    extc_text_field(text, "key", there, sizeof(there)) < 0) {
		extc_fmt(why, whylen, "%s/%s: cannot read it", p->t.path, name);
		return (EXTC_POOL_TAKEN_FAILED);
	}
	return (strcmp(there, key) == 0 ? EXTC_POOL_TAKEN_NOTED : EXTC_POOL_TAKEN_OTHER);
}

enum extc_pool_taken_result extc_pool_taken_note(const struct extc_tree *tree,
						 const struct extc_ids *ids, bool per_job,
						 const char *key, const char *dir, char *why,
						 size_t whylen)
{
	char name[NAME_MAX_LEN], text[EXTC_POOL_NOTE_MAX + 1];
	struct extc_pool_fds p;
	enum extc_pool_taken_result rv = EXTC_POOL_TAKEN_FAILED;
	enum extc_note_result wrote;

	if (extc_pool_level_open_uid(tree, ids->uid, true, &p, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	if (taken_note_name(ids, per_job, name, sizeof(name)) < 0 ||
	    extc_fmt(text, sizeof(text), "key=%s\ndir=%s\ngid=%u\n", key, dir,
		     (unsigned)ids->gid) < 0) {
		extc_fmt(why, whylen, "the note of what the step takes does not fit");
		goto out;
	}
	/* a step's own note replaces one a requeued run of it left; a job's first key stays */
	wrote = extc_pool_level_write_note(&p, name, EXTC_POOL_TAKEN_SUFFIX, text, !per_job, why, whylen);
	if (wrote == EXTC_NOTE_WRITTEN)
		rv = EXTC_POOL_TAKEN_NOTED;
	else if (wrote == EXTC_NOTE_EXISTS)
		rv = first_key_is(&p, name, tree->pol, key, why, whylen);
out:
	extc_pool_level_close(&p);
	return (rv);
}

void extc_pool_taken_drop(const struct extc_tree *tree, const struct extc_ids *ids, bool per_job)
{
	char name[NAME_MAX_LEN], why[EXTC_WHY_MAX];
	struct extc_pool_fds p;

	if (extc_pool_level_open_uid(tree, ids->uid, false, &p, why, sizeof(why)) == EXTC_LEVEL_FOUND &&
	    taken_note_name(ids, per_job, name, sizeof(name)) == 0)
		unlinkat(p.uid, name, 0);
	extc_pool_level_close(&p);
}

/* <key>.lost, for the key's next step: the last loss is what it says. */
static void note_lost(const struct extc_pool_fds *p, const char *key, uint32_t jobid,
		      const char *what)
{
	char name[NAME_MAX_LEN], text[EXTC_POOL_NOTE_MAX + 1], shown[512];

	extc_escape(what, 300, shown, sizeof(shown));
	if (extc_fmt(name, sizeof(name), "%s%s", key, EXTC_POOL_LOST_SUFFIX) == 0 &&
	    extc_fmt(text, sizeof(text), "job=%u\nwhat=%s\n", jobid, shown) == 0) {
		char why[EXTC_WHY_MAX];	/* a note not written is a loss not told: nothing else to do */

		extc_pool_level_write_note(p, name, EXTC_POOL_LOST_SUFFIX, text, true, why, sizeof(why));
	}
}

/* Is 'name' a note of job 'jobid' (<jobid>.out or <jobid>.<stepid>.out)? Its per-job flag. */
static bool job_note(const char *name, uint32_t jobid, bool *per_job)
{
	char prefix[16];
	size_t len = strlen(name), slen = strlen(EXTC_POOL_TAKEN_SUFFIX);

	extc_fmt(prefix, sizeof(prefix), "%u", jobid);
	if (len <= slen || strcmp(name + len - slen, EXTC_POOL_TAKEN_SUFFIX) != 0 ||
	    !extc_has_prefix(name, prefix))
		return (false);
	*per_job = name + strlen(prefix) == name + len - slen;
	return (*per_job || name[strlen(prefix)] == '.');
}

/* One note, read and dropped: what it names goes back to its key, or the key is told. */
static void return_one(const struct extc_tree *tree, const struct extc_pool_fds *p,
		       const char *name, uid_t uid, uint32_t jobid, const char *node,
		       const struct timespec *changed_before, struct extc_pool_taken_report *rep)
{
	char text[EXTC_POOL_NOTE_MAX + 1], key[EXTC_POOL_KEY_LEN + 1], dir[PATH_MAX], gid[16];
	char why[EXTC_WHY_MAX] = "", what[EXTC_WHY_MAX + 64];
	struct extc_warm_walk_report wr;
	struct extc_pool_return_for f = {
		.key = key, .dir = dir, .node = node, .timeout_s = EXTC_POOL_RETURN_TIMEOUT_S,
		.changed_before = changed_before,
	};
	struct extc_ids ids = { .uid = uid, .jobid = jobid };
	uint32_t g;
	enum extc_pool_return_result ret;

	if (extc_pool_level_read_note(p->uid, name, tree->pol, text, EXTC_POOL_NOTE_MAX, true) < 0 ||
	    extc_text_field(text, "key", key, sizeof(key)) < 0 || !extc_pool_key_name_ok(key) ||
	    extc_text_field(text, "dir", dir, sizeof(dir)) < 0 || dir[0] != '/' ||
	    extc_text_field(text, "gid", gid, sizeof(gid)) < 0 || extc_parse_u32(gid, UINT32_MAX, &g) < 0)
		return;		/* not a note of this plugin's: nothing to go by */
	ids.gid = (gid_t)g;
	rep->notes++;
	ret = extc_pool_return(tree, &ids, &f, &wr, why, sizeof(why));
	rep->entries += wr.published;
	rep->changed += wr.changed;
	if (ret == EXTC_POOL_RETURNED && wr.changed == 0) {
		rep->returned++;
		return;
	}
	rep->lost++;
	if (ret == EXTC_POOL_RETURNED)
		extc_fmt(what, sizeof(what), "%" PRIu64 " %s made or changed during the job, whose "
			 "steps ran in different environments, %s not returned", wr.changed,
			 wr.changed == 1 ? "entry" : "entries", wr.changed == 1 ? "was" : "were");
	else
		extc_fmt(what, sizeof(what), "%s builds were not returned: %s",
			 ret == EXTC_POOL_RETURN_PARTIAL ? "some" : "its", why);
	if (rep->first_why[0] == '\0')
		extc_fmt(rep->first_why, sizeof(rep->first_why), "key %s: %s", key, what);
	note_lost(p, key, jobid, what);
}

void extc_pool_taken_return_job(const struct extc_tree *tree, uid_t uid, uint32_t jobid,
				const char *node, const struct timespec *mixed_since,
				struct extc_pool_taken_report *rep)
{
	char names[NOTES_PER_READ][NAME_MAX_LEN], why[EXTC_WHY_MAX];
	bool per_job[NOTES_PER_READ];
	struct extc_pool_fds p;
	struct dirent *de;
	size_t n, i, rounds = 0;
	DIR *d;

	memset(rep, 0, sizeof(*rep));
	if (extc_pool_level_open_uid(tree, uid, false, &p, why, sizeof(why)) != EXTC_LEVEL_FOUND)
		goto out;
	/*
	 * The names first, then the returns (each drops its note), so the
	 * level is not read while a return waits on the user's child; again
	 * until a read finds fewer than it can hold.
	 */
	do {
		n = 0;
		d = extc_fdio_opendir(p.uid);
		while (d != NULL && n < NOTES_PER_READ && (de = readdir(d)) != NULL) {
			if (strlen(de->d_name) < NAME_MAX_LEN && job_note(de->d_name, jobid, &per_job[n]))
				strcpy(names[n++], de->d_name);
		}
		if (d != NULL)
			closedir(d);
		for (i = 0; i < n; i++)
			return_one(tree, &p, names[i], uid, jobid, node,
				   per_job[i] ? mixed_since : NULL, rep);
	} while (n == NOTES_PER_READ && ++rounds < NOTE_ROUNDS_MAX);
out:
	extc_pool_level_close(&p);
}

bool extc_pool_taken_lost(const struct extc_tree *tree, const struct extc_ids *ids, const char *key,
			  char *text, size_t len)
{
	char name[NAME_MAX_LEN], note[EXTC_POOL_NOTE_MAX + 1], job[16], what[EXTC_WHY_MAX];
	struct extc_pool_fds p;
	bool rv = false;

	if (extc_pool_level_open_uid(tree, ids->uid, false, &p, what, sizeof(what)) == EXTC_LEVEL_FOUND &&
	    extc_fmt(name, sizeof(name), "%s%s", key, EXTC_POOL_LOST_SUFFIX) == 0 &&
	    extc_pool_level_read_note(p.uid, name, tree->pol, note, EXTC_POOL_NOTE_MAX, true) >= 0 &&
	    extc_text_field(note, "job", job, sizeof(job)) == 0 &&
	    extc_text_field(note, "what", what, sizeof(what)) == 0)
		rv = extc_fmt(text, len, "at the end of job %s, %s", job, what) == 0;
	extc_pool_level_close(&p);
	return (rv);
}
