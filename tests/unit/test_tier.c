/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: the site tier (its path, publish, retention, fetch and its checks). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/text.h"
#include "fsfixture.h"
#include "testmain.h"
#include "tier/tier_child.h"
#include "tier/tier_entries.h"
#include "tier/tier_fetch.h"
#include "tier/tier_gen.h"
#include "tier/tier_manifest.h"
#include "tier/tier_path.h"
#include "tier/tier_publish.h"

#define KEY "0123456789abcdef0123456789abcdef"
#define HOUR_NS (3600ull * 1000000000ull)
#define NOBODY 65534

static struct fsfx fx;			/* src/ the node's key, tier/ the tier, dst/ another node's key */
static int srcfd, tierfd, dstfd;
static struct extc_warm_opts opts;	/* inductor's subdirectory, for its locks/ */

static int setup(void **state)
{
	(void)state;
	if (fsfx_setup(&fx, 0700) < 0 || mkdirat(fx.rootfd, "src", 0700) < 0 ||
	    mkdirat(fx.rootfd, "tier", 0700) < 0 || mkdirat(fx.rootfd, "dst", 0700) < 0)
		return (-1);
	srcfd = openat(fx.rootfd, "src", O_RDONLY | O_DIRECTORY);
	tierfd = openat(fx.rootfd, "tier", O_RDONLY | O_DIRECTORY);
	dstfd = openat(fx.rootfd, "dst", O_RDONLY | O_DIRECTORY);
	memset(&opts, 0, sizeof(opts));
	opts.inductor_subdir = "inductor";
	return (srcfd >= 0 && tierfd >= 0 && dstfd >= 0 ? 0 : -1);
}

static int teardown(void **state)
{
	(void)state;
	close(srcfd);
	close(tierfd);
	close(dstfd);
	return (fsfx_teardown(&fx));
}

/* <root>/<rel> holding 'content', its mode and its mtime (s and ns) set. */
static void put(const char *rel, const char *content, mode_t mode, time_t s, long ns)
{
	struct timespec ts[2] = { { s, ns }, { s, ns } };

	assert_int_equal(fsfx_write_at(fx.rootfd, rel, content, mode), 0);
	assert_int_equal(utimensat(fx.rootfd, rel, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void dir_times(const char *rel, mode_t mode, time_t s, long ns)
{
	struct timespec ts[2] = { { s, ns }, { s, ns } };

	assert_int_equal(fchmodat(fx.rootfd, rel, mode, 0), 0);
	assert_int_equal(utimensat(fx.rootfd, rel, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void build_src(const char *variant)
{
	char content[64];

	snprintf(content, sizeof(content), "kernel %s\n", variant);
	assert_int_equal(fsfx_mkdirs(&fx, "src/torch_extensions/ext"), 0);
	assert_int_equal(fsfx_mkdirs(&fx, "src/triton/k1"), 0);
	put("src/torch_extensions/ext/ext.so", "ELF...", 0755, 1700000000, 123456789);
	put("src/torch_extensions/ext/build.ninja", "rule cc\n", 0640, 1700000001, 1);
	put("src/triton/k1/k.cubin", content, 0600, 1700000002, 999999999);
	put("src/triton/odd name\nwith\\bytes\x01", "odd", 0644, 1600000000, 5);
	dir_times("src/triton/k1", 0750, 1700000003, 42);
	dir_times("src/torch_extensions/ext", 0755, 1700000004, 7);
}

static struct extc_tier_publish_in pub_in(const char *tag, unsigned keep, uint64_t grace_ns)
{
	struct extc_tier_publish_in in = { KEY, tag, keep, grace_ns, 0, &opts };

	return (in);
}

static struct extc_tier_fetch_in fetch_in(unsigned keep)
{
	struct extc_tier_fetch_in in = { KEY, "node2.7", keep, 0, 0, &opts, NULL, NULL };

	return (in);
}

static void publish_ok(const char *tag, unsigned keep, uint64_t grace_ns,
		       struct extc_tier_publish_res *r)
{
	struct extc_tier_publish_in in = pub_in(tag, keep, grace_ns);
	char why[EXTC_WHY_MAX] = "";

	if (extc_tier_publish(srcfd, tierfd, &in, r, why, sizeof(why)) != EXTC_TIER_PUBLISHED)
		fail_msg("publish: %s", why);
}

/* The tree of build_src("a"), published once: most cases start there. */
static void first_generation(struct extc_tier_publish_res *pr)
{
	build_src("a");
	publish_ok("node1.1", 2, HOUR_NS, pr);
}

static int keyfd_on_tier(void)
{
	int fd = openat(tierfd, KEY, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

	assert_true(fd >= 0);
	return (fd);
}

/* Same entries, types, modes, sizes, contents and ns mtimes, both ways. */
static void assert_same_tree(int afd, int bfd, const char *where)
{
	DIR *d = fdopendir(dup(afd));
	struct dirent *de;
	long na = 0, nb = 0;

	assert_non_null(d);
	rewinddir(d);	/* the duplicate shares the offset an earlier listing left */
	while ((de = readdir(d)) != NULL) {
		struct stat sa, sb;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		na++;
		assert_int_equal(fstatat(afd, de->d_name, &sa, AT_SYMLINK_NOFOLLOW), 0);
		if (fstatat(bfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			fail_msg("%s/%s: missing in the copy", where, de->d_name);
		assert_int_equal(sa.st_mode, sb.st_mode);
		assert_int_equal(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
		assert_int_equal(sa.st_mtim.tv_nsec, sb.st_mtim.tv_nsec);
		if (S_ISDIR(sa.st_mode)) {
			int ca = openat(afd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			int cb = openat(bfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			assert_same_tree(ca, cb, de->d_name);
			close(ca);
			close(cb);
		} else {
			char ta[256], tb[256];

			assert_int_equal(sa.st_size, sb.st_size);
			assert_true(fsfx_read_at(afd, de->d_name, ta, sizeof(ta)) >= 0);
			assert_true(fsfx_read_at(bfd, de->d_name, tb, sizeof(tb)) >= 0);
			assert_string_equal(ta, tb);
		}
	}
	closedir(d);
	nb = fsfx_count_entries_at(bfd, ".");
	assert_int_equal(na, nb);
}

static enum extc_tier_fetch_result fetch(unsigned keep, struct extc_tier_fetch_res *r, char *why)
{
	struct extc_tier_fetch_in in = fetch_in(keep);

	return (extc_tier_fetch(tierfd, dstfd, &in, r, why, EXTC_WHY_MAX));
}

/* Entries in dst/ besides the test's own: never a stage. */
static void assert_no_stage(int fd)
{
	DIR *d = fdopendir(dup(fd));
	struct dirent *de;

	assert_non_null(d);
	rewinddir(d);
	while ((de = readdir(d)) != NULL)
		if (extc_has_prefix(de->d_name, ".ext-cache-stage.") ||
		    extc_has_prefix(de->d_name, ".ext-cache-tier.") ||
		    extc_has_prefix(de->d_name, ".ext-cache-trash."))
			fail_msg("a stage is left: %s", de->d_name);
	closedir(d);
}

static void test_round_trip_keeps_modes_mtimes_and_bytes(void **state)
{
	struct extc_tier_publish_res pr;
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "";
	int kfd;

	(void)state;
	first_generation(&pr);
	assert_int_equal(pr.files, 4);
	assert_int_equal(pr.dirs, 4);
	assert_true(extc_tier_gen_name_ok(pr.gen, NULL));
	assert_int_equal(fetch(2, &fr, why), EXTC_TIER_FETCHED);
	assert_string_equal(fr.gen, pr.gen);
	assert_int_equal(fr.files, 4);
	assert_int_equal(fr.entries, 8);
	assert_int_equal(fr.bytes, pr.bytes);
	assert_same_tree(srcfd, dstfd, "src");
	assert_no_stage(dstfd);
	kfd = keyfd_on_tier();
	assert_no_stage(kfd);
	close(kfd);
}

static void test_links_special_files_locks_and_temporary_names_never_published(void **state)
{
	static const char *const left_out[] = { "lock", "tmpabc", "x.tmp", "a~", "b.tmp.c", ".tmpx",
						".ext-cache-foo", "link", "fifo" };
	struct extc_tier_publish_res pr;
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "", rel[PATH_MAX];
	size_t i;
	int sub;

	(void)state;
	assert_int_equal(fsfx_mkdirs(&fx, "src/cache/inner"), 0);
	assert_int_equal(fsfx_mkdirs(&fx, "src/inductor/locks"), 0);
	put("src/cache/inner/keep.bin", "kept", 0644, 1700000000, 0);
	put("src/inductor/locks/x.lock", "", 0644, 1700000000, 0);
	for (i = 0; i < 7; i++) {
		snprintf(rel, sizeof(rel), "src/cache/%s", left_out[i]);
		put(rel, "no", 0644, 1700000000, 0);
	}
	assert_int_equal(symlinkat("/etc/passwd", srcfd, "cache/link"), 0);
	assert_int_equal(mkfifoat(srcfd, "cache/fifo", 0600), 0);
	publish_ok("node1.1", 2, HOUR_NS, &pr);
	assert_int_equal(pr.skipped, 10);	/* the nine, and inductor's locks/ */
	assert_int_equal(pr.files, 1);
	assert_int_equal(fetch(2, &fr, why), EXTC_TIER_FETCHED);
	sub = openat(dstfd, "cache", O_RDONLY | O_DIRECTORY);
	assert_true(sub >= 0);
	for (i = 0; i < sizeof(left_out) / sizeof(left_out[0]); i++)
		if (fsfx_exists_at(sub, left_out[i]))
			fail_msg("%s was published", left_out[i]);
	assert_true(fsfx_exists_at(sub, "inner/keep.bin"));
	close(sub);
	assert_false(fsfx_exists_at(dstfd, "inductor/locks"));
	assert_true(extc_tier_publish_is_temporary("tmp.pid_1_2"));
	assert_false(extc_tier_publish_is_temporary("kernel.cubin"));
	assert_false(extc_tier_publish_is_temporary("attempt"));
}

/* Two generations, the newer then spoiled by 'spoil' in it: the older is fetched, the newer marked. */
static void older_fetched_when_newest_is_spoiled(void (*spoil)(int genfd), bool marked)
{
	struct extc_tier_publish_res old, newer;
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "", text[64];
	int kfd, gfd;

	build_src("old");
	publish_ok("node1.1", 2, HOUR_NS, &old);
	put("src/triton/k1/k.cubin.2", "more", 0644, 1700000000, 0);
	publish_ok("node1.2", 2, HOUR_NS, &newer);
	kfd = keyfd_on_tier();
	gfd = openat(kfd, newer.gen, O_RDONLY | O_DIRECTORY);
	assert_true(gfd >= 0);
	spoil(gfd);
	assert_int_equal(fetch(2, &fr, why), EXTC_TIER_FETCHED);
	assert_string_equal(fr.gen, old.gen);
	assert_int_equal(fr.skipped_bad, 1);
	assert_int_equal(fsfx_exists_at(gfd, ".ext-cache-bad"), marked);
	assert_true(fsfx_read_at(dstfd, "triton/k1/k.cubin", text, sizeof(text)) > 0);
	assert_string_equal(text, "kernel old\n");
	assert_false(fsfx_exists_at(dstfd, "triton/k1/k.cubin.2"));
	assert_no_stage(dstfd);
	close(gfd);
	close(kfd);
}

static void truncate_a_file(int genfd)
{
	int fd = openat(genfd, "triton/k1/k.cubin", O_WRONLY | O_TRUNC);

	assert_true(fd >= 0);
	close(fd);
}

static void alter_a_byte(int genfd)
{
	int fd = openat(genfd, "triton/k1/k.cubin", O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "K", 1, 0), 1);
	close(fd);
}

static void cut_the_manifest_short(int genfd)
{
	struct stat sb;
	int fd = openat(genfd, ".ext-cache-generation", O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(ftruncate(fd, sb.st_size - 10), 0);
	close(fd);
}

static void test_truncated_file_marks_newest_bad_and_older_is_fetched(void **state)
{
	(void)state;
	older_fetched_when_newest_is_spoiled(truncate_a_file, true);
}

static void test_altered_byte_of_same_size_marks_newest_bad(void **state)
{
	(void)state;
	older_fetched_when_newest_is_spoiled(alter_a_byte, true);
}

static void test_manifest_cut_short_skips_that_generation(void **state)
{
	(void)state;
	older_fetched_when_newest_is_spoiled(cut_the_manifest_short, true);
}

static void test_a_stage_is_never_read(void **state)
{
	struct extc_tier_publish_res pr;
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "";
	int kfd;

	(void)state;
	first_generation(&pr);
	kfd = keyfd_on_tier();
	/* a publisher midway: a complete-looking copy, manifest and all, under its stage name */
	assert_int_equal(renameat(kfd, pr.gen, kfd, ".ext-cache-stage.node9.9"), 0);
	assert_int_equal(fetch(2, &fr, why), EXTC_TIER_EMPTY);
	assert_int_equal(fsfx_count_entries_at(dstfd, "."), 0);
	close(kfd);
}

static void test_two_publishers_at_once_make_two_generations(void **state)
{
	struct extc_tier_gen gens[8];
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "", text[64];
	size_t n;
	pid_t kids[2];
	int i, kfd, status;

	(void)state;
	build_src("a");
	for (i = 0; i < 2; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			struct extc_tier_publish_in in = pub_in(i ? "node1.2" : "node1.1", 4, HOUR_NS);
			struct extc_tier_publish_res r;

			_exit(extc_tier_publish(srcfd, tierfd, &in, &r, why, sizeof(why)) ==
			      EXTC_TIER_PUBLISHED ? 0 : 1);
		}
	}
	for (i = 0; i < 2; i++) {
		assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	kfd = keyfd_on_tier();
	assert_int_equal(extc_tier_gen_list(kfd, gens, 8, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_no_stage(kfd);
	/* both readable: the newest, then (once it is marked) the other */
	assert_int_equal(fetch(4, &fr, why), EXTC_TIER_FETCHED);
	assert_string_equal(fr.gen, gens[0].name);
	extc_tier_gen_mark_bad(kfd, gens[0].name);
	assert_true(fsfx_count_entries_at(dstfd, ".") > 0);
	/* the next fetch goes to another node's key directory */
	close(dstfd);
	assert_int_equal(mkdirat(fx.rootfd, "dst2", 0700), 0);
	dstfd = openat(fx.rootfd, "dst2", O_RDONLY | O_DIRECTORY);
	assert_int_equal(fetch(4, &fr, why), EXTC_TIER_FETCHED);
	assert_string_equal(fr.gen, gens[1].name);
	assert_true(fsfx_read_at(dstfd, "triton/k1/k.cubin", text, sizeof(text)) > 0);
	assert_string_equal(text, "kernel a\n");
	close(kfd);
}

static void test_killed_publishers_stage_removed_only_past_grace(void **state)
{
	struct extc_tier_publish_res pr;
	int kfd;

	(void)state;
	build_src("a");
	publish_ok("node1.1", 5, HOUR_NS, &pr);
	kfd = keyfd_on_tier();
	assert_int_equal(mkdirat(kfd, ".ext-cache-stage.node9.9", 0700), 0);
	assert_int_equal(fsfx_write_at(kfd, ".ext-cache-stage.node9.9/half", "x", 0600), 0);
	publish_ok("node1.2", 5, HOUR_NS, &pr);
	assert_true(fsfx_exists_at(kfd, ".ext-cache-stage.node9.9"));	/* younger than an hour */
	publish_ok("node1.3", 5, 0, &pr);
	assert_false(fsfx_exists_at(kfd, ".ext-cache-stage.node9.9"));
	close(kfd);
}

static size_t generations(void)
{
	struct extc_tier_gen gens[16];
	char why[EXTC_WHY_MAX];
	size_t n;
	int kfd = keyfd_on_tier();

	assert_int_equal(extc_tier_gen_list(kfd, gens, 16, &n, why, sizeof(why)), 0);
	close(kfd);
	return (n);
}

static void test_retention_keeps_the_newest_and_removes_older_only_past_grace(void **state)
{
	struct extc_tier_publish_res pr, last;
	struct extc_tier_gen gens[16];
	char why[EXTC_WHY_MAX];
	size_t n;
	int i, kfd;

	(void)state;
	build_src("a");
	for (i = 0; i < 4; i++)
		publish_ok(i % 2 ? "node1.1" : "node1.2", 2, HOUR_NS, &pr);
	assert_int_equal(pr.removed, 0);
	assert_int_equal(generations(), 4);	/* pushed out, but less than the grace ago */
	publish_ok("node1.3", 2, 0, &last);
	assert_int_equal(last.removed, 3);
	kfd = keyfd_on_tier();
	assert_int_equal(extc_tier_gen_list(kfd, gens, 16, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(gens[0].name, last.gen);
	assert_string_equal(gens[1].name, pr.gen);
	assert_no_stage(kfd);
	close(kfd);
}

/* The slowed reader's pipes: it says it is inside its copy, then waits for the word to go on. */
struct slow {
	int inside, go;
	bool waited;
};

static void slow_after_file(void *ctx)
{
	struct slow *s = ctx;
	char c;

	if (s->waited)
		return;
	s->waited = true;
	if (write(s->inside, "i", 1) != 1 || read(s->go, &c, 1) != 1)
		_exit(3);
}

static void test_a_slowed_reader_completes_and_its_generation_outlives_the_grace(void **state)
{
	struct extc_tier_publish_res first, pr;
	int inside[2], go[2], i, status, kfd;
	char c, why[EXTC_WHY_MAX] = "";
	pid_t reader;

	(void)state;
	build_src("first");
	publish_ok("node1.1", 2, HOUR_NS, &first);
	assert_int_equal(pipe(inside), 0);
	assert_int_equal(pipe(go), 0);
	reader = fork();
	assert_true(reader >= 0);
	if (reader == 0) {
		struct slow s = { inside[1], go[0], false };
		struct extc_tier_fetch_in in = fetch_in(2);
		struct extc_tier_fetch_res fr;

		in.after_file = slow_after_file;
		in.ctx = &s;
		if (extc_tier_fetch(tierfd, dstfd, &in, &fr, why, sizeof(why)) != EXTC_TIER_FETCHED)
			_exit(1);
		if (strcmp(fr.gen, first.gen) != 0 || fr.files != 4)
			_exit(2);
		_exit(fsfx_read_at(dstfd, "triton/k1/k.cubin", why, sizeof(why)) > 0 &&
		      strcmp(why, "kernel first\n") == 0 ? 0 : 4);
	}
	assert_int_equal(read(inside[0], &c, 1), 1);	/* the reader is inside its copy */
	put("src/triton/k1/newer", "n", 0644, 1700000000, 0);
	for (i = 0; i < 4; i++)	/* keep + 2 newer ones: the first is pushed out */
		publish_ok(i % 2 ? "node1.2" : "node1.3", 2, HOUR_NS, &pr);
	kfd = keyfd_on_tier();
	assert_true(fsfx_exists_at(kfd, first.gen));
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(reader, &status, 0), reader);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(fsfx_exists_at(kfd, first.gen));
	snprintf(why, sizeof(why), "%s/.ext-cache-bad", first.gen);
	assert_false(fsfx_exists_at(kfd, why));	/* read whole: not marked */
	publish_ok("node1.4", 2, 0, &pr);	/* no grace: now it goes */
	assert_false(fsfx_exists_at(kfd, first.gen));
	assert_int_equal(generations(), 2);
	close(kfd);
	close(inside[0]);
	close(inside[1]);
	close(go[0]);
	close(go[1]);
}

static void test_deadline_already_past_leaves_nothing(void **state)
{
	struct extc_tier_publish_in pin = pub_in("node1.1", 2, HOUR_NS);
	struct extc_tier_fetch_in fin = fetch_in(2);
	struct extc_tier_publish_res pr;
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "";

	(void)state;
	first_generation(&pr);
	pin.deadline_ns = 1;
	assert_int_equal(extc_tier_publish(srcfd, tierfd, &pin, &pr, why, sizeof(why)),
			 EXTC_TIER_PUBLISH_FAILED);
	assert_int_equal(generations(), 1);
	fin.deadline_ns = 1;
	assert_int_equal(extc_tier_fetch(tierfd, dstfd, &fin, &fr, why, sizeof(why)),
			 EXTC_TIER_FETCH_TIMEOUT);
	assert_int_equal(fsfx_count_entries_at(dstfd, "."), 0);
}

static enum extc_tier_path_result open_path(const char *rel, uid_t uid)
{
	char path[PATH_MAX], why[EXTC_WHY_MAX] = "";
	enum extc_tier_path_result res;
	int fd = -1;

	res = extc_tier_path_open(rel[0] == '/' ? rel : fsfx_path(&fx, path, rel), uid, &fd, why,
				  sizeof(why));
	assert_true(res == EXTC_TIER_PATH_OK ? fd >= 0 : fd == -1);
	assert_true(res == EXTC_TIER_PATH_OK || why[0] != '\0');
	if (fd >= 0)
		close(fd);
	return (res);
}

static void test_tier_path_checks(void **state)
{
	char why[EXTC_WHY_MAX] = "";
	int fd;

	(void)state;
	assert_int_equal(open_path("tier", geteuid()), EXTC_TIER_PATH_OK);
	assert_int_equal(open_path("nothing", geteuid()), EXTC_TIER_PATH_MISSING);
	assert_int_equal(symlinkat("tier", fx.rootfd, "link"), 0);
	assert_int_equal(open_path("link", geteuid()), EXTC_TIER_PATH_SYMLINK);
	put("file", "x", 0600, 1700000000, 0);
	assert_int_equal(open_path("file", geteuid()), EXTC_TIER_PATH_NOT_DIR);
	/* owned by this uid, asked for another: whoever runs the test */
	assert_int_equal(open_path("tier", geteuid() + 1), EXTC_TIER_PATH_NOT_OWNED);
	/* a directory of another uid: "/" is root's; as root, one made nobody's below */
	if (geteuid() != 0)
		assert_int_equal(open_path("/", geteuid()), EXTC_TIER_PATH_NOT_OWNED);
	else
		assert_int_equal(open_path("/", NOBODY), EXTC_TIER_PATH_NOT_OWNED);
	assert_int_equal(fchmodat(fx.rootfd, "tier", 0770, 0), 0);
	assert_int_equal(open_path("tier", geteuid()), EXTC_TIER_PATH_OPEN_TO_OTHERS);
	assert_int_equal(fchmodat(fx.rootfd, "tier", 0702, 0), 0);
	assert_int_equal(open_path("tier", geteuid()), EXTC_TIER_PATH_OPEN_TO_OTHERS);
	assert_int_equal(extc_tier_path_open("relative/tier", geteuid(), &fd, why, sizeof(why)),
			 EXTC_TIER_PATH_FAILED);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(why, "not an absolute path"));
}

/* Root tier: a tier handed to another uid is that uid's, and no longer root's. */
static void test_tier_path_owned_by_another_uid(void **state)
{
	char path[PATH_MAX];

	(void)state;
	assert_int_equal(chown(fsfx_path(&fx, path, "tier"), NOBODY, NOBODY), 0);
	assert_int_equal(open_path("tier", NOBODY), EXTC_TIER_PATH_OK);
	assert_int_equal(open_path("tier", 0), EXTC_TIER_PATH_NOT_OWNED);
}

static void test_max_bytes_refuses_a_larger_generation(void **state)
{
	struct extc_tier_fetch_in in = fetch_in(2);
	struct extc_tier_publish_res pr;
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "";
	int kfd;

	(void)state;
	first_generation(&pr);
	in.max_bytes = pr.bytes - 1;
	assert_int_equal(extc_tier_fetch(tierfd, dstfd, &in, &fr, why, sizeof(why)),
			 EXTC_TIER_NONE_VALID);
	assert_non_null(strstr(why, "more than"));
	assert_int_equal(fsfx_count_entries_at(dstfd, "."), 0);
	kfd = keyfd_on_tier();
	snprintf(why, sizeof(why), "%s/.ext-cache-bad", pr.gen);
	assert_false(fsfx_exists_at(kfd, why));	/* too large for this node is not bad */
	close(kfd);
	in.max_bytes = pr.bytes;
	assert_int_equal(extc_tier_fetch(tierfd, dstfd, &in, &fr, why, sizeof(why)),
			 EXTC_TIER_FETCHED);
}

static void test_an_entry_the_node_has_already_stays(void **state)
{
	struct extc_tier_publish_res pr;
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "", text[64];

	(void)state;
	first_generation(&pr);
	assert_int_equal(fsfx_mkdirs(&fx, "dst/triton"), 0);
	put("dst/triton/mine", "the node's own", 0644, 1700000000, 0);
	assert_int_equal(fetch(2, &fr, why), EXTC_TIER_FETCHED);
	assert_int_equal(fr.present, 1);
	assert_true(fsfx_read_at(dstfd, "triton/mine", text, sizeof(text)) > 0);
	assert_string_equal(text, "the node's own");
	assert_false(fsfx_exists_at(dstfd, "triton/k1"));
	assert_true(fsfx_exists_at(dstfd, "torch_extensions/ext/ext.so"));
	assert_no_stage(dstfd);
}

static void test_a_killed_fetchers_stage_is_removed_a_live_ones_stays(void **state)
{
	struct extc_tier_publish_res pr;
	struct extc_tier_fetch_res fr;
	char why[EXTC_WHY_MAX] = "";
	int live;

	(void)state;
	first_generation(&pr);
	assert_int_equal(mkdirat(dstfd, ".ext-cache-tier.node2.1", 0700), 0);
	assert_int_equal(mkdirat(dstfd, ".ext-cache-tier.node2.2", 0700), 0);
	live = openat(dstfd, ".ext-cache-tier.node2.2", O_RDONLY | O_DIRECTORY);
	assert_int_equal(flock(live, LOCK_EX), 0);	/* a fetcher at work holds its stage */
	assert_int_equal(fetch(2, &fr, why), EXTC_TIER_FETCHED);
	assert_false(fsfx_exists_at(dstfd, ".ext-cache-tier.node2.1"));
	assert_true(fsfx_exists_at(dstfd, ".ext-cache-tier.node2.2"));
	close(live);
	assert_int_equal(unlinkat(dstfd, ".ext-cache-tier.node2.2", AT_REMOVEDIR), 0);
	assert_no_stage(dstfd);
}

/* The manifest's reading is strict: each line as a publisher writes it, or not one. */
static void test_manifest_reading_is_strict(void **state)
{
	static const char *const refused[] = {
		"ext-cache-generation 1\nend 0 0",				/* no newline */
		"ext-cache-generation 1\nd 0755 1.000000000 a\nend 0 0\n",	/* counts */
		"ext-cache-generation 1\nd 755 1.000000000 a\nend 1 0\n",	/* mode */
		"ext-cache-generation 1\nd 0755 1.0 a\nend 1 0\n",		/* ns digits */
		"ext-cache-generation 1\nd 0755 1.000000000 a b\nend 1 0\n",	/* raw space */
		"ext-cache-generation 1\nd 0755 1.000000000 ..\nend 1 0\n",
		"ext-cache-generation 1\nd 0755 1.000000000 .ext-cache-x\nend 1 0\n",
		"ext-cache-generation 1\nf 0644 1 1.000000000 0000000000000000 a/b\nend 1 1\n",
		"ext-cache-generation 1\nd 0755 1.000000000 b\nd 0755 1.000000000 a\nend 2 0\n",
		"ext-cache-generation 1\nd 0755 1.000000000 \\x41\nend 1 0\n",	/* 'A' escaped */
		"ext-cache-generation 1\nend 0 0\nd 0755 1.000000000 a\n",
		"not a manifest\n",
	};
	const char *ok = "ext-cache-generation 1\nd 0755 -1.500000000 a\\x20b\n"
			 "f 0644 3 1.000000001 00000000000000ff a\\x20b/x\\ny\\\\\nd 0700 2.000000000 a.c\n"
			 "end 3 3\n";
	struct extc_tier_entries c;
	struct extc_tier_entry e;
	enum extc_tier_manifest_result res;
	char why[EXTC_WHY_MAX];
	uint64_t entries, bytes;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (extc_tier_entries_check(refused[i], strlen(refused[i]), &entries, &bytes, why,
					    sizeof(why)) != EXTC_TIER_MANIFEST_INVALID)
			fail_msg("taken: %s", refused[i]);
	assert_int_equal(extc_tier_entries_check("ext-cache-generation 2\nend 0 0\n", 31, &entries,
						 &bytes, why, sizeof(why)),
			 EXTC_TIER_MANIFEST_OTHER_VERSION);
	assert_int_equal(extc_tier_entries_check(ok, strlen(ok), &entries, &bytes, why, sizeof(why)),
			 EXTC_TIER_MANIFEST_OK);
	extc_tier_entries_begin(&c, ok, strlen(ok));
	assert_int_equal(extc_tier_entries_next(&c, &e, &res, why, sizeof(why)), 1);
	assert_string_equal(e.path, "a b");
	assert_int_equal(e.mtime.tv_sec, -1);
	assert_int_equal(extc_tier_entries_next(&c, &e, &res, why, sizeof(why)), 1);
	assert_string_equal(e.path, "a b/x\ny\\");
	assert_string_equal(e.name, "x\ny\\");
	assert_int_equal(e.depth, 1);
	assert_true(e.digest == 0xff);
	assert_int_equal(extc_tier_entries_next(&c, &e, &res, why, sizeof(why)), 1);
	assert_int_equal(extc_tier_entries_next(&c, &e, &res, why, sizeof(why)), 0);
}

/* The user's child's fetch into dst/ (another node's key), from the tier at 'tier' below the root. */
static int child_fetch(const char *tier, struct extc_tier_child_res *r)
{
	static char tierpath[PATH_MAX + 64], keypath[PATH_MAX + 8];
	struct extc_tier_child_arg a;

	memset(&a, 0, sizeof(a));
	assert_true(strlen(tier) < 64);
	assert_int_equal(extc_fmt(tierpath, sizeof(tierpath), "%s/%s", fx.root, tier), 0);
	assert_int_equal(extc_fmt(keypath, sizeof(keypath), "%s/dst", fx.root), 0);
	a.w.node = "node2";
	a.w.opts = opts;
	a.tier = tierpath;
	a.uid = getuid();
	a.key = KEY;
	a.key_dir = keypath;
	a.keep = 2;
	return (extc_tier_child_fetch(&a, r, sizeof(*r)));
}

/*
 * A key that holds a file has builds: the tier is not even opened (here it
 * does not exist). One that holds only empty directories, as a step that
 * built nothing puts back, is filled from the tier, the generation taking
 * the names of the empty directories.
 */
static void test_child_reads_the_tier_only_for_a_key_without_files(void **state)
{
	static struct extc_tier_child_res r;
	struct extc_tier_publish_res pr;

	(void)state;
	assert_int_equal(fsfx_mkdirs(&fx, "dst/triton/k0"), 0);
	put("dst/triton/k0/k.cubin", "mine", 0600, 1700000000, 0);
	assert_int_equal(child_fetch("missing", &r), 0);
	assert_true(r.key_holds_builds);
	assert_int_equal(r.path, EXTC_TIER_PATH_OK);
	/* only empty directories, and the key's own manifest: read the tier */
	assert_int_equal(unlinkat(fx.rootfd, "dst/triton/k0/k.cubin", 0), 0);
	assert_int_equal(fsfx_mkdirs(&fx, "dst/torch_extensions"), 0);
	put("dst/.ext-cache-manifest", "key=x\n", 0600, 1700000000, 0);
	first_generation(&pr);
	assert_int_equal(child_fetch("tier", &r), 0);
	assert_false(r.key_holds_builds);
	assert_int_equal(r.fetch, EXTC_TIER_FETCHED);
	for (const char *const *sub = (const char *const[]){ "torch_extensions", "triton", NULL };
	     *sub != NULL; sub++) {
		int a = openat(srcfd, *sub, O_RDONLY | O_DIRECTORY), b = openat(dstfd, *sub, O_RDONLY | O_DIRECTORY);

		assert_true(a >= 0 && b >= 0);
		assert_same_tree(a, b, *sub);
		close(a);
		close(b);
	}
	/* the key's own manifest stays as it was */
	assert_int_equal(faccessat(dstfd, ".ext-cache-manifest", F_OK, AT_SYMLINK_NOFOLLOW), 0);
}

#define CASE(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	/* make check: any uid; the ownership case asks for a uid the test is not */
	const struct CMUnitTest any[] = {
		CASE(test_round_trip_keeps_modes_mtimes_and_bytes),
		CASE(test_links_special_files_locks_and_temporary_names_never_published),
		CASE(test_truncated_file_marks_newest_bad_and_older_is_fetched),
		CASE(test_altered_byte_of_same_size_marks_newest_bad),
		CASE(test_manifest_cut_short_skips_that_generation),
		CASE(test_a_stage_is_never_read),
		CASE(test_two_publishers_at_once_make_two_generations),
		CASE(test_killed_publishers_stage_removed_only_past_grace),
		CASE(test_retention_keeps_the_newest_and_removes_older_only_past_grace),
		CASE(test_a_slowed_reader_completes_and_its_generation_outlives_the_grace),
		CASE(test_deadline_already_past_leaves_nothing),
		CASE(test_tier_path_checks),
		CASE(test_max_bytes_refuses_a_larger_generation),
		CASE(test_an_entry_the_node_has_already_stays),
		CASE(test_a_killed_fetchers_stage_is_removed_a_live_ones_stays),
		CASE(test_manifest_reading_is_strict),
		CASE(test_child_reads_the_tier_only_for_a_key_without_files),
	};
	/* make check-root: a tier handed to another uid */
	const struct CMUnitTest root[] = {
		CASE(test_tier_path_owned_by_another_uid),
	};

	return (TESTMAIN_TIERED("tier", "it hands the tier's directory to uid 65534", any, root,
				NULL, NULL));
}
