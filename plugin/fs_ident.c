/* spank-ext-cache: identity of an open directory (device, inode, mount) and its checks. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "fs_ident.h"

int extc_ident_fd(int fd, struct extc_ident *id)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
		  STATX_BASIC_STATS | STATX_MNT_ID, &stx) < 0)
		return (-1);
	id->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	id->ino = (ino_t)stx.stx_ino;
	id->mnt_id = (stx.stx_mask & STATX_MNT_ID) ? stx.stx_mnt_id : 0;
	id->mode = stx.stx_mode;
	id->uid = stx.stx_uid;
	id->gid = stx.stx_gid;
	id->nlink = stx.stx_nlink;
	return (0);
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

int extc_fs_is_network(int fd, bool *network, const char **type_name)
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
