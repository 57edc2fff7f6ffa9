/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: publishing a node pool key's builds to the site tier as a new generation. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "base/text.h"
#include "fs/fs_ident.h"
#include "fs/fs_remove.h"
#include "tier/tier_copy.h"
#include "tier/tier_gen.h"
#include "tier/tier_manifest.h"
#include "tier/tier_prune.h"
#include "tier/tier_publish.h"
#include "warm/warm_shape.h"

struct pub {
	const struct extc_tier_publish_in *in;
	struct extc_tier_publish_res *r;
	struct extc_tier_manifest_out mf;
	dev_t dev;		/* the source's: the walk stays on its mount */
	char *buf;
	char *why;
	size_t whylen;
	struct extc_tier_entry e;	/* the entry at hand; e.path is its path */
};

static int publish_walk(struct pub *p, int sfd, int dfd, unsigned depth, bool inductor_level);

bool extc_tier_publish_is_temporary(const char *name)
{
	size_t n = strlen(name);

	return (extc_has_prefix(name, "tmp") || extc_has_prefix(name, ".tmp") ||
		(n >= 4 && strcmp(name + n - 4, ".tmp") == 0) || (n > 0 && name[n - 1] == '~') ||
		strstr(name, ".tmp.") != NULL);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

static int publish_fail(struct pub *p, const char *what, int err)
{
	char shown[160];

	extc_escape(p->e.path[0] ? p->e.path : ".", 120, shown, sizeof(shown));
	extc_fmt(p->why, p->whylen, "%s: %s: %s", shown, what, extc_tier_copy_write_error(err));
	return (-1);
}

/* For qsort over an array of names: bytewise, the manifest's order among siblings. */
static int sibling_order(const void *pa, const void *pb)
{
	const char *const *a = pa, *const *b = pb;

	return (strcmp(*a, *b));
}

static void free_names(char **names, size_t n)
{
	while (n > 0)
		free(names[--n]);
	free(names);
}

/* The entries of 'dirfd' but "." and "..", sorted by name: the manifest's order. NULL: errno. */
static char **sorted_names(int dirfd, size_t *n)
{
	struct dirent *de;
	char **names = NULL, **more;
	size_t cap = 0;
	DIR *d = extc_fdio_opendir(dirfd);

	*n = 0;
	if (d == NULL)
		return (NULL);
	while ((de = readdir(d)) != NULL) {
		if (extc_fdio_is_dot(de->d_name))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			more = realloc(names, cap * sizeof(*names));
			if (more == NULL)
				goto nomem;
			names = more;
		}
		if ((names[*n] = strdup(de->d_name)) == NULL)
			goto nomem;
		(*n)++;
	}
	closedir(d);
	if (names == NULL)
		names = malloc(sizeof(*names));
	if (names != NULL)
		qsort(names, *n, sizeof(*names), sibling_order);
	return (names);
nomem:
	closedir(d);
	free_names(names, *n);
	errno = ENOMEM;
	return (NULL);
}

static void set_times(int fd, const struct stat *sb)
{
	struct timespec ts[2] = { sb->st_atim, sb->st_mtim };

	futimens(fd, ts);
}

static int publish_file(struct pub *p, int sfd, int dfd, const char *name)
{
	struct extc_digest d;
	struct stat sb;
	uint64_t copied = 0;
	int in, out = -1, rv = -1;

	in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (in < 0)
		return (errno == ENOENT ? 0 : publish_fail(p, "cannot open", errno));
	if (fstat(in, &sb) < 0) {
		publish_fail(p, "cannot stat", errno);
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {	/* swapped for something else since it was looked at */
		p->r->skipped++;
		rv = 0;
		goto out;
	}
	out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		publish_fail(p, "cannot create its copy on the tier", errno);
		goto out;
	}
	extc_digest_init(&d);
	switch (extc_tier_copy_data(in, out, p->buf, EXTC_TIER_COPY_BUF, UINT64_MAX,
				    p->in->deadline_ns, &d, &copied)) {
	case EXTC_TIER_COPY_DONE:
		break;
	case EXTC_TIER_COPY_TIMEOUT:
		publish_fail(p, "out of time while copying", ETIMEDOUT);
		goto out;
	case EXTC_TIER_COPY_READ_FAILED:
	case EXTC_TIER_COPY_LONGER:
		publish_fail(p, "cannot read", errno);
		goto out;
	case EXTC_TIER_COPY_WRITE_FAILED:
		publish_fail(p, "cannot write its copy on the tier", errno);
		goto out;
	}
	/* on the tier its owner can always read it; the manifest keeps its mode */
	fchmod(out, (sb.st_mode & 0777) | 0400);
	set_times(out, &sb);
	rv = close(out);
	out = -1;
	if (rv < 0) {
		publish_fail(p, "cannot write its copy on the tier", errno);
		goto out;
	}
	p->e.type = EXTC_TIER_ENTRY_FILE;
	p->e.mode = sb.st_mode & 0777;
	p->e.size = copied;
	p->e.mtime = sb.st_mtim;
	p->e.digest = extc_digest_final(&d);
	rv = extc_tier_manifest_add(&p->mf, &p->e, p->why, p->whylen);
	if (rv == 0) {
		p->r->files++;
		p->r->bytes += copied;
	}
out:
	if (out >= 0)
		close(out);
	close(in);
	return (rv);
}

static int publish_dir(struct pub *p, int sfd, int dfd, const char *name, const struct stat *sb,
		    unsigned depth, bool inductor_level)
{
	int cs = -1, cd = -1, rv = -1;

	if (depth + 1 >= EXTC_TIER_MANIFEST_MAX_DEPTH) {
		extc_fmt(p->why, p->whylen, "the tree is deeper than %d levels",
			 EXTC_TIER_MANIFEST_MAX_DEPTH);
		return (-1);
	}
	p->e.type = EXTC_TIER_ENTRY_DIR;
	p->e.mode = sb->st_mode & 0777;
	p->e.size = 0;
	p->e.digest = 0;
	p->e.mtime = sb->st_mtim;
	if (extc_tier_manifest_add(&p->mf, &p->e, p->why, p->whylen) < 0)
		return (-1);
	cs = openat(sfd, name, EXTC_DIR_OPEN_FLAGS);
	if (cs < 0) {
		publish_fail(p, "cannot open", errno);
		goto out;
	}
	if (mkdirat(dfd, name, 0700) < 0 || (cd = openat(dfd, name, EXTC_DIR_OPEN_FLAGS)) < 0) {
		publish_fail(p, "cannot make its copy on the tier", errno);
		goto out;
	}
	p->r->dirs++;
	if (publish_walk(p, cs, cd, depth + 1, inductor_level) < 0)
		goto out;
	/* after its contents, which change its mtime; always u+rwx on the tier */
	fchmod(cd, (sb->st_mode & 0777) | 0700);
	set_times(cd, sb);
	rv = 0;
out:
	if (cd >= 0)
		close(cd);
	if (cs >= 0)
		close(cs);
	return (rv);
}

/* One entry of a directory: copied, or left out and counted. */
static int publish_entry(struct pub *p, int sfd, int dfd, const char *name, unsigned depth,
		 bool inductor_level)
{
	const char *ind = p->in->o != NULL ? p->in->o->inductor_subdir : NULL;
	size_t saved = strlen(p->e.path);
	struct stat sb;
	int rv = 0;

	if (extc_shape_name_rule(name, inductor_level) != EXTC_NAME_COPY ||
	    extc_tier_publish_is_temporary(name)) {
		p->r->skipped++;
		return (0);
	}
	if (extc_fmt(p->e.path + saved, sizeof(p->e.path) - saved, "%s%s", saved ? "/" : "",
		     name) < 0) {
		p->e.path[saved] = '\0';
		extc_fmt(p->why, p->whylen, "a path in the tree is longer than %d bytes", PATH_MAX);
		return (-1);
	}
	if (fstatat(sfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		rv = errno == ENOENT ? 0 : publish_fail(p, "cannot stat", errno);
	else if (S_ISDIR(sb.st_mode) && sb.st_dev == p->dev)
		rv = publish_dir(p, sfd, dfd, name, &sb, depth,
			      depth == 0 && ind != NULL && strcmp(name, ind) == 0);
	else if (S_ISREG(sb.st_mode))
		rv = publish_file(p, sfd, dfd, name);
	else
		p->r->skipped++;	/* a link, a device, a FIFO, a socket, another mount */
	p->e.path[saved] = '\0';
	return (rv);
}

static int publish_walk(struct pub *p, int sfd, int dfd, unsigned depth, bool inductor_level)
{
	size_t n, i;
	char **names = sorted_names(sfd, &n);
	int rv = 0;

	if (names == NULL)
		return (publish_fail(p, "cannot read the directory", errno));
	for (i = 0; i < n && rv == 0; i++) {
		if (extc_clock_past_deadline(p->in->deadline_ns))
			rv = publish_fail(p, "out of time", ETIMEDOUT);
		else
			rv = publish_entry(p, sfd, dfd, names[i], depth, inductor_level);
	}
	free_names(names, n);
	return (rv);
}

/* The staged copy, its manifest written last and both fsynced: ready for its rename. */
static int stage_copy(struct pub *p, int srcfd, int stagefd)
{
	struct stat sb;

	if (fstat(srcfd, &sb) < 0)
		return (publish_fail(p, "cannot stat the key's directory", errno));
	p->dev = sb.st_dev;
	p->buf = malloc(EXTC_TIER_COPY_BUF);
	if (p->buf == NULL || extc_tier_manifest_out_init(&p->mf, p->why, p->whylen) < 0)
		return (publish_fail(p, "cannot start", ENOMEM));
	if (publish_walk(p, srcfd, stagefd, 0, false) < 0)
		return (-1);
	p->e.path[0] = '\0';
	if (extc_tier_manifest_write(stagefd, &p->mf, p->why, p->whylen) < 0)
		return (-1);
	if (fsync(stagefd) < 0)
		return (publish_fail(p, "cannot write the stage on the tier", errno));
	return (0);
}

enum extc_tier_publish_result extc_tier_publish(int srcfd, int tierfd,
						const struct extc_tier_publish_in *in,
						struct extc_tier_publish_res *r, char *why,
						size_t whylen)
{
	uint64_t start = extc_clock_monotonic_ns();
	struct pub p = { .in = in, .r = r, .why = why, .whylen = whylen };
	enum extc_tier_publish_result rv = EXTC_TIER_PUBLISH_FAILED;
	struct extc_rm_report rm;
	char stage[EXTC_TIER_GEN_NAME_MAX + 32];
	int keyfd = -1, stagefd = -1;
	bool staged = false;

	memset(r, 0, sizeof(*r));
	if (!extc_tier_gen_tag_ok(in->tag) ||
	    extc_fmt(stage, sizeof(stage), "%s%s", EXTC_TIER_STAGE_PREFIX, in->tag) < 0) {
		extc_fmt(why, whylen, "the tag is not 1 to %d of [A-Za-z0-9._-]", EXTC_TIER_TAG_MAX);
		goto out;
	}
	if (extc_clock_past_deadline(in->deadline_ns)) {
		extc_fmt(why, whylen, "out of time before publishing");
		goto out;
	}
	if (extc_tier_gen_open_key(tierfd, in->key, true, &keyfd, why, whylen) != 0)
		goto out;
	extc_tier_prune_sweep(keyfd, in->grace_ns, realtime_ns(), in->tag, in->deadline_ns);
	if (mkdirat(keyfd, stage, 0700) < 0) {
		publish_fail(&p, "cannot make a stage on the tier", errno);
		goto out;
	}
	staged = true;
	stagefd = openat(keyfd, stage, EXTC_DIR_OPEN_FLAGS);
	if (stagefd < 0) {
		publish_fail(&p, "cannot open its stage on the tier", errno);
		goto out;
	}
	if (stage_copy(&p, srcfd, stagefd) < 0)
		goto out;
	if (extc_tier_gen_name(realtime_ns(), in->tag, r->gen, sizeof(r->gen)) < 0 ||
	    extc_fdio_rename_noreplace(keyfd, stage, keyfd, r->gen, true) < 0) {
		publish_fail(&p, "cannot rename the stage to a generation", errno);
		r->gen[0] = '\0';
		goto out;
	}
	staged = false;
	fsync(keyfd);
	r->removed = extc_tier_prune(keyfd, in->keep, in->grace_ns, realtime_ns(), in->tag,
				     in->deadline_ns);
	rv = EXTC_TIER_PUBLISHED;
out:
	if (stagefd >= 0)
		close(stagefd);
	if (staged)
		extc_remove_tree_at(keyfd, stage, NULL, &rm);
	if (keyfd >= 0)
		close(keyfd);
	extc_tier_manifest_out_free(&p.mf);
	free(p.buf);
	r->ns = extc_clock_monotonic_ns() - start;
	return (rv);
}
