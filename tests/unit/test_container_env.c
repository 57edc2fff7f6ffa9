/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache unit tests: container_env.h and container_envfile.h (the cache in containers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/container_env.h"
#include "container/container_envfile.h"
#include "strassert.h"

#define BASE "/tmp/ext-cache/"
#define LEAF BASE "alice/42/step-0"
#define UNREADABLE "\x01unreadable"	/* the fake job environment's mark for a value too long */

/* The job's environment as the fake lookup sees it: name=value strings, NULL-terminated. */
struct job_env {
	const char *const *vars;
};

static enum extc_cenv_lookup fake_lookup(void *ctx, const char *name, const char **value)
{
	const struct job_env *env = ctx;
	size_t len = strlen(name), i;

	for (i = 0; env->vars != NULL && env->vars[i] != NULL; i++) {
		const char *v = env->vars[i];

		if (strncmp(v, name, len) != 0 || v[len] != '=')
			continue;
		if (strcmp(v + len + 1, UNREADABLE) == 0)
			return (EXTC_CENV_UNREADABLE);
		*value = v + len + 1;
		return (v[len + 1] == '\0' ? EXTC_CENV_UNSET : EXTC_CENV_SET);
	}
	return (EXTC_CENV_UNSET);
}

static const struct extc_cenv_var vars[] = {
	{ "TORCH_EXTENSIONS_DIR", "torch_extensions" },
	{ "TRITON_CACHE_DIR", "triton" },
};

static struct extc_cenv_in input(const char *leaf, struct job_env *env)
{
	return ((struct extc_cenv_in){
		.leaf = leaf, .managed_prefix = BASE, .mode_name = "local",
		.vars = vars, .nvars = 2, .lookup = fake_lookup, .lookup_ctx = env,
	});
}

/* The value the list exports for 'name', or NULL. */
static const struct extc_cenv_pair *find(const struct extc_cenv_list *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->npairs; i++) {
		if (strcmp(l->pairs[i].name, name) == 0)
			return (&l->pairs[i]);
	}
	return (NULL);
}

static const char *value_of(const struct extc_cenv_list *l, const char *name)
{
	const struct extc_cenv_pair *p = find(l, name);

	return (p == NULL ? NULL : p->value);
}

/* Build for a job environment; check the result code. */
static void build(const char *leaf, const char *const *job, enum extc_cenv_result want,
		  struct extc_cenv_list *out)
{
	struct job_env env = { job };
	struct extc_cenv_in in = input(leaf, &env);

	memset(out, 0, sizeof(*out));
	assert_int_equal(extc_container_env_build(&in, out), want);
}

static void expect_binds(const char *const *job, const char *app, const char *sing)
{
	struct extc_cenv_list l;

	build(LEAF, job, EXTC_CENV_OK, &l);
	assert_string_equal(value_of(&l, "APPTAINER_BIND"), app);
	assert_string_equal(value_of(&l, "SINGULARITY_BIND"), sing);
	extc_container_env_list_free(&l);
}

static void test_bind_unset_is_the_leaf(void **state)
{
	const char *const job[] = { NULL };
	const char *const empty[] = { "APPTAINER_BIND=", "SINGULARITY_BIND=", NULL };

	(void)state;
	expect_binds(job, LEAF, LEAF);
	expect_binds(empty, LEAF, LEAF);
}

static void test_bind_appends_to_the_job_list(void **state)
{
	const char *const job[] = { "APPTAINER_BIND=/data,/scratch:/s:ro", NULL };

	(void)state;
	expect_binds(job, "/data,/scratch:/s:ro," LEAF, "/data,/scratch:/s:ro," LEAF);
}

static void test_bind_singularity_alone_is_followed(void **state)
{
	const char *const job[] = { "SINGULARITY_BIND=/proj", NULL };

	(void)state;
	/* Apptainer reads SINGULARITY_BIND when APPTAINER_BIND is unset: both agree on it */
	expect_binds(job, "/proj," LEAF, "/proj," LEAF);
}

static void test_bind_both_same(void **state)
{
	const char *const job[] = { "APPTAINER_BIND=/a", "SINGULARITY_BIND=/a", NULL };

	(void)state;
	expect_binds(job, "/a," LEAF, "/a," LEAF);
}

static void test_bind_both_different_each_appended(void **state)
{
	const char *const job[] = { "APPTAINER_BIND=/a", "SINGULARITY_BIND=/b", NULL };

	(void)state;
	expect_binds(job, "/a," LEAF, "/b," LEAF);
}

static void test_bind_drops_an_enclosing_leaf(void **state)
{
	const char *const job[] = {
		"APPTAINER_BIND=/a," BASE "alice/42/batch,/b," BASE "x:/inside",
		"SINGULARITY_BIND=/a," BASE "alice/42/batch,/b," BASE "x:/inside", NULL,
	};

	(void)state;
	/* a bare path under the base is a leaf this plugin appended; src:dst is the user's */
	expect_binds(job, "/a,/b," BASE "x:/inside," LEAF, "/a,/b," BASE "x:/inside," LEAF);
}

static void test_bind_records_the_job_values(void **state)
{
	const char *const job[] = { "APPTAINER_BIND=/a", NULL };
	struct extc_cenv_list l;

	(void)state;
	build(LEAF, job, EXTC_CENV_OK, &l);
	assert_string_equal(find(&l, "APPTAINER_BIND")->was, "/a");
	assert_null(find(&l, "SINGULARITY_BIND")->was);
	extc_container_env_list_free(&l);
}

static void expect_no_bind(const char *leaf, const char *const *job, enum extc_cenv_result want)
{
	struct extc_cenv_list l;

	build(leaf, job, want, &l);
	assert_null(value_of(&l, "APPTAINER_BIND"));
	assert_null(value_of(&l, "SINGULARITY_BIND"));
	/* the variables still go in: Apptainer's default binds of /tmp reach them */
	assert_non_null(value_of(&l, "APPTAINERENV_TORCH_EXTENSIONS_DIR"));
	extc_container_env_list_free(&l);
}

static void test_bind_leaf_unbindable(void **state)
{
	const char *const job[] = { NULL };

	(void)state;
	expect_no_bind(BASE "a,b/step-0", job, EXTC_CENV_LEAF_UNBINDABLE);
	expect_no_bind(BASE "a:b/step-0", job, EXTC_CENV_LEAF_UNBINDABLE);
	expect_no_bind(BASE "a^b/step-0", job, EXTC_CENV_LEAF_UNBINDABLE);
	expect_no_bind(BASE "a\\b/step-0", job, EXTC_CENV_LEAF_UNBINDABLE);
}

static void test_bind_unreadable_is_never_replaced(void **state)
{
	const char *const app[] = { "APPTAINER_BIND=" UNREADABLE, NULL };
	const char *const sing[] = { "SINGULARITY_BIND=" UNREADABLE, NULL };

	(void)state;
	expect_no_bind(LEAF, app, EXTC_CENV_BIND_UNREADABLE);
	expect_no_bind(LEAF, sing, EXTC_CENV_BIND_UNREADABLE);
}

static void test_env_points_into_the_container_subtree(void **state)
{
	const char *const job[] = { NULL };
	struct extc_cenv_list l;

	(void)state;
	build(LEAF, job, EXTC_CENV_OK, &l);
	assert_string_equal(value_of(&l, "APPTAINERENV_TORCH_EXTENSIONS_DIR"),
			    LEAF "/container/torch_extensions");
	assert_string_equal(value_of(&l, "SINGULARITYENV_TORCH_EXTENSIONS_DIR"),
			    LEAF "/container/torch_extensions");
	assert_string_equal(value_of(&l, "APPTAINERENV_TRITON_CACHE_DIR"), LEAF "/container/triton");
	assert_string_equal(value_of(&l, "SINGULARITYENV_TRITON_CACHE_DIR"), LEAF "/container/triton");
	/* 2 binds, 2 variables and the plugin's own 2, each under both prefixes */
	assert_int_equal(l.npairs, 2 + 2 * 4);
	extc_container_env_list_free(&l);
}

static void test_env_keeps_the_plugin_values(void **state)
{
	const char *const job[] = { "APPTAINERENV_SLURM_EXT_CACHE_DIR=/mine", NULL };
	struct extc_cenv_list l;

	(void)state;
	build(LEAF, job, EXTC_CENV_OK, &l);
	assert_string_equal(value_of(&l, "APPTAINERENV_SLURM_EXT_CACHE_DIR"), LEAF);
	assert_string_equal(value_of(&l, "SINGULARITYENV_SLURM_EXT_CACHE_DIR"), LEAF);
	assert_string_equal(value_of(&l, "APPTAINERENV_SLURM_EXT_CACHE_MODE"), "local");
	assert_string_equal(value_of(&l, "SINGULARITYENV_SLURM_EXT_CACHE_MODE"), "local");
	assert_string_equal(find(&l, "APPTAINERENV_SLURM_EXT_CACHE_DIR")->was, "/mine");
	extc_container_env_list_free(&l);
}

static void expect_user_kept(const char *const *job)
{
	struct extc_cenv_list l;

	build(LEAF, job, EXTC_CENV_OK, &l);
	assert_null(value_of(&l, "APPTAINERENV_TORCH_EXTENSIONS_DIR"));
	assert_null(value_of(&l, "SINGULARITYENV_TORCH_EXTENSIONS_DIR"));
	assert_non_null(value_of(&l, "APPTAINERENV_TRITON_CACHE_DIR"));
	assert_non_null(value_of(&l, "SINGULARITYENV_TRITON_CACHE_DIR"));
	extc_container_env_list_free(&l);
}

static void test_env_user_choice_kept(void **state)
{
	const char *const app[] = { "APPTAINERENV_TORCH_EXTENSIONS_DIR=/home/alice/te", NULL };
	const char *const sing[] = { "SINGULARITYENV_TORCH_EXTENSIONS_DIR=/home/alice/te", NULL };
	const char *const unreadable[] = { "APPTAINERENV_TORCH_EXTENSIONS_DIR=" UNREADABLE, NULL };

	(void)state;
	expect_user_kept(app);
	expect_user_kept(sing);
	expect_user_kept(unreadable);
}

static void test_env_enclosing_step_value_replaced(void **state)
{
	const char *const job[] = {
		"APPTAINERENV_TORCH_EXTENSIONS_DIR=" BASE "alice/42/batch/container/torch_extensions",
		"SINGULARITYENV_TORCH_EXTENSIONS_DIR=", NULL,
	};
	struct extc_cenv_list l;

	(void)state;
	build(LEAF, job, EXTC_CENV_OK, &l);
	assert_string_equal(value_of(&l, "APPTAINERENV_TORCH_EXTENSIONS_DIR"),
			    LEAF "/container/torch_extensions");
	assert_string_equal(find(&l, "APPTAINERENV_TORCH_EXTENSIONS_DIR")->was,
			    BASE "alice/42/batch/container/torch_extensions");
	extc_container_env_list_free(&l);
}

static void test_inside_lines(void **state)
{
	struct job_env env = { NULL };
	struct extc_cenv_in in = input(LEAF, &env);
	struct extc_cenv_list l = { 0 };

	(void)state;
	assert_int_equal(extc_container_env_inside(&in, &l), EXTC_CENV_OK);
	assert_int_equal(l.npairs, 4);
	assert_string_equal(value_of(&l, "TORCH_EXTENSIONS_DIR"), LEAF "/container/torch_extensions");
	assert_string_equal(value_of(&l, "TRITON_CACHE_DIR"), LEAF "/container/triton");
	assert_string_equal(value_of(&l, "SLURM_EXT_CACHE_DIR"), LEAF);
	assert_string_equal(value_of(&l, "SLURM_EXT_CACHE_MODE"), "local");
	extc_container_env_list_free(&l);
}

/* ---- the env file ---------------------------------------------------------------------- */

struct leafdir {
	char path[PATH_MAX];
	int fd;
};

static int leaf_setup(void **state)
{
	struct leafdir *d = calloc(1, sizeof(*d));
	const char *tmp = getenv("TMPDIR");

	if (d == NULL)
		return (-1);
	snprintf(d->path, sizeof(d->path), "%s/extc-envfile-XXXXXX", tmp ? tmp : "/tmp");
	if (mkdtemp(d->path) == NULL)
		return (-1);
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY);
	*state = d;
	return (d->fd < 0 ? -1 : 0);
}

static int leaf_teardown(void **state)
{
	struct leafdir *d = *state;
	char cmd[PATH_MAX + 32];

	close(d->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	if (system(cmd) != 0)
		return (-1);
	free(d);
	return (0);
}

static void read_at(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
}

static struct extc_cenv_list lines_of(const char *value)
{
	struct extc_cenv_list l = { 0 };
	struct job_env env = { NULL };
	struct extc_cenv_in in = input(value, &env);

	assert_int_equal(extc_container_env_inside(&in, &l), EXTC_CENV_OK);
	return (l);
}

/* How many names a directory holds, . and .. aside. */
static int count_entries(const char *path)
{
	struct dirent *de;
	DIR *d = opendir(path);
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return (n);
}

static void test_envfile_written(void **state)
{
	struct leafdir *d = *state;
	struct extc_cenv_list l = lines_of(LEAF);
	char why[256] = "", buf[1024], sub[PATH_MAX + 16];
	struct stat sb;

	assert_int_equal(extc_container_envfile_write(d->fd, &l, why, sizeof(why)), EXTC_ENVFILE_WRITTEN);
	read_at(d->fd, "container/env", buf, sizeof(buf));
	assert_string_equal(buf, "TORCH_EXTENSIONS_DIR=" LEAF "/container/torch_extensions\n"
			    "TRITON_CACHE_DIR=" LEAF "/container/triton\n"
			    "SLURM_EXT_CACHE_DIR=" LEAF "\nSLURM_EXT_CACHE_MODE=local\n");
	assert_int_equal(fstatat(d->fd, "container", &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(sb.st_mode));
	/* written again over the first, and no temporary name left beside it */
	assert_int_equal(extc_container_envfile_write(d->fd, &l, why, sizeof(why)), EXTC_ENVFILE_WRITTEN);
	snprintf(sub, sizeof(sub), "%s/container", d->path);
	assert_int_equal(count_entries(sub), 1);
	extc_container_env_list_free(&l);
}

static void test_envfile_never_follows_a_link(void **state)
{
	struct leafdir *d = *state;
	struct extc_cenv_list l = lines_of(LEAF);
	char why[256] = "", buf[256];

	assert_int_equal(mkdirat(d->fd, "elsewhere", 0700), 0);
	assert_int_equal(symlinkat("elsewhere", d->fd, "container"), 0);
	assert_int_equal(extc_container_envfile_write(d->fd, &l, why, sizeof(why)), EXTC_ENVFILE_IO);
	assert_contains(why, "container");
	assert_int_equal(faccessat(d->fd, "elsewhere/env", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	/* a link named env is replaced, its target untouched */
	assert_int_equal(unlinkat(d->fd, "container", 0), 0);
	assert_int_equal(mkdirat(d->fd, "container", 0700), 0);
	assert_int_equal(symlinkat("../elsewhere/target", d->fd, "container/env"), 0);
	assert_int_equal(extc_container_envfile_write(d->fd, &l, why, sizeof(why)), EXTC_ENVFILE_WRITTEN);
	assert_int_equal(faccessat(d->fd, "elsewhere/target", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	read_at(d->fd, "container/env", buf, sizeof(buf));
	assert_starts_with(buf, "TORCH_EXTENSIONS_DIR=");
	extc_container_env_list_free(&l);
}

static void expect_bad_line(int leaffd, const char *leaf)
{
	struct extc_cenv_list l = lines_of(leaf);
	char why[256] = "";

	assert_int_equal(extc_container_envfile_write(leaffd, &l, why, sizeof(why)), EXTC_ENVFILE_BAD_LINE);
	assert_contains(why, "TORCH_EXTENSIONS_DIR");
	assert_int_equal(faccessat(leaffd, "container", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	extc_container_env_list_free(&l);
}

static void test_envfile_refuses_what_a_reader_would_change(void **state)
{
	struct leafdir *d = *state;

	expect_bad_line(d->fd, BASE "a\nB=c/step-0");	/* a second line */
	expect_bad_line(d->fd, BASE "$HOME/step-0");	/* ch-run expands $ items */
	expect_bad_line(d->fd, "'" BASE "x'");		/* ch-run strips single quotes */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bind_unset_is_the_leaf),
		cmocka_unit_test(test_bind_appends_to_the_job_list),
		cmocka_unit_test(test_bind_singularity_alone_is_followed),
		cmocka_unit_test(test_bind_both_same),
		cmocka_unit_test(test_bind_both_different_each_appended),
		cmocka_unit_test(test_bind_drops_an_enclosing_leaf),
		cmocka_unit_test(test_bind_records_the_job_values),
		cmocka_unit_test(test_bind_leaf_unbindable),
		cmocka_unit_test(test_bind_unreadable_is_never_replaced),
		cmocka_unit_test(test_env_points_into_the_container_subtree),
		cmocka_unit_test(test_env_keeps_the_plugin_values),
		cmocka_unit_test(test_env_user_choice_kept),
		cmocka_unit_test(test_env_enclosing_step_value_replaced),
		cmocka_unit_test(test_inside_lines),
		cmocka_unit_test_setup_teardown(test_envfile_written, leaf_setup, leaf_teardown),
		cmocka_unit_test_setup_teardown(test_envfile_never_follows_a_link, leaf_setup,
						leaf_teardown),
		cmocka_unit_test_setup_teardown(test_envfile_refuses_what_a_reader_would_change,
						leaf_setup, leaf_teardown),
	};

	return (cmocka_run_group_tests_name("container_env", tests, NULL, NULL));
}
