/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool's key: which earlier builds a step may start from. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash.h"
#include "pool/pool_key.h"
#include "base/text.h"

const char *const extc_pool_key_vars[EXTC_POOL_KEY_NVARS + 1] = {
	/* which Python and which packages */
	"VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PATH", "PYTHONPATH", "PYTHONHOME",
	"PYTHONUSERBASE", "PYTHONNOUSERSITE",
	/* what compiles and links the builds */
	"LD_LIBRARY_PATH", "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CUDA_HOME", "CUDA_PATH",
	"ROCM_PATH", "TORCH_CUDA_ARCH_LIST",
	/* the container a job runs in */
	"SINGULARITY_CONTAINER", "APPTAINER_CONTAINER", "SLURM_CONTAINER", "ENROOT_ROOTFS",
	NULL,
};

int extc_pool_key_var_index(const char *name)
{
	int i;

	for (i = 0; extc_pool_key_vars[i] != NULL; i++) {
		if (strcmp(extc_pool_key_vars[i], name) == 0)
			return (i);
	}
	return (-1);
}

/* A field and its end, so that ("ab", "c") and ("a", "bc") differ. */
static void hash_field(struct extc_hash_pair *h, const char *s)
{
	static const unsigned char unset = 0xff, end = 0;

	if (s == NULL)
		extc_hash_pair_bytes(h, &unset, 1);
	else
		extc_hash_pair_bytes(h, s, strlen(s) + 1);
	extc_hash_pair_bytes(h, &end, 1);
}

int extc_pool_key(const struct extc_pool_key_in *in, char *out, size_t len)
{
	struct extc_hash_pair h;

	extc_hash_pair_init(&h);
	extc_hash_pair_bytes(&h, &(unsigned char){ EXTC_POOL_KEY_VERSION }, 1);
	hash_field(&h, in->container != NULL ? "container" : "host");
	hash_field(&h, in->container);
	if (in->user_key != NULL) {
		hash_field(&h, "user-key");
		hash_field(&h, in->user_key);
	} else {
		size_t i;

		hash_field(&h, "derived");
		for (i = 0; extc_pool_key_vars[i] != NULL; i++)
			hash_field(&h, in->values != NULL ? in->values[i] : NULL);
		hash_field(&h, in->install);
	}
	hash_field(&h, in->arch);
	hash_field(&h, in->isa);
	hash_field(&h, in->gpus);
	return (extc_fmt(out, len, "%016llx%016llx", (unsigned long long)h.a,
			 (unsigned long long)h.b));
}

int extc_pool_key_name_ok(const char *name)
{
	size_t i;

	for (i = 0; i < EXTC_POOL_KEY_LEN; i++) {
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return (0);
	}
	return (name[i] == '\0');
}

/*
 * What 'path' is (followed, as the user's own tools would), or its
 * absence: its size and modification time, and a link's target. Never its
 * device or inode number, which differ between nodes for the same files
 * (a venv on NFS, each node's own copy of a node image).
 */
static void hash_file(struct extc_hash_pair *h, const char *path, bool follow)
{
	char target[PATH_MAX];
	struct stat sb;
	uint64_t v[3] = { 0 };
	ssize_t n;

	hash_field(h, path);
	if ((follow ? stat(path, &sb) : lstat(path, &sb)) == 0) {
		v[0] = (uint64_t)sb.st_size;
		v[1] = (uint64_t)sb.st_mtim.tv_sec;
		v[2] = (uint64_t)sb.st_mtim.tv_nsec;
	}
	extc_hash_pair_bytes(h, v, sizeof(v));
	n = !follow ? readlink(path, target, sizeof(target) - 1) : -1;
	target[n > 0 ? n : 0] = '\0';
	hash_field(h, n > 0 ? target : NULL);
}

/* A small file's text (torch's version.py, CUDA's version.json), or its absence. */
static void hash_text(struct extc_hash_pair *h, const char *path)
{
	char buf[EXTC_POOL_TEXT_MAX];
	ssize_t got;
	size_t n = 0;
	uint64_t length = UINT64_MAX;	/* absent */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	hash_field(h, path);
	while (fd >= 0 && n < sizeof(buf) && (got = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)got;
	if (fd >= 0) {
		close(fd);
		length = n;
	}
	extc_hash_pair_bytes(h, &length, sizeof(length));
	extc_hash_pair_bytes(h, buf, n);
}

static int by_name(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* Names of a directory, sorted: readdir's order differs between file systems. */
struct names {
	char **v;
	size_t n;	/* kept in v: at most the 'max' names_of was given */
	size_t total;	/* how many 'keep' accepted; SIZE_MAX: the directory cannot be read */
};

/* The names of 'dir' that 'keep' accepts, the first 'max' readdir gives kept and sorted. */
static void names_of(const char *dir, bool (*keep)(const char *), size_t max, struct names *out)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	memset(out, 0, sizeof(*out));
	out->total = d != NULL ? 0 : SIZE_MAX;
	while (d != NULL && (de = readdir(d)) != NULL) {
		if (!keep(de->d_name))
			continue;
		out->total++;
		if (out->n >= max)
			continue;
		if (out->n % 64 == 0) {	/* grown as it fills: most directories hold a few hundred */
			char **grown = realloc(out->v, (out->n + 64) * sizeof(*grown));

			if (grown == NULL)
				continue;
			out->v = grown;
		}
		if ((out->v[out->n] = strdup(de->d_name)) != NULL)
			out->n++;
	}
	if (d != NULL)
		closedir(d);
	if (out->n > 0)
		qsort(out->v, out->n, sizeof(*out->v), by_name);
}

static void names_free(struct names *nm)
{
	size_t i;

	for (i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
}

/* What an installer puts in a site directory: not __pycache__ nor dot names, which Python and editors make. */
static bool installed_name(const char *name)
{
	return (name[0] != '.' && strcmp(name, "__pycache__") != 0);
}

static bool python3_name(const char *name)
{
	return (strncmp(name, "python3", 7) == 0);
}

/*
 * The names installed in directory 'dir', sorted, or its absence: a
 * package's module, its .dist-info or .egg-info, a conda-meta record.
 * At most EXTC_POOL_LIST_MAX names; past that, the count alone.
 */
static void hash_listing(struct extc_hash_pair *h, const char *dir)
{
	struct names nm;
	uint64_t total;
	size_t i;

	names_of(dir, installed_name, EXTC_POOL_LIST_MAX, &nm);
	total = nm.total;
	hash_field(h, dir);
	extc_hash_pair_bytes(h, &total, sizeof(total));
	for (i = 0; i < nm.n; i++)
		hash_field(h, nm.v[i]);
	names_free(&nm);
}

static void hash_site(struct extc_hash_pair *h, const char *site)
{
	char path[PATH_MAX];

	hash_listing(h, site);
	if (extc_fmt(path, sizeof(path), "%s/torch/version.py", site) == 0)
		hash_text(h, path);
}

/* <prefix>/lib/python3.X/{site,dist}-packages for every python3.X there (16 at most), in name order. */
static void hash_prefix(struct extc_hash_pair *h, const char *prefix)
{
	char lib[PATH_MAX], site[PATH_MAX];
	struct names py;
	size_t i;

	if (prefix == NULL || prefix[0] != '/' || extc_fmt(lib, sizeof(lib), "%s/lib", prefix) < 0)
		return;
	if (extc_fmt(site, sizeof(site), "%s/conda-meta", prefix) == 0)
		hash_listing(h, site);
	names_of(lib, python3_name, 16, &py);
	for (i = 0; i < py.n; i++) {
		if (extc_fmt(site, sizeof(site), "%s/%s/site-packages", lib, py.v[i]) == 0)
			hash_site(h, site);
		if (extc_fmt(site, sizeof(site), "%s/%s/dist-packages", lib, py.v[i]) == 0)
			hash_site(h, site);
	}
	names_free(&py);
}

/* The first python3 on 'path': its identity, and the prefix it belongs to in 'prefix'. */
static void hash_python(struct extc_hash_pair *h, const char *path, char *prefix, size_t len)
{
	char dir[PATH_MAX], exe[PATH_MAX];
	const char *p = path, *colon;
	int tries;

	prefix[0] = '\0';
	for (tries = 0; p != NULL && *p != '\0' && tries < 64; tries++, p = colon ? colon + 1 : NULL) {
		size_t n;

		colon = strchr(p, ':');
		n = colon ? (size_t)(colon - p) : strlen(p);
		if (n == 0 || n >= sizeof(dir) || p[0] != '/')
			continue;
		memcpy(dir, p, n);
		dir[n] = '\0';
		if (extc_fmt(exe, sizeof(exe), "%s/python3", dir) < 0 || access(exe, X_OK) != 0)
			continue;
		hash_file(h, exe, false);
		hash_file(h, exe, true);
		if (n > 4 && strcmp(dir + n - 4, "/bin") == 0 && n - 4 < len) {
			memcpy(prefix, dir, n - 4);
			prefix[n - 4] = '\0';
		}
		return;
	}
	hash_field(h, "no python3");
}

int extc_pool_key_install_fp(const char *path, const char *venv, const char *conda,
			     const char *cuda_home, char *out, size_t len)
{
	char prefix[PATH_MAX], cuda[PATH_MAX];
	struct extc_hash_pair h;

	extc_hash_pair_init(&h);
	hash_python(&h, path != NULL ? path : "", prefix, sizeof(prefix));
	hash_prefix(&h, venv);
	hash_prefix(&h, conda);
	hash_prefix(&h, prefix[0] ? prefix : NULL);
	/* Debian's own Python packages */
	hash_site(&h, "/usr/lib/python3/dist-packages");
	if (extc_fmt(cuda, sizeof(cuda), "%s/version.json",
		     cuda_home != NULL && cuda_home[0] == '/' ? cuda_home : "/usr/local/cuda") == 0)
		hash_text(&h, cuda);
	return (extc_fmt(out, len, "%016llx", (unsigned long long)(h.a ^ h.b)));
}
