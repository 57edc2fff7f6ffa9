/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: pool_measure.h (root's measurement of a key)
 * and what uses it: a key's record (pool_hold.h: extc_pool_hold_account) and the
 * eviction pass (pool_evict.h: extc_pool_evict). Real directories below a fresh mkdtemp(). make check's
 * cases run as any uid: the pool's owner is then the caller, as root is in
 * production, and "users" are levels of that uid. make check-root's mount
 * tmpfs and binds inside keys and hand keys to other uids.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "fsfixture.h"
#include "base/layout.h"
#include "pool/pool_evict.h"
#include "pool/pool_hold.h"
#include "pool/pool_key.h"
#include "pool/pool_level.h"
#include "pool/pool_measure.h"
#include "testmain.h"

#define TIB (1ull << 40)
/* a record of the current key rules (an older version is evicted as old, whatever it says) */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define RECORD "version=" STRINGIFY(EXTC_POOL_KEY_VERSION) "\n"
#define MIB (1ull << 20)
#define DAY 86400
#define ATTACKER 4242
#define VICTIM 4343

struct fx {
	struct fsfx fs;
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_tree tree;	/* cfg and pol, as the engine takes them */
	struct extc_pool_fds p;	/* the pool's levels, once a test asked for them */
	size_t plen;		/* the length of the pool level's path in p.t.path */
	bool hand_over;		/* keys belong to their uid (root only) */
};

static void key_name(unsigned i, char *buf)
{
	snprintf(buf, EXTC_POOL_KEY_LEN + 1, "%032x", i);
}

/* A file of 'bytes' really written (not sparse). */
static void write_file(int dirfd, const char *name, size_t bytes)
{
	static char block[65536];
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	memset(block, 'x', sizeof(block));
	while (bytes > 0) {
		size_t n = bytes < sizeof(block) ? bytes : sizeof(block);

		assert_int_equal(write(fd, block, n), (ssize_t)n);
		bytes -= n;
	}
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

/* 15 TiB of nothing: what st_size says, not what the disk holds. */
static void write_sparse(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(15 * TIB)), 0);
	close(fd);
}

/* Allocated bytes of one name, as st_blocks says. */
static uint64_t blocks_at(int dirfd, const char *name)
{
	struct stat sb;

	assert_int_equal(fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW), 0);
	return ((uint64_t)sb.st_blocks * 512u);
}

static int open_dir(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	assert_true(fd >= 0);
	return (fd);
}

static void make_cfg(struct fx *fx, const char *extra)
{
	char base_arg[PATH_MAX + 16], extra_arg[256], why[512], *av[8], *tok, *save = NULL;
	int ac = 0;

	snprintf(base_arg, sizeof(base_arg), "base=%s/base", fx->fs.root);
	av[ac++] = base_arg;
	av[ac++] = (char *)"pool=node";
	snprintf(extra_arg, sizeof(extra_arg), "%s", extra != NULL ? extra : "");
	for (tok = strtok_r(extra_arg, " ", &save); tok != NULL && ac < 8;
	     tok = strtok_r(NULL, " ", &save))
		av[ac++] = tok;
	if (extc_config_parse(&fx->cfg, ac, av, why, sizeof(why)) != 0)
		fail_msg("config: %s", why);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	*state = fx;
	if (fx == NULL || fsfx_setup(&fx->fs, 0755) < 0)
		return (-1);
	fx->pol.owner = geteuid();
	fx->pol.owner_gid = getegid();
	fx->p.pool = fx->p.uid = -1;
	fx->tree = (struct extc_tree){ &fx->cfg, &fx->pol };
	extc_level_walk_init(&fx->p.t, &fx->tree);
	make_cfg(fx, NULL);
	return (0);
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	int rv;

	extc_pool_level_close(&fx->p);
	rv = fsfx_teardown(&fx->fs);
	free(fx);
	return (rv);
}

static const struct extc_pool_measure_limits roomy = { EXTC_POOL_MEASURE_DEPTH, 100000, 0 };

/* A key directory 'key' of the test's own, in the fixture's root (no pool around it). */
static int bare_key(struct fx *fx, const char *key)
{
	assert_int_equal(mkdirat(fx->fs.rootfd, key, 0700), 0);
	return (open_dir(fx->fs.rootfd, key));
}

static void test_sparse_file_counts_its_blocks_not_its_size(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_usage u;
	char key[64];
	int kfd;

	key_name(1, key);
	kfd = bare_key(fx, key);
	write_sparse(kfd, "sparse");
	write_file(kfd, "real", 65536);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u), EXTC_POOL_MEASURED);
	assert_int_equal(u.bytes, blocks_at(fx->fs.rootfd, key) + blocks_at(kfd, "sparse") +
			 blocks_at(kfd, "real"));
	assert_true(u.bytes >= 65536 && u.bytes < MIB);
	assert_int_equal(u.inodes, 3);
	assert_int_equal(u.entries, 2);
	close(kfd);
}

static void test_hard_links_count_once(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_usage u;
	char key[64], name[32];
	int kfd, sub, i;

	key_name(2, key);
	kfd = bare_key(fx, key);
	assert_int_equal(mkdirat(kfd, "a", 0700), 0);
	sub = open_dir(kfd, "a");
	write_file(kfd, "blob", 131072);
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "link%d", i);
		assert_int_equal(linkat(kfd, "blob", i % 2 ? sub : kfd, name, 0), 0);
	}
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u), EXTC_POOL_MEASURED);
	assert_int_equal(u.inodes, 3);
	assert_int_equal(u.entries, 52);
	assert_int_equal(u.bytes, blocks_at(fx->fs.rootfd, key) + blocks_at(kfd, "a") +
			 blocks_at(kfd, "blob"));
	close(sub);
	close(kfd);
}

static void test_symlinks_are_counted_never_followed(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_usage u;
	char key[64], out[PATH_MAX];
	int kfd;

	key_name(3, key);
	kfd = bare_key(fx, key);
	assert_int_equal(fsfx_wide_at(fx->fs.rootfd, "outside", 300), 0);
	write_file(fx->fs.rootfd, "big", 4 * MIB);
	assert_int_equal(symlinkat(fsfx_path(&fx->fs, out, "outside"), kfd, "dir"), 0);
	assert_int_equal(symlinkat(fsfx_path(&fx->fs, out, "big"), kfd, "file"), 0);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u), EXTC_POOL_MEASURED);
	assert_int_equal(u.inodes, 3);
	assert_true(u.bytes < MIB);
	close(kfd);
}

static void test_depth_limit(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_usage u;
	char key[64];

	key_name(4, key);
	assert_int_equal(fsfx_chain_at(fx->fs.rootfd, key, "d", EXTC_POOL_MEASURE_DEPTH, "f"), 0);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u), EXTC_POOL_MEASURED);
	assert_int_equal(u.inodes, EXTC_POOL_MEASURE_DEPTH + 2);
	key_name(5, key);
	assert_int_equal(fsfx_chain_at(fx->fs.rootfd, key, "d", EXTC_POOL_MEASURE_DEPTH + 1, "f"), 0);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u),
			 EXTC_POOL_MEASURE_TOO_DEEP);
	assert_int_equal(fsfx_fd_count(), fx->fs.fds);
}

static void test_entry_limit_and_deadline(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_measure_limits lim = { EXTC_POOL_MEASURE_DEPTH, 101, 0 };
	struct extc_pool_usage u;
	char key[64];

	key_name(6, key);
	/* the key, its directory "w" and 100 files: 101 names */
	assert_int_equal(mkdirat(fx->fs.rootfd, key, 0700), 0);
	{
		int kfd = open_dir(fx->fs.rootfd, key);

		assert_int_equal(fsfx_wide_at(kfd, "w", 100), 0);
		close(kfd);
	}
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &lim, &u), EXTC_POOL_MEASURED);
	assert_int_equal(u.inodes, 102);
	lim.max_entries = 100;
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &lim, &u),
			 EXTC_POOL_MEASURE_TOO_MANY);
	lim.max_entries = 0;
	lim.deadline_ns = 1;	/* long past */
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &lim, &u),
			 EXTC_POOL_MEASURE_TIMEOUT);
	assert_int_equal(fsfx_fd_count(), fx->fs.fds);
}

static void test_absent_key_and_names_that_are_not_keys(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_usage u;
	char key[64], text[256];

	key_name(7, key);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u),
			 EXTC_POOL_MEASURE_ABSENT);
	assert_int_equal(mkdirat(fx->fs.rootfd, "notakey", 0700), 0);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, "notakey", &roomy, &u),
			 EXTC_POOL_MEASURE_ERROR);
	assert_int_equal(u.err, EINVAL);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, "..", &roomy, &u),
			 EXTC_POOL_MEASURE_ERROR);
	extc_pool_measure_text(EXTC_POOL_MEASURE_TOO_DEEP, &u, text, sizeof(text));
	assert_non_null(strstr(text, "deeper than"));
	extc_pool_measure_text(EXTC_POOL_MEASURE_ERROR, &u, text, sizeof(text));
	assert_non_null(strstr(text, strerror(EINVAL)));
}

/* ---- the pool around the keys ---- */

/* The level of 'uid' in the pool, made if missing (its descriptor stays in fx->p). */
static int user_level(struct fx *fx, uid_t uid)
{
	char uname[EXTC_NAME_LEN], why[1024];

	if (fx->p.pool < 0) {
		assert_int_equal(extc_tree_prepare_base(&fx->tree, why, sizeof(why)), 0);
		assert_int_equal(extc_pool_level_open(&fx->tree, true, &fx->p, why,
						      sizeof(why)), EXTC_LEVEL_FOUND);
		fx->plen = strlen(fx->p.t.path);
	}
	if (fx->p.uid >= 0)
		close(fx->p.uid);
	fx->p.uid = -1;
	fx->p.t.path[fx->plen] = '\0';
	assert_int_equal(extc_layout_uid_name(uid, uname, sizeof(uname)), 0);
	if (extc_pool_level_open_user(&fx->p, uname, true, why, sizeof(why)) != EXTC_LEVEL_FOUND)
		fail_msg("user level %s: %s", uname, why);
	return (fx->p.uid);
}

/* A key of 'uid' as the plugin leaves it: its directory, its record used 'age' seconds ago. */
static int pool_key(struct fx *fx, uid_t uid, unsigned i, int64_t age, const char *record)
{
	int ufd = user_level(fx, uid), rfd;
	struct timespec ts[2];
	char key[64];

	key_name(i, key);
	assert_int_equal(mkdirat(ufd, key, 0700), 0);
	if (fx->hand_over)
		assert_int_equal(fchownat(ufd, key, uid, uid, AT_SYMLINK_NOFOLLOW), 0);
	rfd = extc_pool_level_open_record(ufd, key, true, &fx->pol);
	assert_true(rfd >= 0);
	if (record != NULL)
		assert_int_equal(pwrite(rfd, record, strlen(record), 0), (ssize_t)strlen(record));
	ts[0].tv_sec = ts[1].tv_sec = time(NULL) - age;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(futimens(rfd, ts), 0);
	close(rfd);
	return (open_dir(ufd, key));
}

static bool key_exists(struct fx *fx, uid_t uid, unsigned i)
{
	char key[64];

	key_name(i, key);
	return (fsfx_exists_at(user_level(fx, uid), key));
}

/* A step's hold of a key, as extc_pool_hold leaves it: the record locked shared. */
static int hold_key(struct fx *fx, uid_t uid, unsigned i)
{
	char key[64];
	int fd;

	key_name(i, key);
	fd = extc_pool_level_open_record(user_level(fx, uid), key, false, &fx->pol);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_SH | LOCK_NB), 0);
	return (fd);
}

static void evict(struct fx *fx, struct extc_pool_evict_report *rep)
{
	char why[1024], text[1024];

	if (extc_pool_evict(&fx->tree, (int64_t)time(NULL), rep, why, sizeof(why)) < 0)
		fail_msg("eviction: %s", why);
	extc_pool_evict_report_text(rep, text, sizeof(text));
	print_message("#   %s\n", text);
}

/*
 * E3.3: a held key with a 15 TiB sparse file and a file of 50 names made
 * every other user's keys go "over pool_total_max". Counted as allocated,
 * each inode once, nobody's key goes.
 */
static void run_sparse_and_links_evict_nobody(struct fx *fx, uid_t attacker, uid_t victim)
{
	struct extc_pool_evict_report rep;
	char name[32];
	int k, held, i;

	make_cfg(fx, "pool_max=4M pool_total_max=8M");
	for (i = 1; i <= 2; i++) {
		k = pool_key(fx, victim, 100 + (unsigned)i, i * 60, RECORD "bytes=65536\n");
		write_file(k, "mine", 65536);
		close(k);
	}
	k = pool_key(fx, attacker, 200, 10, RECORD "bytes=1\n");
	write_sparse(k, "sparse");
	write_file(k, "blob", MIB);
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		assert_int_equal(linkat(k, "blob", k, name, 0), 0);
	}
	close(k);
	k = pool_key(fx, attacker, 201, 3600, RECORD "bytes=1\n");
	write_file(k, "old", 65536);
	close(k);
	held = hold_key(fx, attacker, 200);
	evict(fx, &rep);
	assert_int_equal(rep.evicted, 0);
	assert_int_equal(rep.keys, 4);
	assert_int_equal(rep.busy, 1);
	assert_true(rep.bytes_kept > MIB && rep.bytes_kept < 2 * MIB);
	assert_true(key_exists(fx, victim, 101) && key_exists(fx, victim, 102));
	assert_true(key_exists(fx, attacker, 200) && key_exists(fx, attacker, 201));
	close(held);
}

static void test_sparse_and_links_evict_nobody(void **state)
{
	run_sparse_and_links_evict_nobody(*state, ATTACKER, VICTIM);
}

/*
 * E3.4: what root cannot measure goes; inodes are bounded; what a user
 * wrote after the last record is measured again, the record's bytes never
 * trusted.
 */
static void test_unmeasurable_goes_and_inodes_are_bounded(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_evict_report rep;
	int k;

	make_cfg(fx, "pool_max=1M pool_max_inodes=500");
	k = pool_key(fx, ATTACKER, 300, 60, RECORD "bytes=1\ninodes=1\n");
	assert_int_equal(fsfx_chain_at(k, "deep", "d", EXTC_POOL_MEASURE_DEPTH + 5, NULL), 0);
	close(k);
	/* newer and 300 inodes: stays; older and 300 more: over pool_max_inodes */
	k = pool_key(fx, ATTACKER, 301, 120, NULL);
	assert_int_equal(fsfx_wide_at(k, "w", 300), 0);
	close(k);
	k = pool_key(fx, ATTACKER, 302, 180, NULL);
	assert_int_equal(fsfx_wide_at(k, "w", 300), 0);
	close(k);
	/* a record of 10 bytes, 2 MiB written in after it */
	k = pool_key(fx, VICTIM - 1, 303, 60, RECORD "bytes=10\ninodes=1\n");
	write_file(k, "after", 2 * MIB);
	close(k);
	/* root's mark at the last move: goes without a walk */
	k = pool_key(fx, VICTIM - 1, 304, 30, RECORD "unmeasurable: deeper than 64 levels\n");
	close(k);
	k = pool_key(fx, VICTIM, 305, 60, NULL);
	write_file(k, "mine", 4096);
	close(k);
	evict(fx, &rep);
	assert_false(key_exists(fx, ATTACKER, 300));
	assert_true(key_exists(fx, ATTACKER, 301));
	assert_false(key_exists(fx, ATTACKER, 302));
	assert_false(key_exists(fx, VICTIM - 1, 303));
	assert_false(key_exists(fx, VICTIM - 1, 304));
	assert_true(key_exists(fx, VICTIM, 305));
	assert_int_equal(rep.by_reason[EXTC_POOL_EVICT_UNMEASURABLE], 2);
	assert_int_equal(rep.by_reason[EXTC_POOL_EVICT_USER_INODES], 1);
	assert_int_equal(rep.by_reason[EXTC_POOL_EVICT_USER_MAX], 1);
	assert_true(rep.inodes_kept >= 302 && rep.inodes_kept < 320);
}

/*
 * E3.5: one user's thousands of keys stopped the scan at 4096 keys over all
 * users. Every user is reached, and a user's keys beyond pool_max_keys go,
 * oldest first.
 */
static void test_many_keys_hide_nobody(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_evict_report rep;
	unsigned i, left = 0;
	int k;

	make_cfg(fx, "pool_max=64K pool_max_keys=10");
	for (i = 0; i < 5000; i++)
		close(pool_key(fx, ATTACKER, 1000 + i, 60 + (int64_t)i, NULL));
	k = pool_key(fx, VICTIM, 1, 30 * DAY, NULL);
	close(k);
	k = pool_key(fx, VICTIM, 2, 200, NULL);
	write_file(k, "f", 48 * 1024);
	close(k);
	k = pool_key(fx, VICTIM, 3, 100, NULL);
	write_file(k, "f", 48 * 1024);
	close(k);
	evict(fx, &rep);
	assert_int_equal(rep.users, 2);
	assert_int_equal(rep.keys, 5003);
	assert_false(key_exists(fx, VICTIM, 1));	/* past pool_ttl */
	assert_false(key_exists(fx, VICTIM, 2));	/* the older over pool_max */
	assert_true(key_exists(fx, VICTIM, 3));
	for (i = 0; i < 5000; i++)
		left += key_exists(fx, ATTACKER, 1000 + i);
	assert_int_equal(left, 10);
	for (i = 0; i < 10; i++)
		assert_true(key_exists(fx, ATTACKER, 1000 + i));	/* the newest ten */
	assert_int_equal(rep.by_reason[EXTC_POOL_EVICT_USER_KEYS], 4990);
}

static void test_one_pass_at_a_time(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_evict_report rep;
	char text[256];
	int lock;

	close(pool_key(fx, VICTIM, 1, 30 * DAY, NULL));
	lock = open_dir(user_level(fx, VICTIM), "..");
	assert_int_equal(flock(lock, LOCK_EX | LOCK_NB), 0);
	evict(fx, &rep);
	assert_true(rep.overlapped);
	assert_true(key_exists(fx, VICTIM, 1));
	extc_pool_evict_report_text(&rep, text, sizeof(text));
	assert_non_null(strstr(text, "another pass"));
	close(lock);
	evict(fx, &rep);
	assert_false(rep.overlapped);
	assert_false(key_exists(fx, VICTIM, 1));
}

/* The pass's line in slurmd's log reads "1 key of 1 user", "3 keys of 2 users". */
static void test_report_text_plurals(void **state)
{
	struct extc_pool_evict_report rep;
	char text[1024];

	(void)state;
	memset(&rep, 0, sizeof(rep));
	rep.keys = 1;
	rep.users = 1;
	rep.inodes_kept = 1;
	extc_pool_evict_report_text(&rep, text, sizeof(text));
	assert_true(strncmp(text, "1 key of 1 user, 0 in use; evicted 0 (", 38) == 0);
	assert_non_null(strstr(text, " bytes and 1 inode kept"));
	rep.keys = 3;
	rep.users = 2;
	rep.inodes_kept = 12;
	extc_pool_evict_report_text(&rep, text, sizeof(text));
	assert_true(strncmp(text, "3 keys of 2 users, 0 in use; evicted 0 (", 40) == 0);
	assert_non_null(strstr(text, " bytes and 12 inodes kept"));
}

/* A step's hold as extc_pool_hold makes it (without handing the key to another uid). */
static void hold_as_a_step(struct fx *fx, uid_t uid, unsigned i, struct extc_pool_hold *h)
{
	memset(h, 0, sizeof(*h));
	h->record_fd = hold_key(fx, uid, i);
	h->uid = uid;
	key_name(i, h->key);
	snprintf(h->dir, sizeof(h->dir), "%s/.pool/%u/%s", fx->cfg.base, (unsigned)uid, h->key);
}

/* The record as root's accounting leaves it after a move into a held key. */
static void test_account_writes_what_root_measured(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_record rec;
	struct extc_pool_hold h;
	char why[1024], text[300];
	int kfd, i;

	/* the user's own number is never what counts: a record claiming 15 TiB */
	snprintf(text, sizeof(text), RECORD "bytes=%" PRIu64 "\n", (uint64_t)(15 * TIB));
	kfd = pool_key(fx, ATTACKER, 9, 0, text);
	hold_as_a_step(fx, ATTACKER, 9, &h);
	write_sparse(kfd, "sparse");
	write_file(kfd, "blob", 65536);
	for (i = 0; i < 5; i++) {
		snprintf(text, sizeof(text), "l%d", i);
		assert_int_equal(linkat(kfd, "blob", kfd, text, 0), 0);
	}
	if (extc_pool_hold_account(&h, &fx->tree, false, why, sizeof(why)) != EXTC_POOL_ACCOUNTED)
		fail_msg("account: %s", why);
	assert_int_equal(extc_pool_level_read_record(h.record_fd, &rec), 0);
	assert_int_equal(rec.inodes, 3);
	assert_true(rec.bytes >= 65536 && rec.bytes < MIB);
	assert_false(rec.unmeasurable);
	snprintf(text, sizeof(text), RECORD "bytes=%" PRIu64 "\ninodes=3\n", rec.bytes);
	assert_int_equal(pread(h.record_fd, why, sizeof(why), 0), (ssize_t)strlen(text));
	assert_memory_equal(why, text, strlen(text));
	/* too deep: marked, and a hold finds nothing to seed from (bytes 0) */
	assert_int_equal(fsfx_chain_at(kfd, "deep", "d", EXTC_POOL_MEASURE_DEPTH + 1, NULL), 0);
	assert_int_equal(extc_pool_hold_account(&h, &fx->tree, false, why, sizeof(why)),
			 EXTC_POOL_ACCOUNT_UNMEASURABLE);
	assert_non_null(strstr(why, "deeper than"));
	assert_int_equal(extc_pool_level_read_record(h.record_fd, &rec), 0);
	assert_true(rec.unmeasurable);
	assert_int_equal(rec.bytes, 0);
	extc_pool_hold_release(&h);
	assert_int_equal(extc_pool_hold_account(&h, &fx->tree, false, why, sizeof(why)),
			 EXTC_POOL_ACCOUNT_FAILED);
	close(kfd);
}

/* A record that is not the one held (evicted and made again meanwhile) is not written. */
static void test_account_refuses_a_record_it_does_not_hold(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_hold h;
	char why[1024], name[64];

	close(pool_key(fx, ATTACKER, 12, 0, NULL));
	hold_as_a_step(fx, ATTACKER, 12, &h);
	snprintf(name, sizeof(name), "%s%s", h.key, EXTC_POOL_RECORD_SUFFIX);
	assert_int_equal(unlinkat(user_level(fx, ATTACKER), name, 0), 0);
	assert_int_equal(fsfx_write_at(user_level(fx, ATTACKER), name, RECORD "bytes=1\n", 0600), 0);
	assert_int_equal(extc_pool_hold_account(&h, &fx->tree, false, why, sizeof(why)),
			 EXTC_POOL_ACCOUNT_FAILED);
	assert_non_null(strstr(why, "not the record this step holds"));
	extc_pool_hold_release(&h);
}

/* Root's record of the held key against root's full measure of it now: the same numbers. */
static void assert_record_is_a_full_measure(struct fx *fx, const struct extc_pool_hold *h)
{
	struct extc_pool_record rec;
	struct extc_pool_usage u;

	assert_int_equal(extc_pool_measure_key(user_level(fx, h->uid), h->key, &roomy, &u),
			 EXTC_POOL_MEASURED);
	assert_int_equal(extc_pool_level_read_record(h->record_fd, &rec), 0);
	assert_int_equal(rec.bytes, u.bytes);
	assert_int_equal(rec.inodes, u.inodes);
	assert_int_equal(h->bytes, u.bytes);
	assert_int_equal(h->inodes, u.inodes);
}

/* A step's take and put-back, as renames of the key's directory 'sub' (pool_rename.c's). */
static void take_and_put_back(int kfd, int leaffd, const char *sub, const char *add)
{
	assert_int_equal(renameat(kfd, sub, leaffd, sub), 0);
	if (add != NULL) {
		int sfd = open_dir(leaffd, sub);

		write_file(sfd, add, 4096);
		close(sfd);
	}
	assert_int_equal(renameat(leaffd, sub, kfd, sub), 0);
}

/*
 * A step that took a key's directories and put them back whole, unchanged:
 * root keeps its own numbers of before the take, which are what a full
 * measure says; a name added at a directory's top level, or a put-back
 * that moved entries one by one, makes root measure again.
 */
static void test_account_after_a_whole_put_back_keeps_what_root_measured(void **state)
{
	struct fx *fx = *state;
	/* root has no level of its own: as root, the key is another uid's */
	const uid_t uid = geteuid() == 0 ? ATTACKER : geteuid();
	const struct extc_ids ids = { .uid = uid, .gid = geteuid() == 0 ? ATTACKER : getegid() };
	struct extc_pool_hold h;
	char why[1024], key[64];
	int kfd, leaffd, sfd;

	key_name(21, key);
	user_level(fx, ids.uid);
	assert_int_equal(extc_pool_hold(&fx->tree, &ids, key, &h, why, sizeof(why)), EXTC_POOL_HELD);
	kfd = open_dir(user_level(fx, ids.uid), key);
	assert_int_equal(mkdirat(kfd, "torchinductor", 0755), 0);
	sfd = open_dir(kfd, "torchinductor");
	assert_int_equal(fsfx_chain_at(sfd, "fxgraph", "d", 3, NULL), 0);
	write_file(sfd, "c4sm.so", 65536);
	close(sfd);
	write_file(kfd, ".extc-manifest", 100);
	assert_int_equal(extc_pool_hold_account(&h, &fx->tree, false, why, sizeof(why)),
			 EXTC_POOL_ACCOUNTED);
	extc_pool_hold_release(&h);
	assert_int_equal(fsfx_made_ago_at(kfd, "torchinductor", 60), 0);
	assert_int_equal(mkdirat(fx->fs.rootfd, "leaf", 0700), 0);
	leaffd = open_dir(fx->fs.rootfd, "leaf");

	/* the next step: held, taken, put back as it went */
	assert_int_equal(extc_pool_hold(&fx->tree, &ids, key, &h, why, sizeof(why)), EXTC_POOL_HELD);
	assert_true(h.since.known);
	take_and_put_back(kfd, leaffd, "torchinductor", NULL);
	if (extc_pool_hold_account(&h, &fx->tree, true, why, sizeof(why)) != EXTC_POOL_ACCOUNT_KEPT)
		fail_msg("a key as it was is measured again: %s", why);
	assert_record_is_a_full_measure(fx, &h);
	/* without the put-back's word that it only moved whole directories: measured */
	assert_int_equal(extc_pool_hold_account(&h, &fx->tree, false, why, sizeof(why)),
			 EXTC_POOL_ACCOUNTED);
	assert_record_is_a_full_measure(fx, &h);
	extc_pool_hold_release(&h);

	/* a step that added a build at the top level: measured, the new build counted */
	assert_int_equal(extc_pool_hold(&fx->tree, &ids, key, &h, why, sizeof(why)), EXTC_POOL_HELD);
	take_and_put_back(kfd, leaffd, "torchinductor", "new.so");
	assert_int_equal(extc_pool_hold_account(&h, &fx->tree, true, why, sizeof(why)),
			 EXTC_POOL_ACCOUNTED);
	assert_record_is_a_full_measure(fx, &h);
	extc_pool_hold_release(&h);

	/* a name the key did not have at the hold: measured */
	assert_int_equal(fsfx_made_ago_at(kfd, "torchinductor", 60), 0);
	assert_int_equal(extc_pool_hold(&fx->tree, &ids, key, &h, why, sizeof(why)), EXTC_POOL_HELD);
	assert_int_equal(mkdirat(kfd, "triton", 0755), 0);
	assert_int_equal(extc_pool_hold_account(&h, &fx->tree, true, why, sizeof(why)),
			 EXTC_POOL_ACCOUNTED);
	assert_record_is_a_full_measure(fx, &h);
	extc_pool_hold_release(&h);
	close(leaffd);
	close(kfd);
}

/* ---- root: mounts in a key, keys of other uids ---- */

static void test_mount_in_a_key_is_neither_entered_nor_counted(void **state)
{
	struct fx *fx = *state;
	struct extc_pool_evict_report rep;
	struct extc_pool_usage u;
	char key[64], rel[128], path[PATH_MAX], src[PATH_MAX];
	int kfd, mfd;

	key_name(10, key);
	kfd = bare_key(fx, key);
	assert_int_equal(mkdirat(kfd, "m", 0700), 0);
	snprintf(rel, sizeof(rel), "%s/m", key);
	assert_int_equal(fsfx_tmpfs_at(&fx->fs, rel, "size=8m"), 0);
	mfd = open(fsfx_path(&fx->fs, path, rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(mfd >= 0);
	write_file(mfd, "big", 4 * MIB);
	close(mfd);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u), EXTC_POOL_MEASURE_MOUNT);
	assert_true(u.bytes < MIB);
	/* a file bind-mounted into a key */
	assert_int_equal(fsfx_umount_last(&fx->fs), 0);
	write_file(fx->fs.rootfd, "src", 4096);
	write_file(kfd, "dst", 0);
	snprintf(rel, sizeof(rel), "%s/dst", key);
	assert_int_equal(mount(fsfx_path(&fx->fs, src, "src"), fsfx_path(&fx->fs, path, rel), NULL,
			       MS_BIND, NULL), 0);
	assert_int_equal(fsfx_note_mount(&fx->fs, path), 0);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u), EXTC_POOL_MEASURE_MOUNT);
	/* the key itself a mount point */
	assert_int_equal(fsfx_umount_last(&fx->fs), 0);
	assert_int_equal(fsfx_tmpfs_at(&fx->fs, key, "size=1m"), 0);
	assert_int_equal(extc_pool_measure_key(fx->fs.rootfd, key, &roomy, &u), EXTC_POOL_MEASURE_MOUNT);
	assert_int_equal(fsfx_umount_last(&fx->fs), 0);
	close(kfd);
	/* in the pool: a free key with a mount in it is not kept */
	kfd = pool_key(fx, ATTACKER, 11, 60, NULL);
	assert_int_equal(mkdirat(kfd, "m", 0700), 0);
	close(kfd);
	key_name(11, key);
	snprintf(path, sizeof(path), "%s/.pool/%u/%s/m", fx->cfg.base, ATTACKER, key);
	assert_int_equal(fsfx_mount_tmpfs(path, "size=1m"), 0);
	assert_int_equal(fsfx_note_mount(&fx->fs, path), 0);
	evict(fx, &rep);
	assert_int_equal(rep.by_reason[EXTC_POOL_EVICT_UNMEASURABLE] + rep.failed, 1);
}

/* E3.3 again with the keys of two real uids, each its own owner, as root measures them. */
static void test_other_uids_keys_measured_by_root(void **state)
{
	struct fx *fx = *state;

	fx->pol.owner = 0;
	fx->pol.owner_gid = 0;
	fx->hand_over = true;
	run_sparse_and_links_evict_nobody(fx, ATTACKER, VICTIM);
}

int main(void)
{
	/* make check: any uid; the pool's owner is the caller, nothing is mounted */
	const struct CMUnitTest any[] = {
		cmocka_unit_test_setup_teardown(test_sparse_file_counts_its_blocks_not_its_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_links_count_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks_are_counted_never_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_depth_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_limit_and_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absent_key_and_names_that_are_not_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_account_writes_what_root_measured, setup, teardown),
		cmocka_unit_test_setup_teardown(test_account_refuses_a_record_it_does_not_hold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_account_after_a_whole_put_back_keeps_what_root_measured,
						setup, teardown),
		cmocka_unit_test(test_report_text_plurals),
	};
	/*
	 * make check-root: mounts in keys, keys of other uids, and eviction,
	 * which moves keys into the base's trash: root's own (0700), which only
	 * root can make
	 */
	const struct CMUnitTest root[] = {
		cmocka_unit_test_setup_teardown(test_sparse_and_links_evict_nobody, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmeasurable_goes_and_inodes_are_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_keys_hide_nobody, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_pass_at_a_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mount_in_a_key_is_neither_entered_nor_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_uids_keys_measured_by_root, setup, teardown),
	};

	return (TESTMAIN_TIERED("pool_measure", "it mounts tmpfs and binds in keys, hands keys to "
				"other uids and evicts into the root-owned trash", any, root, NULL, NULL));
}
