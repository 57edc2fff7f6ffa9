/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: identity of an open directory (device, inode, mount) and its checks. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/fs_ident.h"

static void ident_from_statx(const struct statx *stx, struct extc_ident *id)
{
	id->dev = makedev(stx->stx_dev_major, stx->stx_dev_minor);
	id->ino = (ino_t)stx->stx_ino;
	id->mnt_id = (stx->stx_mask & STATX_MNT_ID) ? stx->stx_mnt_id : 0;
	id->mode = stx->stx_mode;
	id->uid = stx->stx_uid;
	id->gid = stx->stx_gid;
	id->nlink = stx->stx_nlink;
	id->mount_root = (stx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
			 (stx->stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/*
 * The identity of a mount whose filesystem refused root a getattr, from what
 * the VFS alone knows. A FUSE daemon that mounted without allow_other
 * answers root's statx with EACCES (fs/fuse/dir.c, fuse_getattr), yet
 * answers an empty request mask from its superblock, and vfs_statx adds
 * the mount id and whether this is a mount's root (fs/stat.c); no request
 * reaches the daemon. 0 when the entry is the root of a mount other than
 * 'parent' ('id' then holds its device and mount, its mode is a directory's
 * and the rest is unknown); -1 otherwise, with errno as the caller's
 * failed statx left it.
 */
static int ident_other_mount(int dirfd, const char *name, int flags,
			     const struct extc_ident *parent, struct extc_ident *id)
{
	int err = errno;
	struct statx stx;

	if (err == ENOENT || statx(dirfd, name, flags, 0, &stx) < 0)
		goto refused;
	ident_from_statx(&stx, id);
	if (!id->mount_root && extc_ident_same_mount(id, parent))
		goto refused;
	id->mode = S_IFDIR;
	id->ino = 0;
	id->uid = 0;
	id->gid = 0;
	id->nlink = 0;
	id->mount_root = true;
	return (0);
refused:
	errno = err;
	return (-1);
}

int extc_ident_fd(int fd, struct extc_ident *id)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
		  STATX_BASIC_STATS | STATX_MNT_ID, &stx) < 0)
		return (-1);
	ident_from_statx(&stx, id);
	return (0);
}

int extc_ident_mount_ns(struct extc_ident *id)
{
	struct stat st;

	if (stat("/proc/self/ns/mnt", &st) < 0)
		return (-1);
	*id = (struct extc_ident){ .dev = st.st_dev, .ino = st.st_ino };
	return (0);
}

int extc_ident_at(int dirfd, const char *name, struct extc_ident *id)
{
	const int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC;
	struct extc_ident dir_id;
	struct statx stx;
	int err;

	if (statx(dirfd, name, flags, STATX_BASIC_STATS | STATX_MNT_ID, &stx) == 0) {
		ident_from_statx(&stx, id);
		return (0);
	}
	/* refused by a mount's filesystem: still known for a mount, from the VFS */
	err = errno;
	if (extc_ident_fd(dirfd, &dir_id) < 0) {
		errno = err;
		return (-1);
	}
	errno = err;
	return (ident_other_mount(dirfd, name, flags, &dir_id, id));
}

enum extc_open_result extc_ident_open_below(int parentfd, const struct extc_ident *parent_id,
					    const char *name, int *fd, struct extc_ident *id)
{
	enum extc_open_result res = EXTC_OPEN_ERROR;
	struct extc_ident opened;
	struct statx stx;
	int pfd, err;

	*fd = -1;
	/* O_PATH: the lookup ends on the entry, no open request is sent to it */
	pfd = openat(parentfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return (errno == ENOENT ? EXTC_OPEN_ABSENT : EXTC_OPEN_ERROR);
	if (statx(pfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS | STATX_MNT_ID,
		  &stx) < 0) {
		/* a filesystem that refuses root (FUSE without allow_other) is still a mount */
		if (parent_id != NULL &&
		    ident_other_mount(pfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, parent_id, id) == 0)
			res = EXTC_OPEN_MOUNT;
		goto out;
	}
	ident_from_statx(&stx, id);
	if (parent_id != NULL && (id->mount_root || !extc_ident_same_mount(id, parent_id))) {
		res = EXTC_OPEN_MOUNT;
		goto out;
	}
	/* "." of the path descriptor is that directory, even if mounted on meanwhile */
	*fd = openat(pfd, ".", EXTC_DIR_OPEN_FLAGS);
	if (*fd < 0)
		goto out;
	err = extc_ident_fd(*fd, &opened) < 0 ? errno : 0;
	if (err == 0 && (opened.dev != id->dev || opened.ino != id->ino))
		err = ESTALE;
	if (err != 0) {
		close(*fd);
		*fd = -1;
		errno = err;
		goto out;
	}
	*id = opened;
	res = EXTC_OPEN_OK;
out:
	err = errno;
	close(pfd);
	errno = err;
	return (res);
}

bool extc_ident_same_mount(const struct extc_ident *a, const struct extc_ident *b)
{
	if (a->dev != b->dev)
		return (false);
	if (a->mnt_id != 0 && b->mnt_id != 0 && a->mnt_id != b->mnt_id)
		return (false);
	return (true);
}

/* f_type magics (linux/magic.h and vendor headers); none of them is node-local. */
static const struct {
	unsigned long magic;
	const char *name;
} network_fs[] = {
	{ 0x6969UL, "nfs" },
	{ 0x517bUL, "smb" },
	{ 0xff534d42UL, "cifs" },
	{ 0xfe534d42UL, "smb2" },
	{ 0x0bd00bd0UL, "lustre" },
	{ 0x47504653UL, "gpfs" },
	{ 0x19830326UL, "beegfs" },
	{ 0x65735546UL, "fuse" },
	{ 0x00c36400UL, "ceph" },
	{ 0x5346414fUL, "afs" },
	{ 0x6b414653UL, "kafs" },
	{ 0x73757245UL, "coda" },
	{ 0x7461636fUL, "ocfs2" },
	{ 0x01161970UL, "gfs2" },
	{ 0x01021997UL, "9p" },
	{ 0xaad7aaeaUL, "panfs" },
	{ 0x20030528UL, "orangefs" },
	{ 0x013111a8UL, "ibrix" },
	{ 0x564c0000UL, "vxfs-cluster" },
};

int extc_ident_is_network_fs(int fd, bool *network, const char **type_name)
{
	struct statfs sfs;
	size_t i;

	if (fstatfs(fd, &sfs) < 0)
		return (-1);
	*network = false;
	*type_name = "local";
	for (i = 0; i < sizeof(network_fs) / sizeof(network_fs[0]); i++) {
		if ((unsigned long)sfs.f_type == network_fs[i].magic) {
			*network = true;
			*type_name = network_fs[i].name;
			break;
		}
	}
	return (0);
}
