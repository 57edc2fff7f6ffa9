/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's levels and records on disk, opened and read as root. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/layout.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "fs/fs_level.h"
#include "pool/pool_key.h"
#include "pool/pool_level.h"

#define RECORD_MODE 0600
#define RECORD_NAME_LEN (EXTC_POOL_KEY_LEN + sizeof(EXTC_POOL_RECORD_SUFFIX))

void extc_pool_level_close(struct extc_pool_fds *p)
{
	if (p->uid >= 0)
		close(p->uid);
	if (p->pool >= 0)
		close(p->pool);
	p->uid = p->pool = -1;
	extc_level_walk_close(&p->t);
}

enum extc_level_result extc_pool_level_open(const struct extc_tree *tree, bool create,
					    struct extc_pool_fds *p, char *why, size_t whylen)
{
	enum extc_level_result rv;

	extc_level_walk_init(&p->t, tree);
	p->pool = p->uid = -1;
	rv = extc_level_open_top(&p->t, create, why, whylen);
	if (rv != EXTC_LEVEL_FOUND)
		return (rv);
	return (extc_level_open(&p->t, p->t.node, EXTC_POOL_NAME, create, &p->pool, why, whylen));
}

enum extc_level_result extc_pool_level_open_user(struct extc_pool_fds *p, const char *uname, bool create,
						 char *why, size_t whylen)
{
	return (extc_level_open(&p->t, p->pool, uname, create, &p->uid, why, whylen));
}

enum extc_level_result extc_pool_level_open_uid(const struct extc_tree *tree, uid_t uid, bool create,
						struct extc_pool_fds *p, char *why, size_t whylen)
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

enum extc_note_result extc_pool_level_write_note(const struct extc_pool_fds *p, const char *name,
						 const char *suffix, const char *text, bool replace,
						 char *why, size_t whylen)
{
	char draft[48];
	size_t len = strlen(text);
	enum extc_note_result rv = EXTC_NOTE_FAILED;
	int fd = -1;

	/* the draft ends like the note, so one a crash left behind goes with the stale notes */
	if (extc_fmt(draft, sizeof(draft), "draft%d%s", (int)getpid(), suffix) < 0)
		goto out;
	unlinkat(p->uid, draft, 0);
	fd = openat(p->uid, draft, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, RECORD_MODE);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		goto out;
	if (replace ? renameat(p->uid, draft, p->uid, name) == 0 : linkat(p->uid, draft, p->uid, name, 0) == 0)
		rv = EXTC_NOTE_WRITTEN;
	else if (errno == EEXIST)
		rv = EXTC_NOTE_EXISTS;
out:
	if (rv == EXTC_NOTE_FAILED)
		extc_fmt(why, whylen, "%s/%s: cannot write: %s", p->t.path, name, strerror(errno));
	if (fd >= 0) {
		close(fd);
		unlinkat(p->uid, draft, 0);
	}
	return (rv);
}

ssize_t extc_pool_level_read_note(int uidfd, const char *name, const struct extc_fs_policy *pol,
				  char *text, size_t max, bool drop)
{
	struct stat sb;
	ssize_t n = -1;
	int fd;

	fd = openat(uidfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return (-1);
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == pol->owner)
		n = pread(fd, text, max, 0);
	close(fd);
	if (drop)
		unlinkat(uidfd, name, 0);
	if (n >= 0)
		text[n] = '\0';
	return (n);
}

/* <key>.use, root's own: created if missing, and refused if anything but a plain root file. */
int extc_pool_level_open_record(int uidfd, const char *key, bool create, const struct extc_fs_policy *pol)
{
	char name[RECORD_NAME_LEN];
	struct stat sb;
	int fd;

	if (extc_fmt(name, sizeof(name), "%s%s", key, EXTC_POOL_RECORD_SUFFIX) < 0)
		return (-1);
	fd = openat(uidfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (create ? O_CREAT : 0),
		    RECORD_MODE);
	if (fd < 0)
		return (-1);
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != pol->owner || sb.st_nlink != 1) {
		close(fd);
		errno = EPERM;
		return (-1);
	}
	return (fd);
}

/* One "name=N" line of a record, if 'line' is one. */
static bool record_number(const char *line, const char *name, uint64_t *out)
{
	size_t len = strlen(name);

	if (strncmp(line, name, len) != 0 || line[len] != '=')
		return (false);
	*out = strtoull(line + len + 1, NULL, 10);
	return (true);
}

int extc_pool_level_read_record(int fd, struct extc_pool_record *r)
{
	char text[EXTC_POOL_RECORD_MAX + 1], *line, *save = NULL;
	struct stat sb;
	ssize_t n = pread(fd, text, EXTC_POOL_RECORD_MAX, 0);

	uint64_t version = 0;

	memset(r, 0, sizeof(*r));
	text[n > 0 ? n : 0] = '\0';
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (!record_number(line, "bytes", &r->bytes) && !record_number(line, "inodes", &r->inodes) &&
		    !record_number(line, "version", &version))
			r->unmeasurable |= extc_has_prefix(line, EXTC_POOL_UNMEASURABLE);
	}
	/* an empty record is a key not yet accounted, of this version: its step made it */
	r->old_version = n > 0 && version != EXTC_POOL_KEY_VERSION;
	r->used = fstat(fd, &sb) == 0 ? (int64_t)sb.st_mtim.tv_sec : 0;
	return (n < 0 ? -1 : 0);
}
