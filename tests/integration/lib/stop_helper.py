# SPDX-License-Identifier: GPL-2.0-or-later
# stop_helper.py SLURMD_PID UID NAME SECONDS [COUNT]: stop (SIGSTOP) the
# first process of real uid UID named NAME (its comm) in the mount
# namespace of SLURMD_PID (one lab node), and print its pid and its stat
# line; exit 1 if none came within SECONDS. With COUNT, go on stopping
# each new one as it appears, printing the same two lines for each, until
# COUNT were stopped or SECONDS have passed (exit 1 if none was). Run as
# root: the node's namespace keeps it off the processes of other labs on
# the machine with users of the same uid.
import os
import signal
import sys
import time

anchor, uid, name, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
count = int(sys.argv[5]) if len(sys.argv) > 5 else 1
stopped = set()
ns = os.readlink("/proc/%s/ns/mnt" % anchor)


def real_uid(pid):
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return line.split()[1]
    return ""


deadline = time.monotonic() + limit
while time.monotonic() < deadline:
    for p in filter(str.isdigit, os.listdir("/proc")):
        if p in stopped:
            continue
        try:
            with open("/proc/%s/comm" % p) as f:
                if f.read().strip() != name:
                    continue
            if real_uid(p) != uid or os.readlink("/proc/%s/ns/mnt" % p) != ns:
                continue
            os.kill(int(p), signal.SIGSTOP)
            with open("/proc/%s/stat" % p) as f:
                stat = f.read().strip()
        except OSError:
            continue
        print(p, flush=True)
        print("stat", stat, flush=True)
        stopped.add(p)
        if len(stopped) >= count:
            sys.exit(0)
    time.sleep(0.0005)
sys.exit(0 if stopped else 1)
