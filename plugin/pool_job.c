/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool for job-mode jobs: the steps note their key, the epilog moves the builds in. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "as_user.h"
#include "layout.h"
#include "pool_child.h"
#include "pool_fs.h"
#include "pool_fs_int.h"
#include "pool_job.h"
#include "text.h"
#include "warm_sweep.h"

#define NOTE_MAX (EXTC_POOL_KEY_LEN + PATH_MAX + 16)

static int note_name(uint32_t jobid, char *buf, size_t len)
{
	return (extc_fmt(buf, len, "%u%s", jobid, EXTC_POOL_JOB_SUFFIX));
}

/* The user's pool level, as a hold made it; ABSENT when the job never held a key here. */
static enum extc_level_result open_user_level(const struct extc_config *cfg,
					      const struct extc_fs_policy *pol, uid_t uid,
					      bool create, struct extc_pool_fds *p, char *why,
					      size_t whylen)
{
	char uname[EXTC_NAME_LEN];
	enum extc_level_result rv;

	rv = extc_pool_open_levels(cfg, pol, create, p, why, whylen);
	if (rv != EXTC_LEVEL_FOUND)
		return (rv);
	if (extc_layout_uid_name(uid, uname, sizeof(uname)) < 0) {
		extc_fmt(why, whylen, "uid %u has no level name", (unsigned)uid);
		return (EXTC_LEVEL_REFUSED);
	}
	return (extc_pool_open_user(p, pol, uname, create, why, whylen));
}

int extc_pool_job_note(const struct extc_config *cfg, const struct extc_fs_policy *pol,
		       const struct extc_ids *ids, const char *key, const char *leaf,
		       char *why, size_t whylen)
{
	char name[32], text[NOTE_MAX];
	struct extc_pool_fds p;
	int fd = -1, n, rv = -1;

	if (open_user_level(cfg, pol, ids->uid, true, &p, why, whylen) != EXTC_LEVEL_FOUND)
		goto out;
	note_name(ids->jobid, name, sizeof(name));
	n = extc_fmt(text, sizeof(text), "key=%s\nleaf=%s\n", key, leaf) < 0 ? -1 : (int)strlen(text);
	fd = openat(p.uid, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		rv = 0;		/* an earlier step of the job noted it */
	} else if (fd < 0 || n < 0 || write(fd, text, (size_t)n) != n) {
		extc_fmt(why, whylen, "%s/%s: cannot write: %s", p.t.path, name, strerror(errno));
		if (fd >= 0)
			unlinkat(p.uid, name, 0);
	} else {
		rv = 0;
	}
out:
	if (fd >= 0)
		close(fd);
	extc_pool_fds_close(&p);
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

static enum extc_pool_job_result take_note(const struct extc_config *cfg,
					   const struct extc_fs_policy *pol, uid_t uid,
					   uint32_t jobid, char *key, char *leaf, char *why,
					   size_t whylen)
{
	char text[NOTE_MAX + 1];
	struct extc_pool_fds p;
	enum extc_pool_job_result rv = EXTC_POOL_JOB_NONE;

	if (open_user_level(cfg, pol, uid, false, &p, why, whylen) == EXTC_LEVEL_FOUND &&
	    read_note(p.uid, jobid, pol, text) >= 0) {
		rv = EXTC_POOL_JOB_MOVED;
		if (!parse_note(text, key, leaf)) {
			extc_fmt(why, whylen, "%s/%u%s: not a note of this plugin", p.t.path, jobid,
				 EXTC_POOL_JOB_SUFFIX);
			rv = EXTC_POOL_JOB_FAILED;
		}
	}
	extc_pool_fds_close(&p);
	return (rv);
}

enum extc_pool_job_result extc_pool_job_publish(const struct extc_config *cfg,
						const struct extc_fs_policy *pol, uid_t uid,
						gid_t gid, uint32_t jobid, const char *node,
						struct extc_publish_report *rep, char *why,
						size_t whylen)
{
	static struct extc_warm_child_arg a;
	static struct extc_pool_publish_res r;
	char key[EXTC_POOL_KEY_LEN + 1], leaf[PATH_MAX];
	struct extc_ids ids = { .uid = uid, .gid = gid, .jobid = jobid };
	struct extc_creds cr = { .uid = uid, .gid = gid };
	struct extc_pool_hold h = { .record_fd = -1 };
	uint32_t timeout = cfg->publish_timeout < EXTC_POOL_EPILOG_TIMEOUT ?
			   cfg->publish_timeout : EXTC_POOL_EPILOG_TIMEOUT;
	struct timespec now;
	enum extc_pool_job_result rv;

	memset(rep, 0, sizeof(*rep));
	rv = take_note(cfg, pol, uid, jobid, key, leaf, why, whylen);
	if (rv != EXTC_POOL_JOB_MOVED)
		return (rv);
	if (extc_pool_hold(cfg, pol, &ids, key, &h, why, whylen) != EXTC_POOL_HELD)
		return (EXTC_POOL_JOB_FAILED);
	extc_warm_child_arg_init(&a, cfg, leaf, node, timeout, key, jobid, why, whylen);
	a.publish = h.dir;
	clock_gettime(CLOCK_REALTIME, &now);
	extc_warm_stale_limit(timeout, &now, &a.opts.stale_before);
	if (extc_as_user(&cr, (uint64_t)timeout * 1000, extc_pool_publish_child, &a, &r, sizeof(r),
			 why, whylen) == EXTC_AS_USER_FAILED) {
		rv = EXTC_POOL_JOB_FAILED;
	} else {
		*rep = r.pub.rep;
		if (r.measured)
			extc_pool_record_size(&h, r.bytes);
		if (rep->failed > 0) {
			extc_fmt(why, whylen, "%s", r.pub.why);
			rv = EXTC_POOL_JOB_FAILED;
		}
	}
	extc_pool_release(&h);
	return (rv);
}
