/* spank-ext-cache: the --ext-cache option as srun, sbatch, salloc and slurmstepd see it. */
#include <string.h>

#include <slurm/spank.h>

#include "log.h"
#include "mode.h"
#include "option.h"
#include "text.h"

static struct {
	bool given;
	char value[EXTC_MODE_VALUE_MAX + 2];	/* one spare byte marks "too long" */
} request;

/*
 * In srun/sbatch/salloc (remote == 0) a bad value stops the command before
 * anything is submitted. In slurmstepd the value is only stored: a failing
 * option callback there fails plugin initialisation, which drains the node
 * for a batch job, and a user must never be able to drain a node. The step
 * reports the bad value itself, where only the job fails.
 */
static int option_cb(int val, const char *optarg, int remote)
{
	enum extc_mode mode;
	char why[256];

	(void)val;
	request.given = true;
	/* an overlong value keeps one byte too many and so stays invalid */
	strncpy(request.value, optarg ? optarg : "", sizeof(request.value));
	request.value[sizeof(request.value) - 1] = '\0';
	if (remote)
		return (0);
	if (extc_mode_parse(optarg ? optarg : "", "--ext-cache", &mode, why, sizeof(why)) < 0) {
		slurm_error("ext-cache: %s", why);
		return (-1);
	}
	return (0);
}

static struct spank_option ext_cache_option = {
	.name = "ext-cache",
	.arginfo = "MODE",
	.usage = "Private node-local JIT cache (TORCH_EXTENSIONS_DIR, TRITON_CACHE_DIR, ...): "
		 "'local' per step, 'job' shared by the job's steps, 'off'. "
		 "Also read from SLURM_EXT_CACHE.",
	.has_arg = 1,
	.val = 0,
	.cb = option_cb,
};

int extc_option_register(spank_t sp)
{
	spank_err_t rc;

	memset(&request, 0, sizeof(request));
	rc = spank_option_register(sp, &ext_cache_option);

	if (rc != ESPANK_SUCCESS) {
		slurm_error("ext-cache: cannot register --ext-cache: %s", spank_strerror(rc));
		return (-1);
	}
	return (0);
}

const char *extc_option_value(void)
{
	return (request.given ? request.value : NULL);
}
