/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache tests: a stand-in for pyxis' options, for a lab without
 * pyxis (not packaged by Debian). A SPANK plugin named "pyxis" that registers
 * --container-image and --container-name, each with an argument, as pyxis
 * does (NVIDIA/pyxis args.c at commit 107519944221822ea1dace4db8e7234b2eaa4cd5:
 * one table registered with spank_option_register() in slurm_spank_init, in
 * every context that parses options), and whose callbacks accept any value.
 * It starts no container: it lets a test see what Slurm hands ext_cache.so
 * about those options in slurmstepd (_SLURM_SPANK_OPTION_pyxis_container_image
 * through spank_getenv in slurm_spank_init). Built by the suite that loads it:
 *
 *     gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC \
 *         -o pyxis_stub.so tests/integration/plugins/pyxis_stub.c
 */
#include <stddef.h>

#include <slurm/spank.h>

SPANK_PLUGIN(pyxis, 1);

/* pyxis checks the value; a stand-in has nothing to check it against */
static int accept_value(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	return (optarg != NULL && optarg[0] != '\0' ? 0 : -1);
}

static struct spank_option stub_options[] = {
	{ "container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH",
	  "[pyxis stand-in] the image to use for the container filesystem", 1, 0, accept_value },
	{ "container-name", "NAME",
	  "[pyxis stand-in] name to use for saving and loading the container", 1, 0, accept_value },
	SPANK_OPTIONS_TABLE_END
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	int i;

	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
	case S_CTX_REMOTE:
		for (i = 0; stub_options[i].name != NULL; i++) {
			if (spank_option_register(sp, &stub_options[i]) != ESPANK_SUCCESS) {
				slurm_error("pyxis stand-in: cannot register --%s", stub_options[i].name);
				return (-1);
			}
		}
		return (0);
	default:
		return (0);
	}
}
