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
};

/* Identity of what 'fd' refers to (statx with the mount id where available). */
int extc_ident_fd(int fd, struct extc_ident *id);

/*
 * Do 'a' and 'b' live on the same mount? The mount id catches bind mounts
 * of the same filesystem, which st_dev alone cannot; st_dev is the fallback
 * on kernels without STATX_MNT_ID.
 */
bool extc_ident_same_mount(const struct extc_ident *a, const struct extc_ident *b);

/* Is the filesystem under 'fd' a network or cluster filesystem (NFS, Lustre, GPFS, ...)? */
int extc_fs_is_network(int fd, bool *network, const char **type_name);

/* The descriptor flags used for every directory the plugin opens as root. */
#define EXTC_DIR_OPEN_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)

#endif /* EXTC_FS_IDENT_H_ */
