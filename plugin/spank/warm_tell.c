/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: --ext-cache-verbose in slurmstepd: how each node's directory started, told. */
#include <stdbool.h>
#include <string.h>

#include <slurm/spank.h>

#include "spank/log.h"
#include "spank/option.h"
#include "warm/warm_report.h"
#include "spank/step_info.h"
#include "spank/warm_tell.h"

/* slurmstepd's, set in init_post_opt: the task forked from it reads it in task_init */
static struct {
	bool verbose;
	struct extc_warm_report start;
} tell;

void extc_warm_tell_resolve(spank_t sp)
{
	char env[16];
	spank_err_t rc = spank_getenv(sp, EXTC_ENV_VERBOSE, env, sizeof(env));

	memset(&tell, 0, sizeof(tell));
	/* a value too long for the buffer is neither empty nor "0": it asks */
	if (rc == ESPANK_NOSPACE)
		strcpy(env, "1");
	tell.verbose = extc_warm_report_wanted(extc_option_verbose(),
					       rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE ? env : NULL);
}

struct extc_warm_report *extc_warm_tell_report(void)
{
	return (&tell.start);
}

void extc_warm_tell(spank_t sp)
{
	char line[sizeof(tell.start.why) + 256];

	if (!tell.verbose)
		return;
	extc_warm_report_line(&tell.start, extc_step_node(sp), line, sizeof(line));
	extc_user("%s", line);
}
