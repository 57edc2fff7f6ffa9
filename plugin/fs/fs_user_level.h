/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the user's level <base>[/<node>]/<uid> of an epilog: opened, and dropped once empty. */
#ifndef EXTC_FS_USER_LEVEL_H_
#define EXTC_FS_USER_LEVEL_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "fs/fs_level.h"
#include "fs/fs_policy.h"
#include "fs/fs_remove.h"

/*
 * A job's level names ('uname', 'jname', EXTC_NAME_LEN each) and the
 * user's level opened into w->uid, nothing made: found, absent (or ids
 * never managed), or refused ('why' says why).
 */
enum extc_level_result extc_level_open_user(struct extc_level_walk *w, uid_t uid, uint32_t jobid,
					    char *uname, char *jname, char *why, size_t whylen);
/* Drop a user's level once empty and not in use; creators hold it shared while they use it. */
void extc_level_drop_uid(int nodefd, int uidfd, const char *uname, struct extc_rm_report *report);

#endif /* EXTC_FS_USER_LEVEL_H_ */
