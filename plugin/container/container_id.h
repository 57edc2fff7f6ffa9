/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which container image a step runs, as far as its options and argv tell. */
#ifndef EXTC_CONTAINER_ID_H_
#define EXTC_CONTAINER_ID_H_

#include <stddef.h>

/* The words of a runtime's command line the parse reads: its image comes before them. */
#define EXTC_CTR_ARGV_MAX 64

enum extc_ctr_kind {
	EXTC_CTR_HOST,		/* nothing says the step runs a container */
	EXTC_CTR_FILE,		/* an image file: 'spec' is its path, for the user's child to identify */
	EXTC_CTR_DIGEST,	/* a registry reference pinned by digest: 'spec' is the reference */
	EXTC_CTR_UNKNOWN,	/* a container the plugin cannot identify: 'spec' says why */
};

/*
 * pyxis' --container-image and --container-name as slurmstepd saw them
 * (NULL when not given). A value starting with '/' or '.' is a squashfs
 * file, resolved against 'cwd' when relative; anything else is a
 * registry reference, known only when pinned by "@sha256:" and 64 hex
 * digits (a tag can be pushed again). A container name alone reuses a
 * container that a step may have changed: unknown.
 */
enum extc_ctr_kind extc_container_id_from_pyxis(const char *image, const char *name, const char *cwd,
						char *spec, size_t len);

/*
 * The step's own argv: a container runtime run directly. Apptainer and
 * Singularity ("exec", "run", "shell", "test") name their image after
 * their options; a file image is resolved against 'cwd'. Every other
 * runtime (Charliecloud, Podman, Docker, enroot and the like), or an
 * option this parse does not know, or no image within the first
 * EXTC_CTR_ARGV_MAX words, is unknown. Anything else (a script, a Python) is the host's, as far as
 * the plugin can tell.
 */
enum extc_ctr_kind extc_container_id_from_argv(int argc, char *const *argv, const char *cwd, char *spec,
					       size_t len);

#endif /* EXTC_CONTAINER_ID_H_ */
