/* spank-ext-cache: hooks run in srun, sbatch and salloc (local and allocator contexts). */
#include <stdlib.h>

#include <slurm/spank.h>

#include "config.h"
#include "ctx_client.h"
#include "mode.h"
#include "option.h"

/*
 * The client reads the same plugstack.conf as slurmd, so an admin's typo
 * shows up on the first srun, before any job reaches a node.
 */
int extc_client_init(spank_t sp, int ac, char **av)
{
	struct extc_config cfg;
	char why[512];

	if (extc_config_parse(&cfg, ac, av, why, sizeof(why)) < 0) {
		slurm_error("ext-cache: %s", why);
		return (-1);
	}
	return (extc_option_register(sp));
}

/* SLURM_EXT_CACHE is checked here, after the command line had its say. */
int extc_client_init_post_opt(spank_t sp, int ac, char **av)
{
	struct extc_choice choice;
	char why[256];

	(void)sp;
	(void)ac;
	(void)av;
	if (extc_mode_resolve(extc_option_value(), getenv(EXTC_ENV_REQUEST_NAME), EXTC_MODE_OFF,
			      &choice, why, sizeof(why)) < 0) {
		slurm_error("ext-cache: %s", why);
		return (-1);
	}
	return (0);
}
