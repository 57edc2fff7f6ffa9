/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the --ext-cache* options as srun, sbatch, salloc and slurmstepd see them. */
#include <string.h>

#include <slurm/spank.h>

#include "log.h"
#include "mode.h"
#include "option.h"
#include "text.h"
#include "warm_path.h"

enum { OPT_MODE, OPT_SEED, OPT_PUBLISH, OPT_COUNT };

/* One spare byte marks "too long": an overlong value keeps one byte too many and stays invalid. */
static struct {
	bool given;
	char value[EXTC_WARM_PATH_MAX + 2];
} request[OPT_COUNT];

static const char *const option_names[OPT_COUNT] = {
	[OPT_MODE] = "--ext-cache",
	[OPT_SEED] = "--ext-cache-seed",
	[OPT_PUBLISH] = "--ext-cache-publish",
};

/*
 * In srun/sbatch/salloc (remote == 0) a bad value stops the command before
 * anything is submitted. In slurmstepd the value is only stored: a failing
 * option callback there fails plugin initialisation, which drains the node
 * for a batch job, and a user must never be able to drain a node. The step
 * reports the bad value itself, where only the job fails.
 */
static int option_cb(int val, const char *optarg, int remote)
{
	const char *value = optarg ? optarg : "";
	enum extc_mode mode;
	size_t keep;
	char why[256];

	if (val < 0 || val >= OPT_COUNT)
		return (-1);
	request[val].given = true;
	keep = val == OPT_MODE ? EXTC_MODE_VALUE_MAX + 2 : sizeof(request[val].value);
	strncpy(request[val].value, value, keep);
	request[val].value[keep - 1] = '\0';
	if (remote)
		return (0);
	if (val == OPT_MODE && extc_mode_parse(value, "--ext-cache", &mode, why, sizeof(why)) < 0) {
		slurm_error("ext-cache: %s", why);
		return (-1);
	}
	if (val != OPT_MODE && extc_warm_check_dir(value, option_names[val], why, sizeof(why)) < 0) {
		slurm_error("ext-cache: %s", why);
		return (-1);
	}
	return (0);
}

static struct spank_option options[OPT_COUNT] = {
	{
		.name = "ext-cache",
		.arginfo = "MODE",
		.usage = "Private node-local JIT cache (TORCH_EXTENSIONS_DIR, TRITON_CACHE_DIR, ...): "
			 "'local' per step, 'job' shared by the job's steps, 'off'. "
			 "Also read from SLURM_EXT_CACHE.",
		.has_arg = 1,
		.val = OPT_MODE,
		.cb = option_cb,
	},
	{
		.name = "ext-cache-seed",
		.arginfo = "DIR",
		.usage = "Fill the private cache from DIR (a published cache) before tasks start, "
			 "as you, keeping timestamps. Also read from SLURM_EXT_CACHE_SEED.",
		.has_arg = 1,
		.val = OPT_SEED,
		.cb = option_cb,
	},
	{
		.name = "ext-cache-publish",
		.arginfo = "DIR",
		.usage = "When the step ends on a node, copy its completed builds into DIR, "
			 "atomically. Also read from SLURM_EXT_CACHE_PUBLISH.",
		.has_arg = 1,
		.val = OPT_PUBLISH,
		.cb = option_cb,
	},
};

int extc_option_register(spank_t sp)
{
	spank_err_t rc;
	size_t i;

	memset(&request, 0, sizeof(request));
	for (i = 0; i < OPT_COUNT; i++) {
		rc = spank_option_register(sp, &options[i]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("ext-cache: cannot register --%s: %s", options[i].name,
				    spank_strerror(rc));
			return (-1);
		}
	}
	return (0);
}

const char *extc_option_value(void)
{
	return (request[OPT_MODE].given ? request[OPT_MODE].value : NULL);
}

const char *extc_option_seed(void)
{
	return (request[OPT_SEED].given ? request[OPT_SEED].value : NULL);
}

const char *extc_option_publish(void)
{
	return (request[OPT_PUBLISH].given ? request[OPT_PUBLISH].value : NULL);
}
