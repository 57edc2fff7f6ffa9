/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a file's bytes into the tier or out of it, digested as they pass, within a deadline. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"
#include "tier/tier_copy.h"

enum extc_tier_copy_result extc_tier_copy_data(int sfd, int dfd, char *buf, size_t buflen,
					       uint64_t limit, uint64_t deadline_ns,
					       struct extc_digest *d, uint64_t *copied)
{
	*copied = 0;
	for (;;) {
		ssize_t n;

		if (extc_clock_past_deadline(deadline_ns))
			return (EXTC_TIER_COPY_TIMEOUT);
		n = read(sfd, buf, buflen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return (EXTC_TIER_COPY_READ_FAILED);
		if (n == 0)
			return (EXTC_TIER_COPY_DONE);
		if ((uint64_t)n > limit - *copied)
			return (EXTC_TIER_COPY_LONGER);
		extc_digest_update(d, buf, (size_t)n);
		if (extc_fdio_write_all(dfd, buf, (size_t)n) < 0)
			return (EXTC_TIER_COPY_WRITE_FAILED);
		*copied += (uint64_t)n;
	}
}

const char *extc_tier_copy_write_error(int err)
{
	if (err == ENOSPC)
		return ("the filesystem is full");
	if (err == EDQUOT)
		return ("the user is over quota");
	return (strerror(err));
}
