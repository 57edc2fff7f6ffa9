/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which container image a step runs, as far as its options and argv tell. */
#include <stdbool.h>
#include <string.h>

#include "container/container_id.h"
#include "base/text.h"

/* Runtimes whose image the parse cannot tell (or that may change under one name). */
static const char *const opaque_runtimes[] = {
	"ch-run", "podman", "docker", "enroot", "nerdctl", "runc", "crun", "shifter", "sarus",
	"udocker", "charliecloud", "ch-convert", NULL,
};

/*
 * Apptainer's and Singularity's options of exec/run/shell/test, as their
 * command line reads them (cmd/internal/cli/action_flags.go, 1.4): those
 * that take the next word as their value, and those that take none. An
 * option in neither list may take a value: the image is then unknown.
 */
static const char *const value_options[] = {
	"-B", "--bind", "-H", "--home", "-W", "--workdir", "-S", "--scratch", "-o", "--overlay",
	"--mount", "--no-mount", "--env", "--env-file", "--app", "--pwd", "--cwd", "--security",
	"--network", "--network-args", "--dns", "--hostname", "--add-caps", "--drop-caps",
	"--apply-cgroups", "--fusemount", "--pem-path", "--authfile", "--docker-host", "--cpus", "--memory", "--pids-limit", NULL,
};
static const char *const flag_options[] = {
	"-e", "--cleanenv", "-C", "--containall", "-c", "--contain", "--compat", "-w", "--writable",
	"--writable-tmpfs", "-u", "--userns", "-f", "--fakeroot", "--nv", "--rocm", "--nvccli",
	"--no-home", "--no-init", "--no-privs", "--keep-privs", "-i", "--ipc", "-p", "--pid",
	"-n", "--net", "--no-net", "--no-pid", "--boot", "--no-https", "--no-umask", "--no-eval",
	"--disable-cache", "--unsquash", "--sif-fuse", "--oci", "--no-oci", "--allow-setuid",
	"-d", "--debug", "-q", "--quiet", "-s", "--silent", "-v", "--verbose", "--nocolor",
	NULL,
};

static bool in_list(const char *const *list, const char *word)
{
	size_t i;

	for (i = 0; list[i] != NULL; i++) {
		if (strcmp(list[i], word) == 0)
			return (true);
	}
	return (false);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return (slash != NULL ? slash + 1 : path);
}

/* "@sha256:" and 64 lowercase hex digits at the end: an image no push can change. */
static bool pinned_by_digest(const char *ref)
{
	const char *at = strstr(ref, "@sha256:");
	size_t i;

	if (at == NULL || strlen(at + 8) != 64)
		return (false);
	for (i = 0; i < 64; i++) {
		char c = at[8 + i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return (false);
	}
	return (true);
}

static enum extc_ctr_kind unknown(char *spec, size_t len, const char *why)
{
	extc_fmt(spec, len, "%s", why);
	return (EXTC_CTR_UNKNOWN);
}

/* A file image's path, made absolute against the task's working directory. */
static enum extc_ctr_kind file_image(const char *path, const char *cwd, char *spec, size_t len)
{
	int rc;

	if (path[0] == '/')
		rc = extc_fmt(spec, len, "%s", path);
	else if (cwd != NULL && cwd[0] == '/')
		rc = extc_fmt(spec, len, "%s/%s", cwd, path);
	else
		return (unknown(spec, len, "a relative image path and no working directory"));
	if (rc < 0)
		return (unknown(spec, len, "an image path too long to identify"));
	return (EXTC_CTR_FILE);
}

/* A registry reference: known only when pinned by digest. */
static enum extc_ctr_kind reference(const char *ref, char *spec, size_t len)
{
	if (!pinned_by_digest(ref))
		return (unknown(spec, len, "an image named by a tag, which a push can change"));
	if (extc_fmt(spec, len, "%s", ref) < 0)
		return (unknown(spec, len, "an image reference too long to identify"));
	return (EXTC_CTR_DIGEST);
}

enum extc_ctr_kind extc_container_id_from_pyxis(const char *image, const char *name, const char *cwd,
						char *spec, size_t len)
{
	spec[0] = '\0';
	if (image == NULL || image[0] == '\0') {
		if (name != NULL && name[0] != '\0')
			return (unknown(spec, len, "a named container, which earlier steps may have changed"));
		return (EXTC_CTR_HOST);
	}
	if (name != NULL && name[0] != '\0')
		return (unknown(spec, len, "a named container, which earlier steps may have changed"));
	if (image[0] == '/' || image[0] == '.')
		return (file_image(image, cwd, spec, len));
	return (reference(image, spec, len));
}

/* Apptainer's image: the first word after the subcommand's options. */
static enum extc_ctr_kind apptainer_image(int argc, char *const *argv, const char *cwd, char *spec,
					  size_t len)
{
	int i = 1;

	/* global options (where -c is --config), then the subcommand, then its options */
	while (i < argc && argv[i][0] == '-') {
		if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
			i += 2;
			continue;
		}
		if (!in_list(flag_options, argv[i]) && strncmp(argv[i], "--config=", 9) != 0)
			return (unknown(spec, len, "an apptainer option this plugin does not know"));
		i++;
	}
	if (i >= argc || !(strcmp(argv[i], "exec") == 0 || strcmp(argv[i], "run") == 0 ||
			   strcmp(argv[i], "shell") == 0 || strcmp(argv[i], "test") == 0))
		return (unknown(spec, len, "an apptainer subcommand this plugin does not read"));
	for (i++; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (strchr(argv[i], '=') != NULL && argv[i][1] == '-')
			continue;	/* --option=value */
		if (in_list(value_options, argv[i]))
			i++;
		else if (!in_list(flag_options, argv[i]))
			return (unknown(spec, len, "an apptainer option this plugin does not know"));
	}
	if (i >= argc)
		return (unknown(spec, len, "an apptainer command without an image"));
	if (strstr(argv[i], "://") != NULL)
		return (strncmp(argv[i], "instance://", 11) == 0 ?
				unknown(spec, len, "a running apptainer instance") :
				reference(argv[i], spec, len));
	return (file_image(argv[i], cwd, spec, len));
}

enum extc_ctr_kind extc_container_id_from_argv(int argc, char *const *argv, const char *cwd, char *spec,
					       size_t len)
{
	const char *prog;

	spec[0] = '\0';
	if (argc < 1 || argv == NULL || argv[0] == NULL)
		return (EXTC_CTR_HOST);
	prog = base_name(argv[0]);
	/* the image comes before the program it runs: the words after are not read */
	if (strcmp(prog, "apptainer") == 0 || strcmp(prog, "singularity") == 0)
		return (apptainer_image(argc < EXTC_CTR_ARGV_MAX ? argc : EXTC_CTR_ARGV_MAX, argv,
					cwd, spec, len));
	if (in_list(opaque_runtimes, prog))
		return (unknown(spec, len, "a container runtime whose image this plugin cannot identify"));
	return (EXTC_CTR_HOST);
}
