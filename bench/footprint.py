#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""spank-ext-cache benchmark 4: slurmstepd footprint across sequential steps.

Runs as root next to a batch job (bench/run.sh submits it) whose steps
alternate between the plugin loaded (`srun --ext-cache=local`) and not
loaded (empty plugstack.conf). Each step's task reports its slurmstepd's pid
through a FIFO and waits; this sampler then reads that slurmstepd's RSS and
open descriptors (and those of slurmd and of the job's long-lived batch
slurmstepd), switches plugstack.conf for the next step, and lets the task go.
So every sample is taken at the same point of a step, and the two kinds of
steps interleave one by one.

  footprint.py DIR STEPS PLUGSTACK PLUGIN_LINE SLURMD_PID OUT.tsv

DIR: a root-owned directory the user can reach (FIFOs req, ack; file next).
"""
import os
import sys
import time


def status(pid):
    """VmRSS (kB), threads and open descriptors of a process."""
    rss = threads = -1
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    fds = len(os.listdir("/proc/%d/fd" % pid))
    return rss, fds, threads


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def write_atomic(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


def main():
    d, steps, plugstack, plugin_line, slurmd, out = sys.argv[1:7]
    steps, slurmd = int(steps), int(slurmd)
    req, ack, nxt = (os.path.join(d, n) for n in ("req", "ack", "next"))
    for fifo in (req, ack):
        if os.path.exists(fifo):
            os.unlink(fifo)
        os.mkfifo(fifo)
        os.chmod(fifo, 0o666)
    modes = ("plugin", "none")

    def set_mode(mode):
        write_atomic(plugstack, plugin_line + "\n" if mode == "plugin" else "")
        write_atomic(nxt, mode + "\n")

    set_mode(modes[0])
    rfd = os.open(req, os.O_RDWR)  # never sees EOF between writers
    rf = os.fdopen(rfd, "r")
    batch = None
    n = 0
    with open(out, "w") as o:
        o.write("i\tmode\tstep\tgot\tstepd_rss_kb\tstepd_fds\tstepd_threads\t"
                "slurmd_rss_kb\tslurmd_fds\tbatch_rss_kb\tbatch_fds\n")
        while n < 2 * steps:
            line = rf.readline().split()
            if not line:
                continue
            if line[0] == "batch":
                batch = int(line[1])
            elif line[0] == "step":
                step, ppid, got = line[1], int(line[2]), line[3]
                cmd = cmdline(ppid)
                if not cmd.startswith("slurmstepd: [") or not cmd.endswith(".%s]" % step):
                    sys.exit("footprint: pid %d is not step %s's slurmstepd: %r" % (ppid, step, cmd))
                mode = modes[n % 2]
                s_rss, s_fds, s_thr = status(ppid)
                d_rss, d_fds, _ = status(slurmd)
                b_rss, b_fds, _ = status(batch) if batch else (-1, -1, -1)
                o.write("%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n" % (
                    n, mode, step, got, s_rss, s_fds, s_thr, d_rss, d_fds, b_rss, b_fds))
                n += 1
                set_mode(modes[n % 2])
            with open(ack, "w") as a:
                a.write("ok\n")
    write_atomic(nxt, "stop\n")


if __name__ == "__main__":
    main()
