/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: take a detached root process out of the Slurm job's cgroups.
 *
 * The names matched here were read in Slurm's sources, 22.05 to 26.05
 * (src/plugins/cgroup/v1/xcgroup.c and cgroup_v1.c, src/plugins/cgroup/v2/
 * cgroup_v2.c); only cgroup/v1 on 22.05 has been seen running, in the lab
 * of tests/integration/test_cgroup.bats. The v2 escape runs, in make
 * check-root, on the kernel's own cgroup2 hierarchy with v2's layout built
 * by the test (tests/unit/test_cgroup_escape.c): the kernel's behaviour,
 * not Slurm's cgroup/v2 plugin, which refuses a host with v1 mounted.
 *  - cgroup/v1, on each controller it uses: PREPEND/uid_U/job_J/step_S/task_N,
 *    PREPEND being "/slurm", or "/slurm_NODE" when Slurm is built for several
 *    slurmd per host (Debian's is); step_S is step_0, step_batch,
 *    step_extern, step_interactive; Slurm's own daemons sit in PREPEND/system.
 *  - cgroup/v2: SCOPE/job_J/step_S/user/task_N (and user/task_special),
 *    the step's slurmstepd in SCOPE/job_J/step_S/slurm, where SCOPE is
 *    [container root/]SLICE/slurmstepd.scope (NODE_slurmstepd.scope for
 *    several slurmd per host; SLICE is CgroupSlice, system.slice by
 *    default); from 26.05 the job component is the job's SLUID, "s" and 13
 *    characters of Crockford's base 32, unless CgroupJobIdPaths=yes.
 *    slurmstepds waiting for their job are kept in SCOPE/system, a leaf.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/cgroup_escape.h"
#include "base/text.h"

#define SCOPE_SUFFIX "slurmstepd.scope"
#define READ_CAP (4u << 20)	/* bytes of a /proc file read; a mountinfo that big is unheard of */
#define MI_FIELDS 64		/* fields of a mountinfo line: ten or so, optional ones included */

struct span {
	const char *p;
	size_t n;
};

static bool span_is(struct span s, const char *word)
{
	return (s.n == strlen(word) && memcmp(s.p, word, s.n) == 0);
}

/* PREFIX followed by one or more digits, nothing else */
static bool numbered(struct span c, const char *prefix)
{
	size_t k = strlen(prefix), i;

	if (c.n <= k || memcmp(c.p, prefix, k) != 0)
		return (false);
	for (i = k; i < c.n; i++)
		if (c.p[i] < '0' || c.p[i] > '9')
			return (false);
	return (true);
}

static bool is_sluid(struct span c)
{
	static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	size_t i;

	if (c.n != 14 || c.p[0] != 's')
		return (false);
	for (i = 1; i < c.n; i++)
		if (memchr(b32, c.p[i], sizeof(b32) - 1) == NULL)
			return (false);
	return (true);
}

static bool is_scope(struct span c)
{
	size_t k = strlen(SCOPE_SUFFIX);

	return (c.n >= k && memcmp(c.p + c.n - k, SCOPE_SUFFIX, k) == 0);
}

/* the path component at or after *p (slashes skipped), *p moved past it; n 0 at the end */
static struct span next_comp(const char **p)
{
	struct span c;

	while (**p == '/')
		(*p)++;
	c.p = *p;
	while (**p != '\0' && **p != '/')
		(*p)++;
	c.n = (size_t)(*p - c.p);
	return (c);
}

/* Is component c, followed by the path at 'rest', where a Slurm job starts? */
static bool job_starts(struct span c, struct span parent, const char *rest, int v2)
{
	if (numbered(c, "job_"))
		return (true);
	if (numbered(c, "uid_"))	/* cgroup/v1: uid_U/job_J */
		return (numbered(next_comp(&rest), "job_"));
	return (v2 && is_sluid(c) && is_scope(parent));
}

enum extc_cgroup_where extc_cgroup_escape_target(const char *path, int v2, char *out, size_t outlen)
{
	struct span c, parent = { "", 0 }, cut_parent = { "", 0 };
	const char *p = path, *cut = NULL;
	size_t keep;

	if (path[0] != '/' || strlen(path) >= PATH_MAX)
		return (EXTC_CGROUP_BAD_PATH);
	for (c = next_comp(&p); c.n > 0; c = next_comp(&p)) {
		if (span_is(c, ".") || span_is(c, ".."))
			return (EXTC_CGROUP_BAD_PATH);
		if (cut == NULL && job_starts(c, parent, p, v2)) {
			cut = c.p;
			cut_parent = parent;
		}
		parent = c;
	}
	if (cut == NULL)
		return (EXTC_CGROUP_OUTSIDE);
	keep = (size_t)(cut - path);
	while (keep > 1 && path[keep - 1] == '/')
		keep--;
	if (extc_fmt(out, outlen, "%.*s%s", (int)keep, path,
		     v2 && is_scope(cut_parent) ? "/system" : "") != 0)
		return (EXTC_CGROUP_BAD_PATH);
	return (EXTC_CGROUP_IN_JOB);
}

/*
 * mountinfo writes a space, tab, newline and backslash in a path as \040,
 * \011, \012 and \134. False if it does not fit in 'out'.
 */
static bool unescape(struct span in, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; i < in.n; i++) {
		char ch = in.p[i];

		if (ch == '\\' && i + 3 < in.n && in.p[i + 1] >= '0' && in.p[i + 1] <= '3' && in.p[i + 2] >= '0' &&
		    in.p[i + 2] <= '7' && in.p[i + 3] >= '0' && in.p[i + 3] <= '7') {
			ch = (char)((in.p[i + 1] - '0') * 64 + (in.p[i + 2] - '0') * 8 + (in.p[i + 3] - '0'));
			i += 3;
		}
		if (o + 1 >= outlen)
			return (false);
		out[o++] = ch;
	}
	out[o] = '\0';
	return (true);
}

/* the words of 'list' split at 'sep' all appear among those of 'set' */
static bool words_in(struct span list, struct span set, char sep)
{
	const char *w = list.p, *end = list.p + list.n;

	while (w < end) {
		const char *e = memchr(w, sep, (size_t)(end - w));
		const char *s = set.p, *send = set.p + set.n;
		struct span word = { w, (size_t)((e != NULL ? e : end) - w) };
		bool found = false;

		while (s < send && !found) {
			const char *se = memchr(s, ',', (size_t)(send - s));
			struct span opt = { s, (size_t)((se != NULL ? se : send) - s) };

			found = (opt.n == word.n && memcmp(opt.p, word.p, word.n) == 0);
			s = opt.p + opt.n + 1;
		}
		if (!found || word.n == 0)
			return (false);
		w = word.p + word.n + 1;
	}
	return (list.n > 0);
}

/* 'path' is 'root' or below it: the rest (maybe ""), else NULL */
static const char *below(const char *path, const char *root)
{
	size_t k = strlen(root);

	if (strcmp(root, "/") == 0)
		return (path);
	if (strncmp(path, root, k) != 0 || (path[k] != '\0' && path[k] != '/'))
		return (NULL);
	return (path + k);
}

/* split a line into at most MI_FIELDS space-separated fields; the count, 0 if more */
static size_t fields(struct span line, struct span *f)
{
	const char *p = line.p, *end = line.p + line.n;
	size_t n = 0;

	while (p < end) {
		const char *e = memchr(p, ' ', (size_t)(end - p));

		if (n == MI_FIELDS)
			return (0);
		f[n].p = p;
		f[n].n = (size_t)((e != NULL ? e : end) - p);
		n++;
		p = f[n - 1].p + f[n - 1].n + 1;
	}
	return (n);
}

/*
 * Find, in mountinfo, a mount of the hierarchy (v2, or v1 with the
 * controllers 'ctrls') holding both m->from and m->to, and fill m->procs.
 */
static void find_mount(const char *mountinfo, struct span ctrls, int v2, struct extc_cgroup_move *m)
{
	const char *p = mountinfo;
	struct span f[MI_FIELDS];
	char root[PATH_MAX], mnt[PATH_MAX];
	bool seen = false;

	for (; *p != '\0'; p += strcspn(p, "\n"), p += (*p == '\n')) {
		struct span line = { p, strcspn(p, "\n") };
		size_t n = fields(line, f), dash = 6, extra;
		const char *rel;

		while (dash < n && !span_is(f[dash], "-"))
			dash++;
		if (dash + 3 >= n)
			continue;
		if (!(v2 ? span_is(f[dash + 1], "cgroup2")
			 : span_is(f[dash + 1], "cgroup") && words_in(ctrls, f[dash + 3], ',')))
			continue;
		if (!unescape(f[3], root, sizeof(root)) || !unescape(f[4], mnt, sizeof(mnt)))
			continue;
		seen = true;
		if (below(m->from, root) == NULL || (rel = below(m->to, root)) == NULL)
			continue;
		extra = strcmp(mnt, "/") == 0 ? 0 : strlen(mnt);
		if (extc_fmt(m->procs, sizeof(m->procs), "%.*s%s/cgroup.procs", (int)extra, mnt, rel) == 0)
			return;
	}
	m->procs[0] = '\0';
	snprintf(m->why, sizeof(m->why), "%s", seen ? "no mount of it holds the job and its ancestor"
		 : "the hierarchy is not mounted");
}

/* "job_" somewhere in the path: a path that cannot be followed may still be a job's */
static bool names_job(struct span path)
{
	size_t i;

	for (i = 0; i + 4 <= path.n; i++)
		if (memcmp(path.p + i, "job_", 4) == 0)
			return (true);
	return (false);
}

/*
 * One line of /proc/self/cgroup, "ID:CONTROLLERS:PATH" (the kernel escapes
 * nothing in it). A path that is too long, or has a ".." (the kernel's
 * way of naming a cgroup outside this cgroup namespace), and names a job
 * is a hierarchy it cannot be moved on.
 */
static void plan_line(struct span line, const char *mountinfo, struct extc_cgroup_plan *plan)
{
	const char *c1 = memchr(line.p, ':', line.n), *c2;
	struct extc_cgroup_move *m;
	struct span ctrls, path;
	enum extc_cgroup_where where;
	int v2;

	if (c1 == NULL || (c2 = memchr(c1 + 1, ':', line.n - (size_t)(c1 + 1 - line.p))) == NULL)
		return;
	ctrls = (struct span){ c1 + 1, (size_t)(c2 - (c1 + 1)) };
	path = (struct span){ c2 + 1, line.n - (size_t)(c2 + 1 - line.p) };
	v2 = (ctrls.n == 0 && c1 - line.p == 1 && line.p[0] == '0');
	if (plan->n == EXTC_CGROUP_MAX || ctrls.n >= sizeof(m->hierarchy))
		return;
	m = &plan->moves[plan->n];
	memset(m, 0, sizeof(*m));
	snprintf(m->from, sizeof(m->from), "%.*s", (int)path.n, path.p);
	where = path.n >= sizeof(m->from) ? EXTC_CGROUP_BAD_PATH
		: extc_cgroup_escape_target(m->from, v2, m->to, sizeof(m->to));
	if (where == EXTC_CGROUP_OUTSIDE ||
	    (where == EXTC_CGROUP_BAD_PATH && !names_job(path)))
		return;
	snprintf(m->hierarchy, sizeof(m->hierarchy), "%.*s", (int)ctrls.n, ctrls.p);
	if (v2)
		snprintf(m->hierarchy, sizeof(m->hierarchy), "unified");
	plan->n++;
	if (where == EXTC_CGROUP_IN_JOB)
		find_mount(mountinfo, ctrls, v2, m);
	else
		snprintf(m->why, sizeof(m->why), "%s", "its cgroup path is too long or not plain");
}

void extc_cgroup_escape_plan(const char *cgroup_text, const char *mountinfo_text,
			     struct extc_cgroup_plan *plan)
{
	const char *p = cgroup_text;

	plan->n = 0;
	for (; *p != '\0'; p += strcspn(p, "\n"), p += (*p == '\n'))
		plan_line((struct span){ p, strcspn(p, "\n") }, mountinfo_text, plan);
}

static void append(char *why, size_t whylen, const struct extc_cgroup_move *m, const char *what)
{
	char from[160], to[160];
	size_t used = whylen > 0 ? strlen(why) : 0;

	extc_escape(m->from, 120, from, sizeof(from));
	extc_escape(m->to, 120, to, sizeof(to));
	if (used < whylen)
		snprintf(why + used, whylen - used, "%s%s %s -> %s%s%s", used > 0 ? "; " : "",
			 m->hierarchy, from, to, what[0] != '\0' ? ": " : "", what);
}

/* write pid into one cgroup.procs; 0, or an errno */
static int write_pid(const char *procs, pid_t pid)
{
	char num[32];
	int fd, err = 0, len = snprintf(num, sizeof(num), "%ld", (long)pid);

	/* cgroupfs has no symbolic links; O_NOFOLLOW keeps it that way for the file itself */
	fd = open(procs, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return (errno);
	if (write(fd, num, (size_t)len) != len)
		err = errno != 0 ? errno : EIO;
	if (close(fd) != 0 && err == 0)
		err = errno;
	return (err);
}

enum extc_cgroup_result extc_cgroup_escape_apply(const struct extc_cgroup_plan *plan, pid_t pid,
						 char *why, size_t whylen)
{
	size_t i, moved = 0;

	if (whylen > 0)
		why[0] = '\0';
	for (i = 0; i < plan->n; i++) {
		const struct extc_cgroup_move *m = &plan->moves[i];
		int err = m->procs[0] == '\0' ? -1 : write_pid(m->procs, pid);

		if (err == 0)
			moved++;
		append(why, whylen, m, err == 0 ? "" : err < 0 ? m->why : strerror(err));
	}
	if (plan->n == 0) {
		if (whylen > 0)
			snprintf(why, whylen, "in no Slurm job's cgroup");
		return (EXTC_CGROUP_NOT_IN_JOB);
	}
	if (moved == plan->n)
		return (EXTC_CGROUP_MOVED);
	return (moved > 0 ? EXTC_CGROUP_PARTIAL : EXTC_CGROUP_FAILED);
}

/* a whole (small) file, NUL-terminated, at most READ_CAP bytes; NULL with errno */
static char *slurp(const char *path)
{
	size_t len = 0, cap = 8192;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = 0;

	if (buf == NULL || fd < 0)
		goto fail;
	for (;;) {
		if (len == cap) {
			char *bigger = cap >= READ_CAP ? NULL : realloc(buf, cap * 2 + 1);

			if (bigger == NULL)
				break;	/* what was read is used: a mount missing from it is reported */
			buf = bigger;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	if (r < 0)
		goto fail;
	close(fd);
	buf[len] = '\0';
	return (buf);
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return (NULL);
}

enum extc_cgroup_result extc_cgroup_escape_from(const char *cgroup_file,
						const char *mountinfo_file, pid_t pid,
						char *why, size_t whylen)
{
	enum extc_cgroup_result r = EXTC_CGROUP_FAILED;
	char *cg = slurp(cgroup_file), *mi = NULL;
	struct extc_cgroup_plan *plan = NULL;
	int err = errno;

	if (cg != NULL) {
		mi = slurp(mountinfo_file);
		err = errno;
	}
	if (cg == NULL || mi == NULL) {
		snprintf(why, whylen, "cannot read %s: %s", cg == NULL ? cgroup_file : mountinfo_file,
			 strerror(err));
		goto out;
	}
	plan = malloc(sizeof(*plan));
	if (plan == NULL) {
		snprintf(why, whylen, "%s", strerror(errno));
		goto out;
	}
	extc_cgroup_escape_plan(cg, mi, plan);
	r = extc_cgroup_escape_apply(plan, pid, why, whylen);
out:
	free(plan);
	free(mi);
	free(cg);
	return (r);
}

enum extc_cgroup_result extc_cgroup_escape(char *why, size_t whylen)
{
	return (extc_cgroup_escape_from("/proc/self/cgroup", "/proc/self/mountinfo", getpid(),
					why, whylen));
}

const char *extc_cgroup_escape_result_name(enum extc_cgroup_result r)
{
	switch (r) {
	case EXTC_CGROUP_NOT_IN_JOB:
		return ("not-in-job");
	case EXTC_CGROUP_MOVED:
		return ("moved");
	case EXTC_CGROUP_PARTIAL:
		return ("partial");
	case EXTC_CGROUP_FAILED:
		return ("failed");
	}
	return ("?");
}
