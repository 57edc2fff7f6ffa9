/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: removal of a user-controlled tree, as root, through held descriptors only. */
#ifndef EXTC_FS_REMOVE_H_
#define EXTC_FS_REMOVE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct extc_rm_limits {
	unsigned max_fds;	/* directory descriptors held at once (at least 2) */
	uint32_t max_depth;	/* deeper levels are left and reported */
	uint64_t max_entries;	/* entries visited before giving up; 0: no limit */
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC time to give up at; 0: none */
	/*
	 * Detach (umount2 MNT_DETACH) a mount point met on the way and remove
	 * what was under it: only where no user can reach the tree by path
	 * any more (the root-only trash).
	 */
	bool detach_mounts;
};

struct extc_rm_report {
	uint64_t removed;	/* names unlinked, directories included */
	uint64_t failed;	/* names that could not be removed */
	uint64_t mounts;	/* mount points met and left alone */
	uint64_t detached;	/* mount points detached (detach_mounts) */
	uint64_t foreign;	/* directories of another user met and not entered */
	char first_foreign[120];	/* escaped path (from the top) of the first of them */
	int first_errno;
	char first_name[80];	/* escaped name of the first failure */
	const char *stopped;	/* why the walk stopped early, or NULL */
	int stop_errno;		/* the error behind 'stopped', if one was */
};

void extc_rm_limits_default(struct extc_rm_limits *limits);

/*
 * Remove 'name' (a directory tree or a single entry) below 'parentfd'.
 * 'name' must be one plain entry: "", ".", ".." and anything with a '/'
 * are refused (EINVAL) without touching anything.
 * 'parentfd' must be a directory the caller trusts (root-owned, verified).
 * No symlink is followed, no mount point is entered or even opened (nor
 * any name stat-ed in a way that asks its filesystem), '..' is only used
 * to re-open an ancestor whose identity is then verified, and no mode or
 * owner is ever changed. Root removes only what the tree's user could have
 * removed: a directory is entered only if it belongs to the owner of the
 * directory it is in, or if that one is root's (the plugin's skeleton hands
 * over to the user there); another user's directory moved into the tree is
 * left whole and counted in 'foreign'. Returns 0 when everything is gone (or was never
 * there), -1 otherwise with the details in 'report'.
 */
int extc_rm_tree_at(int parentfd, const char *name, const struct extc_rm_limits *limits,
		    struct extc_rm_report *report);

/* Record why a walk stops (the first reason wins); 'err' may be 0. */
void extc_rm_report_stop(struct extc_rm_report *report, int err, const char *why);

/* Add the counts of 'part' to 'sum'; the first errors and stop reason of 'sum' win. */
void extc_rm_report_add(struct extc_rm_report *sum, const struct extc_rm_report *part);

/* One log-ready sentence for a report: counts, first error, why it stopped. */
void extc_rm_report_text(const struct extc_rm_report *report, char *buf, size_t len);

/* CLOCK_MONOTONIC now, in ns, for building deadlines. */
uint64_t extc_monotonic_ns(void);

#endif /* EXTC_FS_REMOVE_H_ */
