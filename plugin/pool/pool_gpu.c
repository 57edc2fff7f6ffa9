/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the node's GPU architectures, for the node pool's key.
 *
 * The key names what builds depend on. A compiled GPU kernel (a torch
 * extension's, Triton's, Inductor's) targets the architectures of the GPUs
 * it was built on, so these are part of what a build is for, as the CPU's
 * instruction set is. What is read is each GPU's model (NVIDIA) or
 * gfx target (AMD), never how many there are: a node with 4 A100 and one
 * with 8 A100 share a key. CUDA_VISIBLE_DEVICES is not read: a step's
 * builds target the node's GPUs whichever of them the step was given, and
 * a user who compiles for a chosen list says so in TORCH_CUDA_ARCH_LIST,
 * which is one of the key's variables (pool_key.c).
 *
 * Run as root in slurmstepd. What it opens are the kernel's and the GPU
 * driver's own files under /proc and /sys, which no user writes; they are
 * opened O_NOFOLLOW and O_NONBLOCK all the same, read only if regular
 * files, and bounded in number and size.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/text.h"
#include "pool/pool_gpu.h"

#define ENTRY_MAX (EXTC_POOL_GPU_NAME_MAX + 8)	/* "nvidia:" and a model, with its NUL */

/* The architectures found so far: room for EXTC_POOL_GPU_MAX of each vendor. */
struct archs {
	char (*v)[ENTRY_MAX];
	size_t n;
	char *buf;	/* a device file's text: EXTC_POOL_GPU_FILE_MAX bytes, one more to see it is larger, a NUL */
};

/* A device file's text into 'buf', NUL-terminated: 0, or -1 when it is to be ignored. */
static int read_device_file(const char *path, char *buf)
{
	struct stat sb;
	ssize_t got = 0;
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return (-1);
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return (-1);
	}
	/* procfs says 0 bytes and sysfs 4096 whatever they hold: what the read gives decides */
	while (n <= EXTC_POOL_GPU_FILE_MAX &&
	       (got = read(fd, buf + n, EXTC_POOL_GPU_FILE_MAX + 1 - n)) > 0)
		n += (size_t)got;
	close(fd);
	if (got < 0 || n > EXTC_POOL_GPU_FILE_MAX)
		return (-1);
	buf[n] = '\0';
	return (0);
}

static bool blank(char c)
{
	return (c == ' ' || c == '\t');
}

/*
 * The value of the first line of 'text' that is 'name', blanks, then the
 * value: without the blanks around it, printable ASCII but ';' (which
 * joins the text), shorter than 'len'. 0, or -1 when there is none such.
 */
static int line_value(const char *text, const char *name, char *out, size_t len)
{
	size_t nlen = strlen(name);
	const char *p = text;

	while (*p != '\0') {
		const char *end = strchr(p, '\n'), *v = p + nlen, *e;

		e = end != NULL ? end : p + strlen(p);
		if ((size_t)(e - p) > nlen && strncmp(p, name, nlen) == 0 && blank(*v)) {
			while (v < e && blank(*v))
				v++;
			while (e > v && (blank(e[-1]) || e[-1] == '\r'))
				e--;
			if (e == v || (size_t)(e - v) >= len)
				return (-1);
			for (p = v; p < e; p++) {
				if (*p < 0x20 || *p > 0x7e || *p == ';')
					return (-1);
			}
			memcpy(out, v, (size_t)(e - v));
			out[e - v] = '\0';
			return (0);
		}
		p = end != NULL ? end + 1 : e;
	}
	return (-1);
}

/* <proc>/driver/nvidia/gpus/<bus>/information: "Model: \t\t NVIDIA A100-SXM4-80GB". */
static int nvidia_model(const char *text, char *out, size_t len)
{
	char model[EXTC_POOL_GPU_NAME_MAX + 1];

	if (line_value(text, "Model:", model, sizeof(model)) < 0)
		return (-1);
	return (extc_fmt(out, len, "nvidia:%s", model));
}

/* <sys>/class/kfd/kfd/topology/nodes/<n>/properties: "gfx_target_version 90400"; a CPU's is 0. */
static int amd_target(const char *text, char *out, size_t len)
{
	char value[16];
	uint32_t n;

	if (line_value(text, "gfx_target_version", value, sizeof(value)) < 0 ||
	    extc_parse_u32(value, UINT32_MAX, &n) < 0 || n == 0)
		return (-1);
	return (extc_fmt(out, len, "amd:%" PRIu32, n));
}

static int by_text(const void *a, const void *b)
{
	return (strcmp((const char *)a, (const char *)b));
}

/* The entries from 'first' on, sorted, each once. */
static void sort_unique(struct archs *a, size_t first)
{
	size_t i, kept = first;

	qsort(a->v + first, a->n - first, sizeof(*a->v), by_text);
	for (i = first; i < a->n; i++) {
		if (kept > first && strcmp(a->v[kept - 1], a->v[i]) == 0)
			continue;
		if (kept != i)
			memcpy(a->v[kept], a->v[i], sizeof(*a->v));
		kept++;
	}
	a->n = kept;
}

/*
 * One vendor's devices: <dir>/<name>/<file> for the names of 'dir' in
 * sorted order, each file's text made an entry by 'parse'. A directory
 * that cannot be opened is a node without that driver. 0, or -1 when out
 * of memory.
 */
static int scan(const char *dir, const char *file, int (*parse)(const char *, char *, size_t),
		struct archs *a)
{
	char (*names)[NAME_MAX + 1], path[PATH_MAX];
	size_t n = 0, i, found = 0, first = a->n;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d == NULL)
		return (0);
	names = malloc(EXTC_POOL_GPU_LIST_MAX * sizeof(*names));
	while (names != NULL && n < EXTC_POOL_GPU_LIST_MAX && (de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.')
			memcpy(names[n++], de->d_name, strlen(de->d_name) + 1);
	}
	closedir(d);
	if (names == NULL)
		return (-1);
	qsort(names, n, sizeof(*names), by_text);
	for (i = 0; i < n && found < EXTC_POOL_GPU_MAX; i++) {
		if (extc_fmt(path, sizeof(path), "%s/%s/%s", dir, names[i], file) < 0 ||
		    read_device_file(path, a->buf) < 0 || parse(a->buf, a->v[a->n], ENTRY_MAX) < 0)
			continue;
		found++;
		a->n++;
	}
	free(names);
	sort_unique(a, first);
	return (0);
}

int extc_pool_gpu_archs(const char *proc, const char *sys, char *out, size_t len)
{
	char dir[PATH_MAX];
	struct archs a = { NULL, 0, NULL };
	size_t i, at = 0;
	int rc = -1;

	if (len == 0)
		return (-1);
	out[0] = '\0';
	if (len < EXTC_POOL_GPU_TEXT_MAX)
		return (-1);
	a.v = malloc(2 * EXTC_POOL_GPU_MAX * sizeof(*a.v));
	a.buf = malloc(EXTC_POOL_GPU_FILE_MAX + 2);
	if (a.v != NULL && a.buf != NULL &&
	    extc_fmt(dir, sizeof(dir), "%s/driver/nvidia/gpus", proc) == 0 &&
	    scan(dir, "information", nvidia_model, &a) == 0 &&
	    extc_fmt(dir, sizeof(dir), "%s/class/kfd/kfd/topology/nodes", sys) == 0 &&
	    scan(dir, "properties", amd_target, &a) == 0)
		rc = 0;
	for (i = 0; rc == 0 && i < a.n; i++) {
		size_t n = strlen(a.v[i]);

		if (i > 0)
			out[at++] = ';';
		memcpy(out + at, a.v[i], n);
		at += n;
	}
	out[at] = '\0';
	free(a.v);
	free(a.buf);
	return (rc == 0 ? (int)a.n : -1);
}
