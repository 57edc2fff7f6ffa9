/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: where a task sees the step's directory: slurmstepd's mount namespace or the job's own. */
#include <stdbool.h>

#include "fs/fs_ident.h"
#include "spank/step_view.h"

/* Set in slurmstepd before the tasks are forked; each task reads its own copy. */
static struct {
	struct extc_ident mount_ns;	/* slurmstepd's, when it made the leaf */
	bool mount_ns_known;
	enum extc_exec_probe exec_probe;	/* the leaf's mount, as slurmstepd sees it */
	bool task_shares;	/* in a task: its namespace is slurmstepd's */
} view;

void extc_step_view_reset(void)
{
	view.mount_ns_known = false;
	view.exec_probe = EXTC_EXEC_UNKNOWN;
	view.task_shares = false;
}

void extc_step_view_record(int job_fd)
{
	view.mount_ns_known = extc_ident_mount_ns(&view.mount_ns) == 0;
	view.exec_probe = extc_exec_probe_fd(job_fd);
}

bool extc_step_view_task_shares(void)
{
	struct extc_ident ns;

	view.task_shares = view.mount_ns_known && extc_ident_mount_ns(&ns) == 0 &&
			   ns.dev == view.mount_ns.dev && ns.ino == view.mount_ns.ino;
	return (view.task_shares);
}

enum extc_exec_probe extc_step_view_exec_probe(const char *leaf)
{
	return (view.task_shares ? view.exec_probe : extc_exec_probe_path(leaf));
}
