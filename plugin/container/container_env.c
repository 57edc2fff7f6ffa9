/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what a step exports so that the cache reaches Apptainer/Singularity containers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container/container_env.h"
#include "base/envvars.h"
#include "base/layout.h"
#include "base/text.h"

/*
 * Apptainer splits a bind list on ',' and ':' (and its parser's character
 * class also drops '^'); a backslash escapes, version by version
 * differently. A leaf holding any of these cannot be named in the list.
 */
static bool leaf_is_bindable(const char *leaf)
{
	return (leaf[0] == '/' && strpbrk(leaf, ",:^\\") == NULL);
}

static char *join3(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
	char *s = malloc(la + lb + lc + 1);

	if (s == NULL)
		return (NULL);
	memcpy(s, a, la);
	memcpy(s + la, b, lb);
	memcpy(s + la + lb, c, lc + 1);
	return (s);
}

static char *dup_or_null(const char *s)
{
	return (s == NULL ? NULL : strdup(s));
}

static enum extc_cenv_result list_add(struct extc_cenv_list *list, char *name, char *value,
				      const char *was)
{
	struct extc_cenv_pair *grown;
	char *was_copy = dup_or_null(was);

	if (name == NULL || value == NULL || (was != NULL && was_copy == NULL))
		goto fail;
	if (list->npairs == list->cap) {
		size_t cap = list->cap ? 2 * list->cap : 16;

		grown = realloc(list->pairs, cap * sizeof(*grown));
		if (grown == NULL)
			goto fail;
		list->pairs = grown;
		list->cap = cap;
	}
	list->pairs[list->npairs++] = (struct extc_cenv_pair){ name, value, was_copy };
	return (EXTC_CENV_OK);
fail:
	free(name);
	free(value);
	free(was_copy);
	return (EXTC_CENV_NO_MEMORY);
}

void extc_container_env_list_free(struct extc_cenv_list *list)
{
	size_t i;

	for (i = 0; i < list->npairs; i++) {
		free(list->pairs[i].name);
		free(list->pairs[i].value);
		free(list->pairs[i].was);
	}
	free(list->pairs);
	memset(list, 0, sizeof(*list));
}

/*
 * An entry this plugin appended for an enclosing step: a bare path under the
 * base, where only root makes anything. It is dropped, as that step's leaf
 * may not exist here (another node) and Apptainer refuses a missing source.
 */
static bool is_enclosing_leaf(const char *entry, size_t len, const char *managed_prefix)
{
	size_t plen = strlen(managed_prefix);

	return (len > plen && strncmp(entry, managed_prefix, plen) == 0 &&
		memchr(entry, ':', len) == NULL);
}

/* The job's bind list, less an enclosing step's leaf, with 'leaf' appended. */
static char *bind_list_with_leaf(const char *job_list, const char *leaf, const char *managed_prefix)
{
	size_t cap = strlen(job_list) + strlen(leaf) + 2, used = 0;
	const char *entry = job_list;
	char *out = malloc(cap);

	if (out == NULL)
		return (NULL);
	while (*entry != '\0') {
		size_t len = strcspn(entry, ",");

		if (len > 0 && !is_enclosing_leaf(entry, len, managed_prefix)) {
			memcpy(out + used, entry, len);
			used += len;
			out[used++] = ',';
		}
		entry += len + (entry[len] == ',');
	}
	memcpy(out + used, leaf, strlen(leaf) + 1);
	return (out);
}

/* The job's value of 'name' into *value (NULL when unset); false when it cannot be read. */
static bool read_job(const struct extc_cenv_in *in, const char *name, char **value, bool *failed)
{
	const char *v = NULL;
	enum extc_cenv_lookup found = in->lookup(in->lookup_ctx, name, &v);

	*value = NULL;
	if (found == EXTC_CENV_UNREADABLE)
		return (false);
	if (found == EXTC_CENV_SET && v != NULL && v[0] != '\0') {
		*value = strdup(v);
		*failed = *value == NULL;
	}
	return (true);
}

/*
 * APPTAINER_BIND and SINGULARITY_BIND never disagree: Apptainer warns when
 * both are set with different values (pkg/cmdline/flag.go) and reads
 * SINGULARITY_BIND alone too, with a notice. So both get the same list,
 * unless the job itself set them apart: then each keeps its own, appended.
 */
static enum extc_cenv_result add_binds(const struct extc_cenv_in *in, struct extc_cenv_list *out)
{
	char *app = NULL, *sing = NULL;
	const char *app_base, *sing_base;
	bool failed = false;
	enum extc_cenv_result rv = EXTC_CENV_BIND_UNREADABLE;

	if (!leaf_is_bindable(in->leaf))
		return (EXTC_CENV_LEAF_UNBINDABLE);
	if (!read_job(in, EXTC_APPTAINER_BIND, &app, &failed) ||
	    !read_job(in, EXTC_SINGULARITY_BIND, &sing, &failed))
		goto out;
	rv = EXTC_CENV_NO_MEMORY;
	if (failed)
		goto out;
	app_base = app != NULL ? app : (sing != NULL ? sing : "");
	sing_base = (app != NULL && sing != NULL) ? sing : app_base;
	rv = list_add(out, strdup(EXTC_APPTAINER_BIND),
		      bind_list_with_leaf(app_base, in->leaf, in->managed_prefix), app);
	if (rv == EXTC_CENV_OK)
		rv = list_add(out, strdup(EXTC_SINGULARITY_BIND),
			      bind_list_with_leaf(sing_base, in->leaf, in->managed_prefix), sing);
out:
	free(app);
	free(sing);
	return (rv);
}

/* The value the user chose for NAME inside the container, if any (not one of ours). */
static bool user_chose(const struct extc_cenv_in *in, const char *prefixed)
{
	const char *v = NULL;
	enum extc_cenv_lookup found = in->lookup(in->lookup_ctx, prefixed, &v);

	if (found == EXTC_CENV_UNREADABLE)
		return (true);	/* too long to be one of ours */
	return (found == EXTC_CENV_SET && v != NULL && v[0] != '\0' &&
		!extc_has_prefix(v, in->managed_prefix));
}

/* APPTAINERENV_NAME and SINGULARITYENV_NAME, the same value so that Apptainer does not warn. */
static enum extc_cenv_result add_runtime_pair(const struct extc_cenv_in *in, const char *name,
					      const char *value, struct extc_cenv_list *out)
{
	const char *prefixes[] = { EXTC_APPTAINERENV_PREFIX, EXTC_SINGULARITYENV_PREFIX };
	enum extc_cenv_result rv = EXTC_CENV_OK;
	size_t i;

	for (i = 0; i < 2 && rv == EXTC_CENV_OK; i++) {
		char *prefixed = join3(prefixes[i], name, "");
		const char *was = NULL;

		if (prefixed != NULL && in->lookup(in->lookup_ctx, prefixed, &was) != EXTC_CENV_SET)
			was = NULL;
		rv = list_add(out, prefixed, strdup(value), was);
	}
	return (rv);
}

/* Whether the user set either runtime's variable for NAME: then both stay as the user left them. */
static enum extc_cenv_result user_set_either(const struct extc_cenv_in *in, const char *name,
					     bool *chose)
{
	char *app = join3(EXTC_APPTAINERENV_PREFIX, name, "");
	char *sing = join3(EXTC_SINGULARITYENV_PREFIX, name, "");
	enum extc_cenv_result rv = EXTC_CENV_NO_MEMORY;

	if (app != NULL && sing != NULL) {
		*chose = user_chose(in, app) || user_chose(in, sing);
		rv = EXTC_CENV_OK;
	}
	free(app);
	free(sing);
	return (rv);
}

enum extc_cenv_result extc_container_env_inside(const struct extc_cenv_in *in, struct extc_cenv_list *out)
{
	enum extc_cenv_result rv = EXTC_CENV_OK;
	size_t i;

	for (i = 0; i < in->nvars && rv == EXTC_CENV_OK; i++)
		rv = list_add(out, strdup(in->vars[i].name),
			      join3(in->leaf, "/" EXTC_CONTAINER_SUBTREE "/", in->vars[i].subdir), NULL);
	/* the plugin's own two keep their values: they name the step, not a build */
	if (rv == EXTC_CENV_OK)
		rv = list_add(out, strdup(EXTC_ENV_DIR), strdup(in->leaf), NULL);
	if (rv == EXTC_CENV_OK)
		rv = list_add(out, strdup(EXTC_ENV_MODE), strdup(in->mode_name), NULL);
	return (rv);
}

/*
 * Under --cleanenv (and --containall, --compat) Apptainer passes on only
 * TERM and the proxy variables of the host's environment, and every
 * APPTAINERENV_NAME as NAME (internal/pkg/util/env/create.go), so each
 * value the container needs goes through APPTAINERENV_, SLURM_EXT_CACHE_*
 * included. A NAME the user set either variable for is left to the user.
 */
static enum extc_cenv_result add_runtime_vars(const struct extc_cenv_in *in,
					      struct extc_cenv_list *out)
{
	struct extc_cenv_list inside = { 0 };
	enum extc_cenv_result rv = extc_container_env_inside(in, &inside);
	size_t i;

	for (i = 0; i < inside.npairs && rv == EXTC_CENV_OK; i++) {
		const struct extc_cenv_pair *p = &inside.pairs[i];
		bool ours = i >= in->nvars;	/* SLURM_EXT_CACHE_DIR and _MODE: always */
		bool chose = false;

		if (!ours)
			rv = user_set_either(in, p->name, &chose);
		if (rv == EXTC_CENV_OK && !chose)
			rv = add_runtime_pair(in, p->name, p->value, out);
	}
	extc_container_env_list_free(&inside);
	return (rv);
}

enum extc_cenv_result extc_container_env_build(const struct extc_cenv_in *in, struct extc_cenv_list *out)
{
	enum extc_cenv_result bind = add_binds(in, out);
	enum extc_cenv_result rv;

	if (bind == EXTC_CENV_NO_MEMORY)
		return (bind);
	rv = add_runtime_vars(in, out);
	return (rv == EXTC_CENV_OK ? bind : rv);
}
