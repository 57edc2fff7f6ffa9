/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool for job-mode jobs: the steps note their key, the epilog puts the builds back. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proc/as_user.h"
#include "base/layout.h"
#include "pool/pool_child.h"
#include "pool/pool_hold.h"
#include "pool/pool_level.h"
#include "pool/pool_job.h"
#include "base/text.h"
#include "warm/warm_sweep.h"

#define NOTE_MAX (EXTC_POOL_KEY_LEN + PATH_MAX + 16)
#define NOTE_MIXED "mixed\n"	/* the job's steps held different keys */

static int note_name(uint32_t jobid, char *buf, size_t len)
{
	return (extc_fmt(buf, len, "%u%s", jobid, EXTC_POOL_JOB_SUFFIX));
}

/* The user's pool level, as a hold made it; ABSENT when the job never held a key here. */
static enum extc_level_result open_user_level(const struct extc_tree *tree, uid_t uid,
					      bool create, struct extc_pool_fds *p, char *why,
					      size_t whylen)
{
	char uname[EXTC_NAME_LEN];
	enum extc_level_result rv;

	rv = extc_pool_level_open(tree, create, p, why, whylen);
	if (rv != EXTC_LEVEL_FOUND)
		return (rv);
	if (extc_layout_uid_name(uid, uname, sizeof(uname)) < 0) {
		extc_fmt(why, whylen, "uid %u has no level name", (unsigned)uid);
		return (EXTC_LEVEL_REFUSED);
	}
	return (extc_pool_level_open_user(p, uname, create, why, whylen));
}

/*
 * A later step of the job found the note: if its key is another (another
 * environment or SLURM_EXT_CACHE_KEY), the job's directory holds builds
 * of both, and none of them is pooled: the note says "mixed". Steps of
 * the job may start at once on the node: the note is locked meanwhile.
 */
static int note_again(int uidfd, const char *name, const char *key, const struct extc_fs_policy *pol)
{
	char text[NOTE_MAX + 1];
	struct stat sb;
	ssize_t n;
	int fd, rv = -1;

	fd = openat(uidfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != pol->owner ||
	    flock(fd, LOCK_EX) < 0)
		goto out;
	n = pread(fd, text, NOTE_MAX, 0);
	if (n < 0)
		goto out;
	text[n] = '\0';
	rv = 0;
	if (strncmp(text, "key=", 4) == 0 && strncmp(text + 4, key, EXTC_POOL_KEY_LEN) == 0)
		goto out;	/* the same key: nothing to change */
	if (pwrite(fd, NOTE_MIXED, strlen(NOTE_MIXED), 0) != (ssize_t)strlen(NOTE_MIXED) ||
	    ftruncate(fd, (off_t)strlen(NOTE_MIXED)) < 0)
		rv = -1;
out:
	if (fd >= 0)
		close(fd);
	return (rv);
}

int extc_pool_job_note(const struct extc_tree *tree,
		       const struct extc_ids *ids, const char *key, const char *leaf,
		       char *why, size_t whylen)
{
	char name[32], draft[48], text[NOTE_MAX];
	struct extc_pool_fds p;
	int fd = -1, n, rv = -1;

	if (open_user_level(tree, ids->uid, true, &p, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	note_name(ids->jobid, name, sizeof(name));
	n = extc_fmt(text, sizeof(text), "key=%s\nleaf=%s\n", key, leaf) < 0 ? -1 : (int)strlen(text);
	/*
	 * Whole before it has its name: a step starting at the same moment
	 * reads all of it or none. The draft's name ends like a note's, so
	 * one a crash left behind goes with the stale notes (pool_evict.c).
	 */
	if (n < 0 || extc_fmt(draft, sizeof(draft), "draft%d%s", (int)getpid(),
			      EXTC_POOL_JOB_SUFFIX) < 0)
		goto out;
	unlinkat(p.uid, draft, 0);
	fd = openat(p.uid, draft, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n) {
		extc_fmt(why, whylen, "%s/%s: cannot write: %s", p.t.path, draft, strerror(errno));
	} else if (linkat(p.uid, draft, p.uid, name, 0) == 0) {
		rv = 0;
	} else if (errno == EEXIST) {
		rv = note_again(p.uid, name, key, tree->pol);
		if (rv < 0)
			extc_fmt(why, whylen, "%s/%s: cannot read or update: %s", p.t.path, name,
				 strerror(errno));
	} else {
		extc_fmt(why, whylen, "%s/%s: cannot write: %s", p.t.path, name, strerror(errno));
	}
	if (fd >= 0)
		unlinkat(p.uid, draft, 0);
out:
	if (fd >= 0)
		close(fd);
	extc_pool_level_close(&p);
	return (rv);
}

/* The note's text, read and dropped: -1 when there is none or it is not a plain root file. */
static ssize_t read_note(int uidfd, uint32_t jobid, const struct extc_fs_policy *pol, char *text)
{
	char name[32];
	struct stat sb;
	ssize_t n = -1;
	int fd;

	note_name(jobid, name, sizeof(name));
	fd = openat(uidfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return (-1);
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == pol->owner)
		n = read(fd, text, NOTE_MAX);
	close(fd);
	unlinkat(uidfd, name, 0);
	if (n >= 0)
		text[n] = '\0';
	return (n);
}

/* "key=<key>\nleaf=<path>\n": root's own text, in a root-owned level, so trusted once well-formed. */
static bool parse_note(char *text, char *key, char *leaf)
{
	char *nl;

	if (strncmp(text, "key=", 4) != 0 || strlen(text) < 4 + EXTC_POOL_KEY_LEN + 7 ||
	    strncmp(text + 4 + EXTC_POOL_KEY_LEN, "\nleaf=", 6) != 0)
		return (false);
	memcpy(key, text + 4, EXTC_POOL_KEY_LEN);
	key[EXTC_POOL_KEY_LEN] = '\0';
	nl = strchr(text + 10 + EXTC_POOL_KEY_LEN, '\n');
	if (!extc_pool_key_name_ok(key) || nl == NULL)
		return (false);
	*nl = '\0';
	return (extc_fmt(leaf, PATH_MAX, "%s", text + 10 + EXTC_POOL_KEY_LEN) == 0);
}

static enum extc_pool_job_result take_note(const struct extc_tree *tree, uid_t uid,
					   uint32_t jobid, char *key, char *leaf, char *why,
					   size_t whylen)
{
	char text[NOTE_MAX + 1];
	struct extc_pool_fds p;
	enum extc_pool_job_result rv = EXTC_POOL_JOB_NONE;

	if (open_user_level(tree, uid, false, &p, why, whylen) == EXTC_LEVEL_FOUND &&
	    read_note(p.uid, jobid, tree->pol, text) >= 0) {
		rv = EXTC_POOL_JOB_MOVED;
		if (strcmp(text, NOTE_MIXED) == 0) {
			extc_fmt(why, whylen, "the job's steps on this node ran in different environments "
				 "(different keys): its builds are not pooled, as none can be told apart");
			rv = EXTC_POOL_JOB_MIXED;
		} else if (!parse_note(text, key, leaf)) {
			extc_fmt(why, whylen, "%s/%u%s: not a note of this plugin", p.t.path, jobid,
				 EXTC_POOL_JOB_SUFFIX);
			rv = EXTC_POOL_JOB_FAILED;
		}
	}
	extc_pool_level_close(&p);
	return (rv);
}

enum extc_pool_job_result extc_pool_job_put_back(const struct extc_tree *tree,
						 const struct extc_ids *ids, const char *node,
						 struct extc_warm_walk_report *rep, char *why,
						 size_t whylen)
{
	const struct extc_config *cfg = tree->cfg;
	static struct extc_pool_child_arg a;
	static struct extc_warm_publish_res r;
	char key[EXTC_POOL_KEY_LEN + 1], leaf[PATH_MAX], sub[EXTC_WHY_MAX];
	struct extc_creds cr = { .uid = ids->uid, .gid = ids->gid };
	struct extc_pool_hold h = { .record_fd = -1 };
	uint32_t timeout = cfg->publish_timeout < EXTC_POOL_EPILOG_TIMEOUT ?
			   cfg->publish_timeout : EXTC_POOL_EPILOG_TIMEOUT;
	struct timespec now;
	enum extc_pool_job_result rv;

	memset(rep, 0, sizeof(*rep));
	rv = take_note(tree, ids->uid, ids->jobid, key, leaf, why, whylen);
	if (rv != EXTC_POOL_JOB_MOVED)
		return (rv);
	if (extc_pool_hold(tree, ids, key, &h, why, whylen) != EXTC_POOL_HELD)
		return (EXTC_POOL_JOB_FAILED);
	extc_warm_child_arg_init(&a.w, cfg,
				 &(const struct extc_warm_child_for){ leaf, node, key, ids->jobid, timeout },
				 why, whylen);
	a.key_dir = h.dir;
	clock_gettime(CLOCK_REALTIME, &now);
	extc_warm_sweep_stale_limit(timeout, &now, &a.w.opts.stale_before);
	if (extc_as_user(&cr, (uint64_t)timeout * 1000, extc_pool_child_put_back, &a, &r, sizeof(r),
			 why, whylen) == EXTC_AS_USER_FAILED) {
		rv = EXTC_POOL_JOB_FAILED;
	} else {
		*rep = r.rep;
		if (rep->failed > 0) {
			extc_fmt(why, whylen, "%s", r.why);
			rv = EXTC_POOL_JOB_FAILED;
		}
	}
	/* whatever moved, root measures what the key holds now (the user's numbers are never asked) */
	if (extc_pool_hold_account(&h, tree, sub, sizeof(sub)) != EXTC_POOL_ACCOUNTED &&
	    rv != EXTC_POOL_JOB_FAILED) {
		extc_fmt(why, whylen, "key %s: %s", key, sub);
		rv = EXTC_POOL_JOB_FAILED;
	}
	extc_pool_hold_release(&h);
	return (rv);
}
