/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the site tier's work as the job's user. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/text.h"
#include "tier/tier_child.h"
#include "warm/warm_names.h"

/* How far the look into a key that may hold only empty directories goes. */
#define EMPTY_DEPTH 8
#define EMPTY_NAMES_MAX 1024

/*
 * Does 'dirfd' hold anything but directories (the plugin's own names at
 * the key's top level aside)? Past 'depth' levels or 'budget' names, or a
 * directory that cannot be read, it counts as holding builds: the take
 * then runs as ever, and the tier is not read.
 */
static bool holds_a_file(int dirfd, unsigned depth, unsigned *budget, bool top)
{
	struct dirent *de;
	bool holds = false;
	DIR *d = extc_fdio_opendir(dirfd);

	while (d != NULL && !holds && (de = readdir(d)) != NULL) {
		struct stat sb;
		int cfd;

		if (extc_fdio_is_dot(de->d_name) || (top && extc_has_prefix(de->d_name, EXTC_OWN_PREFIX)))
			continue;
		holds = --*budget == 0 || depth == 0 ||
			fstatat(dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode);
		if (holds)
			break;
		cfd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		holds = cfd < 0 || holds_a_file(cfd, depth - 1, budget, false);
		if (cfd >= 0)
			close(cfd);
	}
	if (d != NULL)
		closedir(d);
	return (holds || d == NULL);
}

/* The empty directories of a key that holds no file, removed (rmdir alone: what is not empty stays). */
static void remove_empty_dirs(int dirfd, unsigned depth, bool top)
{
	struct dirent *de;
	DIR *d = extc_fdio_opendir(dirfd);

	while (d != NULL && depth > 0 && (de = readdir(d)) != NULL) {
		int cfd;

		if (extc_fdio_is_dot(de->d_name) || (top && extc_has_prefix(de->d_name, EXTC_OWN_PREFIX)))
			continue;
		cfd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		remove_empty_dirs(cfd, depth - 1, false);
		close(cfd);
		(void)unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
	}
	if (d != NULL)
		closedir(d);
}

/* "<node>.<pid>": the names this process stages under, unique on the tier's filesystem. */
static void set_tag(const struct extc_tier_child_arg *a, char *tag, size_t len)
{
	extc_fmt(tag, len, "%s.%d", a->w.node != NULL ? a->w.node : "node", (int)getpid());
}

/*
 * The key directory, then (unless a fetch finds the key holds builds) the
 * tier, both opened by the user; -1 and r->why when either fails.
 */
static int open_both(const struct extc_tier_child_arg *a, struct extc_tier_child_res *r,
		     bool fetch, int *tierfd, int *keyfd)
{
	unsigned budget = EMPTY_NAMES_MAX;

	*tierfd = -1;
	*keyfd = open(a->key_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*keyfd < 0) {
		r->path = EXTC_TIER_PATH_OK;
		extc_fmt(r->why, sizeof(r->why), "cannot open the node pool's key directory: %s",
			 strerror(errno));
		return (-1);
	}
	if (fetch && holds_a_file(*keyfd, EMPTY_DEPTH, &budget, true)) {
		r->key_holds_builds = true;
		return (0);
	}
	if (fetch)
		remove_empty_dirs(*keyfd, EMPTY_DEPTH, true);
	r->path = extc_tier_path_open(a->tier, a->uid, tierfd, r->why, sizeof(r->why));
	return (r->path == EXTC_TIER_PATH_OK ? 0 : -1);
}

static void close_both(int tierfd, int keyfd)
{
	if (tierfd >= 0)
		close(tierfd);
	if (keyfd >= 0)
		close(keyfd);
}

enum verb { FETCH, PUBLISH };

/* Open both as the user, then fetch into the key directory or publish from it. */
static int run(const struct extc_tier_child_arg *a, struct extc_tier_child_res *r, size_t reslen,
	       enum verb verb)
{
	char tag[sizeof(a->w.tag)];
	const struct extc_tier_fetch_in fin = {
		.key = a->key, .tag = tag, .keep = a->keep, .max_bytes = a->max_bytes,
		.deadline_ns = a->w.opts.deadline_ns, .o = &a->w.opts,
	};
	const struct extc_tier_publish_in pin = {
		.key = a->key, .tag = tag, .keep = a->keep, .grace_ns = a->grace_ns,
		.deadline_ns = a->w.opts.deadline_ns, .o = &a->w.opts,
	};
	int tierfd, keyfd, rc = -1;

	if (reslen < sizeof(*r))
		return (-1);
	memset(r, 0, sizeof(*r));
	set_tag(a, tag, sizeof(tag));
	r->fetch = EXTC_TIER_FETCH_FAILED;
	r->publish = EXTC_TIER_PUBLISH_FAILED;
	if (open_both(a, r, verb == FETCH, &tierfd, &keyfd) < 0)
		goto out;
	if (r->key_holds_builds) {
		rc = 0;
	} else if (verb == FETCH) {
		r->fetch = extc_tier_fetch(tierfd, keyfd, &fin, &r->fetched, r->why, sizeof(r->why));
		rc = r->fetch == EXTC_TIER_FETCHED || r->fetch == EXTC_TIER_EMPTY ? 0 : -1;
	} else {
		r->publish = extc_tier_publish(keyfd, tierfd, &pin, &r->published, r->why,
					       sizeof(r->why));
		rc = r->publish == EXTC_TIER_PUBLISHED ? 0 : -1;
	}
out:
	close_both(tierfd, keyfd);
	return (rc);
}

int extc_tier_child_fetch(void *varg, void *res, size_t reslen)
{
	return (run(varg, res, reslen, FETCH));
}

int extc_tier_child_publish(void *varg, void *res, size_t reslen)
{
	return (run(varg, res, reslen, PUBLISH));
}
