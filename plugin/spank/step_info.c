/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: what warm start and the node pool both need of a step in
 * slurmstepd: the job's environment, the job's user, the node's name, a
 * user's child's argument.
 */
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "base/layout.h"
#include "base/text.h"
#include "spank/log.h"
#include "spank/step_info.h"

/* slurmstepd's, resolved in init_post_opt: the task forked from it reads it in task_init */
static struct {
	char node[EXTC_NODE_NAME_MAX + 1];
} info;

void extc_step_info_reset(void)
{
	memset(&info, 0, sizeof(info));
}

const char *extc_step_job_env(spank_t sp, const char *name, char *buf, int len)
{
	return (spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? buf : NULL);
}

/*
 * The node's name, for the manifest and the stage names: SLURMD_NODENAME
 * where slurmstepd has it and it is a plain name, else the host name.
 * Stage names also carry the pid, so several slurmd on one host (which
 * share a pid space) never clash either.
 */
static void node_name(spank_t sp)
{
	char buf[EXTC_NODE_NAME_MAX + 1];
	const char *env = getenv("SLURMD_NODENAME");	/* slurmd's own, inherited */

	if (env != NULL && strlen(env) < sizeof(buf))
		strcpy(buf, env);
	else if (spank_getenv(sp, "SLURMD_NODENAME", buf, sizeof(buf)) != ESPANK_SUCCESS)
		buf[0] = '\0';
	if (buf[0] != '\0') {
		size_t i;

		for (i = 0; buf[i] != '\0'; i++) {
			if (!(buf[i] >= 'a' && buf[i] <= 'z') && !(buf[i] >= 'A' && buf[i] <= 'Z') &&
			    !(buf[i] >= '0' && buf[i] <= '9') && strchr("._-", buf[i]) == NULL)
				break;
		}
		if (buf[i] == '\0') {
			strcpy(info.node, buf);
			return;
		}
	}
	if (extc_layout_node_name(info.node, sizeof(info.node)) < 0)
		strcpy(info.node, "node");
}

const char *extc_step_node(spank_t sp)
{
	if (info.node[0] == '\0')
		node_name(sp);
	return (info.node);
}

bool extc_step_creds(spank_t sp, const struct extc_ids *ids, struct extc_creds *cr)
{
	gid_t *groups = NULL;
	int ngroups = 0;

	cr->uid = ids->uid;
	cr->gid = ids->gid;
	cr->groups = NULL;
	cr->ngroups = 0;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &ngroups) == ESPANK_SUCCESS &&
	    ngroups >= 0) {
		cr->groups = groups;
		cr->ngroups = (size_t)ngroups;
	}
	return (cr->groups != NULL);
}

void extc_step_child_arg(struct extc_warm_child_arg *a, const struct extc_config *cfg,
			 const struct extc_ids *ids, const char *leaf, uint32_t timeout_s,
			 const char *key)
{
	char why[EXTC_WHY_MAX];

	if (extc_warm_child_arg_init(a, cfg, leaf, info.node, timeout_s, key, ids->jobid, why,
				     sizeof(why)) < 0)
		extc_verbose("manifest: %s", why);
}
