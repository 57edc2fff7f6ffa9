/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the --ext-cache* options as srun, sbatch, salloc and slurmstepd see them. */
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "log.h"
#include "mode.h"
#include "option.h"
#include "text.h"
#include "warm_path.h"

enum { OPT_MODE, OPT_SEED, OPT_PUBLISH, OPT_COUNT };

/* What set the kept value: nothing yet, the job's exported option, or this command. */
enum option_source { SOURCE_NONE, SOURCE_INHERITED, SOURCE_GIVEN };

/* One spare byte marks "too long": an overlong value keeps one byte too many and stays invalid. */
static struct {
	enum option_source source;
	char value[EXTC_WARM_PATH_MAX + 2];
} request[OPT_COUNT];

static const char *const option_names[OPT_COUNT] = {
	[OPT_MODE] = "--ext-cache",
	[OPT_SEED] = "--ext-cache-seed",
	[OPT_PUBLISH] = "--ext-cache-publish",
};

/*
 * sbatch and salloc export every option they were given to the job as
 * SLURM_SPANK_ + "_SLURM_SPANK_OPTION_" + plugin name + "_" + option name,
 * each byte that is not a letter or digit made '_' (_opt_env_name in Slurm's
 * src/common/plugstack.c, spank.c in later releases). The plugin is ext_cache
 * (SPANK_PLUGIN in dispatch.c).
 */
static const char *const inherited_env[OPT_COUNT] = {
	[OPT_MODE] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache",
	[OPT_SEED] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_seed",
	[OPT_PUBLISH] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_publish",
};

/*
 * Whether this call passes the job's exported value rather than one the
 * user gave this command. srun, salloc and sbatch call the callback with
 * getenv()'s own pointer for that variable (spank_process_env_options),
 * before the command line in srun and salloc, after #SBATCH lines and
 * before the command line in sbatch, and again for each component of a
 * heterogeneous srun. The pointer tells the calls apart wherever they come;
 * an equal value as the very first call is taken as inherited too, so that a
 * Slurm which copied the value still lets the command line win. Only the
 * first: after it, an equal value is the user's own (srun --ext-cache=job
 * --ext-cache=local in a job-mode job is two values, refused).
 */
static bool is_inherited(int val, const char *optarg)
{
	const char *exported = getenv(inherited_env[val]);

	if (exported == NULL || optarg == NULL)
		return (false);
	if (optarg == exported)
		return (true);
	return (request[val].source == SOURCE_NONE && strcmp(optarg, exported) == 0);
}

/* As pyxis does: the same value twice is harmless, two different ones are a mistake. */
static int keep_value(int val, const char *kept, bool inherited)
{
	char first[96], second[96];

	if (inherited) {
		if (request[val].source == SOURCE_GIVEN)
			return (0);	/* this command's own value wins */
		request[val].source = SOURCE_INHERITED;
		memcpy(request[val].value, kept, sizeof(request[val].value));
		return (0);
	}
	if (request[val].source == SOURCE_GIVEN && strcmp(request[val].value, kept) != 0) {
		extc_escape(request[val].value, 80, first, sizeof(first));
		extc_escape(kept, 80, second, sizeof(second));
		extc_error("%s=%s and %s=%s: given twice with different values; give it once",
			   option_names[val], first, option_names[val], second);
		return (-1);
	}
	request[val].source = SOURCE_GIVEN;
	memcpy(request[val].value, kept, sizeof(request[val].value));
	return (0);
}

/*
 * In srun/sbatch/salloc (remote == 0) a bad value stops the command before
 * anything is submitted. In slurmstepd the value is only stored: a failing
 * option callback there fails plugin initialisation, which drains the node
 * for a batch job, and a user must never be able to drain a node. The step
 * reports the bad value itself, where only the job fails. A value is kept
 * only once it is valid, so a refused first value never conflicts with a
 * corrected second one.
 */
static int option_cb(int val, const char *optarg, int remote)
{
	const char *value = optarg ? optarg : "";
	char kept[sizeof(request[0].value)];
	enum extc_mode mode;
	size_t keep;
	char why[EXTC_WHY_MAX];

	if (val < 0 || val >= OPT_COUNT)
		return (-1);
	memset(kept, 0, sizeof(kept));
	keep = val == OPT_MODE ? EXTC_MODE_VALUE_MAX + 2 : sizeof(kept);
	strncpy(kept, value, keep);
	kept[keep - 1] = '\0';
	if (remote) {
		request[val].source = SOURCE_GIVEN;
		memcpy(request[val].value, kept, sizeof(kept));
		return (0);
	}
	if (val == OPT_MODE && extc_mode_parse(value, "--ext-cache", &mode, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	if (val != OPT_MODE && extc_warm_check_dir(value, option_names[val], why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	return (keep_value(val, kept, is_inherited(val, optarg)));
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
			extc_error("cannot register --%s: %s", options[i].name,
				   spank_strerror(rc));
			return (-1);
		}
	}
	return (0);
}

const char *extc_option_value(void)
{
	return (request[OPT_MODE].source != SOURCE_NONE ? request[OPT_MODE].value : NULL);
}

const char *extc_option_seed(void)
{
	return (request[OPT_SEED].source != SOURCE_NONE ? request[OPT_SEED].value : NULL);
}

const char *extc_option_publish(void)
{
	return (request[OPT_PUBLISH].source != SOURCE_NONE ? request[OPT_PUBLISH].value : NULL);
}
