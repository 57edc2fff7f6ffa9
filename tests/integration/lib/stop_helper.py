# SPDX-License-Identifier: GPL-2.0-or-later
# stop_helper.py SLURMD_PID UID NAME SECONDS: stop (SIGSTOP) the first
# process of real uid UID named NAME (its comm) in the mount namespace of
# SLURMD_PID (one lab node), and print its pid and its stat line; exit 1
# if none came within SECONDS. Run as root: the node's namespace keeps it
# off the processes of other labs on the machine with users of the same uid.
import os
import signal
import sys
import time

anchor, uid, name, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
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
        sys.exit(0)
    time.sleep(0.0005)
sys.exit(1)
