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
};

struct extc_rm_report {
	uint64_t removed;	/* names unlinked, directories included */
	uint64_t failed;	/* names that could not be removed */
	uint64_t mounts;	/* mount points met and left alone */
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
 * No symlink is followed, no mount point is entered, '..' is only used
 * to re-open an ancestor whose identity is then verified, and no mode or
 * owner is ever changed. Returns 0 when everything is gone (or was never
 * there), -1 otherwise with the details in 'report'.
 */
int extc_rm_tree_at(int parentfd, const char *name, const struct extc_rm_limits *limits,
		    struct extc_rm_report *report);

/* Record why a walk stops (the first reason wins); 'err' may be 0. */
void extc_rm_report_stop(struct extc_rm_report *report, int err, const char *why);

/* One log-ready sentence for a report: counts, first error, why it stopped. */
void extc_rm_report_text(const struct extc_rm_report *report, char *buf, size_t len);

/* CLOCK_MONOTONIC now, in ns, for building deadlines. */
uint64_t extc_monotonic_ns(void);

#endif /* EXTC_FS_REMOVE_H_ */
