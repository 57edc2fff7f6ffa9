/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache adversarial tests: a production-shaped tree to attack.
 *
 *   <root>/base                 root 0711 (extc_tree_prepare_base)
 *   <root>/base/4242/77/0       the leaf, made by extc_tree_create, handed to uid 4242
 *
 * and helpers to fill a directory with user-owned content (files, dirs,
 * symlinks out of the tree), all made as root and lchown'ed to the user.
 */
#ifndef EXTC_ADVTREE_H_
#define EXTC_ADVTREE_H_

#include "adv.h"
#include "base/config.h"
#include "fs/fs_sweep.h"
#include "fs/fs_trash.h"
#include "fs/fs_tree.h"

#define ADV_JOBID 77

struct adv_tree {
	struct extc_config cfg;
	struct extc_fs_policy pol;
	struct extc_tree tree;	/* cfg and pol */
	struct extc_ids ids;
	char base[PATH_MAX];
	char leaf[PATH_MAX];
	int hold;		/* the job level the step holds, -1 when none */
};

/* cfg for base=<root>/<base_rel>; nothing is made. */
void advtree_config(struct fsfx *fx, struct adv_tree *t, const char *base_rel);
/* Make the leaf of step 0 (local mode) and keep the hold descriptor. */
void advtree_create(struct fsfx *fx, struct adv_tree *t);
/* Close the hold descriptor (the step ended). */
void advtree_release(struct adv_tree *t);

/* lchown everything made below with these helpers to the job's user. */
int advtree_file(int dirfd, const char *name, const char *content);
int advtree_dir(int dirfd, const char *name);
int advtree_symlink(const char *target, int dirfd, const char *name);
/* 'n' files fill<i> in dirfd. */
int advtree_fill(int dirfd, unsigned n);

#endif /* EXTC_ADVTREE_H_ */
