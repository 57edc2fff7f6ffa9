/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a copy's bytes (reflink, in-kernel, read/write) and sizes in words. */
#ifndef EXTC_WARM_DATA_H_
#define EXTC_WARM_DATA_H_

#include <stddef.h>
#include <stdint.h>

enum extc_data_result {
	EXTC_DATA_COPIED,	/* every byte, '*bytes' counted up */
	EXTC_DATA_TOO_BIG,	/* '*bytes' would pass max_bytes: the copy stopped there */
	EXTC_DATA_FAILED,	/* '*what' says which call, errno why */
};

/*
 * Copy the data of the regular file 'sfd' into the empty 'dfd': a reflink
 * where the filesystem can, else an in-kernel copy, else read/write through
 * 'buf'. The bytes copied are added to '*bytes', which may not pass
 * 'max_bytes' (0: no limit).
 */
enum extc_data_result extc_warm_data_copy(int sfd, int dfd, char *buf, size_t buflen,
					  uint64_t max_bytes, uint64_t *bytes, const char **what);

/* "1.5 GiB (1610612736 bytes)" style size for messages. */
void extc_warm_data_size_text(uint64_t bytes, char *buf, size_t len);

#endif /* EXTC_WARM_DATA_H_ */
