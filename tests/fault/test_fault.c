/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache fault injection tests (security-cases.md cases 8, 13, 16, 30, 33,
 * 34, 40, 48): ENOSPC, EMFILE, EIO, EROFS and EACCES injected at the Nth call
 * of every system call the engine makes (fault_wrap.c, -Wl,--wrap), for
 * every N until the operation no longer reaches an Nth call, once
 * (transient) and from then on (sticky), for every operation of the
 * engine: making the tree (fresh, below an existing skeleton, over a stale
 * leaf, job mode), removing a step's leaf, a job, a deep tree with a budget
 * of two descriptors, and the sweep.
 *
 * After every injected run:
 * - no crash, no hang (alarm), the call returns 0 or -1;
 * - on failure, a clear message: printable, naming a path, and saying what
 *   failed with the injected error's text;
 * - creation: no leaf left, no descriptor left open, and the next create,
 *   without faults and under the same hostile umask, gives exactly the
 *   designed tree (skeleton root 0711, leaf user 0700, subdirectories) that
 *   the user can reach;
 * - removal: the first error is the injected one, no descriptor left open,
 *   no mode or owner changed (no chmod/chown call of any kind), and a
 *   re-run without faults removes everything.
 * Needs root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/config.h"
#include "fault.h"
#include "fs/fs_remove.h"
#include "fs/fs_sweep.h"
#include "fs/fs_trash.h"
#include "fs/fs_tree.h"
#include "fsfixture.h"

#define USER_UID 4242
#define USER_GID 4242
#define JOBID 77

/* the five, plus a quota (case 13) and root_squash's EPERM (case 16) */
static const int errs[] = { ENOSPC, EMFILE, EIO, EROFS, EACCES, EDQUOT, EPERM };
#define NERRS (sizeof(errs) / sizeof(errs[0]))

/*
 * EXTC_FAULT_ERRS=all: every error at every call number (tests/run-hardening.sh,
 * sanitizer build). Default: the errors rotate over the call numbers, so
 * every call sees every error across its numbers with a fifth of the runs
 * (make check, valgrind).
 */
static bool all_errors(void)
{
	const char *e = getenv("EXTC_FAULT_ERRS");

	return (e != NULL && strcmp(e, "all") == 0);
}

/* Should (error e, call number nth, sticky) run for call index f? */
static bool selected(size_t f, size_t e, unsigned long nth, int sticky)
{
	if (all_errors())
		return (true);
	return ((f + nth + (unsigned long)sticky * 2) % NERRS == e);
}

static const enum fault_fn create_fns[] = {
	FF_MKDIRAT, FF_OPENAT, FF_OPEN, FF_FCHOWN, FF_FCHMOD, FF_STATX, FF_FSTATAT,
	FF_FSTATFS, FF_UNLINKAT, FF_FLOCK, FF_DUP, FF_FDOPENDIR, FF_READDIR,
};
static const enum fault_fn remove_fns[] = {
	FF_OPENAT, FF_OPEN, FF_STATX, FF_FSTATAT, FF_FSTATFS, FF_UNLINKAT, FF_FLOCK, FF_DUP,
	FF_FDOPENDIR, FF_READDIR, FF_RENAMEAT2,
};

struct fx {
	struct fsfx fs;		/* root (0755), descriptor count */
	char base[PATH_MAX];
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_tree tree;	/* cfg and pol */
	struct extc_ids ids;
	/* totals for the summary line */
	unsigned long runs, failed_runs, fired_ok;
	unsigned long skeleton_left;	/* levels an aborted create made and left (not blocking) */
};

/*
 * A matrix keeps going after a violation, so that one run shows every
 * kind of failure: each distinct (check, call, error) is recorded with its
 * first example, all are printed at the end, and the test then fails.
 */
#define MAX_KINDS 256
static struct {
	char key[160];
	char example[600];
	unsigned long count;
} kinds[MAX_KINDS];
static unsigned nkinds;

static void violation(const char *check, const char *what, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
static void violation(const char *check, const char *what, const char *f, ...)
{
	char key[160], detail[400];
	const char *colon = strchr(what, ':');
	va_list ap;
	unsigned i;

	/* key: the check, the operation and the injected call (not its number or error) */
	snprintf(key, sizeof(key), "%s | %.*s%s", check, colon ? (int)(colon - what) : 0, what,
		 strstr(what, "(sticky)") ? " (sticky)" : "");
	va_start(ap, f);
	vsnprintf(detail, sizeof(detail), f, ap);
	va_end(ap);
	for (i = 0; i < nkinds; i++) {
		if (strcmp(kinds[i].key, key) == 0) {
			kinds[i].count++;
			return;
		}
	}
	if (nkinds == MAX_KINDS)
		return;
	snprintf(kinds[nkinds].key, sizeof(kinds[nkinds].key), "%s", key);
	snprintf(kinds[nkinds].example, sizeof(kinds[nkinds].example), "%s: %s", what, detail);
	(void)colon;
	kinds[nkinds].count = 1;
	nkinds++;
}

static void report_violations(const char *matrix)
{
	unsigned i;

	if (nkinds == 0)
		return;
	print_error("%s: %u kind(s) of violation:\n", matrix, nkinds);
	for (i = 0; i < nkinds; i++)
		print_error("  [%lu x] %s\n      e.g. %s\n", kinds[i].count, kinds[i].key,
			    kinds[i].example);
	nkinds = 0;
	fail();
}

static void fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, len, f, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		abort();
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char arg[PATH_MAX + 16], why[512];
	char *av[2];

	*state = fx;
	if (fx == NULL || fsfx_setup(&fx->fs, 0755) < 0)
		return (-1);
	fmt(fx->base, sizeof(fx->base), "%s/base", fx->fs.root);
	fmt(arg, sizeof(arg), "base=%s", fx->base);
	av[0] = arg;
	av[1] = (char *)"vars=TRITON_CACHE_DIR,CUPY_CACHE_DIR:cupy,SITE_TOOL_CACHE,PYTORCH_KERNEL_CACHE_PATH";
	if (extc_config_parse(&fx->cfg, 2, av, why, sizeof(why)) < 0)
		return (-1);
	extc_fs_policy_root(&fx->pol, &fx->cfg, NULL);
	fx->tree = (struct extc_tree){ &fx->cfg, &fx->pol };
	fx->ids.uid = USER_UID;
	fx->ids.gid = USER_GID;
	fx->ids.jobid = JOBID;
	fx->ids.stepid = 0;
	fx->fs.fds = fsfx_fd_count();
	*state = fx;
	return (0);
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	int rv = 0;

	fault_disarm();
	fault.hook = NULL;
	if (fsfx_teardown(&fx->fs) < 0)
		rv = -1;
	free(fx);
	return (rv);
}

static bool printable(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return (false);
	}
	return (true);
}

static void check_fds(struct fx *fx, const char *what)
{
	int now = fsfx_fd_count();

	if (now != fx->fs.fds) {
		violation("descriptor leak", what, "%d descriptors open, %d before", now, fx->fs.fds);
		/* close what leaked so that later runs measure their own */
		for (int fd = 3; fd < 1024 && fsfx_fd_count() > fx->fs.fds; fd++) {
			if (fcntl(fd, F_GETFD) >= 0 && fd > 2)
				close(fd);
		}
	}
}

static bool check_dir(const char *path, uid_t uid, mode_t mode, const char *what, const char *check)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
	    (st.st_mode & 07777) != mode) {
		violation(check, what, "%s is %s (uid %u mode %04o), expected a directory of uid %u "
			  "mode %04o", path, errno == ENOENT ? "missing" : "wrong", (unsigned)st.st_uid,
			  (unsigned)(st.st_mode & 07777), (unsigned)uid, (unsigned)mode);
		return (false);
	}
	return (true);
}

static int user_can_open(void *arg)
{
	int fd = open((const char *)arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return (1);
	close(fd);
	return (0);
}

static int run_as_user(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(USER_GID, USER_GID, USER_GID) < 0 ||
		    setresuid(USER_UID, USER_UID, USER_UID) < 0)
			_exit(2);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return (-1);
	return (WEXITSTATUS(status));
}

static unsigned long reach_checks;

/* The exact designed tree, reachable by the user. */
static void check_designed_tree(struct fx *fx, const char *leaf, const char *what, const char *check)
{
	char p[PATH_MAX];
	bool ok = true;
	size_t i;

	ok &= check_dir(fx->base, 0, 0711, what, check);
	fmt(p, sizeof(p), "%s/%u", fx->base, USER_UID);
	ok &= check_dir(p, 0, 0711, what, check);
	fmt(p, sizeof(p), "%s/%u/%u", fx->base, USER_UID, JOBID);
	ok &= check_dir(p, 0, 0711, what, check);
	ok &= check_dir(leaf, USER_UID, 0700, what, check);
	/* the directories tools will not make themselves, and only those */
	for (i = 0; i < fx->cfg.nvars; i++) {
		fmt(p, sizeof(p), "%s/%s", leaf, fx->cfg.vars[i].subdir);
		if (fx->cfg.vars[i].make_dir) {
			ok &= check_dir(p, USER_UID, 0700, what, check);
		} else if (fsfx_exists(p)) {
			violation(check, what, "%s exists; the tool makes it", p);
			ok = false;
		}
	}
	/* exact modes imply the user reaches it; prove it by a real open once in a while */
	if (ok && ++reach_checks % 64 == 1 && run_as_user(user_can_open, (void *)leaf) != 0)
		violation(check, what, "the user cannot reach %s", leaf);
}

/* ---- creation ------------------------------------------------------------------------------- */

enum create_kind { CREATE_FRESH, CREATE_SKELETON, CREATE_STALE, CREATE_JOB_REUSE, CREATE_BASE };
static const char *const create_names[] = { "fresh", "below a skeleton", "over a stale leaf",
					    "job mode reuse", "prepare_base" };

static void reset_tree(struct fx *fx)
{
	struct extc_rm_report rep;
	int rootfd = open(fx->fs.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(rootfd >= 0);
	extc_remove_tree_at(rootfd, "base", NULL, &rep);
	close(rootfd);
	assert_false(fsfx_exists(fx->base));
}

static void prepare_kind(struct fx *fx, enum create_kind kind)
{
	char leaf[PATH_MAX], why[1024], p[PATH_MAX];
	int hold = -1;

	reset_tree(fx);
	if (kind == CREATE_FRESH || kind == CREATE_BASE)
		return;
	hold = extc_tree_create(&fx->tree, &fx->ids,
				kind == CREATE_JOB_REUSE ? EXTC_MODE_JOB : EXTC_MODE_LOCAL, leaf,
				sizeof(leaf), why, sizeof(why));
	assert_true(hold >= 0);
	close(hold);
	if (kind == CREATE_SKELETON) {
		struct extc_rm_report rep;

		assert_int_equal(extc_tree_remove_leaf(&fx->tree, &fx->ids, EXTC_MODE_LOCAL,
						       &rep, why, sizeof(why)), 0);
	} else {
		/* the user's content in the leaf: files, a subdirectory, a symlink out */
		int lfd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		assert_true(lfd >= 0);
		assert_int_equal(fsfx_write_at(lfd, "data", "user data\n", 0600), 0);
		assert_int_equal(mkdirat(lfd, "sub", 0700), 0);
		assert_int_equal(symlinkat("/etc", lfd, "link"), 0);
		assert_int_equal(fchownat(lfd, "data", USER_UID, USER_GID, 0), 0);
		assert_int_equal(fchownat(lfd, "sub", USER_UID, USER_GID, 0), 0);
		close(lfd);
		fmt(p, sizeof(p), "%s/sub", leaf);
		assert_int_equal(fsfx_write_at(AT_FDCWD, fsfx_join((char[PATH_MAX]){ 0 }, PATH_MAX,
								       p, "f"), "x", 0600), 0);
	}
}

static int do_create(struct fx *fx, enum create_kind kind, char *leaf, int *hold, char *why,
		     size_t whylen)
{
	if (kind == CREATE_BASE) {
		fmt(leaf, PATH_MAX, "%s", fx->base);
		return (extc_tree_prepare_base(&fx->tree, why, whylen));
	}
	*hold = extc_tree_create(&fx->tree, &fx->ids,
				 kind == CREATE_JOB_REUSE ? EXTC_MODE_JOB : EXTC_MODE_LOCAL, leaf,
				 PATH_MAX, why, whylen);
	return (*hold >= 0 ? 0 : -1);
}

static void expected_leaf(struct fx *fx, enum create_kind kind, char *leaf)
{
	fmt(leaf, PATH_MAX, "%s/%u/%u/%s", fx->base, USER_UID, JOBID,
	    kind == CREATE_JOB_REUSE ? "job" : "0");
}

static void one_create_run(struct fx *fx, enum create_kind kind, enum fault_fn fn, int err,
			   unsigned long nth, bool sticky, mode_t umask_during, bool *reached)
{
	char leaf[PATH_MAX], want[PATH_MAX], why[1024], what[256];
	int hold = -1, rv;
	mode_t old;

	fmt(what, sizeof(what), "create %s, %s: #%lu -> %s%s, umask %04o", create_names[kind],
	    fault_fn_names[fn], nth, strerror(err), sticky ? " (sticky)" : "",
	    (unsigned)umask_during);
	prepare_kind(fx, kind);
	expected_leaf(fx, kind, want);
	why[0] = '\0';
	old = umask(umask_during);
	alarm(30);
	fault_arm(fn, nth, err, sticky);
	rv = do_create(fx, kind, leaf, &hold, why, sizeof(why));
	fault_disarm();
	alarm(0);
	umask(old);
	*reached = fault.fired;
	fx->runs++;
	if (rv != 0 && rv != -1)
		violation("return value", what, "returned %d", rv);
	if (rv == -1) {
		fx->failed_runs++;
		if (!fault.fired)
			violation("failed without a fault", what, "%s", why);
		/* a clear message: a path, the error's own words, nothing unprintable */
		if (why[0] != '/' || !printable(why))
			violation("unclear error message", what, "\"%s\"", why);
		else if (strstr(why, strerror(err)) == NULL && fn != FF_FDOPENDIR)
			/* (fdopendir on a valid descriptor fails only for memory: "out of memory") */
			violation("error text loses the errno", what, "\"%s\"", why);
		/* what this attempt made is rolled back (a stale leaf of before may stay) */
		if ((kind == CREATE_FRESH || kind == CREATE_SKELETON) && fsfx_exists(want))
			violation("leaf left after a failed create", what, "failed (%s) but left %s",
				  why, want);
		if (hold != -1)
			violation("descriptor handed out on failure", what, "hold %d", hold);
		if (kind == CREATE_FRESH) {
			char p[PATH_MAX];

			fmt(p, sizeof(p), "%s/%u/%u", fx->base, USER_UID, JOBID);
			fx->skeleton_left += fsfx_exists(p);
		}
	} else {
		if (fault.fired)
			fx->fired_ok++;
		if (hold >= 0)
			close(hold);
		if (kind != CREATE_BASE)
			check_designed_tree(fx, want, what, "wrong tree after a create that succeeded");
		else
			check_dir(fx->base, 0, 0711, what, "wrong base after prepare_base succeeded");
	}
	check_fds(fx, what);
	/* whatever was left, the next create (no faults, same umask) gives the designed tree */
	old = umask(umask_during);
	hold = -1;
	rv = do_create(fx, kind == CREATE_BASE || kind == CREATE_JOB_REUSE ? kind : CREATE_FRESH,
		       leaf, &hold, why, sizeof(why));
	umask(old);
	if (rv != 0) {
		violation("next create fails after a fault", what, "%s", why);
	} else {
		if (hold >= 0)
			close(hold);
		if (kind != CREATE_BASE)
			check_designed_tree(fx, leaf, what, "debris: next create gives a wrong tree");
		else
			check_dir(fx->base, 0, 0711, what, "debris: next prepare_base gives a wrong base");
	}
	check_fds(fx, what);
}

static void create_matrix(struct fx *fx, enum create_kind kind, mode_t umask_during)
{
	size_t f, e;
	int sticky;

	for (f = 0; f < sizeof(create_fns) / sizeof(create_fns[0]); f++) {
		for (e = 0; e < NERRS; e++) {
			for (sticky = 0; sticky < 2; sticky++) {
				unsigned long nth;
				bool reached = true;

				for (nth = 1; reached && nth < 10000; nth++) {
					if (!selected(f, e, nth, sticky))
						continue;
					one_create_run(fx, kind, create_fns[f], errs[e], nth,
						       sticky != 0, umask_during, &reached);
				}
			}
		}
	}
	fprintf(stderr, "# create %s, umask %04o: %lu runs, %lu failed cleanly, %lu succeeded "
		"despite a fault; %lu aborted fresh creates left an empty skeleton\n",
		create_names[kind], (unsigned)umask_during, fx->runs, fx->failed_runs, fx->fired_ok,
		fx->skeleton_left);
	assert_true(fx->runs > 100);
	report_violations(create_names[kind]);
}

static void test_create_fresh(void **state)
{
	create_matrix(*state, CREATE_FRESH, 022);
}

static void test_create_fresh_hostile_umask(void **state)
{
	/* SLURM_UMASK is the user's (case 10): 0777 leaves any unfinished mkdir with mode 000 */
	create_matrix(*state, CREATE_FRESH, 0777);
}

static void test_create_below_skeleton(void **state)
{
	create_matrix(*state, CREATE_SKELETON, 077);
}

static void test_create_over_stale_leaf(void **state)
{
	create_matrix(*state, CREATE_STALE, 022);
}

static void test_create_job_mode_reuse(void **state)
{
	create_matrix(*state, CREATE_JOB_REUSE, 022);
}

static void test_prepare_base(void **state)
{
	create_matrix(*state, CREATE_BASE, 077);
}

/* ---- removal ------------------------------------------------------------------------------------ */

enum remove_kind { REMOVE_LEAF, REMOVE_JOB, REMOVE_DEEP_2FDS, REMOVE_SWEEP };
static const char *const remove_names[] = { "leaf", "job", "deep tree, 2 descriptors", "sweep" };

/* leaf content: files, a symlink out, a mode-000 user dir, a chain 12 deep (the user's) with files */
static void populate(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int i;

	assert_true(fd >= 0);
	assert_int_equal(fsfx_write_at(fd, "a", "a", 0644), 0);
	assert_int_equal(symlinkat("/etc/passwd", fd, "out"), 0);
	assert_int_equal(mkdirat(fd, "locked", 0700), 0);
	{
		int lfd = openat(fd, "locked", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		assert_int_equal(fsfx_write_at(lfd, "secret", "s", 0), 0);
		assert_int_equal(fchown(lfd, USER_UID, USER_GID), 0);
		assert_int_equal(fchmod(lfd, 0), 0);
		close(lfd);
	}
	for (i = 0; i < 12; i++) {
		int nfd;

		assert_int_equal(mkdirat(fd, "d", 0755), 0);
		/* the user's own, as a job makes them: root enters only what the user owns */
		assert_int_equal(fchownat(fd, "d", USER_UID, USER_GID, 0), 0);
		assert_int_equal(fsfx_write_at(fd, "f", "f", 0644), 0);
		nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		assert_true(nfd >= 0);
		fd = nfd;
	}
	close(fd);
}

static unsigned long sweep_unfinished;

static bool sweep_none_alive(uint32_t jobid, void *arg)
{
	(void)jobid;
	(void)arg;
	return (false);
}

static int do_remove(struct fx *fx, enum remove_kind kind, int jfd, struct extc_rm_report *rep,
		     char *why, size_t whylen)
{
	switch (kind) {
	case REMOVE_LEAF:
		return (extc_tree_remove_leaf(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, rep, why,
					      whylen));
	case REMOVE_JOB:
		return (extc_tree_remove_job(&fx->tree, USER_UID, JOBID, rep, why, whylen));
	case REMOVE_SWEEP: {
		struct extc_sweep_report sw;
		int rv = extc_sweep_leftovers(&fx->tree, &(struct extc_sweep_calls){ .alive = sweep_none_alive }, &sw, why, whylen);

		*rep = sw.rm;
		/* levels it could not verify or finish are counted, not errors: success with a
		   count is honest, success with nothing counted means "all removed" */
		sweep_unfinished = sw.refused + sw.jobs_failed + sw.held + sw.alive;
		return (rv);
	}
	default: {
		struct extc_rm_limits lim;
		int rv;

		extc_rm_limits_default(&lim);
		lim.max_fds = 2;
		rv = extc_remove_tree_at(jfd, "0", &lim, rep);
		if (rv < 0)
			extc_rm_report_text(rep, why, whylen);
		return (rv);
	}
	}
}

static void one_remove_run(struct fx *fx, enum remove_kind kind, enum fault_fn fn, int err,
			   unsigned long nth, bool sticky, bool *reached)
{
	char leaf[PATH_MAX], why[1024], what[256], text[512];
	struct extc_rm_report rep;
	int hold = -1, rv, jfd;
	enum fault_fn c;

	fmt(what, sizeof(what), "remove %s, %s: #%lu -> %s%s", remove_names[kind],
	    fault_fn_names[fn], nth, strerror(err), sticky ? " (sticky)" : "");
	reset_tree(fx);
	hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf), why,
				sizeof(why));
	assert_true(hold >= 0);
	close(hold);
	populate(leaf);
	why[0] = '\0';
	memset(&rep, 0, sizeof(rep));
	{
		char jobdir[PATH_MAX];

		fmt(jobdir, sizeof(jobdir), "%s/%u/%u", fx->base, USER_UID, JOBID);
		jfd = open(jobdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		assert_true(jfd >= 0);
	}
	alarm(30);
	fault_arm(fn, nth, err, sticky);
	sweep_unfinished = 0;
	rv = do_remove(fx, kind, jfd, &rep, why, sizeof(why));
	fault_disarm();
	alarm(0);
	close(jfd);
	*reached = fault.fired;
	fx->runs++;
	/* removal never changes a mode or an owner, by descriptor or by path (the sweep, and a
	   step's removal out of time, may make their own root-owned trash directory) */
	for (c = FF_FCHOWN; c <= FF_LCHOWN; c++) {
		if ((kind == REMOVE_SWEEP || kind == REMOVE_LEAF) && (c == FF_FCHOWN || c == FF_FCHMOD))
			continue;
		if ((c == FF_FCHOWN || c == FF_FCHMOD || c >= FF_FCHMODAT) && fault.calls[c] != 0)
			violation("mode or owner changed during a removal", what, "%s called %lu times",
				  fault_fn_names[c], fault.calls[c]);
	}
	if (rv != 0 && rv != -1)
		violation("return value", what, "returned %d", rv);
	if (rv == -1) {
		fx->failed_runs++;
		if (!fault.fired)
			violation("failed without a fault", what, "%s", why);
		if (!printable(why) || why[0] == '\0')
			violation("unclear error message", what, "\"%s\"", why);
		else if (strstr(why, strerror(err)) == NULL && fn != FF_FDOPENDIR)
			/* (fdopendir on a valid descriptor fails only for memory: "out of memory") */
			violation("error text loses the errno", what, "\"%s\"", why);
		extc_rm_report_text(&rep, text, sizeof(text));
		if (!printable(text) || strchr(text, '\n') != NULL)
			violation("report not one printable line", what, "\"%s\"", text);
	} else {
		if (fault.fired)
			fx->fired_ok++;
		if (fsfx_exists(leaf) && !(kind == REMOVE_SWEEP && sweep_unfinished != 0))
			violation("success claimed, tree still there", what, "%s exists", leaf);
	}
	check_fds(fx, what);
	/* idempotent: a clean re-run finishes the job */
	rv = extc_tree_remove_job(&fx->tree, USER_UID, JOBID, &rep, why, sizeof(why));
	if (rv != 0 || fsfx_exists(leaf))
		violation("clean re-run does not finish", what, "%s", why);
	check_fds(fx, what);
}

static void remove_matrix(struct fx *fx, enum remove_kind kind)
{
	size_t f, e;
	int sticky;

	for (f = 0; f < sizeof(remove_fns) / sizeof(remove_fns[0]); f++) {
		for (e = 0; e < NERRS; e++) {
			for (sticky = 0; sticky < 2; sticky++) {
				unsigned long nth;
				bool reached = true;

				for (nth = 1; reached && nth < 10000; nth++) {
					if (!selected(f, e, nth, sticky))
						continue;
					one_remove_run(fx, kind, remove_fns[f], errs[e], nth,
						       sticky != 0, &reached);
				}
			}
		}
	}
	fprintf(stderr, "# remove %s: %lu runs, %lu failed cleanly, %lu succeeded despite a fault\n",
		remove_names[kind], fx->runs, fx->failed_runs, fx->fired_ok);
	assert_true(fx->runs > 100);
	report_violations(remove_names[kind]);
}

static void test_remove_leaf(void **state)
{
	remove_matrix(*state, REMOVE_LEAF);
}

static void test_remove_job(void **state)
{
	remove_matrix(*state, REMOVE_JOB);
}

static void test_remove_deep_two_fds(void **state)
{
	remove_matrix(*state, REMOVE_DEEP_2FDS);
}

static void test_sweep(void **state)
{
	remove_matrix(*state, REMOVE_SWEEP);
}

/* ---- check-and-use seams: an attacker between two calls (cases 8 and 33) ------------------------- */

struct swap_hook {
	const char *match;	/* the name whose mkdirat triggers the swap */
	char away[PATH_MAX];	/* where the fresh directory is moved */
	char target[PATH_MAX];	/* what the symlink put in its place points to */
	bool done;
};

static void hook_swap_after_mkdir(enum fault_fn fn, int dirfd, const char *name, void *arg)
{
	struct swap_hook *h = arg;

	if (fn != FF_MKDIRAT || h->done || strcmp(name, h->match) != 0)
		return;
	h->done = true;
	/* what an attacker with write access to the parent would do between mkdir and open */
	if (renameat(dirfd, name, AT_FDCWD, h->away) == 0 && symlinkat(h->target, dirfd, name) < 0)
		fprintf(stderr, "hook: symlink %s: %s\n", name, strerror(errno));
}

static void test_seam_mkdir_then_swap_for_symlink(void **state)
{
	struct fx *fx = *state;
	struct fsfx_sentinel sent;
	static const char *const levels[] = { "base", "4242", "77", "0", "site_tool_cache" };
	char leaf[PATH_MAX], why[1024], p[PATH_MAX];
	struct swap_hook h;
	size_t i;

	fmt(p, sizeof(p), "%s/victim", fx->fs.root);
	assert_int_equal(fsfx_sentinel_dir(&sent, p, 0755, USER_UID, USER_GID), 0);
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		struct stat st;
		int hold = -1, rv;

		reset_tree(fx);
		memset(&h, 0, sizeof(h));
		h.match = levels[i];
		fmt(h.away, sizeof(h.away), "%s/away", fx->fs.root);
		fmt(h.target, sizeof(h.target), "%s/victim", fx->fs.root);
		fault.hook = hook_swap_after_mkdir;
		fault.hook_arg = &h;
		fault_arm(FF_MKDIRAT, 0, 0, false);
		hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, leaf,
					sizeof(leaf), why, sizeof(why));
		rv = hold >= 0 ? 0 : -1;
		fault_disarm();
		fault.hook = NULL;
		assert_true(h.done);
		fprintf(stderr, "# %s swapped for a symlink right after mkdirat: %s\n", levels[i],
			rv == 0 ? "made anyway" : why);
		/* refused, saying why; the symlink's target was neither adopted nor changed */
		assert_int_equal(rv, -1);
		if (strstr(why, "symbolic link") == NULL) {
			print_error("unexpected reason: %s\n", why);
			fail();
		}
		assert_true(fsfx_sentinel_intact(&sent));
		/* the fresh directory moved away was never handed to the user */
		assert_int_equal(lstat(h.away, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
		assert_int_equal(st.st_uid, 0);
		assert_int_equal(rmdir(h.away), 0);
		check_fds(fx, levels[i]);
	}
	reset_tree(fx);
}

/* Every entry vanishes right after readdir returns it (case 33): ENOENT is no failure. */
static void hook_vanish(enum fault_fn fn, int dirfd, const char *name, void *arg)
{
	(void)arg;
	if (fn != FF_READDIR || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return;
	if (unlinkat(dirfd, name, 0) < 0 && errno == EISDIR) {
		/* a directory: empty it as the user would (files, then itself) */
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0) {
			unlinkat(fd, "f", 0);
			unlinkat(fd, "secret", 0);
			close(fd);
		}
		unlinkat(dirfd, name, AT_REMOVEDIR);
	}
}

static void test_seam_entries_vanish_after_readdir(void **state)
{
	struct fx *fx = *state;
	struct extc_rm_report rep;
	char leaf[PATH_MAX], why[1024];
	int hold = -1, rv;

	reset_tree(fx);
	hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf), why,
				sizeof(why));
	assert_true(hold >= 0);
	close(hold);
	populate(leaf);
	fault.hook = hook_vanish;
	fault_arm(FF_READDIR, 0, 0, false);
	rv = extc_tree_remove_job(&fx->tree, USER_UID, JOBID, &rep, why, sizeof(why));
	fault_disarm();
	fault.hook = NULL;
	if (rv != 0) {
		print_error("entries vanishing after readdir: %s\n", why);
		fail();
	}
	assert_int_equal(rep.failed, 0);
	assert_false(fsfx_exists(leaf));
	check_fds(fx, "vanish");
}

/* The whole tree is already gone (case 33): success, nothing reported. */
static void test_tree_already_gone(void **state)
{
	struct fx *fx = *state;
	struct extc_rm_report rep;
	char why[1024];

	reset_tree(fx);
	assert_int_equal(extc_tree_remove_job(&fx->tree, USER_UID, JOBID, &rep, why,
					      sizeof(why)), 0);
	assert_int_equal(extc_tree_remove_leaf(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, &rep,
					       why, sizeof(why)), 0);
	assert_int_equal(rep.failed, 0);
	check_fds(fx, "gone");
}

/*
 * Every directory the engine opens, on every path of every operation, is
 * opened with O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC (creation "opened with
 * O_NOFOLLOW|O_DIRECTORY ... before use", cases 2, 8, 19, 48).
 */
static void test_every_open_is_nofollow_directory_cloexec(void **state)
{
	struct fx *fx = *state;
	struct extc_sweep_report sw;
	struct extc_rm_report rep;
	char leaf[PATH_MAX], why[1024];
	int hold = -1;
	unsigned long opens;

	reset_tree(fx);
	fault_arm(FF_OPENAT, 0, 0, false);
	assert_int_equal(extc_tree_prepare_base(&fx->tree, why, sizeof(why)), 0);
	hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf), why,
				sizeof(why));
	assert_true(hold >= 0);
	fault_disarm();
	close(hold);
	populate(leaf);
	fault.armed = true;
	hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf), why,
				sizeof(why));
	assert_true(hold >= 0);	/* stale */
	close(hold);
	hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_JOB, leaf, sizeof(leaf), why,
				sizeof(why));
	assert_true(hold >= 0);
	close(hold);
	assert_int_equal(extc_tree_remove_leaf(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, &rep,
					       why, sizeof(why)), 0);
	assert_int_equal(extc_sweep_leftovers(&fx->tree, &(struct extc_sweep_calls){ .alive = sweep_none_alive }, &sw, why,
					      sizeof(why)), 0);
	assert_int_equal(extc_tree_remove_job(&fx->tree, USER_UID, JOBID, &rep, why,
					      sizeof(why)), 0);
	fault_disarm();
	opens = fault.calls[FF_OPENAT] + fault.calls[FF_OPEN];
	fprintf(stderr, "# %lu opens checked\n", opens);
	assert_true(opens > 20);
	if (fault.unsafe_opens != 0) {
		print_error("%lu open(s) without O_NOFOLLOW|O_DIRECTORY|O_CLOEXEC, first: %s\n",
			    fault.unsafe_opens, fault.first_unsafe);
		fail();
	}
	check_fds(fx, "flags");
	report_violations("open flags");
}

/* The descriptor a step holds is close-on-exec: a task never inherits a root directory (case 48). */
static void test_hold_descriptor_is_cloexec(void **state)
{
	struct fx *fx = *state;
	char leaf[PATH_MAX], why[1024], cmd[PATH_MAX + 64];
	int hold = -1, flags, status;
	pid_t pid;

	reset_tree(fx);
	hold = extc_tree_create(&fx->tree, &fx->ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf), why,
				sizeof(why));
	assert_true(hold >= 0);
	flags = fcntl(hold, F_GETFD);
	assert_true(flags >= 0 && (flags & FD_CLOEXEC));
	/* a task exec'ed now sees no descriptor of the base in /proc/self/fd */
	fmt(cmd, sizeof(cmd), "! ls -l /proc/self/fd/ | grep -F '%s'", fx->base);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(hold);
	check_fds(fx, "cloexec");
}

#define FAULT_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		FAULT_TEST(test_create_fresh),
		FAULT_TEST(test_create_fresh_hostile_umask),
		FAULT_TEST(test_create_below_skeleton),
		FAULT_TEST(test_create_over_stale_leaf),
		FAULT_TEST(test_create_job_mode_reuse),
		FAULT_TEST(test_prepare_base),
		FAULT_TEST(test_remove_leaf),
		FAULT_TEST(test_remove_job),
		FAULT_TEST(test_remove_deep_two_fds),
		FAULT_TEST(test_sweep),
		FAULT_TEST(test_seam_mkdir_then_swap_for_symlink),
		FAULT_TEST(test_seam_entries_vanish_after_readdir),
		FAULT_TEST(test_tree_already_gone),
		FAULT_TEST(test_hold_descriptor_is_cloexec),
		FAULT_TEST(test_every_open_is_nofollow_directory_cloexec),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_fault: must run as root, in make check-root "
			"(the leaf is handed to uid %d)\n", USER_UID);
		return (1);	/* make check-root's program: a failure, never a skip */
	}
	return (cmocka_run_group_tests_name("fault", tests, NULL, NULL));
}
