/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the warm start's child, as the job's user: seed the leaf, check and publish to DIR. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/as_user.h"
#include "base/clock.h"
#include "base/layout.h"
#include "base/text.h"
#include "warm/warm_child.h"
#include "warm/warm_publish.h"

_Static_assert(sizeof(struct extc_warm_seed_res) <= EXTC_AS_USER_RES_MAX,
	       "the seed result must cross the helper's pipe in one write");
_Static_assert(sizeof(struct extc_warm_publish_res) <= EXTC_AS_USER_RES_MAX,
	       "the publish result must cross the helper's pipe in one write");

static int open_dir(const char *path)
{
	/* as the user: a symlink in a path of theirs leads nowhere they could not go */
	return (open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static void child_seed(struct extc_warm_child_arg *a, int leaffd, struct extc_warm_seed_res *r)
{
	uint64_t t0 = extc_clock_monotonic_ns();
	int fd = open_dir(a->seed);
	enum extc_manifest_result ret;

	if (fd < 0) {
		r->seed = errno == ENOENT ? EXTC_SEED_ABSENT : EXTC_SEED_REFUSED;
		extc_fmt(r->seed_why, sizeof(r->seed_why), "cannot open it: %s", strerror(errno));
		return;
	}
	ret = extc_manifest_check(fd, &a->want, r->seed_why, sizeof(r->seed_why));
	r->unchecked = ret == EXTC_MANIFEST_ABSENT;
	if (ret == EXTC_MANIFEST_FAILED) {
		r->seed = EXTC_SEED_REFUSED;
	} else {
		a->opts.dest = a->leaf;	/* Triton's group files name the leaf's copies */
		r->seed = extc_warm_seed(fd, leaffd, &a->opts, &r->st, r->seed_why,
					 sizeof(r->seed_why));
	}
	r->ns = extc_clock_monotonic_ns() - t0;
	close(fd);
}

static void child_check_publish(struct extc_warm_child_arg *a, struct extc_warm_seed_res *r)
{
	struct extc_manifest have;
	int fd = open_dir(a->publish);

	if (fd < 0 && errno == ENOENT)
		return;	/* made at the end of the step */
	if (fd < 0) {
		r->publish_rc = -1;
		extc_fmt(r->publish_why, sizeof(r->publish_why), "cannot open it: %s", strerror(errno));
		return;
	}
	if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
		r->publish_rc = -1;
		extc_fmt(r->publish_why, sizeof(r->publish_why), "cannot write to it: %s",
			 strerror(errno));
	} else if (extc_manifest_read(fd, &have, r->publish_why, sizeof(r->publish_why)) ==
		   EXTC_MANIFEST_OK &&
		   extc_manifest_compatible(&have, &a->want, r->publish_why,
					    sizeof(r->publish_why)) < 0) {
		r->publish_rc = -1;	/* an unreadable one is the publish's to meet, and say */
	}
	close(fd);
}

int extc_warm_child_seed(void *varg, void *res, size_t reslen)
{
	struct extc_warm_child_arg *a = varg;
	struct extc_warm_seed_res *r = res;

	memset(r, 0, reslen);
	if (a->seed != NULL) {
		int leaffd = open(a->leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (leaffd < 0) {
			r->seed = EXTC_SEED_REFUSED;
			extc_fmt(r->seed_why, sizeof(r->seed_why), "cannot open the private directory: %s",
				 strerror(errno));
		} else {
			child_seed(a, leaffd, r);
			close(leaffd);
		}
	}
	if (a->publish != NULL)
		child_check_publish(a, r);
	return (0);
}

/* What the seeding process runs: the seed, under a name of its own. */
struct seed_call {
	extc_as_user_fn fn;
	void *arg;
};

static int seed_named(void *varg, void *res, size_t reslen)
{
	const struct seed_call *call = varg;

	/* ps shows what the process is, not a second slurmstepd of the user's */
	prctl(PR_SET_NAME, EXTC_WARM_SEED_NAME, 0, 0, 0);
	return (call->fn(call->arg, res, reslen));
}

enum extc_as_user_result extc_warm_child_run_seed(const struct extc_creds *cr, uint32_t timeout_s,
						  extc_as_user_fn fn, void *arg,
						  struct extc_warm_seed_res *r)
{
	struct seed_call call = { fn, arg };
	char why[EXTC_WARM_CHILD_WHY_MAX];
	enum extc_as_user_result ret;

	ret = extc_as_user(cr, (uint64_t)timeout_s * 1000, seed_named, &call, r, sizeof(*r), why,
			   sizeof(why));
	if (ret == EXTC_AS_USER_FAILED) {
		/* nothing came back: the seed's caller reports it as a refused seed */
		memset(r, 0, sizeof(*r));
		r->seed = EXTC_SEED_REFUSED;
		extc_fmt(r->seed_why, sizeof(r->seed_why), "%s", why);
	}
	return (ret);
}

int extc_warm_child_open(struct extc_warm_child_arg *a, const char *dir, int *leaffd,
			 int *dirfd, char *why, size_t whylen)
{
	extc_fmt(a->tag, sizeof(a->tag), "%s.%ld", a->node, (long)getpid());
	a->opts.tag = a->tag;
	*dirfd = -1;
	*leaffd = open(a->leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*leaffd < 0) {
		extc_fmt(why, whylen, "cannot open the private directory: %s", strerror(errno));
		return (-1);
	}
	/* only the last component is made: a typo in a parent should not grow a tree */
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		extc_fmt(why, whylen, "cannot make it: %s", strerror(errno));
		return (-1);
	}
	*dirfd = open_dir(dir);
	if (*dirfd < 0) {
		extc_fmt(why, whylen, "cannot open it: %s", strerror(errno));
		return (-1);
	}
	a->opts.dest = dir;	/* Triton's group files name its entries */
	return (0);
}

void extc_warm_child_close(int leaffd, int dirfd)
{
	if (dirfd >= 0)
		close(dirfd);
	if (leaffd >= 0)
		close(leaffd);
}

int extc_warm_child_publish(void *varg, void *res, size_t reslen)
{
	struct extc_warm_child_arg *a = varg;
	struct extc_warm_publish_res *r = res;
	uint64_t t0 = extc_clock_monotonic_ns();
	int leaffd, dirfd;
	int rv = -1;

	memset(r, 0, reslen);
	if (extc_warm_child_open(a, a->publish, &leaffd, &dirfd, r->why, sizeof(r->why)) == 0)
		rv = extc_warm_publish(leaffd, dirfd, &a->opts, &a->want, &r->rep, r->why,
				       sizeof(r->why));
	r->ns = extc_clock_monotonic_ns() - t0;
	extc_warm_child_close(leaffd, dirfd);
	return (rv);
}

int extc_warm_child_arg_init(struct extc_warm_child_arg *a, const struct extc_config *cfg,
			     const struct extc_warm_child_for *f, char *why, size_t whylen)
{
	size_t i;

	memset(a, 0, sizeof(*a));
	a->leaf = f->leaf;
	a->node = f->node;
	for (i = 0; i < cfg->nvars; i++)
		a->subdirs[i] = cfg->vars[i].subdir;
	a->opts.subdirs = a->subdirs;
	a->opts.nsubdirs = cfg->nvars;
	a->opts.torch_subdir = extc_config_torch_subdir(cfg);
	a->opts.inductor_subdir = extc_config_inductor_subdir(cfg);
	a->opts.triton_subdir = extc_config_triton_subdir(cfg);
	a->opts.max_bytes = cfg->seed_max;
	/* the child stops by itself a little before the parent would kill it */
	a->opts.deadline_ns = extc_clock_monotonic_ns() + (uint64_t)f->timeout_s * 900000000ULL;
	return (extc_manifest_local(&a->want, f->key, f->jobid, f->node, "/proc/cpuinfo", why,
				    whylen));
}
