/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: identity of an open directory (device, inode, mount) and its checks. */
#ifndef EXTC_FS_IDENT_H_
#define EXTC_FS_IDENT_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct extc_ident {
	dev_t dev;
	ino_t ino;
	uint64_t mnt_id;	/* 0 when the kernel cannot tell */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	nlink_t nlink;
	bool mount_root;	/* the root of a mount, when the kernel says (STATX_ATTR_MOUNT_ROOT) */
};

/* Identity of what 'fd' refers to (statx with the mount id where available). */
int extc_ident_fd(int fd, struct extc_ident *id);

/*
 * Identity of 'name' below 'dirfd' (not followed if a symlink) from what
 * the kernel already has in memory (AT_STATX_DONT_SYNC): a FUSE or network
 * filesystem mounted on it is never asked, so this cannot wait on a daemon
 * that does not answer. A mount whose filesystem refuses root even that
 * (a FUSE mount made without allow_other answers EACCES) is still told: from
 * what the VFS alone knows, 'id' is then a directory that is a mount root,
 * with its device and mount id and the rest unknown. -1 with errno (ENOENT:
 * no such entry).
 */
int extc_ident_at(int dirfd, const char *name, struct extc_ident *id);

/* What extc_ident_open_below found. */
enum extc_open_result {
	EXTC_OPEN_OK,		/* '*fd' is the directory, on the parent's mount */
	EXTC_OPEN_ABSENT,	/* no such entry */
	EXTC_OPEN_MOUNT,	/* a mount point (or another filesystem): not opened */
	EXTC_OPEN_ERROR,	/* errno says why (ENOTDIR, ELOOP for a symlink, EMFILE, ...) */
};

/*
 * Open the directory 'name' below 'parentfd' as root, without ever asking
 * the filesystem of a mount on it: first a path-only descriptor (no open
 * request reaches any filesystem), whose identity is read from memory and
 * compared with 'parent_id' (mount id, mount root, device); only when it is
 * on the parent's mount is the directory opened, through "." of that
 * descriptor, which stays on the directory even if something is mounted on
 * its name in between. A NULL 'parent_id' skips the mount check (the base
 * itself may be a mount point). 'id' receives the identity of the result
 * (of the mount root for EXTC_OPEN_MOUNT, which a filesystem that refuses
 * root its attributes still is: see extc_ident_at).
 */
enum extc_open_result extc_ident_open_below(int parentfd, const struct extc_ident *parent_id,
					    const char *name, int *fd, struct extc_ident *id);

/*
 * Do 'a' and 'b' live on the same mount? The mount id catches bind mounts
 * of the same filesystem, which st_dev alone cannot; st_dev is the fallback
 * on kernels without STATX_MNT_ID.
 */
bool extc_ident_same_mount(const struct extc_ident *a, const struct extc_ident *b);

/*
 * The identity (dev, ino) of this process's mount namespace, from
 * /proc/self/ns/mnt. Two processes with the same one resolve every path
 * alike; -1 when /proc cannot tell.
 */
int extc_ident_mount_ns(struct extc_ident *id);

/* Is the filesystem under 'fd' a network or cluster filesystem (NFS, Lustre, GPFS, ...)? */
int extc_ident_is_network_fs(int fd, bool *network, const char **type_name);

/* The descriptor flags used for every directory the plugin opens as root. */
#define EXTC_DIR_OPEN_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)

#endif /* EXTC_FS_IDENT_H_ */
