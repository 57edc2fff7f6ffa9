/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what a step exports so that the cache reaches Apptainer/Singularity containers. */
#ifndef EXTC_CONTAINER_ENV_H_
#define EXTC_CONTAINER_ENV_H_

#include <stdbool.h>
#include <stddef.h>

#define EXTC_APPTAINER_BIND "APPTAINER_BIND"
#define EXTC_SINGULARITY_BIND "SINGULARITY_BIND"
#define EXTC_APPTAINERENV_PREFIX "APPTAINERENV_"
#define EXTC_SINGULARITYENV_PREFIX "SINGULARITYENV_"

/* What the job's environment holds for one name. */
enum extc_cenv_lookup {
	EXTC_CENV_UNSET,	/* unset or empty */
	EXTC_CENV_SET,		/* *value is the job's value, valid until the next lookup */
	EXTC_CENV_UNREADABLE,	/* set, but it could not be read (too long for the reader) */
};

typedef enum extc_cenv_lookup (*extc_cenv_lookup_fn)(void *ctx, const char *name,
						     const char **value);

/* One cache variable the step exported, and its subdirectory of the leaf. */
struct extc_cenv_var {
	const char *name;
	const char *subdir;
};

struct extc_cenv_in {
	const char *leaf;		/* the step's directory, an absolute path */
	const char *managed_prefix;	/* "<base>/": a value under it was exported by this plugin */
	const char *mode_name;		/* SLURM_EXT_CACHE_MODE's value */
	const struct extc_cenv_var *vars;
	size_t nvars;
	extc_cenv_lookup_fn lookup;	/* reads the job's environment as it was before this step */
	void *lookup_ctx;
};

/* One variable to export, with the job's value it replaces (to take it back). */
struct extc_cenv_pair {
	char *name;
	char *value;
	char *was;		/* the job's value; NULL when it had none */
};

struct extc_cenv_list {
	struct extc_cenv_pair *pairs;
	size_t npairs;
	size_t cap;
};

enum extc_cenv_result {
	EXTC_CENV_OK,
	EXTC_CENV_LEAF_UNBINDABLE,	/* the leaf has a byte Apptainer's bind list splits on: no bind */
	EXTC_CENV_BIND_UNREADABLE,	/* the job's bind list could not be read: no bind */
	EXTC_CENV_NO_MEMORY,		/* the list is incomplete; export none of it */
};

/*
 * The variables Apptainer and Singularity read on the host: the bind lists
 * (the job's own, with the leaf appended) and APPTAINERENV_/SINGULARITYENV_
 * for each cache variable and for SLURM_EXT_CACHE_DIR/MODE. A bind problem
 * leaves the bind lists out and the rest in; the result says which.
 * 'out' is to be freed with extc_container_env_list_free() whatever the result.
 */
enum extc_cenv_result extc_container_env_build(const struct extc_cenv_in *in, struct extc_cenv_list *out);

/*
 * The values inside a container, one NAME=value per cache variable plus
 * SLURM_EXT_CACHE_DIR and SLURM_EXT_CACHE_MODE: the env file's lines for
 * runtimes that read a file (the lookup is not used; 'was' stays NULL).
 */
enum extc_cenv_result extc_container_env_inside(const struct extc_cenv_in *in, struct extc_cenv_list *out);

void extc_container_env_list_free(struct extc_cenv_list *list);

#endif /* EXTC_CONTAINER_ENV_H_ */
