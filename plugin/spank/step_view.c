/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: where a task sees the step's directory: slurmstepd's mount namespace or the job's own. */
#include <stdbool.h>

#include "fs/fs_ident.h"
#include "spank/step_view.h"

void extc_step_view_record(struct extc_step *s)
{
	s->view.mount_ns_known = extc_ident_mount_ns(&s->view.mount_ns) == 0;
	s->view.exec_probe = extc_exec_probe_fd(s->hold_fd);
}

bool extc_step_view_task_shares(struct extc_step *s)
{
	struct extc_ident ns;

	s->view.task_shares = s->view.mount_ns_known && extc_ident_mount_ns(&ns) == 0 &&
			      ns.dev == s->view.mount_ns.dev && ns.ino == s->view.mount_ns.ino;
	return (s->view.task_shares);
}

enum extc_exec_probe extc_step_view_exec_probe(const struct extc_step *s)
{
	return (s->view.task_shares ? s->view.exec_probe : extc_exec_probe_path(s->leaf_path));
}
