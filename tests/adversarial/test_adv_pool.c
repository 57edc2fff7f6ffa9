/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: the node pool as root against what a
 * user can put in it. The user owns only its key directories; there it can
 * mount a FUSE filesystem that never answers, or plant links. Holding a key
 * (a step's start) and evicting it (after an epilog) must neither hang nor
 * touch anything outside, and a corrupted level above the keys is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "adv.h"
#include "advtree.h"
#include "fs_trash.h"
#include "fusesrv.h"
#include "pool_fs.h"
#include "testmain.h"

#define KEY "0123456789abcdef0123456789abcdef"
#define CHILD_LIMIT 10.0	/* seconds: a hold or a pass that takes this long is stuck */

enum child_outcome {
	CHILD_RETURNED,
	CHILD_BLOCKED,		/* still running at CHILD_LIMIT: killed */
};

struct pool_case {
	struct adv_tree t;
	char pool_uid[PATH_MAX];	/* <base>/.pool/4242 */
	char key[PATH_MAX];		/* its key directory */
};

static void pool_case_make(struct fsfx *fx, struct pool_case *c)
{
	struct extc_pool_hold h;
	char why[1024];

	advtree_config(fx, &c->t, "base");
	c->t.cfg.pool = true;
	assert_int_equal(extc_tree_prepare_base(&c->t.cfg, &c->t.pol, why, sizeof(why)), 0);
	assert_int_equal(extc_pool_hold(&c->t.cfg, &c->t.pol, &c->t.ids, KEY, &h, why, sizeof(why)),
			 EXTC_POOL_HELD);
	extc_pool_release(&h);
	adv_fmt(c->pool_uid, sizeof(c->pool_uid), "%s/.pool/%u", c->t.base, (unsigned)ADV_USER_UID);
	adv_fmt(c->key, sizeof(c->key), "%s/%s", c->pool_uid, KEY);
}

/* The record's last use pushed back 'days': the next pass sees the key as unused that long. */
static void age_record(const struct pool_case *c, int days)
{
	struct timespec ts[2];
	char rec[PATH_MAX];

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= (time_t)days * 86400;
	ts[1] = ts[0];
	adv_fmt(rec, sizeof(rec), "%s.use", c->key);
	assert_int_equal(utimensat(AT_FDCWD, rec, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* Run a hold (evict false) or an eviction pass in a child; its exit code in *code. */
static enum child_outcome in_child(struct pool_case *c, bool evict, struct fusesrv *srv, int *code)
{
	double t0 = adv_now();
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct extc_pool_evict_report rep;
		struct extc_pool_hold h;
		char why[1024];

		if (evict) {
			if (extc_pool_evict(&c->t.cfg, &c->t.pol, (int64_t)time(NULL), &rep, why,
					    sizeof(why)) < 0)
				_exit(9);
			fprintf(stderr, "#   eviction: %u keys, %u evicted, %u could not be\n", rep.keys,
				rep.evicted, rep.failed);
			_exit(rep.failed == 1 && rep.evicted == 0 ? 0 : 8);
		}
		if (extc_pool_hold(&c->t.cfg, &c->t.pol, &c->t.ids, KEY, &h, why, sizeof(why)) ==
		    EXTC_POOL_HELD)
			_exit(7);
		fprintf(stderr, "#   hold refused: %s\n", why);
		_exit(strstr(why, "is a mount point") != NULL ? 0 : 6);
	}
	while (adv_now() - t0 < CHILD_LIMIT) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			*code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			return (CHILD_RETURNED);
		}
		usleep(20000);
	}
	/* it sleeps uninterruptibly in the FUSE request: only the daemon's end frees it */
	kill(pid, SIGKILL);
	fusesrv_stop(srv);
	waitpid(pid, &status, 0);
	return (CHILD_BLOCKED);
}

/*
 * A FUSE filesystem whose daemon answers nothing but INIT, mounted by the
 * user on its own key directory: the next step's hold refuses the key
 * (it is looked at from memory, never asked), and the eviction pass cannot
 * rename a mount point, so the key stays, reported; neither waits.
 */
static void test_fuse_on_the_key_never_blocks_a_hold_or_an_eviction(void **state)
{
	struct fsfx *fx = *state;
	struct adv_sentinels sent;
	struct pool_case c;
	struct fusesrv srv;
	int code = -1;

	adv_sentinels_make(fx, &sent);
	pool_case_make(fx, &c);
	if (fusesrv_start(&srv, c.key, true) < 0) {
		print_error("mounting a FUSE filesystem on %s: %s\n", c.key, strerror(errno));
		fail();
	}
	if (in_child(&c, false, &srv, &code) == CHILD_BLOCKED) {
		print_error("POOL BUG: a FUSE mount on the key directory blocked the step's hold\n");
		fail();
	}
	assert_int_equal(code, 0);
	age_record(&c, 30);
	if (in_child(&c, true, &srv, &code) == CHILD_BLOCKED) {
		print_error("POOL BUG: a FUSE mount on the key directory blocked the eviction pass\n");
		fail();
	}
	assert_int_equal(code, 0);
	fusesrv_stop(&srv);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

/*
 * The user's level of the pool replaced by a link to a root directory (not
 * something a user can do: the pool's levels are root's; a corrupted tree):
 * holds are refused, eviction follows nothing, the target is untouched.
 */
static void test_a_linked_user_level_is_refused_and_never_followed(void **state)
{
	struct fsfx *fx = *state;
	struct extc_pool_evict_report rep;
	struct adv_sentinels sent;
	struct extc_pool_hold h;
	struct pool_case c;
	char moved[PATH_MAX], why[1024];

	adv_sentinels_make(fx, &sent);
	pool_case_make(fx, &c);
	adv_fmt(moved, sizeof(moved), "%s.away", c.pool_uid);
	assert_int_equal(rename(c.pool_uid, moved), 0);
	assert_int_equal(symlink(sent.etc_dir, c.pool_uid), 0);
	assert_int_equal(extc_pool_hold(&c.t.cfg, &c.t.pol, &c.t.ids, KEY, &h, why, sizeof(why)),
			 EXTC_POOL_REFUSED);
	assert_non_null(strstr(why, "symbolic link"));
	assert_int_equal(extc_pool_evict(&c.t.cfg, &c.t.pol, (int64_t)time(NULL) + 400 * 86400, &rep,
					 why, sizeof(why)), 0);
	assert_int_equal(rep.evicted, 0);
	adv_sentinels_assert(&sent);
	adv_sentinels_drop(&sent);
	adv_assert_no_fd_leak(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fuse_on_the_key_never_blocks_a_hold_or_an_eviction,
						adv_setup, adv_teardown),
		cmocka_unit_test_setup_teardown(test_a_linked_user_level_is_refused_and_never_followed,
						adv_setup, adv_teardown),
	};

	return (TESTMAIN_ROOT_ONLY("adv_pool", "mounts and other uids", tests, NULL));
}
