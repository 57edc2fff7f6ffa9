/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a copy's bytes (reflink, in-kernel, read/write) and sizes in words. */
#include <errno.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/text.h"
#include "warm/warm_data.h"

void extc_warm_data_size_text(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		extc_fmt(buf, len, "%llu bytes", (unsigned long long)bytes);
	else
		extc_fmt(buf, len, "%.1f %s (%llu bytes)", v, units[u], (unsigned long long)bytes);
}

static bool room_for(uint64_t max_bytes, uint64_t bytes, uint64_t more)
{
	return (max_bytes == 0 || bytes + more <= max_bytes);
}

static enum extc_data_result failed(const char **what, const char *call)
{
	*what = call;
	return (EXTC_DATA_FAILED);
}

enum extc_data_result extc_warm_data_copy(int sfd, int dfd, char *buf, size_t buflen,
					  uint64_t max_bytes, uint64_t *bytes, const char **what)
{
	bool kernel = true;
	struct stat sb;
	ssize_t n;

	if (ioctl(dfd, FICLONE, sfd) == 0) {
		if (fstat(dfd, &sb) < 0)
			return (failed(what, "cannot stat the copy"));
		if (!room_for(max_bytes, *bytes, (uint64_t)sb.st_size))
			return (EXTC_DATA_TOO_BIG);
		*bytes += (uint64_t)sb.st_size;
		return (EXTC_DATA_COPIED);
	}
	for (;;) {
		if (kernel) {
			n = copy_file_range(sfd, NULL, dfd, NULL, 1u << 30, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
				      errno == EOPNOTSUPP || errno == EBADF)) {
				kernel = false;
				continue;
			}
		} else {
			n = read(sfd, buf, buflen);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return (failed(what, "cannot copy"));
		if (n == 0)
			return (EXTC_DATA_COPIED);
		if (!room_for(max_bytes, *bytes, (uint64_t)n))
			return (EXTC_DATA_TOO_BIG);
		if (!kernel && extc_fdio_write_all(dfd, buf, (size_t)n) < 0)
			return (failed(what, "cannot write"));
		*bytes += (uint64_t)n;
	}
}
