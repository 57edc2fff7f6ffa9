/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: hooks run in srun, sbatch and salloc (local and allocator contexts). */
#include <stdlib.h>

#include <slurm/spank.h>

#include "base/config.h"
#include "spank/client.h"
#include "spank/log.h"
#include "base/mode.h"
#include "spank/option.h"
#include "base/text.h"
#include "base/seed_path.h"

/*
 * The client reads the same plugstack.conf as slurmd, so an admin's typo
 * shows up on the first srun, before any job reaches a node.
 */
int extc_client_init(spank_t sp, int ac, char **av)
{
	struct extc_config cfg;
	char why[EXTC_WHY_MAX];

	if (extc_config_parse(&cfg, ac, av, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	if (extc_option_register(sp) < 0)
		return (-1);
	/*
	 * srun has no source below the environment, and there the step ranks
	 * the option over SLURM_EXT_CACHE* itself; in sbatch #SBATCH lines
	 * must lose to them, which only Slurm's ordering can tell.
	 */
	if (spank_context() == S_CTX_ALLOCATOR)
		extc_option_map_env_form();
	return (0);
}

/*
 * The environment forms of the directories, when no option overrides them.
 * Only the text is checked: the path is one of the nodes' (it may not exist
 * here, or be another file), so it is not looked at.
 */
static int check_env_dir(const char *option_value, const char *name, char *why, size_t whylen)
{
	const char *value = getenv(name);

	if (option_value != NULL || value == NULL)
		return (0);
	return (extc_seed_path_check_dir(value, name, why, whylen));
}

/* SLURM_EXT_CACHE* are checked here, after the command line had its say. */
int extc_client_init_post_opt(spank_t sp, int ac, char **av)
{
	struct extc_choice choice;
	char why[EXTC_WHY_MAX];

	(void)sp;
	(void)ac;
	(void)av;
	if (extc_option_check(why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	if (extc_mode_resolve(extc_option_value(), getenv(EXTC_ENV_REQUEST_NAME), EXTC_MODE_OFF,
			      &choice, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	if (check_env_dir(extc_option_seed(), EXTC_ENV_SEED, why, sizeof(why)) < 0 ||
	    check_env_dir(extc_option_publish(), EXTC_ENV_PUBLISH, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	return (0);
}
