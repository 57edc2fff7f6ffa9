/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's work as the job's user: the key's fingerprint, the take and the put-back. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hash.h"
#include "base/text.h"
#include "proc/as_user.h"
#include "pool/pool_child.h"
#include "pool/pool_rename.h"

/*
 * An image file's identity by what it holds: its size and a hash of its
 * first and last EXTC_POOL_IMAGE_EDGE bytes, where a squashfs keeps its
 * superblock (its build time, its tables' offsets) and its tables, and a
 * SIF its header (a UUID made at build). Never its device, inode or time:
 * the same image is one key on every node, shared or copied. A regular
 * file only: a directory image (a sandbox, a rootfs) changes under one
 * name. Read as the runtime will open it (followed).
 */
static void image_identity(const char *image, char *out, size_t outlen)
{
	char *buf = malloc(EXTC_POOL_IMAGE_EDGE);
	struct extc_hash_pair h;
	struct stat sb;
	ssize_t head = -1, tail = -1;
	off_t at;
	/* looked at first, so that no device or FIFO is ever opened */
	bool regular = stat(image, &sb) == 0 && S_ISREG(sb.st_mode);
	int fd = buf != NULL && regular ? open(image, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;

	out[0] = '\0';
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
		goto out;
	extc_hash_pair_init(&h);
	head = pread(fd, buf, EXTC_POOL_IMAGE_EDGE, 0);
	if (head >= 0)
		extc_hash_pair_bytes(&h, buf, (size_t)head);
	at = sb.st_size > EXTC_POOL_IMAGE_EDGE ? sb.st_size - EXTC_POOL_IMAGE_EDGE : 0;
	tail = head >= 0 ? pread(fd, buf, EXTC_POOL_IMAGE_EDGE, at) : -1;
	if (tail >= 0)
		extc_hash_pair_bytes(&h, buf, (size_t)tail);
	if (head >= 0 && tail >= 0)
		extc_fmt(out, outlen, "file:%" PRIu64 ":%016" PRIx64 "%016" PRIx64, (uint64_t)sb.st_size,
			 h.a, h.b);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
}

int extc_pool_child_fp(void *varg, void *res, size_t reslen)
{
	const struct extc_pool_fp_arg *a = varg;
	struct extc_pool_fp_res *r = res;

	memset(r, 0, reslen);
	if (a->image != NULL)
		image_identity(a->image, r->image_id, sizeof(r->image_id));
	return (extc_pool_key_install_fp(a->path, a->venv, a->conda, a->cuda_home, r->fp,
					 sizeof(r->fp)));
}

int extc_pool_child_take(void *varg, void *res, size_t reslen)
{
	struct extc_pool_child_arg *a = varg;
	struct extc_warm_seed_res *r = res;
	uint64_t t0 = extc_clock_monotonic_ns();
	int leaffd, keyfd = -1;
	enum extc_manifest_result ret;

	memset(r, 0, reslen);
	r->seed = EXTC_SEED_REFUSED;
	r->by_rename = true;
	leaffd = open(a->w.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (leaffd < 0) {
		extc_fmt(r->seed_why, sizeof(r->seed_why), "cannot open the private directory: %s",
			 strerror(errno));
		return (0);
	}
	keyfd = open(a->key_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (keyfd < 0) {
		r->seed = errno == ENOENT ? EXTC_SEED_ABSENT : EXTC_SEED_REFUSED;
		extc_fmt(r->seed_why, sizeof(r->seed_why), "cannot open it: %s", strerror(errno));
		goto out;
	}
	ret = extc_manifest_check(keyfd, &a->w.want, r->seed_why, sizeof(r->seed_why));
	r->unchecked = ret == EXTC_MANIFEST_ABSENT;
	if (ret != EXTC_MANIFEST_FAILED) {
		a->w.opts.dest = a->w.leaf;	/* Triton's group files name the leaf */
		r->seed = extc_pool_rename_take(keyfd, leaffd, &a->w.opts, &r->st, r->seed_why,
						sizeof(r->seed_why));
	}
out:
	r->ns = extc_clock_monotonic_ns() - t0;
	extc_warm_child_close(leaffd, keyfd);
	return (0);
}

int extc_pool_child_put_back(void *varg, void *res, size_t reslen)
{
	struct extc_pool_child_arg *a = varg;
	struct extc_warm_publish_res *r = res;
	uint64_t t0 = extc_clock_monotonic_ns();
	const struct extc_pool_put_back_limits lim = {
		a->only_unchanged ? &a->changed_before : NULL, a->since_take ? &a->taken_after : NULL,
	};
	int leaffd, keyfd;
	int rv = -1;

	memset(r, 0, reslen);
	/* what the key holds afterwards is root's to measure (extc_pool_hold_account), never ours */
	if (extc_warm_child_open(&a->w, a->key_dir, &leaffd, &keyfd, r->why, sizeof(r->why)) == 0)
		rv = extc_pool_rename_put_back(leaffd, keyfd, &a->w.opts, &a->w.want, &lim, &r->rep,
					       r->why, sizeof(r->why));
	r->ns = extc_clock_monotonic_ns() - t0;
	extc_warm_child_close(leaffd, keyfd);
	return (rv);
}
