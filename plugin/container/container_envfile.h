/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the step's env file, for container runtimes that read variables from a file. */
#ifndef EXTC_CONTAINER_ENVFILE_H_
#define EXTC_CONTAINER_ENVFILE_H_

#include <stddef.h>

#include "container/container_env.h"

/* <leaf>/container/env */
#define EXTC_CONTAINER_ENVFILE "env"

enum extc_envfile_result {
	EXTC_ENVFILE_WRITTEN,
	EXTC_ENVFILE_BAD_LINE,	/* a name or value no reader takes literally: nothing written */
	EXTC_ENVFILE_IO,	/* cannot make the directory or write the file: nothing left behind */
};

/*
 * Writes <leaf>/container/env, one NAME=value line per pair, as Podman's
 * --env-file and Charliecloud's ch-run --set-env=FILE read it. 'leaffd' is
 * the leaf, opened O_DIRECTORY; `container` is made if missing. The file
 * appears whole or not at all (a temporary name, then rename), and no
 * symbolic link is followed. Runs as the job's user.
 */
enum extc_envfile_result extc_container_envfile_write(int leaffd, const struct extc_cenv_list *lines,
						      char *why, size_t whylen);

#endif /* EXTC_CONTAINER_ENVFILE_H_ */
