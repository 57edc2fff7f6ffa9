/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache unit tests: fs_slot.h (the bound on detached step ends:
 * a user's slots and the node's, as flocks on files below the base). Real
 * directories below a fresh mkdtemp(). make check's cases run as any uid:
 * the tree's owner is then the caller, as root is in production, and the
 * "users" are uids that only name slot files. make check-root's hand the
 * slot directory to another uid and mount on it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/text.h"
#include "fs/fs_slot.h"
#include "fsfixture.h"
#include "testmain.h"

#define ALICE 4242
#define BOB 4343

struct fx {
	struct fsfx fs;
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_tree tree;
	int basefd;
};

static const struct extc_slot_bound bound = { EXTC_SLOT_PER_USER, EXTC_SLOT_PER_NODE };

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char base_arg[PATH_MAX + 16], why[512];
	char *av[] = { base_arg };

	*state = fx;
	if (fx == NULL)
		return (-1);
	/* the caller stands for root: the slot directory and files must be its own */
	fx->pol = (struct extc_fs_policy){ .owner = geteuid(), .owner_gid = getegid() };
	fx->tree = (struct extc_tree){ .cfg = &fx->cfg, .pol = &fx->pol };
	if (fsfx_setup(&fx->fs, 0755) < 0)
		return (-1);
	snprintf(base_arg, sizeof(base_arg), "base=%s/base", fx->fs.root);
	if (extc_config_parse(&fx->cfg, 1, av, why, sizeof(why)) != 0)
		return (-1);
	if (mkdirat(fx->fs.rootfd, "base", 0711) < 0)
		return (-1);
	fx->basefd = openat(fx->fs.rootfd, "base", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fx->basefd < 0 || fchmod(fx->basefd, 0711) < 0)
		return (-1);
	return (0);
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	int rv;

	close(fx->basefd);
	rv = fsfx_teardown(&fx->fs);
	free(fx);
	return (rv);
}

static enum extc_slot_result take(struct fx *fx, uid_t uid, unsigned wait_ms, struct extc_slot_held *h)
{
	char why[EXTC_WHY_MAX];
	enum extc_slot_result rv = extc_slot_take(&fx->tree, uid, &bound, wait_ms, h, why, sizeof(why));

	if (rv == EXTC_SLOT_REFUSED)
		print_message("refused: %s\n", why);
	return (rv);
}

/* The user's bound: a fifth end of one user waits and is refused; another user's is not. */
static void test_user_bound(void **state)
{
	struct fx *fx = *state;
	struct extc_slot_held h[EXTC_SLOT_PER_USER + 1], other;
	struct stat sb;
	unsigned i;

	for (i = 0; i < EXTC_SLOT_PER_USER; i++)
		assert_int_equal(take(fx, ALICE, 0, &h[i]), EXTC_SLOT_TAKEN);
	assert_int_equal(take(fx, ALICE, 0, &h[i]), EXTC_SLOT_USER_FULL);
	assert_int_equal(h[i].user_fd, -1);
	assert_int_equal(h[i].node_fd, -1);
	assert_int_equal(take(fx, BOB, 0, &other), EXTC_SLOT_TAKEN);
	/* one of Alice's ends is over: her next one gets its slot */
	extc_slot_release(&h[0]);
	assert_int_equal(take(fx, ALICE, 0, &h[0]), EXTC_SLOT_TAKEN);
	for (i = 0; i < EXTC_SLOT_PER_USER; i++)
		extc_slot_release(&h[i]);
	extc_slot_release(&other);
	/* root's own, 0700, with root's own 0600 files in it */
	assert_int_equal(fstatat(fx->basefd, EXTC_SLOT_DIR_NAME, &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0700);
	assert_int_equal(sb.st_uid, geteuid());
	assert_int_equal(fstatat(fx->basefd, EXTC_SLOT_DIR_NAME "/u4242.3", &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 077, 0);
}

/* The node's bound: one end each of more users than it allows; the refused one holds nothing. */
static void test_node_bound(void **state)
{
	struct fx *fx = *state;
	struct extc_slot_held h[EXTC_SLOT_PER_NODE + 1], again[EXTC_SLOT_PER_USER];
	unsigned i;

	for (i = 0; i < EXTC_SLOT_PER_NODE; i++)
		assert_int_equal(take(fx, ALICE + i, 0, &h[i]), EXTC_SLOT_TAKEN);
	assert_int_equal(take(fx, ALICE + i, 0, &h[i]), EXTC_SLOT_NODE_FULL);
	assert_int_equal(h[i].user_fd, -1);
	extc_slot_release(&h[3]);
	/* the refused user kept none of its own slots: all of them are free */
	for (i = 0; i < EXTC_SLOT_PER_USER; i++) {
		assert_int_equal(take(fx, ALICE + EXTC_SLOT_PER_NODE, 0, &again[i]),
				 i == 0 ? EXTC_SLOT_TAKEN : EXTC_SLOT_NODE_FULL);
	}
	extc_slot_release(&again[0]);
	for (i = 0; i < EXTC_SLOT_PER_NODE; i++)
		extc_slot_release(&h[i]);
}

/* Waiting for a slot: bounded by wait_ms, and over as soon as a holder ends. */
static void test_wait_is_bounded_and_ends_with_a_holder(void **state)
{
	struct fx *fx = *state;
	struct extc_slot_held h[EXTC_SLOT_PER_USER], late;
	uint64_t t0, ms;
	int ready[2], status;
	pid_t holder;
	char byte = 0;
	unsigned i;

	/* all of Alice's slots, held by another process (the detached ends) */
	assert_int_equal(pipe(ready), 0);
	holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		close(ready[0]);
		for (i = 0; i < EXTC_SLOT_PER_USER; i++) {
			if (take(fx, ALICE, 0, &h[i]) != EXTC_SLOT_TAKEN)
				_exit(1);
		}
		if (write(ready[1], &byte, 1) != 1)
			_exit(1);
		poll(NULL, 0, 400);
		_exit(0);	/* the kernel lets the slots go with the process */
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &byte, 1), 1);
	close(ready[0]);
	t0 = extc_clock_monotonic_ns();
	assert_int_equal(take(fx, ALICE, 100, &late), EXTC_SLOT_USER_FULL);
	ms = (extc_clock_monotonic_ns() - t0) / 1000000u;
	assert_true(ms >= 100 && ms < 300);
	/* the holder ends within this wait: the slot is had then, not at its end */
	t0 = extc_clock_monotonic_ns();
	assert_int_equal(take(fx, ALICE, 3000, &late), EXTC_SLOT_TAKEN);
	ms = (extc_clock_monotonic_ns() - t0) / 1000000u;
	assert_true(ms < 2000);
	assert_int_equal(waitpid(holder, &status, 0), holder);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	extc_slot_release(&late);
}

/* What the detached end inherits holds the slot after the hook let go of its own descriptor. */
static void test_inherited_descriptor_keeps_the_slot(void **state)
{
	struct fx *fx = *state;
	struct extc_slot_held h[EXTC_SLOT_PER_USER], more;
	int go[2], status;
	pid_t work;
	unsigned i;
	char byte;

	for (i = 0; i < EXTC_SLOT_PER_USER; i++)
		assert_int_equal(take(fx, ALICE, 0, &h[i]), EXTC_SLOT_TAKEN);
	assert_int_equal(pipe(go), 0);
	work = fork();
	assert_true(work >= 0);
	if (work == 0) {
		close(go[1]);
		_exit(read(go[0], &byte, 1) == 0 ? 0 : 1);	/* until the parent closes its end */
	}
	close(go[0]);
	for (i = 0; i < EXTC_SLOT_PER_USER; i++)
		extc_slot_release(&h[i]);
	assert_int_equal(take(fx, ALICE, 0, &more), EXTC_SLOT_USER_FULL);
	close(go[1]);
	assert_int_equal(waitpid(work, &status, 0), work);
	assert_int_equal(take(fx, ALICE, 0, &more), EXTC_SLOT_TAKEN);
	extc_slot_release(&more);
}

/* A slot file that is a symlink, a hard link, a FIFO or a directory: refused, nothing followed. */
static void test_refuses_what_is_not_a_plain_slot_file(void **state)
{
	struct fx *fx = *state;
	struct extc_slot_held h;
	const char *bad = EXTC_SLOT_DIR_NAME "/u4242.0";
	struct stat sb;
	int fd;

	assert_int_equal(mkdirat(fx->basefd, EXTC_SLOT_DIR_NAME, 0700), 0);
	fd = openat(fx->fs.rootfd, "target", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlinkat("../../target", fx->basefd, bad), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(h.user_fd, -1);
	assert_int_equal(unlinkat(fx->basefd, bad, 0), 0);
	assert_int_equal(linkat(fx->fs.rootfd, "target", fx->basefd, bad, 0), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(unlinkat(fx->basefd, bad, 0), 0);
	assert_int_equal(mkfifoat(fx->basefd, bad, 0600), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(unlinkat(fx->basefd, bad, 0), 0);
	assert_int_equal(mkdirat(fx->basefd, bad, 0700), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(unlinkat(fx->basefd, bad, AT_REMOVEDIR), 0);
	/* nothing was done to the symlink's target or the link's other name */
	assert_int_equal(fstatat(fx->fs.rootfd, "target", &sb, 0), 0);
	assert_int_equal(sb.st_size, 0);
	assert_int_equal(sb.st_nlink, 1);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_TAKEN);
	extc_slot_release(&h);
}

/* A slot directory others may enter, or a symlink in its place: refused, nothing made through it. */
static void test_refuses_an_open_or_linked_directory(void **state)
{
	struct fx *fx = *state;
	struct extc_slot_held h;
	struct stat sb;

	assert_int_equal(mkdirat(fx->basefd, EXTC_SLOT_DIR_NAME, 0700), 0);
	assert_int_equal(fchmodat(fx->basefd, EXTC_SLOT_DIR_NAME, 0755, 0), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(unlinkat(fx->basefd, EXTC_SLOT_DIR_NAME, AT_REMOVEDIR), 0);
	assert_int_equal(mkdirat(fx->fs.rootfd, "elsewhere", 0700), 0);
	assert_int_equal(symlinkat("../elsewhere", fx->basefd, EXTC_SLOT_DIR_NAME), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(fstatat(fx->fs.rootfd, "elsewhere/u4242.0", &sb, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(errno, ENOENT);
	/* no base: nothing is made */
	assert_int_equal(unlinkat(fx->basefd, EXTC_SLOT_DIR_NAME, 0), 0);
	assert_int_equal(unlinkat(fx->fs.rootfd, "base", AT_REMOVEDIR), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(fstatat(fx->fs.rootfd, "base", &sb, 0), -1);
}

/* Root tier: a slot directory of another uid, a slot file of another uid, a mount on either. */
static void test_root_refuses_other_owners_and_mounts(void **state)
{
	struct fx *fx = *state;
	struct extc_slot_held h;
	char path[PATH_MAX];
	int fd;

	assert_int_equal(mkdirat(fx->basefd, EXTC_SLOT_DIR_NAME, 0700), 0);
	assert_int_equal(fchownat(fx->basefd, EXTC_SLOT_DIR_NAME, ALICE, ALICE, 0), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(fchownat(fx->basefd, EXTC_SLOT_DIR_NAME, 0, 0, 0), 0);
	fd = openat(fx->basefd, EXTC_SLOT_DIR_NAME "/u4242.0", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, ALICE, ALICE), 0);
	close(fd);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
	assert_int_equal(unlinkat(fx->basefd, EXTC_SLOT_DIR_NAME "/u4242.0", 0), 0);
	/* a tmpfs on the directory: not crossed */
	fsfx_path(&fx->fs, path, "base/" EXTC_SLOT_DIR_NAME);
	assert_int_equal(mount("tmpfs", path, "tmpfs", 0, "mode=0700"), 0);
	assert_int_equal(fsfx_note_mount(&fx->fs, path), 0);
	assert_int_equal(take(fx, ALICE, 0, &h), EXTC_SLOT_REFUSED);
}

int main(void)
{
	/* make check: any uid; the tree's owner is the caller, nothing is mounted */
	const struct CMUnitTest any[] = {
		cmocka_unit_test_setup_teardown(test_user_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_is_bounded_and_ends_with_a_holder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inherited_descriptor_keeps_the_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_what_is_not_a_plain_slot_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_an_open_or_linked_directory, setup, teardown),
	};
	/* make check-root: files of other uids, a mount on the slot directory */
	const struct CMUnitTest root[] = {
		cmocka_unit_test_setup_teardown(test_root_refuses_other_owners_and_mounts, setup, teardown),
	};

	return (TESTMAIN_TIERED("fs_slot", "it hands the slot directory and files to another uid and "
				"mounts tmpfs on the directory", any, root, NULL, NULL));
}
