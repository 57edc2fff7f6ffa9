/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: torch extension completeness: did ninja finish a file, is a directory a finished build. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fdio.h"
#include "warm/warm_names.h"
#include "warm/warm_ninja.h"

#define NS_PER_MS 1000000ULL
#define SLACK_NS 1000000000ULL	/* filesystem timestamp granularity and clock steps */

struct entry {
	bool found;
	uint64_t start_ms, end_ms, mtime_ns;
};

/* Parse an unsigned decimal field ending at a tab; NULL if malformed. */
static const char *field_u64(const char *p, uint64_t *out)
{
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return (NULL);
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return (NULL);
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	return (*p == '\t' ? p + 1 : NULL);
}

/* One log line "start\tend\tmtime\toutput\thash": a later entry for 'output' replaces an earlier. */
static void parse_line(const char *line, size_t len, const char *output, struct entry *e)
{
	struct entry cand = { .found = true };
	size_t outlen = strlen(output);
	const char *p = line;

	if (len == 0 || line[0] == '#')
		return;
	if ((p = field_u64(p, &cand.start_ms)) == NULL || (p = field_u64(p, &cand.end_ms)) == NULL ||
	    (p = field_u64(p, &cand.mtime_ns)) == NULL)
		return;
	if ((size_t)(line + len - p) <= outlen || strncmp(p, output, outlen) != 0 || p[outlen] != '\t')
		return;
	*e = cand;
}

static bool read_log(int dirfd, char **text, size_t *len)
{
	int fd = openat(dirfd, EXTC_NINJA_LOG, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat sb;
	size_t got = 0;
	bool ok = false;

	*text = NULL;
	if (fd < 0)
		return (false);
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > EXTC_NINJA_LOG_MAX)
		goto out;
	*text = malloc((size_t)sb.st_size + 1);
	if (*text == NULL)
		goto out;
	while (got < (size_t)sb.st_size) {
		ssize_t n = read(fd, *text + got, (size_t)sb.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	*len = got;
	ok = true;
out:
	close(fd);
	return (ok);
}

enum extc_ninja_verdict extc_ninja_built(int dirfd, const char *output, const struct stat *sb)
{
	struct entry e = { .found = false };
	uint64_t mtime, window;
	size_t len = 0, i, start = 0;
	char *text;

	if (!read_log(dirfd, &text, &len)) {
		free(text);
		return (EXTC_NINJA_NO_LOG);
	}
	for (i = 0; i <= len; i++) {
		if (i == len || text[i] == '\n') {
			parse_line(text + start, i - start, output, &e);
			start = i + 1;
		}
	}
	free(text);
	if (!e.found || e.end_ms < e.start_ms)
		return (EXTC_NINJA_NOT_BUILT);
	mtime = (uint64_t)sb->st_mtim.tv_sec * 1000000000ULL + (uint64_t)sb->st_mtim.tv_nsec;
	window = (e.end_ms - e.start_ms) * NS_PER_MS + SLACK_NS;
	if (mtime < e.mtime_ns || mtime - e.mtime_ns > window)
		return (EXTC_NINJA_NOT_BUILT);
	return (EXTC_NINJA_BUILT);
}

/*
 * A torch extension directory is complete when every .so in it is one that
 * ninja's log says a finished command left. Without a log, it is complete
 * when no builder holds (or, killed, left) its lock. The lock alone decides
 * nothing where the log exists: torch 2.14 keeps the file for good (it
 * holds an OS lock on it: torch/utils/cpp_extension.py, FileLock), while
 * 1.13 and 2.6 remove it after a build (FileBaton). Without build.ninja, a
 * .so or a lock it is no extension directory at all.
 */
enum extc_ext_state extc_warm_ninja_ext_state(int dirfd)
{
	bool so = false, so_unfinished = false, lock = false, ninja = false, no_log = false;
	struct dirent *de;
	DIR *d = extc_fdio_opendir(dirfd);

	if (d == NULL)
		return (EXTC_EXT_INCOMPLETE);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		struct stat sb;

		if (strcmp(de->d_name, EXTC_WARM_LOCK_NAME) == 0) {
			lock = true;
		} else if (strcmp(de->d_name, "build.ninja") == 0) {
			ninja = true;
		} else if (len > 3 && strcmp(de->d_name + len - 3, ".so") == 0 &&
			   fstatat(dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
			   S_ISREG(sb.st_mode) && sb.st_size > 0) {
			enum extc_ninja_verdict v = extc_ninja_built(dirfd, de->d_name, &sb);

			so = true;
			so_unfinished |= (v == EXTC_NINJA_NOT_BUILT);
			no_log |= (v == EXTC_NINJA_NO_LOG);
		}
	}
	closedir(d);
	if (!so && !lock && !ninja)
		return (EXTC_EXT_NONE);
	if (!so || so_unfinished)
		return (EXTC_EXT_INCOMPLETE);
	return (no_log && lock ? EXTC_EXT_INCOMPLETE : EXTC_EXT_COMPLETE);
}

/* torch names the level it adds when TORCH_EXTENSIONS_DIR is unset "py<major><minor>_<cpu|cuNNN>". */
bool extc_warm_ninja_is_pyver_group(const char *name)
{
	size_t i = 2;

	if (strncmp(name, "py", 2) != 0 || name[2] < '0' || name[2] > '9')
		return (false);
	while (name[i] >= '0' && name[i] <= '9')
		i++;
	return (name[i] == '_' && name[i + 1] != '\0');
}
