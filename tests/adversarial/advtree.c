/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache adversarial tests: a production-shaped tree to attack (see advtree.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "advtree.h"

void advtree_config(struct fsfx *fx, struct adv_tree *t, const char *base_rel)
{
	char arg[PATH_MAX + 8], why[512];
	char *av[1];

	memset(t, 0, sizeof(*t));
	t->hold = -1;
	adv_path(fx, t->base, base_rel);
	adv_fmt(arg, sizeof(arg), "base=%s", t->base);
	av[0] = arg;
	if (extc_config_parse(&t->cfg, 1, av, why, sizeof(why)) < 0) {
		print_error("config: %s\n", why);
		fail();
	}
	extc_fs_policy_root(&t->pol, &t->cfg, NULL);
	t->tree = (struct extc_tree){ &t->cfg, &t->pol };
	t->ids.uid = ADV_USER_UID;
	t->ids.gid = ADV_USER_GID;
	t->ids.jobid = ADV_JOBID;
	t->ids.stepid = 0;
}

void advtree_create(struct fsfx *fx, struct adv_tree *t)
{
	char why[1024];

	(void)fx;
	t->hold = extc_tree_create(&t->tree, &t->ids, EXTC_MODE_LOCAL, t->leaf, sizeof(t->leaf),
				   why, sizeof(why));
	if (t->hold < 0) {
		print_error("extc_tree_create: %s\n", why);
		fail();
	}
}

void advtree_release(struct adv_tree *t)
{
	if (t->hold >= 0)
		close(t->hold);
	t->hold = -1;
}

int advtree_file(int dirfd, const char *name, const char *content)
{
	if (fsfx_write_at(dirfd, name, content, 0644) < 0)
		return (-1);
	return (fchownat(dirfd, name, ADV_USER_UID, ADV_USER_GID, AT_SYMLINK_NOFOLLOW));
}

int advtree_dir(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0755) < 0)
		return (-1);
	return (fchownat(dirfd, name, ADV_USER_UID, ADV_USER_GID, AT_SYMLINK_NOFOLLOW));
}

int advtree_symlink(const char *target, int dirfd, const char *name)
{
	if (symlinkat(target, dirfd, name) < 0)
		return (-1);
	return (fchownat(dirfd, name, ADV_USER_UID, ADV_USER_GID, AT_SYMLINK_NOFOLLOW));
}

int advtree_fill(int dirfd, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		char name[32];
		int fd;

		adv_fmt(name, sizeof(name), "fill%u", i);
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || fchown(fd, ADV_USER_UID, ADV_USER_GID) < 0) {
			if (fd >= 0)
				close(fd);
			return (-1);
		}
		close(fd);
	}
	return (0);
}
