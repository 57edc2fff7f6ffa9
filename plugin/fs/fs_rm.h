/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the removal engine's limits and report: defaults, sums and one log-ready sentence. */
#ifndef EXTC_FS_RM_H_
#define EXTC_FS_RM_H_

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
 * The report's 'stopped' when the top of a removal was not the directory
 * expected (extc_remove_tree_at_ident): compare the pointer.
 */
extern const char extc_rm_not_expected[];

/* Record why a walk stops (the first reason wins); 'err' may be 0. */
void extc_rm_report_stop(struct extc_rm_report *report, int err, const char *why);

/* Add the counts of 'part' to 'sum'; the first errors and stop reason of 'sum' win. */
void extc_rm_report_add(struct extc_rm_report *sum, const struct extc_rm_report *part);

/* One log-ready sentence for a report: counts, first error, why it stopped. */
void extc_rm_report_text(const struct extc_rm_report *report, char *buf, size_t len);

#endif /* EXTC_FS_RM_H_ */
