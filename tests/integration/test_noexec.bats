#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# A step's directory on a noexec mount, on a real 3-node Slurm: torch
# extensions, Triton and Inductor load what they build from it, which the
# kernel refuses there. A user who asked for a cache gets a failed step
# naming the directory and "noexec"; a step under the admin's default alone
# runs without the variables and is told why; on_error= overrides both as
# for any other failure; slurmd's start says so in its log.
#
# The base lies on a noexec tmpfs mounted on the host under $LAB before the
# daemons start, so every node's namespace has it (-w n1 keeps one node per
# step: the base is the same directory for all three). The last case mounts
# one inside a single node's namespace after its slurmd started, as a
# per-job /tmp would be: only the task sees it.

load lib/itest

# the task's view of the variables the plugin exports
# shellcheck disable=SC2016  # expanded by the job's shell
SHOW='echo "$SLURMD_NODENAME TE=${TORCH_EXTENSIONS_DIR:-unset} DIR=${SLURM_EXT_CACHE_DIR:-unset}"'

setup_file() {
    NOEXEC_MNT=$LAB/noexec
    # what an interrupted run left mounted would keep lab_setup from wiping $LAB
    if mountpoint -q "$NOEXEC_MNT"; then umount "$NOEXEC_MNT" || fail "cannot unmount $NOEXEC_MNT"; fi
    itest_setup_file
    mkdir -p "$NOEXEC_MNT" || fail "cannot make $NOEXEC_MNT"
    mount -t tmpfs -o noexec,nosuid,nodev,mode=0755,size=16m tmpfs "$NOEXEC_MNT" ||
        fail "cannot mount a noexec tmpfs on $NOEXEC_MNT"
    NOEXEC_BASE=$NOEXEC_MNT/ext-cache
    export NOEXEC_MNT NOEXEC_BASE
    itest_cluster "base=$NOEXEC_BASE"
}

teardown_file() {
    itest_teardown_file
    if mountpoint -q "$NOEXEC_MNT"; then umount "$NOEXEC_MNT"; fi
}

@test "slurmd's start warns in its log that the base is on a noexec mount, and slurmd runs" {
    local n
    for n in $(lab_nodes); do
        grep -qE "ext-cache: base $NOEXEC_BASE is on a noexec mount, where TORCH_EXTENSIONS_DIR's tool cannot load the code it builds" \
            "$(lab_log "$n")" || fail "slurmd $n did not warn: $(grep ext-cache "$(lab_log "$n")")"
    done
    assert_equal "$(lab_drained_nodes)" ""
}

@test "the user asked (--ext-cache=local): the step fails, naming the directory and noexec" {
    local out rc=0
    out=$(lab_user srun -N1 -w n1 --ext-cache=local bash -c "$SHOW" 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "the step did not fail: $out"
    itest_match "error: ext-cache: job [0-9]+ step 0: no private cache on node n1, failing the step: $NOEXEC_BASE/$ITEST_UID/[0-9]+/0 is on a noexec mount" "$out"
    [[ $out != *"n1 TE="* ]] || fail "the task's program ran: $out"
    itest_no_drain
}

@test "the admin's default alone: the step runs without the variables, and the user is warned" {
    local out
    itest_plugstack "required $LAB_PLUGIN base=$NOEXEC_BASE default=local"
    out=$(lab_user srun -N1 -w n1 bash -c "$SHOW" 2>&1) || fail "srun exited $?: $out"
    itest_match "^n1 TE=unset DIR=unset$" "$out"
    itest_match "error: ext-cache: job [0-9]+ step 0: no private cache on node n1, going on without one: .* is on a noexec mount" "$out"
    itest_no_drain
}

@test "on_error=warn: a user who asked runs without; on_error=fail: a step under the default fails" {
    local out rc=0
    itest_plugstack "required $LAB_PLUGIN base=$NOEXEC_BASE on_error=warn"
    out=$(lab_user srun -N1 -w n1 --ext-cache=local bash -c "$SHOW" 2>&1) || fail "srun exited $?: $out"
    itest_match "^n1 TE=unset DIR=unset$" "$out"
    itest_match "going on without one: .* is on a noexec mount" "$out"
    itest_plugstack "required $LAB_PLUGIN base=$NOEXEC_BASE default=local on_error=fail"
    out=$(lab_user srun -N1 -w n1 bash -c "$SHOW" 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "on_error=fail: the step did not fail: $out"
    itest_match "failing the step: .* is on a noexec mount" "$out"
    itest_no_drain
}

@test "only variables of tools that load no code: the step keeps its cache" {
    local out
    itest_plugstack "required $LAB_PLUGIN base=$NOEXEC_BASE vars=MIOPEN_USER_DB_PATH,NUMBA_CACHE_DIR"
    # shellcheck disable=SC2016  # expanded by the job's shell
    out=$(lab_user srun -N1 -w n1 --ext-cache=local bash -c 'echo "$SLURMD_NODENAME NUMBA=${NUMBA_CACHE_DIR:-unset}"' 2>&1) ||
        fail "srun exited $?: $out"
    itest_match "^n1 NUMBA=$NOEXEC_BASE/$ITEST_UID/[0-9]+/0/numba_cache_dir$" "$out"
    [[ $out != *"noexec mount"* ]] || fail "warned for a directory no tool loads code from: $out"
    itest_no_drain
}

@test "a noexec mount one node's tasks see, made after its slurmd started: only that node's task refuses" {
    local out rc=0
    # the plugin makes the base, not its parent
    lab_node n1 mkdir -p /var/tmp/nx && lab_node n2 mkdir -p /var/tmp/nx || fail "cannot make /var/tmp/nx"
    lab_node n2 mount -t tmpfs -o noexec,nosuid,nodev,mode=0755,size=4m tmpfs /var/tmp/nx ||
        fail "cannot mount a noexec tmpfs in n2's namespace"
    itest_plugstack "required $LAB_PLUGIN base=/var/tmp/nx/ext-cache"
    out=$(lab_user srun -N2 -w n1,n2 --ext-cache=local bash -c "$SHOW" 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "the step did not fail: $out"
    itest_match "no private cache on node n2, failing the step: /var/tmp/nx/ext-cache/$ITEST_UID/[0-9]+/0 is on a noexec mount" "$out"
    # n1's /var/tmp allows exec: its task has the cache
    itest_match "^n1 TE=/var/tmp/nx/ext-cache/$ITEST_UID/[0-9]+/0/torch_extensions DIR=" "$out"
    [[ $out != *"on node n1"* ]] || fail "n1 refused too: $out"
    lab_wait_settled 120 >/dev/null 2>&1
    lab_node n2 umount /var/tmp/nx || fail "cannot unmount /var/tmp/nx in n2's namespace"
    itest_no_drain
}
