#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Make N empty files under DIR, 1000 per directory (d000/f0000 ...), fast.

Run by benchmark 3 as the job's user inside a step: the job's cache tree.
Empty files, so that removing them afterwards costs no block freeing.
"""
import os
import sys

top, n = sys.argv[1], int(sys.argv[2])
made = d = 0
while made < n:
    p = os.path.join(top, "d%03d" % d)
    os.mkdir(p)
    fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
    k = min(1000, n - made)
    for i in range(k):
        os.close(os.open("f%04d" % i, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.close(fd)
    made += k
    d += 1
