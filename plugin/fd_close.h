/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: closing inherited descriptors in a forked child. */
#ifndef EXTC_FD_CLOSE_H_
#define EXTC_FD_CLOSE_H_

/* close_range(2) without flags, or -1 with ENOSYS on a kernel before 5.9 or under a seccomp filter. */
int extc_close_range(unsigned int first, unsigned int last);

#endif /* EXTC_FD_CLOSE_H_ */
