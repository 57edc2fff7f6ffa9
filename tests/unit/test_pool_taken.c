/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: pool_taken.h and pool_job.h, what a step
 * takes out of the node pool comes back (docs/security-cases.md, 81-83).
 * Real directories below a fresh mkdtemp(); the returns run as a user in
 * a child (as_user.h): the caller's own uid, or uid 4242 when run as root.
 * The take is done here as the task does it: the key's cache directory
 * renamed into the step's directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "fsfixture.h"
#include "pool/pool_hold.h"
#include "pool/pool_job.h"
#include "pool/pool_level.h"
#include "pool/pool_taken.h"

#define KEY_A "0123456789abcdef0123456789abcdef"
#define KEY_B "fedcba9876543210fedcba9876543210"
#define SUB "vllm"	/* a cache whose top-level children are its entries */
#define AS_ROOT_USER 4242

struct fx {
	struct fsfx fs;
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_tree tree;
	struct extc_ids ids;
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char base_arg[2 * PATH_MAX], why[512], *av[2];

	*state = fx;
	if (fx == NULL || fsfx_setup(&fx->fs, 0755) < 0)
		return (-1);
	snprintf(base_arg, sizeof(base_arg), "base=%s/base", fx->fs.root);
	av[0] = base_arg;
	av[1] = (char *)"pool=node";
	if (extc_config_parse(&fx->cfg, 2, av, why, sizeof(why)) != 0)
		return (-1);
	fx->pol.owner = geteuid();
	fx->pol.owner_gid = getegid();
	fx->tree = (struct extc_tree){ &fx->cfg, &fx->pol };
	fx->ids.uid = geteuid() == 0 ? AS_ROOT_USER : geteuid();
	fx->ids.gid = geteuid() == 0 ? AS_ROOT_USER : getegid();
	fx->ids.jobid = 77;
	fx->ids.stepid = 0;
	return (0);
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	int rv = fsfx_teardown(&fx->fs);

	free(fx);
	return (rv);
}

/* The fixture's absolute path of 'rel'. */
static void abs_of(const struct fx *fx, const char *rel, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/%s", fx->fs.root, rel) >= (int)len)
		fail_msg("%s: too long", rel);
}

/* Key 'key' held and filled with entries 'names' (directories with one file each), then let go. */
static void fill_key(struct fx *fx, const char *key, const char *const *names, size_t n)
{
	struct extc_pool_hold h;
	char why[512], path[2 * PATH_MAX];
	size_t i;
	int fd;

	assert_int_equal(extc_pool_hold(&fx->tree, &fx->ids, key, &h, why, sizeof(why)), EXTC_POOL_HELD);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", h.dir, SUB, names[i]);
		assert_int_equal(fsfx_mkdirs_path(path), 0);
		fd = open(path, O_RDONLY | O_DIRECTORY);
		assert_int_equal(fsfx_write_at(fd, "build.so", "code", 0644), 0);
		close(fd);
	}
	assert_int_equal(fsfx_chown_tree(h.dir, fx->ids.uid, fx->ids.gid), 0);
	extc_pool_hold_release(&h);
}

/* What the task's take does: the key's cache directory renamed into 'dir'. */
static void take(struct fx *fx, const char *key, const char *dir)
{
	struct extc_pool_hold h;
	char why[512], src[2 * PATH_MAX], to[2 * PATH_MAX];

	snprintf(to, sizeof(to), "%s/%s", dir, SUB);
	assert_int_equal(fsfx_mkdirs_path(dir), 0);
	assert_int_equal(fsfx_chown_tree(dir, fx->ids.uid, fx->ids.gid), 0);
	assert_int_equal(extc_pool_hold(&fx->tree, &fx->ids, key, &h, why, sizeof(why)), EXTC_POOL_HELD);
	snprintf(src, sizeof(src), "%s/%s", h.dir, SUB);
	assert_int_equal(rename(src, to), 0);
	extc_pool_hold_release(&h);
}

/* Does key 'key' hold entry 'name'? */
static bool key_has(struct fx *fx, const char *key, const char *name)
{
	struct extc_pool_hold h;
	char why[512], path[2 * PATH_MAX];
	bool has;

	assert_int_equal(extc_pool_hold(&fx->tree, &fx->ids, key, &h, why, sizeof(why)), EXTC_POOL_HELD);
	snprintf(path, sizeof(path), "%s/%s/%s/build.so", h.dir, SUB, name);
	has = fsfx_exists(path);
	extc_pool_hold_release(&h);
	return (has);
}

/* The epilog's return, as slurmd.c calls it. */
static enum extc_pool_job_result epilog(struct fx *fx, struct extc_pool_job_report *rep)
{
	const struct extc_ids ids = { .uid = fx->ids.uid, .jobid = fx->ids.jobid };
	char why[512];

	return (extc_pool_job_put_back(&fx->tree, &ids, "n1", rep, why, sizeof(why)));
}

/* A local-mode step took key A, and its end never put it back (slurmstepd killed): the epilog returns it. */
static void test_a_step_killed_after_the_take_returns_its_key(void **state)
{
	static const char *const names[] = { "e1", "e2" };
	struct fx *fx = *state;
	struct extc_pool_job_report rep;
	char leaf[PATH_MAX], why[512], text[600];

	fill_key(fx, KEY_A, names, 2);
	abs_of(fx, "base/n/u/job/step0", leaf, sizeof(leaf));
	assert_int_equal(extc_pool_taken_note(&fx->tree, &fx->ids, false, KEY_A, leaf, why, sizeof(why)),
			 EXTC_POOL_TAKEN_NOTED);
	take(fx, KEY_A, leaf);
	assert_false(key_has(fx, KEY_A, "e1"));
	assert_int_equal(epilog(fx, &rep), EXTC_POOL_JOB_NONE);
	assert_int_equal(rep.taken.notes, 1);
	assert_int_equal(rep.taken.returned, 1);
	assert_int_equal(rep.taken.lost, 0);
	assert_true(key_has(fx, KEY_A, "e1"));
	assert_true(key_has(fx, KEY_A, "e2"));
	/* the note went with the return: a second epilog finds nothing, nothing is said lost */
	assert_int_equal(epilog(fx, &rep), EXTC_POOL_JOB_NONE);
	assert_int_equal(rep.taken.notes, 0);
	assert_false(extc_pool_taken_lost(&fx->tree, &fx->ids, KEY_A, text, sizeof(text)));
}

/* The step's end put everything back: the note goes, and the epilog has nothing to return. */
static void test_a_step_that_put_back_leaves_no_note(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_job_report rep;
	char leaf[PATH_MAX], why[512];

	abs_of(fx, "base/n/u/job/step0", leaf, sizeof(leaf));
	assert_int_equal(extc_pool_taken_note(&fx->tree, &fx->ids, false, KEY_A, leaf, why, sizeof(why)),
			 EXTC_POOL_TAKEN_NOTED);
	extc_pool_taken_drop(&fx->tree, &fx->ids, false);
	assert_int_equal(epilog(fx, &rep), EXTC_POOL_JOB_NONE);
	assert_int_equal(rep.taken.notes, 0);
}

/*
 * Job mode in an image: the take filled <leaf>/container, and the note
 * names it, so the epilog moves back from there; what the job left in the
 * host part of its leaf goes nowhere near the image's key.
 */
static void test_job_mode_in_an_image_returns_from_its_container_part(void **state)
{
	static const char *const names[] = { "img1" };
	struct fx *fx = *state;
	struct extc_pool_job_report rep;
	char leaf[PATH_MAX], dir[PATH_MAX], why[512];

	fill_key(fx, KEY_A, names, 1);
	abs_of(fx, "base/n/u/job", leaf, sizeof(leaf));
	abs_of(fx, "base/n/u/job/container", dir, sizeof(dir));
	assert_int_equal(extc_pool_job_note(&fx->tree, &fx->ids, KEY_A, dir, why, sizeof(why)), 0);
	assert_int_equal(extc_pool_taken_note(&fx->tree, &fx->ids, true, KEY_A, dir, why, sizeof(why)),
			 EXTC_POOL_TAKEN_NOTED);
	take(fx, KEY_A, dir);
	/* the host part of the leaf: a build of the host's environment */
	assert_int_equal(fsfx_mkdirs(&fx->fs, "base/n/u/job/" SUB "/host1"), 0);
	assert_int_equal(fsfx_chown_tree(leaf, fx->ids.uid, fx->ids.gid), 0);
	assert_int_equal(epilog(fx, &rep), EXTC_POOL_JOB_MOVED);
	assert_true(key_has(fx, KEY_A, "img1"));
	assert_false(key_has(fx, KEY_A, "host1"));
	/* the job-mode return covered the take: its note is gone, nothing returned twice */
	assert_int_equal(rep.taken.notes, 0);
}

/*
 * A job-mode job whose steps ran with two keys: key A's builds, taken by
 * the first step, go back unchanged; what the job made or changed goes
 * nowhere (it cannot be told apart), and key A's next step is told.
 */
static void test_a_mixed_job_returns_what_it_took_unchanged(void **state)
{
	static const char *const names[] = { "old1", "old2" };
	struct fx *fx = *state;
	struct extc_pool_job_report rep;
	struct timespec made;
	char dir[PATH_MAX], why[512], text[600];
	int fd;

	fill_key(fx, KEY_A, names, 2);
	/* the key's builds were made before the job, as an earlier job's are: stamped before it */
	fsfx_coarse_past_now(&made);
	abs_of(fx, "base/n/u/job", dir, sizeof(dir));
	assert_int_equal(extc_pool_job_note(&fx->tree, &fx->ids, KEY_A, dir, why, sizeof(why)), 0);
	assert_int_equal(extc_pool_taken_note(&fx->tree, &fx->ids, true, KEY_A, dir, why, sizeof(why)),
			 EXTC_POOL_TAKEN_NOTED);
	take(fx, KEY_A, dir);
	/* a later step of the job, another environment: it may not take, and the job is mixed */
	assert_int_equal(extc_pool_job_note(&fx->tree, &fx->ids, KEY_B, dir, why, sizeof(why)), 0);
	assert_int_equal(extc_pool_taken_note(&fx->tree, &fx->ids, true, KEY_B, dir, why, sizeof(why)),
			 EXTC_POOL_TAKEN_OTHER);
	/* the job builds one entry anew and changes a taken one */
	assert_int_equal(fsfx_mkdirs(&fx->fs, "base/n/u/job/" SUB "/new1"), 0);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(fsfx_write_at(fd, SUB "/new1/build.so", "b", 0644), 0);
	assert_int_equal(fsfx_write_at(fd, SUB "/old2/more.so", "b", 0644), 0);
	/* the user's, as the job would have made them (the taken ones are not touched) */
	assert_int_equal(fchownat(fd, SUB "/new1", fx->ids.uid, fx->ids.gid, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fchownat(fd, SUB "/new1/build.so", fx->ids.uid, fx->ids.gid, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fchownat(fd, SUB "/old2/more.so", fx->ids.uid, fx->ids.gid, AT_SYMLINK_NOFOLLOW), 0);
	close(fd);
	assert_int_equal(epilog(fx, &rep), EXTC_POOL_JOB_MIXED);
	assert_true(key_has(fx, KEY_A, "old1"));
	assert_false(key_has(fx, KEY_A, "old2"));
	assert_false(key_has(fx, KEY_A, "new1"));
	assert_false(key_has(fx, KEY_B, "new1"));
	assert_int_equal(rep.taken.notes, 1);
	assert_int_equal(rep.taken.changed, 2);
	assert_int_equal(rep.taken.lost, 1);
	/* told once, to key A's next step */
	assert_true(extc_pool_taken_lost(&fx->tree, &fx->ids, KEY_A, text, sizeof(text)));
	if (strstr(text, "job 77") == NULL || strstr(text, "2 entries made or changed") == NULL)
		fail_msg("what key A is told: %s", text);
	assert_false(extc_pool_taken_lost(&fx->tree, &fx->ids, KEY_A, text, sizeof(text)));
	assert_false(extc_pool_taken_lost(&fx->tree, &fx->ids, KEY_B, text, sizeof(text)));
}

/* The key cannot be held when the epilog returns (being evicted): the key's next step is told. */
static void test_a_return_refused_is_told_to_the_keys_next_step(void **state)
{
	static const char *const names[] = { "e1" };
	struct fx *fx = *state;
	struct extc_pool_job_report rep;
	struct extc_pool_fds p;
	char leaf[PATH_MAX], why[512], text[600], uname[64];
	int rec;

	fill_key(fx, KEY_A, names, 1);
	abs_of(fx, "base/n/u/job/step0", leaf, sizeof(leaf));
	assert_int_equal(extc_pool_taken_note(&fx->tree, &fx->ids, false, KEY_A, leaf, why, sizeof(why)),
			 EXTC_POOL_TAKEN_NOTED);
	take(fx, KEY_A, leaf);
	/* an eviction holds the key's record */
	(void)uname;
	assert_int_equal(extc_pool_level_open_uid(&fx->tree, fx->ids.uid, false, &p, why, sizeof(why)),
			 EXTC_LEVEL_FOUND);
	rec = extc_pool_level_open_record(p.uid, KEY_A, false, &fx->pol);
	assert_true(rec >= 0);
	assert_int_equal(flock(rec, LOCK_EX), 0);
	assert_int_equal(epilog(fx, &rep), EXTC_POOL_JOB_NONE);
	assert_int_equal(rep.taken.lost, 1);
	close(rec);
	extc_pool_level_close(&p);
	assert_true(extc_pool_taken_lost(&fx->tree, &fx->ids, KEY_A, text, sizeof(text)));
	if (strstr(text, "being evicted") == NULL)
		fail_msg("what key A is told: %s", text);
}

int main(void)
{
	const struct CMUnitTest any[] = {
		cmocka_unit_test_setup_teardown(test_a_step_killed_after_the_take_returns_its_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_step_that_put_back_leaves_no_note, setup, teardown),
		cmocka_unit_test_setup_teardown(test_job_mode_in_an_image_returns_from_its_container_part, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_mixed_job_returns_what_it_took_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_return_refused_is_told_to_the_keys_next_step, setup, teardown),
	};

	return (cmocka_run_group_tests_name("pool_taken", any, NULL, NULL));
}
