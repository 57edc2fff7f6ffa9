/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool for job-mode jobs: the steps note their key, the epilog puts the builds back. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/text.h"
#include "pool/pool_hold.h"
#include "pool/pool_job.h"
#include "pool/pool_key.h"
#include "pool/pool_level.h"
#include "pool/pool_return.h"
#include "pool/pool_taken.h"

#define MIXED "mixed"	/* the key line of a job whose steps held different keys */

static int note_name(uint32_t jobid, char *buf, size_t len)
{
	return (extc_fmt(buf, len, "%u%s", jobid, EXTC_POOL_JOB_SUFFIX));
}

/*
 * A later step of the job found the note: if its key is another (another
 * environment or SLURM_EXT_CACHE_KEY), the job's directory holds builds
 * of both, and none the job made is pooled: the key line says "mixed"
 * (the rest stays: when the job's first step started here is what tells
 * what the take brought from what the job made). Steps of the job may
 * start at once on the node: the note is locked meanwhile.
 */
static int note_again(int uidfd, const char *name, const char *key, const struct extc_fs_policy *pol)
{
	char text[EXTC_POOL_NOTE_MAX + 1], there[EXTC_POOL_KEY_LEN + 1], *rest;
	struct stat sb;
	ssize_t n;
	size_t keep;
	int fd, rv = -1;

	fd = openat(uidfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != pol->owner ||
	    flock(fd, LOCK_EX) < 0)
		goto out;
	n = pread(fd, text, EXTC_POOL_NOTE_MAX, 0);
	if (n < 0)
		goto out;
	text[n] = '\0';
	rv = 0;
	if (extc_text_field(text, "key", there, sizeof(there)) < 0 || strcmp(there, key) == 0)
		goto out;	/* the same key, or mixed already: nothing to change */
	rest = strchr(text, '\n');
	if (rest == NULL) {
		rv = -1;
		goto out;
	}
	keep = strlen(rest);
	memmove(text + strlen("key=" MIXED), rest, keep + 1);
	memcpy(text, "key=" MIXED, strlen("key=" MIXED));
	keep += strlen("key=" MIXED);
	if (pwrite(fd, text, keep, 0) != (ssize_t)keep || ftruncate(fd, (off_t)keep) < 0)
		rv = -1;
out:
	if (fd >= 0)
		close(fd);
	return (rv);
}

int extc_pool_job_note(const struct extc_tree *tree, const struct extc_ids *ids, const char *key,
		       const char *dir, char *why, size_t whylen)
{
	char name[32], text[EXTC_POOL_NOTE_MAX + 1];
	struct extc_pool_fds p;
	struct timespec now;
	enum extc_note_result wrote;
	int rv = -1;

	if (extc_pool_level_open_uid(tree, ids->uid, true, &p, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	note_name(ids->jobid, name, sizeof(name));
	/*
	 * The coarse clock file systems stamp change times with: whatever the
	 * job changes after now is stamped at or after it, so nothing the job
	 * made ever counts as what the take brought. (The real time would not
	 * do: the coarse clock lags it by up to a tick, so a change right
	 * after it could be stamped before it.) A change made within a tick
	 * before now may be stamped after it (finer stamps, kernel 6.13's
	 * multigrain ctime): such an entry counts as changed and is left out,
	 * and said lost, never given to the wrong key.
	 */
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	if (extc_fmt(text, sizeof(text), "key=%s\ndir=%s\ngid=%u\nsince=%" PRId64 ".%09ld\n", key,
		     dir, (unsigned)ids->gid, (int64_t)now.tv_sec, now.tv_nsec) < 0) {
		extc_fmt(why, whylen, "the job's note does not fit");
		goto out;
	}
	wrote = extc_pool_level_write_note(&p, name, EXTC_POOL_JOB_SUFFIX, text, false, why, whylen);
	if (wrote == EXTC_NOTE_WRITTEN)
		rv = 0;
	else if (wrote == EXTC_NOTE_EXISTS && (rv = note_again(p.uid, name, key, tree->pol)) < 0)
		extc_fmt(why, whylen, "%s/%s: cannot read or update: %s", p.t.path, name, strerror(errno));
out:
	extc_pool_level_close(&p);
	return (rv);
}

/* What a note says: root's own text, in a root-owned level, so trusted once well-formed. */
struct job_note {
	bool mixed;
	char key[EXTC_POOL_KEY_LEN + 1];
	char dir[PATH_MAX];
	struct timespec since;
	gid_t gid;
};

static bool parse_note(const char *text, struct job_note *n)
{
	char gid[16], since[40], extra;
	long long sec;
	long ns;
	uint32_t g;

	if (extc_text_field(text, "key", n->key, sizeof(n->key)) < 0 ||
	    extc_text_field(text, "dir", n->dir, sizeof(n->dir)) < 0 || n->dir[0] != '/' ||
	    extc_text_field(text, "gid", gid, sizeof(gid)) < 0 || extc_parse_u32(gid, UINT32_MAX, &g) < 0 ||
	    extc_text_field(text, "since", since, sizeof(since)) < 0 ||
	    sscanf(since, "%lld.%9ld%c", &sec, &ns, &extra) != 2 || sec < 0 || ns < 0)
		return (false);
	n->mixed = strcmp(n->key, MIXED) == 0;
	n->gid = (gid_t)g;
	n->since = (struct timespec){ .tv_sec = (time_t)sec, .tv_nsec = ns };
	return (n->mixed || extc_pool_key_name_ok(n->key));
}

/* The job's note, read and dropped. */
static enum extc_pool_job_result take_note(const struct extc_tree *tree, uid_t uid, uint32_t jobid,
					   struct job_note *n, char *why, size_t whylen)
{
	char text[EXTC_POOL_NOTE_MAX + 1], name[32];
	struct extc_pool_fds p;
	enum extc_pool_job_result rv = EXTC_POOL_JOB_NONE;

	note_name(jobid, name, sizeof(name));
	if (extc_pool_level_open_uid(tree, uid, false, &p, why, whylen) == EXTC_LEVEL_FOUND &&
	    extc_pool_level_read_note(p.uid, name, tree->pol, text, EXTC_POOL_NOTE_MAX, true) >= 0) {
		rv = EXTC_POOL_JOB_MOVED;
		if (!parse_note(text, n)) {
			extc_fmt(why, whylen, "%s/%s: not a note of this plugin", p.t.path, name);
			rv = EXTC_POOL_JOB_FAILED;
		} else if (n->mixed) {
			extc_fmt(why, whylen, "the job's steps on this node ran in different environments "
				 "(different keys): the builds it made are not pooled, as none can "
				 "be told apart");
			rv = EXTC_POOL_JOB_MIXED;
		}
	}
	extc_pool_level_close(&p);
	return (rv);
}

enum extc_pool_job_result extc_pool_job_put_back(const struct extc_tree *tree,
						 const struct extc_ids *ids, const char *node,
						 struct extc_pool_job_report *rep, char *why,
						 size_t whylen)
{
	struct job_note n = { .mixed = false };
	struct extc_ids owner = *ids;
	struct extc_pool_return_for f = {
		.key = n.key, .dir = n.dir, .node = node, .timeout_s = EXTC_POOL_RETURN_TIMEOUT_S,
	};
	enum extc_pool_job_result rv;

	memset(rep, 0, sizeof(*rep));
	rv = take_note(tree, ids->uid, ids->jobid, &n, why, whylen);
	if (rv == EXTC_POOL_JOB_MOVED) {
		owner.gid = n.gid;
		/* the whole directory: what the take brought, and what the job made with the same key */
		if (extc_pool_return(tree, &owner, &f, &rep->moved, why, whylen) == EXTC_POOL_RETURNED)
			extc_pool_taken_drop(tree, ids, true);
		else
			rv = EXTC_POOL_JOB_FAILED;
	}
	/* every key still out: a mixed job's, a failed return's, steps of local mode */
	extc_pool_taken_return_job(tree, ids->uid, ids->jobid, node,
				   rv == EXTC_POOL_JOB_MIXED ? &n.since : NULL, &rep->taken);
	return (rv);
}
