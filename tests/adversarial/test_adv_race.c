/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: races against the engine (security-cases.md
 * cases 8, 9, 15, 19, 20, 21, 29, 33, 39), with an attacker process running
 * as the job's user on the other core while the plugin's real code creates
 * and removes trees as root.
 *
 * Every test checks the invariant of section 1 after every iteration:
 * sentinels outside the tree (a file in /tmp, a root-owned /etc-like
 * directory, another user's directory) keep their content, owner, mode,
 * link count and mtime. Iteration counts scale with EXTC_ADV_SCALE (percent).
 * Needs root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "advtree.h"
#include "base/clock.h"
#include "fs/fs_remove.h"
#include "testmain.h"

#define NPAIRS 8

/* ---- case 19 (and 9 for removal): a directory swapped for a symlink mid-walk ---------------- */

struct swap_arg {
	char leaf[PATH_MAX];
	char targets[4][PATH_MAX];
	unsigned next;
	bool repopulate;
};

static bool attack_swap(void *p)
{
	struct swap_arg *a = p;
	unsigned k = a->next++ % NPAIRS;
	char pk[PATH_MAX], d[PATH_MAX], l[PATH_MAX];

	adv_fmt(pk, sizeof(pk), "%s/p%u", a->leaf, k);
	adv_fmt(d, sizeof(d), "%s/d", pk);
	adv_fmt(l, sizeof(l), "%s/l", pk);
	if (renameat2(AT_FDCWD, d, AT_FDCWD, l, RENAME_EXCHANGE) == 0)
		return (true);
	if (errno == ENOENT && a->repopulate) {
		/* the remover took one of them: put the pair back, as a live job would */
		mkdir(d, 0755);
		if (symlink(a->targets[k % 4], l) < 0)
			return (false);
	}
	return (false);
}

/* leaf/fill*, leaf/p<k>/{d/{f, sub/g}, l -> target}: d complete before l exists. */
static int populate_pairs(const char *leaf, const struct swap_arg *a, unsigned fill)
{
	int lfd = open(leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	unsigned k;
	int rv = -1;

	if (lfd < 0)
		return (-1);
	if (advtree_fill(lfd, fill) < 0)
		goto out;
	for (k = 0; k < NPAIRS; k++) {
		char name[16];
		int pfd, dfd, sfd;

		adv_fmt(name, sizeof(name), "p%u", k);
		if (advtree_dir(lfd, name) < 0)
			goto out;
		pfd = openat(lfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (pfd < 0)
			goto out;
		if (advtree_dir(pfd, "d") < 0 ||
		    (dfd = openat(pfd, "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			close(pfd);
			goto out;
		}
		if (advtree_file(dfd, "f", "user data\n") < 0 || advtree_dir(dfd, "sub") < 0 ||
		    (sfd = openat(dfd, "sub", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			close(dfd);
			close(pfd);
			goto out;
		}
		advtree_file(sfd, "g", "more\n");
		close(sfd);
		close(dfd);
		if (advtree_symlink(a->targets[k % 4], pfd, "l") < 0) {
			close(pfd);
			goto out;
		}
		close(pfd);
	}
	rv = 0;
out:
	close(lfd);
	return (rv);
}

struct populate_arg {
	const char *leaf;
	const struct swap_arg *a;
	unsigned fill;
};

static int populate_child(void *p)
{
	const struct populate_arg *pa = p;

	return (populate_pairs(pa->leaf, pa->a, pa->fill));
}

/*
 * As the job's user, as a job fills its leaf: made by root, a directory
 * the attacker exchanges between mkdirat and fchownat would stay root's,
 * and root's removal rightly does not enter a root-owned directory inside
 * the user's tree.
 */
static void populate_as_user(const char *leaf, const struct swap_arg *a, unsigned fill)
{
	struct populate_arg pa = { leaf, a, fill };

	adv_run_as(ADV_USER_UID, ADV_USER_GID, populate_child, &pa);
}

static void swap_race(struct fsfx *fx, bool repopulate, unsigned long iterations)
{
	struct adv_sentinels sent;
	struct adv_attacker att;
	struct swap_arg arg;
	struct adv_tree t;
	struct extc_rm_limits two;
	unsigned long i, swaps, create_fail = 0, rm_fail = 0, removed = 0;
	double t0 = adv_now();
	char why[1024];

	adv_sentinels_make(fx, &sent);
	advtree_config(fx, &t, "base");
	assert_int_equal(extc_tree_prepare_base(&t.tree, why, sizeof(why)), 0);
	extc_rm_limits_default(&two);
	two.max_fds = 2;

	memset(&arg, 0, sizeof(arg));
	adv_fmt(arg.leaf, sizeof(arg.leaf), "%s/%u/%u/0", t.base, ADV_USER_UID, ADV_JOBID);
	adv_fmt(arg.targets[0], PATH_MAX, "%s", sent.tmp_dir);
	adv_fmt(arg.targets[1], PATH_MAX, "%s", sent.etc_dir);
	adv_fmt(arg.targets[2], PATH_MAX, "%s", sent.other_dir);
	adv_fmt(arg.targets[3], PATH_MAX, "%s", sent.tmp_file);
	arg.repopulate = repopulate;
	adv_attacker_start(&att, attack_swap, &arg, ADV_USER_UID, ADV_USER_GID);

	for (i = 0; i < iterations; i++) {
		struct extc_rm_report rep;
		char leaf[PATH_MAX];
		int hold = -1, rv;

		/* creation runs under the same attack (local mode replaces a stale leaf) */
		hold = extc_tree_create(&t.tree, &t.ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf), why,
					sizeof(why));
		if (hold < 0) {
			/* a stale leaf the attacker keeps changing need not go: safety, not completion */
			create_fail++;
			adv_sentinels_assert(&sent);
			continue;
		}
		assert_string_equal(leaf, arg.leaf);
		populate_as_user(leaf, &arg, 64);
		switch (i % 3) {
		case 0:	/* the step's own exit */
			rv = extc_tree_remove_leaf(&t.tree, &t.ids, EXTC_MODE_LOCAL, &rep,
						   why, sizeof(why));
			close(hold);
			break;
		case 1:	/* the epilog */
			close(hold);
			rv = extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
						  sizeof(why));
			break;
		default: {	/* the walk alone, with '..' re-opened at every level */
			char jobdir[PATH_MAX];
			int jfd;

			adv_fmt(jobdir, sizeof(jobdir), "%s/%u/%u", t.base, ADV_USER_UID, ADV_JOBID);
			jfd = open(jobdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			assert_true(jfd >= 0);
			rv = extc_remove_tree_at(jfd, "0", &two, &rep);
			close(jfd);
			close(hold);
		}
		}
		removed += rep.removed;
		if (rv != 0)
			rm_fail++;	/* "it does not have to complete under attack" (section 1) */
		adv_sentinels_assert(&sent);
	}
	swaps = adv_attacker_stop(&att);
	/* with the attacker gone, everything goes */
	{
		struct extc_rm_report rep;

		if (extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					 sizeof(why)) != 0) {
			print_error("the tree stayed once the attacker was gone: %s\n", why);
			fail();
		}
	}
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	fprintf(stderr, "# swap race%s: %lu iterations, %lu attacker swaps, %lu entries removed, "
		"%lu creates and %lu removals refused or incomplete, %.1f s\n",
		repopulate ? " with re-population" : "", iterations, swaps, removed, create_fail,
		rm_fail, adv_now() - t0);
	assert_true(swaps >= 1000 || iterations < 100);
	adv_assert_no_fd_leak(fx);
}

static void test_race_symlink_swap_during_removal(void **state)
{
	swap_race(*state, false, adv_scaled(1500));
}

static void test_race_symlink_swap_with_repopulation(void **state)
{
	swap_race(*state, true, adv_scaled(1000));
}

/* Entries of dirfd other than 'skip' (which an attacker may be moving in and out). */
static long count_except(int dirfd, const char *skip)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	long n = 0;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, skip) != 0)
			n++;
	}
	closedir(d);
	return (n);
}

/* ---- case 20: a subdirectory moved out of the tree while the remover is inside it ---------- */

struct moveout_arg {
	char inside[PATH_MAX];	/* <leaf>/a/b */
	char outside[PATH_MAX];	/* <root>/home-user/b */
	bool out;
};

static bool attack_moveout(void *p)
{
	struct moveout_arg *a = p;
	int rv;

	if (!a->out)
		rv = rename(a->inside, a->outside);
	else
		rv = rename(a->outside, a->inside);
	if (rv == 0) {
		a->out = !a->out;
		return (true);
	}
	if (errno == ENOENT)
		a->out = !a->out;	/* resync with whatever is there */
	return (false);
}

/* leaf/a/b/c/c/c/... 'depth' levels, each with 'fill' files. */
static int populate_chain(const char *leaf, unsigned depth, unsigned fill)
{
	int fd = open(leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	const char *name = "a";
	unsigned i;

	if (fd < 0)
		return (-1);
	for (i = 0; i < depth; i++) {
		int nfd;

		if (advtree_dir(fd, name) < 0 ||
		    (nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			close(fd);
			return (-1);
		}
		close(fd);
		fd = nfd;
		advtree_fill(fd, fill);
		name = (i == 0) ? "b" : "c";
	}
	close(fd);
	return (0);
}

static void test_race_subtree_moved_out_during_removal(void **state)
{
	struct fsfx *fx = *state;
	struct fsfx_sentinel mine, rootfile, rootdir;
	struct adv_sentinels sent;
	struct adv_attacker att;
	struct moveout_arg arg;
	struct extc_rm_limits two;
	struct adv_tree t;
	unsigned long i, n = adv_scaled(1000), moves, stopped = 0;
	char home[PATH_MAX], p[PATH_MAX], why[1024];
	int homefd;
	double t0 = adv_now();

	adv_sentinels_make(fx, &sent);
	adv_mkdir(fx, "home-user", 0755, ADV_USER_UID, ADV_USER_GID);
	adv_path(fx, home, "home-user");
	assert_int_equal(fsfx_sentinel_file(&mine, fsfx_join(p, PATH_MAX, home, "mine"),
					      "the user's own file outside the tree\n", 0600,
					      ADV_USER_UID, ADV_USER_GID), 0);
	assert_int_equal(fsfx_sentinel_file(&rootfile, fsfx_join(p, PATH_MAX, home, "rootfile"),
					      "root's file in the user's home\n", 0644, 0, 0), 0);
	assert_int_equal(fsfx_sentinel_dir(&rootdir, fsfx_join(p, PATH_MAX, home, "rootdir"),
					     0755, 0, 0), 0);
	homefd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(homefd >= 0);

	advtree_config(fx, &t, "base");
	extc_rm_limits_default(&two);
	two.max_fds = 2;
	memset(&arg, 0, sizeof(arg));
	adv_fmt(arg.inside, sizeof(arg.inside), "%s/%u/%u/0/a/b", t.base, ADV_USER_UID, ADV_JOBID);
	fsfx_join(arg.outside, PATH_MAX, home, "b");
	adv_attacker_start(&att, attack_moveout, &arg, ADV_USER_UID, ADV_USER_GID);

	for (i = 0; i < n; i++) {
		struct extc_rm_report rep;
		char jobdir[PATH_MAX];
		int jfd, rv;

		/* the last round may have stopped on a moved tree: the stale leaf then has to go
		   first, under the same attack, and need not (safety, not completion) */
		t.hold = extc_tree_create(&t.tree, &t.ids, EXTC_MODE_LOCAL, t.leaf, sizeof(t.leaf),
					  why, sizeof(why));
		if (t.hold < 0) {
			stopped++;
			adv_sentinels_assert(&sent);
			continue;
		}
		populate_chain(t.leaf, 24, 3);
		adv_fmt(jobdir, sizeof(jobdir), "%s/%u/%u", t.base, ADV_USER_UID, ADV_JOBID);
		jfd = open(jobdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		assert_true(jfd >= 0);
		rv = extc_remove_tree_at(jfd, "0", (i & 1) ? &two : NULL, &rep);
		close(jfd);
		advtree_release(&t);
		if (rv != 0)
			stopped++;
		/* what the attacker moved out is the user's: clear it for the next round */
		extc_remove_tree_at(homefd, "b", NULL, &rep);
		assert_true(fsfx_sentinel_intact(&mine));
		assert_true(fsfx_sentinel_intact(&rootfile));
		assert_true(fsfx_sentinel_intact(&rootdir));
		adv_sentinels_assert(&sent);
		assert_int_equal(count_except(homefd, "b"), 3);
	}
	moves = adv_attacker_stop(&att);
	{
		struct extc_rm_report rep;

		extc_remove_tree_at(homefd, "b", NULL, &rep);
		assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep,
						      why, sizeof(why)), 0);
	}
	close(homefd);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	fprintf(stderr, "# move-out race: %lu iterations, %lu attacker moves, %lu removals stopped "
		"or incomplete, %.1f s\n", n, moves, stopped, adv_now() - t0);
	assert_true(moves >= 1000 || n < 100);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 21: directories moved into the tree mid-walk ---------------------------------------- */

struct movein_arg {
	char victim_out[PATH_MAX], victim_in[PATH_MAX];
	char rootdir_out[PATH_MAX], rootdir_in[PATH_MAX];
	char other_out[PATH_MAX], other_in[PATH_MAX];
	unsigned long forbidden_moves;	/* the kernel must refuse these: counted if not */
	bool in;
};

static bool attack_movein(void *p)
{
	struct movein_arg *a = p;
	bool ok;

	/* never allowed: a root-owned directory, another user's directory */
	if (rename(a->rootdir_out, a->rootdir_in) == 0 || rename(a->other_out, a->other_in) == 0)
		_exit(66);
	ok = rename(a->in ? a->victim_in : a->victim_out, a->in ? a->victim_out : a->victim_in) == 0;
	if (ok || errno == ENOENT)
		a->in = !a->in;
	if (!ok && errno == ENOENT && !a->in) {
		/* the remover got it while inside: the user makes a new one */
		if (mkdir(a->victim_out, 0755) == 0) {
			char f[PATH_MAX + 8];

			adv_fmt(f, sizeof(f), "%s/x", a->victim_out);
			close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		}
	}
	return (ok);
}

static void test_race_directories_moved_in_during_removal(void **state)
{
	struct fsfx *fx = *state;
	struct fsfx_sentinel rootdir;
	struct adv_sentinels sent;
	struct adv_attacker att;
	struct movein_arg arg;
	struct adv_tree t;
	unsigned long i, n = adv_scaled(600), moves;
	char home[PATH_MAX], p[PATH_MAX], why[1024];
	double t0 = adv_now();

	adv_sentinels_make(fx, &sent);
	adv_mkdir(fx, "home-user", 0755, ADV_USER_UID, ADV_USER_GID);
	adv_path(fx, home, "home-user");
	assert_int_equal(fsfx_sentinel_dir(&rootdir, fsfx_join(p, PATH_MAX, home, "rootdir"),
					     0755, 0, 0), 0);
	advtree_config(fx, &t, "base");
	memset(&arg, 0, sizeof(arg));
	fsfx_join(arg.victim_out, PATH_MAX, home, "victim");
	fsfx_join(arg.rootdir_out, PATH_MAX, home, "rootdir");
	adv_fmt(arg.other_out, PATH_MAX, "%s", sent.other_dir);
	adv_fmt(arg.victim_in, PATH_MAX, "%s/%u/%u/0/victim", t.base, ADV_USER_UID, ADV_JOBID);
	adv_fmt(arg.rootdir_in, PATH_MAX, "%s/%u/%u/0/rootdir", t.base, ADV_USER_UID, ADV_JOBID);
	adv_fmt(arg.other_in, PATH_MAX, "%s/%u/%u/0/other", t.base, ADV_USER_UID, ADV_JOBID);
	adv_mkdir(fx, "home-user/victim", 0755, ADV_USER_UID, ADV_USER_GID);
	adv_attacker_start(&att, attack_movein, &arg, ADV_USER_UID, ADV_USER_GID);
	for (i = 0; i < n; i++) {
		struct extc_rm_report rep;
		int lfd;

		/* a stale leaf the user keeps refilling may stay: safety, not completion */
		t.hold = extc_tree_create(&t.tree, &t.ids, EXTC_MODE_LOCAL, t.leaf, sizeof(t.leaf),
					  why, sizeof(why));
		if (t.hold >= 0) {
			lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			assert_true(lfd >= 0);
			advtree_fill(lfd, 64);
			close(lfd);
			advtree_release(&t);
		}
		extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why, sizeof(why));
		assert_true(fsfx_sentinel_intact(&rootdir));
		adv_sentinels_assert(&sent);
	}
	moves = adv_attacker_stop(&att);
	{
		struct extc_rm_report rep;

		assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep,
						      why, sizeof(why)), 0);
	}
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	fprintf(stderr, "# move-in race: %lu iterations, %lu attacker moves, %.1f s\n", n, moves,
		adv_now() - t0);
	adv_assert_no_fd_leak(fx);
}

/* ---- cases 8, 9, 15: the base squatted and swapped in a sticky world-writable parent -------- */

struct squat_arg {
	char base[PATH_MAX];	/* <root>/tmpw/ext-cache */
	char mydir[PATH_MAX];	/* <root>/tmpw/mine (0777, the attacker's) */
	char mylink[PATH_MAX];	/* <root>/tmpw/link -> a sentinel directory */
	char target[PATH_MAX];
	unsigned step;
};

static bool attack_squat(void *p)
{
	struct squat_arg *a = p;

	switch (a->step++ % 4) {
	case 0:	/* drop a symlink at the base's name */
		if (symlink(a->target, a->mylink) < 0 && errno != EEXIST)
			return (false);
		return (renameat2(AT_FDCWD, a->mylink, AT_FDCWD, a->base, RENAME_NOREPLACE) == 0);
	case 1:	/* swap it for the attacker's directory */
		return (renameat2(AT_FDCWD, a->mydir, AT_FDCWD, a->base, RENAME_EXCHANGE) == 0);
	case 2:	/* and back */
		return (renameat2(AT_FDCWD, a->mydir, AT_FDCWD, a->base, RENAME_EXCHANGE) == 0);
	default: /* take the symlink away again, leaving the name free */
		return (rename(a->base, a->mylink) == 0 && unlink(a->mylink) == 0);
	}
}

static void test_race_base_squatted_in_sticky_parent(void **state)
{
	struct fsfx *fx = *state;
	struct adv_sentinels sent;
	struct adv_attacker att;
	struct squat_arg arg;
	struct adv_tree t;
	unsigned long i, n = adv_scaled(3000), swaps, made = 0, refused = 0;
	char why[1024], other[PATH_MAX];
	double t0 = adv_now();
	int wfd;

	adv_sentinels_make(fx, &sent);
	adv_mkdir(fx, "tmpw", 01777, 0, 0);
	adv_mkdir(fx, "tmpw/mine", 0777, ADV_USER_UID, ADV_USER_GID);
	advtree_config(fx, &t, "tmpw/ext-cache");
	memset(&arg, 0, sizeof(arg));
	adv_fmt(arg.base, PATH_MAX, "%s", t.base);
	adv_path(fx, arg.mydir, "tmpw/mine");
	adv_path(fx, arg.mylink, "tmpw/link");
	adv_fmt(arg.target, PATH_MAX, "%s", sent.other_dir);
	wfd = open(adv_path(fx, other, "tmpw"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(wfd >= 0);
	adv_attacker_start(&att, attack_squat, &arg, ADV_USER_UID, ADV_USER_GID);
	for (i = 0; i < n; i++) {
		struct extc_rm_report rep;
		struct stat st;
		char leaf[PATH_MAX];
		int hold = -1;

		hold = extc_tree_create(&t.tree, &t.ids, EXTC_MODE_LOCAL, leaf, sizeof(leaf), why,
					sizeof(why));
		if (hold >= 0) {
			made++;
			/* it got a base of its own: root-owned, 0711, and the leaf is right */
			assert_int_equal(lstat(t.base, &st), 0);
			assert_true(S_ISDIR(st.st_mode));
			assert_int_equal(st.st_uid, 0);
			assert_int_equal(st.st_mode & 07777, 0711);
			assert_int_equal(lstat(leaf, &st), 0);
			assert_int_equal(st.st_uid, ADV_USER_UID);
			assert_int_equal(st.st_mode & 07777, 0700);
			close(hold);
			assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID,
							      &rep, why, sizeof(why)), 0);
			/* free the name again so that the attacker can keep trying */
			if (unlinkat(wfd, "ext-cache", AT_REMOVEDIR) < 0) {
				print_error("rmdir base: %s; entries %ld\n", strerror(errno),
					    fsfx_count_entries_at(wfd, "ext-cache"));
				fail();
			}
		} else {
			refused++;
			if (strstr(why, "symbolic link") == NULL && strstr(why, "owned by uid") == NULL &&
			    strstr(why, "not a directory") == NULL) {
				print_error("unexpected refusal: %s\n", why);
				fail();
			}
		}
		/* the attacker's directory, wherever it is now, was never adopted */
		if (fstatat(wfd, "mine", &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		    fstatat(wfd, "ext-cache", &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISDIR(st.st_mode) && st.st_uid != 0) {
				assert_int_equal(st.st_uid, ADV_USER_UID);
				assert_int_equal(st.st_mode & 07777, 0777);
			}
		}
		adv_sentinels_assert(&sent);
	}
	swaps = adv_attacker_stop(&att);
	/*
	 * The attacker's directory is empty: nothing was ever made inside it.
	 * Its last move may have left it under any of the names it plays with
	 * (the rename to "link" succeeds for a directory, the unlink does not).
	 */
	{
		static const char *const names[] = { "mine", "ext-cache", "link" };
		struct stat st;
		size_t k, found = 0;

		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
			if (fstatat(wfd, names[k], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode) && st.st_uid == ADV_USER_UID) {
				assert_int_equal(fsfx_count_entries_at(wfd, names[k]), 0);
				found++;
			}
		}
		assert_int_equal(found, 1);
	}
	close(wfd);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	fprintf(stderr, "# squat race: %lu creates, %lu made, %lu refused, %lu attacker moves, %.1f s\n",
		n, made, refused, swaps, adv_now() - t0);
	assert_true(made > 0 && refused > 0);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 29: re-population while the remover works ------------------------------------------- */

struct spam_arg {
	char dir[PATH_MAX];
	unsigned long n;
};

static bool attack_spam(void *p)
{
	struct spam_arg *a = p;
	char f[PATH_MAX + 32];
	int fd;

	adv_fmt(f, sizeof(f), "%s/s%lu", a->dir, a->n++);
	fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		mkdir(a->dir, 0755);
		return (false);
	}
	close(fd);
	return (true);
}

static void test_race_repopulation_stops_within_budget(void **state)
{
	struct fsfx *fx = *state;
	struct adv_attacker att[2];
	struct spam_arg arg[2];
	struct extc_rm_limits lim;
	struct extc_rm_report rep;
	struct adv_tree t;
	char why[1024];
	unsigned long made;
	double t0, took;
	int jfd, rv;

	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	adv_fmt(arg[0].dir, PATH_MAX, "%s/spam", t.leaf);
	adv_fmt(arg[1].dir, PATH_MAX, "%s/spam", t.leaf);
	arg[0].n = 0;
	arg[1].n = 1000000000ul;
	adv_attacker_start(&att[0], attack_spam, &arg[0], ADV_USER_UID, ADV_USER_GID);
	adv_attacker_start(&att[1], attack_spam, &arg[1], ADV_USER_UID, ADV_USER_GID);
	usleep(200000);
	jfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(jfd >= 0);
	close(jfd);
	adv_fmt(why, sizeof(why), "%s/%u/%u", t.base, ADV_USER_UID, ADV_JOBID);
	jfd = open(why, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	assert_true(jfd >= 0);
	extc_rm_limits_default(&lim);
	lim.deadline_ns = extc_clock_monotonic_ns() + 1500000000ull;	/* 1.5 s */
	t0 = adv_now();
	rv = extc_remove_tree_at(jfd, "0", &lim, &rep);
	took = adv_now() - t0;
	made = adv_attacker_stop(&att[0]) + adv_attacker_stop(&att[1]);
	extc_rm_report_text(&rep, why, sizeof(why));
	fprintf(stderr, "# re-population: attackers made %lu files; remover: %s; %.2f s\n", made,
		why, took);
	/* it ends near its budget (the clock is read every 256 entries) and says why */
	assert_true(took < 5.0);
	/* either the walk ended (what was refilled is counted) or the budget stopped it */
	if (rv != 0)
		assert_true(rep.failed > 0 || rep.stopped != NULL);
	/* once the writers are gone the rest goes */
	assert_int_equal(extc_remove_tree_at(jfd, "0", NULL, &rep), 0);
	close(jfd);
	advtree_release(&t);
	assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					      sizeof(why)), 0);
	adv_assert_no_fd_leak(fx);
}

/*
 * The same attack against the limits production passes (pol.rm_limits NULL:
 * extc_rm_limits_default). The remover runs in a child with a watchdog; a
 * remover that does not come back within 20 s while two writers refill the
 * directory has no time budget (security-cases.md case 29, synthesis
 * "impose limits ... on time").
 */
static void test_race_repopulation_default_limits_terminate(void **state)
{
	struct fsfx *fx = *state;
	struct adv_attacker att[2];
	struct spam_arg arg[2];
	struct adv_tree t;
	char why[1024];
	pid_t pid;
	int status = 0;
	double t0, took;
	bool ended = false;

	advtree_config(fx, &t, "base");
	advtree_create(fx, &t);
	advtree_release(&t);
	adv_fmt(arg[0].dir, PATH_MAX, "%s/spam", t.leaf);
	adv_fmt(arg[1].dir, PATH_MAX, "%s/spam", t.leaf);
	arg[0].n = 0;
	arg[1].n = 1000000000ul;
	adv_attacker_start(&att[0], attack_spam, &arg[0], ADV_USER_UID, ADV_USER_GID);
	adv_attacker_start(&att[1], attack_spam, &arg[1], ADV_USER_UID, ADV_USER_GID);
	usleep(200000);
	t0 = adv_now();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct extc_rm_report rep;

		/* exactly what the step's end does (step_end.c; step_start.c's pol.rm_limits is NULL) */
		extc_tree_remove_leaf(&t.tree, &t.ids, EXTC_MODE_LOCAL, &rep, why,
				      sizeof(why));
		_exit(0);
	}
	while (adv_now() - t0 < 20.0) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			ended = true;
			break;
		}
		usleep(20000);
	}
	took = adv_now() - t0;
	if (!ended) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	adv_attacker_stop(&att[0]);
	adv_attacker_stop(&att[1]);
	{
		struct extc_rm_report rep;

		assert_int_equal(extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep,
						      why, sizeof(why)), 0);
	}
	fprintf(stderr, "# re-population against the default limits: remover %s after %.1f s\n",
		ended ? "returned" : "was still running (killed)", took);
	if (!ended) {
		print_error("ENGINE BUG: extc_tree_remove_leaf with the default limits did not return "
			    "within 20 s while the user refilled the directory: no time budget\n");
		fail();
	}
	adv_assert_no_fd_leak(fx);
}

/* ---- case 33: entries vanish under the remover ------------------------------------------------- */

struct vanish_arg {
	char leaf[PATH_MAX];
	unsigned i;
};

static bool attack_vanish(void *p)
{
	struct vanish_arg *a = p;
	char f[PATH_MAX + 64];
	unsigned k = a->i++ % 512;

	adv_fmt(f, sizeof(f), "%s/fill%u", a->leaf, k);
	if (unlink(f) == 0)
		return (true);
	adv_fmt(f, sizeof(f), "%s/d%u/x", a->leaf, k % 32);
	if (unlink(f) == 0)
		return (true);
	adv_fmt(f, sizeof(f), "%s/d%u", a->leaf, k % 32);
	return (rmdir(f) == 0);
}

static void test_race_entries_vanish_under_the_remover(void **state)
{
	struct fsfx *fx = *state;
	struct adv_attacker att;
	struct vanish_arg arg;
	struct adv_tree t;
	unsigned long i, n = adv_scaled(400), gone;
	char why[1024];

	advtree_config(fx, &t, "base");
	memset(&arg, 0, sizeof(arg));
	adv_fmt(arg.leaf, PATH_MAX, "%s/%u/%u/0", t.base, ADV_USER_UID, ADV_JOBID);
	adv_attacker_start(&att, attack_vanish, &arg, ADV_USER_UID, ADV_USER_GID);
	for (i = 0; i < n; i++) {
		struct extc_rm_report rep;
		unsigned k;
		int lfd;

		advtree_create(fx, &t);
		lfd = open(t.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		assert_true(lfd >= 0);
		advtree_fill(lfd, 512);
		for (k = 0; k < 32; k++) {
			char d[16];
			int dfd;

			adv_fmt(d, sizeof(d), "d%u", k);
			advtree_dir(lfd, d);
			dfd = openat(lfd, d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (dfd >= 0) {
				advtree_file(dfd, "x", "x");
				close(dfd);
			}
		}
		close(lfd);
		advtree_release(&t);
		/* ENOENT is no failure: the removal succeeds whatever vanished first */
		if (extc_tree_remove_job(&t.tree, ADV_USER_UID, ADV_JOBID, &rep, why,
					 sizeof(why)) != 0 || rep.failed != 0) {
			print_error("iteration %lu: %s\n", i, why);
			fail();
		}
	}
	gone = adv_attacker_stop(&att);
	fprintf(stderr, "# vanish race: %lu iterations, %lu entries removed by the user meanwhile\n",
		n, gone);
	adv_assert_no_fd_leak(fx);
}

/* ---- case 15: concurrent creates of many steps and jobs of one user, with epilogs --------------- */

static void test_race_concurrent_steps_jobs_and_epilogs(void **state)
{
	struct fsfx *fx = *state;
	struct adv_tree t;
	char why[1024];
	pid_t pids[4];
	int w, status;

	advtree_config(fx, &t, "base");
	assert_int_equal(extc_tree_prepare_base(&t.tree, why, sizeof(why)), 0);
	for (w = 0; w < 4; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			unsigned long i, n = adv_scaled(400);
			int bad = 0;

			for (i = 0; i < n; i++) {
				struct extc_ids ids = t.ids;
				struct extc_rm_report rep;
				char leaf[PATH_MAX];
				int hold;

				/* workers 0-1: steps of job 77; 2-3: jobs of their own, same user */
				ids.jobid = (w < 2) ? ADV_JOBID : (uint32_t)(1000 * w + i % 7);
				ids.stepid = (uint32_t)(w * 100000 + i);
				hold = extc_tree_create(&t.tree, &ids, EXTC_MODE_LOCAL, leaf,
							sizeof(leaf), why, sizeof(why));
				if (hold < 0) {
					fprintf(stderr, "worker %d: %s\n", w, why);
					bad++;
					continue;
				}
				close(hold);
				if (extc_tree_remove_leaf(&t.tree, &ids, EXTC_MODE_LOCAL, &rep,
							  why, sizeof(why)) != 0)
					bad++;
				if (w >= 2)
					extc_tree_remove_job(&t.tree, ids.uid, ids.jobid, &rep,
							     why, sizeof(why));
			}
			_exit(bad ? 1 : 0);
		}
	}
	for (w = 0; w < 4; w++) {
		assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	adv_assert_no_fd_leak(fx);
}

/* EXTC_ADV_RACE_FS=disk runs them on /tmp's own filesystem instead of a tmpfs */
static int race_setup(void **state)
{
	const char *fs = getenv("EXTC_ADV_RACE_FS");

	if (fs != NULL && strcmp(fs, "disk") == 0)
		return (adv_setup(state));
	return (adv_setup_tmpfs(state));
}

#define RACE_TEST(f) cmocka_unit_test_setup_teardown(f, race_setup, adv_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		RACE_TEST(test_race_symlink_swap_during_removal),
		RACE_TEST(test_race_symlink_swap_with_repopulation),
		RACE_TEST(test_race_subtree_moved_out_during_removal),
		RACE_TEST(test_race_directories_moved_in_during_removal),
		RACE_TEST(test_race_base_squatted_in_sticky_parent),
		RACE_TEST(test_race_repopulation_stops_within_budget),
		RACE_TEST(test_race_repopulation_default_limits_terminate),
		RACE_TEST(test_race_entries_vanish_under_the_remover),
		RACE_TEST(test_race_concurrent_steps_jobs_and_epilogs),
	};

	return (TESTMAIN_ROOT_ONLY("adv_race", "a second uid, foreign owners", tests, NULL));
}
