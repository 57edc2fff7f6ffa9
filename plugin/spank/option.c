/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the --ext-cache* options as srun, sbatch, salloc and slurmstepd see them. */
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "spank/log.h"
#include "base/mode.h"
#include "spank/option.h"
#include "base/text.h"
#include "base/seed_path.h"
#include "warm/warm_report.h"

enum { OPT_MODE, OPT_SEED, OPT_PUBLISH, OPT_VERBOSE, OPT_COUNT };

/*
 * The value kept for each option: the last one given. Slurm calls an
 * option's callback once for each value, in the order of its own
 * precedence (#SBATCH lines, then the environment, then the command line:
 * _opt_batch_script, _opt_env and _set_options in src/sbatch/opt.c; the
 * environment, then the command line in srun and salloc), and forwards the
 * last value to the job. Keeping the last one is that precedence, and what
 * the client checks is what the nodes get. One spare byte marks "too long":
 * an overlong value keeps one byte too many and stays invalid.
 */
static struct {
	bool given;
	bool invalid;	/* a bad SLURM_EXT_CACHE* value: refused unless a later one replaces it */
	char value[EXTC_WARM_PATH_MAX + 2];
} request[OPT_COUNT];

static const char *const option_names[OPT_COUNT] = {
	[OPT_MODE] = "--ext-cache",
	[OPT_SEED] = "--ext-cache-seed",
	[OPT_PUBLISH] = "--ext-cache-publish",
	[OPT_VERBOSE] = "--ext-cache-verbose",
};

/* The plugin's own environment form of each option. */
static const char *const env_form[OPT_COUNT] = {
	[OPT_MODE] = EXTC_ENV_REQUEST_NAME,
	[OPT_SEED] = EXTC_ENV_SEED,
	[OPT_PUBLISH] = EXTC_ENV_PUBLISH,
	[OPT_VERBOSE] = EXTC_ENV_VERBOSE,
};

/*
 * Slurm's environment form of each option: what spank_process_env_options
 * reads, and what sbatch and salloc export to the job, so that a step
 * inside it gets the job's value: SLURM_SPANK_ + "_SLURM_SPANK_OPTION_" +
 * plugin name + "_" + option name, each byte that is not a letter or digit
 * made '_' (_opt_env_name in Slurm's src/common/plugstack.c, spank.c in
 * later releases). The plugin is ext_cache (SPANK_PLUGIN in dispatch.c).
 */
static const char *const slurm_env_form[OPT_COUNT] = {
	[OPT_MODE] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache",
	[OPT_SEED] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_seed",
	[OPT_PUBLISH] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_publish",
	[OPT_VERBOSE] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_verbose",
};

/* Which of SLURM_EXT_CACHE* map_env_form handed to Slurm (their values). */
static const char *mapped[OPT_COUNT];

void extc_option_map_env_form(void)
{
	int val;

	for (val = 0; val < OPT_COUNT; val++) {
		const char *own = getenv(env_form[val]);

		mapped[val] = NULL;
		if (own == NULL || getenv(slurm_env_form[val]) != NULL)
			continue;
		if (val == OPT_VERBOSE && !extc_warm_report_wanted(false, own))
			continue;	/* SLURM_EXT_CACHE_VERBOSE=0 asks for nothing */
		if (setenv(slurm_env_form[val], own, 1) < 0) {
			extc_debug("cannot set %s: %s left below #SBATCH lines", slurm_env_form[val],
				   env_form[val]);
			continue;
		}
		mapped[val] = getenv(env_form[val]);
	}
}

/* Is this the value map_env_form handed over? Only its own text can be. */
static bool is_env_form(int val, const char *value)
{
	return (mapped[val] != NULL && strcmp(value, mapped[val]) == 0);
}

/* Is the value valid? 'why' says why not, naming it as 'name' does. */
static int check_value(int val, const char *value, const char *name, char *why, size_t whylen)
{
	enum extc_mode mode;

	if (val == OPT_MODE)
		return (extc_mode_parse(value, name, &mode, why, whylen));
	if (val == OPT_SEED || val == OPT_PUBLISH)
		return (extc_seed_path_check_dir(value, name, why, whylen));
	return (0);
}

/*
 * In srun/sbatch/salloc (remote == 0) a bad value stops the command before
 * anything is submitted. In slurmstepd the value is only stored: a failing
 * option callback there fails plugin initialisation, which drains the node
 * for a batch job, and a user must never be able to drain a node. The step
 * reports the bad value itself, where only the job fails. A refused value
 * is not kept. A bad value from SLURM_EXT_CACHE* is refused at
 * extc_option_check instead, and only if no later value replaced it: the
 * command line beats the environment form.
 */
static int option_cb(int val, const char *optarg, int remote)
{
	const char *value = optarg ? optarg : "";
	char kept[sizeof(request[0].value)];
	bool invalid = false;
	size_t keep;

	if (val < 0 || val >= OPT_COUNT)
		return (-1);
	memset(kept, 0, sizeof(kept));
	keep = val == OPT_MODE ? EXTC_MODE_VALUE_MAX + 2 : sizeof(kept);
	strncpy(kept, value, keep);
	kept[keep - 1] = '\0';
	if (!remote) {
		bool from_env_form = is_env_form(val, value);
		char why[EXTC_WHY_MAX];

		if (check_value(val, value, from_env_form ? env_form[val] : option_names[val], why,
				sizeof(why)) < 0) {
			if (!from_env_form) {
				extc_error("%s", why);
				return (-1);
			}
			invalid = true;
		}
	}
	request[val].given = true;
	request[val].invalid = invalid;
	memcpy(request[val].value, kept, sizeof(kept));
	return (0);
}

int extc_option_check(char *why, size_t whylen)
{
	int val;

	for (val = 0; val < OPT_COUNT; val++)
		if (request[val].given && request[val].invalid &&
		    check_value(val, request[val].value, env_form[val], why, whylen) < 0)
			return (-1);
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
	{
		.name = "ext-cache-verbose",
		.arginfo = NULL,
		.usage = "Say on each node whether the step's cache started warm (from where, how "
			 "many files) or cold (why). Also read from SLURM_EXT_CACHE_VERBOSE=1.",
		.has_arg = 0,
		.val = OPT_VERBOSE,
		.cb = option_cb,
	},
};

int extc_option_register(spank_t sp)
{
	spank_err_t rc;
	size_t i;

	memset(&request, 0, sizeof(request));
	memset(mapped, 0, sizeof(mapped));
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
	return (request[OPT_MODE].given ? request[OPT_MODE].value : NULL);
}

const char *extc_option_seed(void)
{
	return (request[OPT_SEED].given ? request[OPT_SEED].value : NULL);
}

bool extc_option_verbose(void)
{
	return (request[OPT_VERBOSE].given);
}

const char *extc_option_publish(void)
{
	return (request[OPT_PUBLISH].given ? request[OPT_PUBLISH].value : NULL);
}
