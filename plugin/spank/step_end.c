/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a step's end on this node: its builds published and moved into the pool, a local leaf removed. */
#include <stdint.h>

#include <slurm/spank.h>

#include "base/background.h"
#include "base/clock.h"
#include "base/mode.h"
#include "base/text.h"
#include "fs/fs_tree.h"
#include "spank/log.h"
#include "spank/pool_step.h"
#include "spank/step_end.h"
#include "spank/warm_step.h"

void extc_step_remove_leaf(const struct extc_step_leaf *leaf)
{
	const struct extc_tree tree = { leaf->cfg, leaf->pol };
	struct extc_rm_report report;
	char why[EXTC_WHY_MAX], text[256];
	uint64_t t0 = extc_monotonic_ns();

	if (extc_tree_remove_leaf(&tree, leaf->ids, leaf->mode, &report, why, sizeof(why)) < 0) {
		extc_error("removing %s: %s (the job epilog tries again)", leaf->path, why);
		return;
	}
	extc_rm_report_text(&report, text, sizeof(text));
	extc_verbose("removed %s: %s in %.3f ms", leaf->path, text,
		     (double)(extc_monotonic_ns() - t0) / 1e6);
}


void extc_step_finish(spank_t sp, const struct extc_step_leaf *leaf)
{

	if (extc_background_cgroup_problem() != NULL)
		extc_info("the step's publish and pool move: still in some of the job's cgroups (%s)",
			  extc_background_cgroup_problem());
	extc_warm_step_publish(sp, leaf->cfg, leaf->ids, leaf->warm_path);
	if (leaf->mode != EXTC_MODE_LOCAL)
		return;
	extc_pool_step_publish(sp, leaf->cfg, leaf->pol, leaf->ids, leaf->warm_path);
	extc_pool_step_reset();	/* the key may be evicted from here on */
	extc_step_remove_leaf(leaf);
}
