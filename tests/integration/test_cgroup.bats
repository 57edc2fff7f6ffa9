#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The plugin on a cluster run as sites run Slurm: proctrack/cgroup and
# task/cgroup (lib/cluster.sh with EXTC_LAB_CGROUP=1: on Debian 12's 22.05
# the cgroup/v1 plugin, cores and memory confined), three nodes.
#
# What a process started in slurmstepd's exit hook meets (measured with
# tests/integration/plugins/exit_fork.c on 22.05, cgroup/v1): it is in the
# job's freezer cgroup (slurm_nX/uid_U/job_J; slurmstepd has already left
# the step's cgroups and gone back to the root of memory and cpuset), and
# neither the step's end nor the job's kills it (proctrack's SIGKILL went
# out before the hook), but Slurm cannot remove that job cgroup while it
# lives, and leaves it behind. Work that outlives the job therefore calls
# extc_cgroup_escape (plugin/proc/cgroup_escape.c) first.
#
# Each case stands alone and restarts the cluster with what it needs; a
# case appended at the end does the same, and may use the helpers below
# (cg_job_lines, job_cgroups, catch_on_node).

load lib/itest

W=$LAB/work

setup_file() {
    export EXTC_LAB_CGROUP=1
    itest_setup_file
    grep -q '^ProctrackType=proctrack/cgroup$' "$LAB_CONF" || fail "the lab is not a cgroup lab"
    # the exit hook's detached process, with the plugin's own escape, built
    # against this release's spank.h
    gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -I"$ITEST_TOP/plugin" -o "$LAB/lib/exit_fork.so" \
        "$ITEST_DIR/plugins/exit_fork.c" "$ITEST_TOP/plugin/proc/cgroup_escape.c" "$ITEST_TOP/plugin/base/text.c" ||
        fail "exit_fork.so does not build"
    # catch_on_node's watcher: the first process in node N's mount namespace
    # that the test names (comm, or a word of its command line; names apart
    # with commas) and whose parent is neither slurmd nor a process whose
    # command line has NOT_PARENT_ARGV; prints its pid and /proc/PID/cgroup
    cat >"$W/cg_catch.py" <<'PY'
import os, sys, time
anchor, wants, not_parent, limit = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3], float(sys.argv[4])
ns = os.readlink("/proc/%d/ns/mnt" % anchor)
def read(p, what):
    try:
        with open("/proc/%s/%s" % (p, what), "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
def parent(p):
    stat = read(p, "stat")
    return stat.rsplit(")", 1)[1].split()[1] if ")" in stat else ""
deadline = time.monotonic() + limit
while time.monotonic() < deadline:
    for p in filter(str.isdigit, os.listdir("/proc")):
        name = read(p, "comm").strip()
        argv = read(p, "cmdline").replace("\0", " ")
        if not any(name == w or (" " + w + " ") in (" " + argv + " ") for w in wants):
            continue
        pp = parent(p)
        if not pp or not_parent in read(pp, "cmdline").replace("\0", " ") or pp == str(anchor):
            continue
        try:
            if os.readlink("/proc/%s/ns/mnt" % p) != ns:
                continue
        except OSError:
            continue
        cg = read(p, "cgroup")
        if cg:
            sys.stdout.write("pid %s\n%s" % (p, cg))
            sys.exit(0)
    time.sleep(0.001)
sys.exit(1)
PY
}

teardown_file() { itest_teardown_file; }

# cg_job_lines JOB TEXT: the lines of a /proc/PID/cgroup text inside job JOB's cgroups
cg_job_lines() { grep -E "/job_$1(/|$)" <<<"$2" || true; }

# job_cgroups JOB: the cgroup directories of job JOB that exist on this host
job_cgroups() { find /sys/fs/cgroup -mindepth 1 -maxdepth 5 -type d -name "job_$1" 2>/dev/null; }
no_job_cgroups() { [ -z "$(job_cgroups "$1")" ]; }

# catch_on_node OUT NODE WANT NOT_PARENT_ARGV [SECONDS=60]: start watching
# node NODE (see cg_catch.py) into OUT, in the background
catch_on_node() {
    python3 "$W/cg_catch.py" "$(cat "$LAB/run/lab-slurmd-$2.pid")" "$3" "$4" "${5:-60}" >"$1" 2>&1 &
}

@test "--ext-cache=local under proctrack/cgroup and task/cgroup: the tasks see the directory, gone after the step" {
    itest_cluster "base=$ITEST_BASE"
    # shellcheck disable=SC2016  # expanded by the task
    out=$(lab_user srun -N2 -n2 --ext-cache=local bash -c 'd=$SLURM_EXT_CACHE_DIR
        touch "$d/made.$SLURM_PROCID" && w=writable || w=unwritable
        echo "CG $SLURMD_NODENAME $d $(stat -c %U:%a "$d") $w $(grep -c "/job_$SLURM_JOB_ID/step_0" /proc/self/cgroup)"' 2>&1)
    # two tasks, each in its step's cgroups, each with its own writable directory
    assert_equal "$(grep -cE "^CG n[0-9] $ITEST_BASE/$ITEST_UID/[0-9]+/0 $LAB_USER:700 writable [1-9]" <<<"$out")" 2 ||
        fail "$out"
    job=$(grep -o "$ITEST_BASE/$ITEST_UID/[0-9]*" <<<"$out" | head -1)
    job=${job##*/}
    lab_wait_idle 30 >/dev/null
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID/$job"
    # and Slurm removed the job's cgroups
    assert_equal "$(job_cgroups "$job")" ""
    itest_no_drain
}

@test "the epilog's trash emptier runs outside the job's cgroups" {
    itest_cluster "base=$ITEST_BASE"
    # a job's cache (kept until the epilog) of many files, so that the
    # emptier lives long enough to be seen; it is the epilog's detached
    # grandchild: "extc-epilog", or a "slurmstepd spank epilog" image whose
    # parent is no longer the epilog
    catch_on_node "$W/cg.emptier" n1 extc-epilog,epilog spank
    # shellcheck disable=SC2016  # expanded by the task
    out=$(lab_user srun -w n1 -n1 --ext-cache=job bash -c 'mkdir "$SLURM_EXT_CACHE_DIR/many" &&
        cd "$SLURM_EXT_CACHE_DIR/many" && seq 20000 | xargs touch && echo "JOB $SLURM_JOB_ID"' 2>&1)
    job=$(awk '/^JOB/ {print $2}' <<<"$out")
    [ -n "$job" ] || fail "the job did not run: $out"
    wait
    grep -q '^pid ' "$W/cg.emptier" || fail "no emptier seen on n1: $(cat "$W/cg.emptier")"
    echo "# the emptier's cgroups: $(grep -v '^pid' "$W/cg.emptier" | tr '\n' ' ')" >&3
    assert_equal "$(cg_job_lines "$job" "$(cat "$W/cg.emptier")")" ""
    lab_wait_idle 30 >/dev/null
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID/$job"
    itest_no_drain
}

@test "a process the exit hook starts is in the job's cgroups; extc_cgroup_escape takes it out and it outlives the job" {
    mkdir -p "$W/ef" && chmod 0777 "$W/ef" && rm -f "$W"/ef/*
    lab_stop >/dev/null 2>&1
    lab_set_plugstack "required $LAB/lib/exit_fork.so out=$W/ef sleep=3" || fail "plugstack"
    lab_start >/dev/null || fail "the cluster did not start"
    # without the escape: where it lands (what happens to it is noted, not asserted)
    # shellcheck disable=SC2016  # expanded by the task
    j1=$(lab_user srun -w n1 -n1 bash -c 'echo $SLURM_JOB_ID')
    itest_poll 10 test -s "$W/ef/$j1.0.n1.start" || fail "no exit-hook process for job $j1"
    lab_wait_idle 30 >/dev/null
    [ -n "$(cg_job_lines "$j1" "$(cat "$W/ef/$j1.0.n1.start")")" ] ||
        fail "not in job $j1's cgroups: $(cat "$W/ef/$j1.0.n1.start")"
    echo "# without the escape: $(cg_job_lines "$j1" "$(cat "$W/ef/$j1.0.n1.start")" | tr '\n' ' ')" \
        "after the job: cgroups left: $(job_cgroups "$j1" | tr '\n' ' ')" >&3
    itest_poll 10 test -e "$W/ef/$j1.0.n1.end" && echo "# and it lived on after the job's end" >&3

    # with it
    lab_set_plugstack "required $LAB/lib/exit_fork.so out=$W/ef sleep=3 escape=1" || fail "plugstack"
    # shellcheck disable=SC2016  # expanded by the task
    j2=$(lab_user srun -w n1 -n1 bash -c 'echo $SLURM_JOB_ID')
    itest_poll 10 grep -q '^escape' "$W/ef/$j2.0.n1.start" || fail "no exit-hook process for job $j2"
    lab_wait_idle 30 >/dev/null
    start=$(cat "$W/ef/$j2.0.n1.start")
    itest_match '^escape moved: ' "$start"
    # its cgroups after the escape: the lines after the "escape" one
    assert_equal "$(cg_job_lines "$j2" "$(sed '1,/^escape/d' <<<"$start")")" ""
    # it lives on after the job, and Slurm removed every cgroup of the job
    itest_poll 30 test -e "$W/ef/$j2.0.n1.end" || fail "the escaped process did not live on after job $j2"
    itest_poll 30 no_job_cgroups "$j2" || fail "job $j2's cgroups are left: $(job_cgroups "$j2")"
    itest_no_drain
}

@test "the step's detached end (extc-finisher) leaves the job's cgroups and outlives the job; its work completes" {
    local out rc=0 job helper finisher
    itest_cluster "base=$ITEST_BASE pool=node"
    # the user's helper stopped the moment it appears: the finisher then
    # waits for it, long after the job (lib/stop_helper.py)
    python3 "$ITEST_DIR/lib/stop_helper.py" "$(cat "$LAB/run/lab-slurmd-n1.pid")" "$ITEST_UID" extc-finisher 120 \
        >"$W/cg.helper" 2>&1 &
    # shellcheck disable=SC2016 # expanded by the task
    out=$(lab_user timeout -k 5 120 srun -w n1 -N1 -n1 --ext-cache=local bash -c \
        'mkdir -p "$TRITON_CACHE_DIR" && cd "$TRITON_CACHE_DIR" && seq 20000 | xargs touch && echo "JOB $SLURM_JOB_ID"' 2>&1) || rc=$?
    [ "$rc" -eq 0 ] || fail "srun failed ($rc): $out"
    job=$(awk '/^JOB/ {print $2}' <<<"$out")
    wait
    helper=$(head -n1 "$W/cg.helper")
    [[ $helper =~ ^[0-9]+$ ]] || fail "no helper caught: $(cat "$W/cg.helper")"
    # the job is over, with its helper stopped and the finisher (root) waiting for it
    assert_equal "$(lab_wait_job "$job" 60)" COMPLETED
    finisher=$(awk '{print $4}' "/proc/$helper/stat")
    assert_equal "$(cat "/proc/$finisher/comm") uid $(awk '$1 == "Uid:" {print $2}' "/proc/$finisher/status")" \
        "extc-finisher uid 0"
    echo "# the finisher's cgroups: $(tr '\n' ' ' <"/proc/$finisher/cgroup")" >&3
    # outside the job's cgroups, and Slurm removed every one of them
    assert_equal "$(cg_job_lines "$job" "$(cat "/proc/$finisher/cgroup")")" ""
    itest_poll 30 no_job_cgroups "$job" || fail "job $job's cgroups are left: $(job_cgroups "$job")"
    # let the helper go: the move into the pool and the removal follow
    kill -CONT "$helper"
    itest_poll 120 grep -qE "job $job step 0: node pool: moved 20000 entries into key" "$(lab_log n1)" ||
        fail "no move logged: $(grep "job $job" "$(lab_log n1)" | tail -n 5)"
    itest_poll 60 itest_absent n1 "$ITEST_BASE/$ITEST_UID/$job" || fail "job $job's directory is still there"
    itest_no_drain
}
