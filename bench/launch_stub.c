/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stand-in SPANK plugin for bench/run.sh section 1: what any plugin with
 * an option costs a step launch, without the plugin's own work. It
 * registers --launch-stub; with setenv=N in plugstack.conf, user_init sets
 * N variables in the job's environment, as many as --ext-cache=local
 * exports, to time slurmstepd's side of spank_setenv alone.
 *
 *   cc -shared -fPIC -o launch_stub.so bench/launch_stub.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

SPANK_PLUGIN(launch_stub, 1);

static int setenv_count;

static int option_cb(int val, const char *optarg, int remote)
{
	(void)val;
	(void)optarg;
	(void)remote;
	return (0);
}

static struct spank_option stub_option = {
	"launch-stub", "[x]", "a stand-in option, ignored", 2, 0, option_cb,
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	int i;

	for (i = 0; i < ac; i++) {
		if (strncmp(av[i], "setenv=", 7) == 0)
			setenv_count = atoi(av[i] + 7);
	}
	return (spank_option_register(sp, &stub_option));
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	char name[32];
	int i;

	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return (0);
	for (i = 0; i < setenv_count; i++) {
		snprintf(name, sizeof(name), "LAUNCH_STUB_%d", i);
		spank_setenv(sp, name, "/var/tmp/ext-cache/1000/1/0/launch-stub", 1);
	}
	return (0);
}
