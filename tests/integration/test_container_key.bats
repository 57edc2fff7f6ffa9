#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The node pool and container images, on a real Slurm, as the unprivileged
# user: a step keyed by the image it runs (pyxis' --container-image, read in
# slurmstepd's remote init from a stand-in plugin that registers pyxis'
# options, tests/integration/plugins/pyxis_stub.c; or an apptainer command
# the step runs directly) seeds and takes in <leaf>/container, where the
# cache variables point inside a container. Image A, then image B (cold),
# then A again (warm); apptainer exec of A warm from pyxis' A; the host
# never gets an image's builds, nor a container's started from a script; a
# tag, a named container, an image the user cannot read: no pool at all; an
# image file replaced under its name: cold; a key of an older key version:
# evicted by the next pass, never served. No container runs here (enroot
# and pyxis are not in Debian): what a container would build is written
# where its variables point.

load lib/itest

POOL=$ITEST_BASE/.pool

setup_file() {
    itest_setup_file
    gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -o "$LAB/lib/pyxis_stub.so" \
        "$ITEST_DIR/plugins/pyxis_stub.c" || fail "pyxis_stub.so does not build against this release's spank.h"
    rm -rf "$LAB/work/img" && mkdir -p "$LAB/work/img/bin"
    printf 'image A\n' >"$LAB/work/img/a.sqsh"
    printf 'image B\n' >"$LAB/work/img/b.sqsh"
    # a stand-in for the runtime: what apptainer exec IMG CMD... would run, on the host
    printf '#!/bin/sh\nshift 2\nexec "$@"\n' >"$LAB/work/img/bin/apptainer"
    chmod -R a+rX "$LAB/work/img" && chmod 0755 "$LAB/work/img/bin/apptainer"
    lab_stop >/dev/null 2>&1
    # pyxis is listed first at sites (its options, then ours)
    lab_set_plugstack "optional $LAB/lib/pyxis_stub.so" "required $LAB_PLUGIN base=$ITEST_BASE pool=node" ||
        fail "cannot write plugstack.conf"
    lab_start >/dev/null || fail "the cluster did not start: $(lab_tail_logs 2>&1 | tail -n 40)"
}

teardown_file() { itest_teardown_file; }

# The job's own check and build: what the step found under its container/
# (or host) part, then a build named NAME written there. Prints FOUND=...
# shellcheck disable=SC2016 # expanded by the task
PROBE='d=$SLURM_EXT_CACHE_DIR/$1/triton; printf "FOUND=%s\n" "$(ls "$d" 2>/dev/null | sort | tr "\n" " ")"
mkdir -p "$d/$2" && echo kernel >"$d/$2/k.json"'

# step WHERE NAME [SRUN-ARGS...]: one step on n1 that probes WHERE
# ("container" or "."), then builds NAME there; sets FOUND and OUT
step() {
    local where=$1 name=$2
    shift 2
    OUT=$(lab_user timeout -k 5 120 srun -w n1 -N1 -n1 --ext-cache=local "$@" \
        sh -c "$PROBE" probe "$where" "$name" 2>&1) || fail "srun $*: $OUT"
    FOUND=$(sed -n 's/^FOUND=//p' <<<"$OUT")
    lab_wait_settled 120 >/dev/null
}

keys() { lab_node n1 find "$POOL/$ITEST_UID" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort; }
# key_with NAME: the key holding triton/NAME (the step's end moves it in after srun returns)
key_with() { lab_node n1 find "$POOL/$ITEST_UID" -mindepth 3 -maxdepth 3 -path "*/triton/$1" -printf '%h\n' 2>/dev/null | xargs -r -n1 dirname | xargs -r -n1 basename; }
has_key_with() { [ -n "$(key_with "$1")" ]; }
# what n1's plugin said of the pool, for a failure's message
pool_said() { grep -a 'ext-cache: .*node pool' "$(lab_log n1)" | tail -n 12; }

@test "image A: cold, and its build moves into a key of its own" {
    step container a1 --container-image="$LAB/work/img/a.sqsh"
    assert_equal "$FOUND" ""
    itest_poll 120 has_key_with a1 || fail "a1 never reached the pool: $(keys)"$'\n'"$(pool_said)"
    itest_save keyA "$(key_with a1)"
}

@test "image B starts cold: nothing of image A" {
    step container b1 --container-image="$LAB/work/img/b.sqsh"
    assert_equal "$FOUND" ""
    itest_poll 120 has_key_with b1 || fail "b1 never reached the pool: $(keys)"$'\n'"$(pool_said)"
    [ "$(key_with b1)" != "$(itest_load keyA)" ] || fail "images A and B share key $(key_with b1)"
}

@test "image A again starts warm, with A's build only" {
    step container a2 --container-image="$LAB/work/img/a.sqsh"
    assert_equal "$FOUND" "a1 "
    itest_poll 120 has_key_with a2 || fail "a2 never reached the pool: $(keys)"$'\n'"$(pool_said)"
    assert_equal "$(key_with a2)" "$(itest_load keyA)"
}

@test "apptainer exec of image A, run by the step itself, starts warm from A's builds" {
    step container a3 "$LAB/work/img/bin/apptainer" exec "$LAB/work/img/a.sqsh"
    # srun runs the stand-in, which runs the probe: the argv srun saw names the image
    assert_equal "$FOUND" "a1 a2 "
}

@test "the host gets no image's builds; a container started by a script is never pooled as the host's" {
    step . h1
    assert_equal "$FOUND" ""
    # a build in container/ by a host-keyed step: a script that started a container
    # shellcheck disable=SC2016 # expanded by the task
    OUT=$(lab_user timeout -k 5 120 srun -w n1 -N1 -n1 --ext-cache=local sh -c \
        'mkdir -p "$SLURM_EXT_CACHE_DIR/container/triton/s1" && echo k >"$SLURM_EXT_CACHE_DIR/container/triton/s1/k.json"' 2>&1) ||
        fail "srun: $OUT"
    lab_wait_settled 120 >/dev/null
    itest_poll 120 has_key_with h1 || fail "h1 never reached the pool: $(keys)"$'\n'"$(pool_said)"
    step . h2
    assert_equal "$FOUND" "h1 "
    [ -z "$(key_with s1)" ] || fail "a script's container build was pooled in key $(key_with s1)"
    [ "$(key_with h1)" != "$(itest_load keyA)" ] || fail "the host shares image A's key"
}

# no_new_key SRUN-ARGS...: the step's container part starts empty and no key is made or fed
no_new_key() {
    local before
    before=$(keys)
    step container x1 "$@"
    assert_equal "$FOUND" ""
    lab_wait_settled 120 >/dev/null
    assert_equal "$(keys)" "$before"
    [ -z "$(key_with x1)" ] || fail "$*: pooled in $(key_with x1)"
}

@test "a tag, a named container, an image the user cannot read: the step gets no pool" {
    local log
    log=$(lab_log n1)
    no_new_key --container-image=nvcr.io#nvidia/pytorch:24.05-py3
    itest_match "cannot identify \(an image named by a tag" "$(cat "$log")"
    no_new_key --container-image="$LAB/work/img/a.sqsh" --container-name=mine
    itest_match "cannot identify \(a named container" "$(cat "$log")"
    # only root can read it: the user's child cannot identify it, root never looks
    install -d -m 0700 /root/extc-img && printf 'secret\n' >/root/extc-img/c.sqsh
    no_new_key --container-image=/root/extc-img/c.sqsh
    rm -rf /root/extc-img
    itest_match "no key for this step \(the image file cannot be identified" "$(cat "$log")"
}

@test "image A replaced under its name starts cold" {
    printf 'image A, rebuilt\n' >"$LAB/work/img/a.sqsh.new" && chmod a+r "$LAB/work/img/a.sqsh.new"
    mv -f "$LAB/work/img/a.sqsh.new" "$LAB/work/img/a.sqsh"
    step container a4 --container-image="$LAB/work/img/a.sqsh"
    assert_equal "$FOUND" ""
}

@test "a key of an older key version is evicted by the next pass and never served" {
    local old=0123456789abcdef0123456789abcdef
    lab_node n1 sh -c "umask 077 && mkdir -p '$POOL/$ITEST_UID/$old/triton/old1' &&
        printf 'bytes=4096\ninodes=3\n' >'$POOL/$ITEST_UID/$old.use' &&
        chown -R $ITEST_UID:$ITEST_GID '$POOL/$ITEST_UID/$old'" || fail "cannot plant the old key"
    # any job's epilog runs the eviction pass
    step . v1
    itest_poll 30 itest_absent n1 "$POOL/$ITEST_UID/$old" || fail "the old key is still there: $(keys)"
    itest_absent n1 "$POOL/$ITEST_UID/$old.use" || fail "its record is still there"
    itest_no_drain
}
