/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: what a step's tasks tell the user: how each node's
 * directory started (--ext-cache-verbose, for warm start and the node
 * pool alike), and why a node has none.
 */
#include <stdbool.h>
#include <string.h>

#include <slurm/spank.h>

#include "base/layout.h"
#include "base/text.h"
#include "spank/log.h"
#include "spank/option.h"
#include "spank/step.h"
#include "spank/step_tell.h"
#include "warm/warm_report.h"

void extc_step_tell_resolve(spank_t sp, struct extc_step *s)
{
	char env[16];
	spank_err_t rc = spank_getenv(sp, EXTC_ENV_VERBOSE, env, sizeof(env));
	const char *value = rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE ? env : NULL;

	/* a value too long for the buffer is neither empty nor "0": it asks */
	if (rc == ESPANK_NOSPACE)
		strcpy(env, "1");
	s->tell.verbose = extc_warm_report_wanted(extc_option_verbose(), value);
}

struct extc_warm_report *extc_step_tell_report(struct extc_step *s)
{
	return (&s->tell.start);
}

void extc_step_tell_start(spank_t sp, struct extc_step *s)
{
	char line[sizeof(s->tell.start.why) + 256];

	if (!s->tell.verbose)
		return;
	extc_warm_report_line(&s->tell.start, extc_step_node(sp, s), line, sizeof(line));
	extc_user("%s", line);
	if (s->tell.lost[0] != '\0')
		extc_user("node %s: %s", extc_step_node(sp, s), s->tell.lost);
}

/*
 * From task_init, the first hook where failing fails only the job (step_task.c).
 * The node is named in the text: 22.05 and 24.11 put "slurmstepd-NODE:"
 * in front of what a task's error log shows the user, 26.05 a timestamp.
 * slurmstepd sets SLURMD_NODENAME in the task's environment before
 * task_init.
 */
void extc_step_tell_failure(spank_t sp, const struct extc_step *s)
{
	char node[EXTC_NODE_NAME_MAX + 1], shown[4 * EXTC_NODE_NAME_MAX + 8];

	if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node)) == ESPANK_SUCCESS)
		extc_escape(node, EXTC_NODE_NAME_MAX, shown, sizeof(shown));
	else
		strcpy(shown, "?");
	extc_error("no private cache on node %s, %s: %s", shown,
		   s->fail_step ? "failing the step" : "going on without one", s->why);
}
