/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: --ext-cache-verbose in slurmstepd: how each node's directory started, told. */
#include <stdbool.h>
#include <string.h>

#include <slurm/spank.h>

#include "spank/log.h"
#include "spank/option.h"
#include "spank/step.h"
#include "spank/warm_tell.h"
#include "warm/warm_report.h"

void extc_warm_tell_resolve(spank_t sp, struct extc_step *s)
{
	char env[16];
	spank_err_t rc = spank_getenv(sp, EXTC_ENV_VERBOSE, env, sizeof(env));
	const char *value = rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE ? env : NULL;

	/* a value too long for the buffer is neither empty nor "0": it asks */
	if (rc == ESPANK_NOSPACE)
		strcpy(env, "1");
	s->tell.verbose = extc_warm_report_wanted(extc_option_verbose(), value);
}

struct extc_warm_report *extc_warm_tell_report(struct extc_step *s)
{
	return (&s->tell.start);
}

void extc_warm_tell(spank_t sp, struct extc_step *s)
{
	char line[sizeof(s->tell.start.why) + 256];

	if (!s->tell.verbose)
		return;
	extc_warm_report_line(&s->tell.start, extc_step_node(sp, s), line, sizeof(line));
	extc_user("%s", line);
}
