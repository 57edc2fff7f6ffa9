/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the site tier's work as the job's user. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/text.h"
#include "tier/tier_child.h"

/* "<node>.<pid>": the names this process stages under, unique on the tier's filesystem. */
static void set_tag(const struct extc_tier_child_arg *a, char *tag, size_t len)
{
	extc_fmt(tag, len, "%s.%d", a->w.node != NULL ? a->w.node : "node", (int)getpid());
}

/* The tier and the key directory, both opened by the user; -1 and r->why when either fails. */
static int open_both(const struct extc_tier_child_arg *a, struct extc_tier_child_res *r,
		     int *tierfd, int *keyfd)
{
	*tierfd = -1;
	*keyfd = -1;
	r->path = extc_tier_path_open(a->tier, a->uid, tierfd, r->why, sizeof(r->why));
	if (r->path != EXTC_TIER_PATH_OK)
		return (-1);
	*keyfd = open(a->key_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*keyfd < 0) {
		extc_fmt(r->why, sizeof(r->why), "cannot open the node pool's key directory: %s",
			 strerror(errno));
		return (-1);
	}
	return (0);
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
	if (open_both(a, r, &tierfd, &keyfd) < 0)
		goto out;
	if (verb == FETCH) {
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
