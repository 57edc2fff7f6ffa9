/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a file's bytes into the tier or out of it, digested as they pass, within a deadline. */
#ifndef EXTC_TIER_COPY_H_
#define EXTC_TIER_COPY_H_

#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"

#define EXTC_TIER_COPY_BUF (256u * 1024u)	/* the read/write buffer a copy is given */

enum extc_tier_copy_result {
	EXTC_TIER_COPY_DONE,		/* every byte up to the end of 'sfd' */
	EXTC_TIER_COPY_LONGER,		/* 'sfd' holds more than 'limit' bytes */
	EXTC_TIER_COPY_READ_FAILED,	/* errno says why */
	EXTC_TIER_COPY_WRITE_FAILED,	/* errno says why (ENOSPC, EDQUOT, ...) */
	EXTC_TIER_COPY_TIMEOUT,		/* the deadline passed between two reads */
};

/*
 * Copy 'sfd' from its offset to its end into 'dfd' through 'buf' (buflen
 * bytes), each byte read once and taken into 'd' as it passes: the copy
 * and its digest come from the same read, so what is checked is what is
 * written. At most 'limit' bytes are written; one more is read to find a
 * longer file. '*copied' gets the bytes written. The deadline
 * (CLOCK_MONOTONIC ns, 0: none) is looked at before every read.
 */
enum extc_tier_copy_result extc_tier_copy_data(int sfd, int dfd, char *buf, size_t buflen,
					       uint64_t limit, uint64_t deadline_ns,
					       struct extc_digest *d, uint64_t *copied);

/* The sentence a write error gets: a full filesystem and a quota named as such. */
const char *extc_tier_copy_write_error(int err);

#endif /* EXTC_TIER_COPY_H_ */
