#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Triton's cache survives warm start, on a real Slurm, as the unprivileged
# user (docs/cache-dirs.md; the format and the lookup rule read in Triton's
# source, lib/triton_cache.py; Triton itself is not in Debian): a step
# writes a kernel as Triton 3.x does (a group file naming its files by
# absolute path), publishes it to DIR and moves it into the node pool; then
#   1. DIR's and the pool's copies name their own files;
#   2. a step seeded from the pool finds a complete hit, every file inside
#      its own directory, with the first step's directory gone;
#   2b. a step that adds no kernel puts the Triton cache back whole, by one
#      rename (its group files still name that step's directory), and the
#      next step's take names its own: a hit inside, again;
#   3. so does a step seeded from DIR;
#   4. inside a container (the image named by pyxis' option, a stand-in
#      plugin) the same holds for <leaf>/container/triton.
# Before the rewrite, each of these was a silent miss (recompile) once the
# first step's directory was gone.

load lib/itest

LOOK=$ITEST_DIR/lib/triton_cache.py
KEY=ZDYCXQGUYAT6EN2J6QW5Z3XVDOYP5VFU3T3XYGVTLD2JXONQOJXQ
POOL=$ITEST_BASE/.pool

setup_file() {
    itest_setup_file
    gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -o "$LAB/lib/pyxis_stub.so" \
        "$ITEST_DIR/plugins/pyxis_stub.c" || fail "pyxis_stub.so does not build"
    HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
    W=$HOME_DIR/.extc-triton-$(basename "$LAB")
    rm -rf -- "$W"
    lab_user mkdir -p "$W" || fail "cannot make $W"
    cp "$LOOK" "$LAB/work/triton_cache.py" && chmod a+r "$LAB/work/triton_cache.py"
    rm -rf "$LAB/work/img" && mkdir -p "$LAB/work/img" && echo image >"$LAB/work/img/t.sqsh" &&
        chmod -R a+rX "$LAB/work/img"
    export W
    lab_stop >/dev/null 2>&1
    lab_set_plugstack "optional $LAB/lib/pyxis_stub.so" "required $LAB_PLUGIN base=$ITEST_BASE pool=node" ||
        fail "cannot write plugstack.conf"
    lab_start >/dev/null || fail "the cluster did not start: $(lab_tail_logs 2>&1 | tail -n 40)"
}

teardown_file() {
    rm -rf -- "$W"
    itest_teardown_file
}

# on_n1 SRUN-ARGS... -- SCRIPT: one task on n1, as the user; sets OUT
on_n1() {
    local args=()
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    OUT=$(lab_user timeout -k 5 120 srun -w n1 -N1 -n1 --ext-cache=local "${args[@]}" \
        sh -c "$1" 2>&1) || fail "srun ${args[*]}: $OUT"
    lab_wait_settled 120 >/dev/null
}

# pool_has N: N keys of the pool hold the kernel (the step's end moves it in after srun returns)
pool_has() { [ "$(lab_node n1 find "$POOL/$ITEST_UID" -mindepth 3 -maxdepth 3 -path "*/triton/$KEY" 2>/dev/null | wc -l)" -ge "$1" ]; }
lookup() { lab_node n1 python3 "$LAB/work/triton_cache.py" lookup "$@"; }

@test "1: a step's Triton kernel is published to DIR and moved into the pool, each naming its own files" {
    local key
    on_n1 --ext-cache-publish="$W/pub" -- \
        "python3 $LAB/work/triton_cache.py put \"\$TRITON_CACHE_DIR\" $KEY add_kernel && echo LEAF \$SLURM_EXT_CACHE_DIR"
    itest_save leaf1 "$(sed -n 's/^LEAF //p' <<<"$OUT")"
    assert_equal "$(lab_user python3 "$LAB/work/triton_cache.py" lookup "$W/pub/triton" $KEY add_kernel "$W/pub")" "hit inside"
    itest_poll 120 pool_has 1 || fail "the kernel never reached the pool"
    key=$(lab_node n1 find "$POOL/$ITEST_UID" -mindepth 1 -maxdepth 1 -type d -printf '%f\n')
    assert_equal "$(lookup "$POOL/$ITEST_UID/$key/triton" $KEY add_kernel "$POOL/$ITEST_UID/$key")" "hit inside"
    # the first step's directory is gone: nothing can be read from it any more
    itest_absent n1 "$(itest_load leaf1)" || fail "the first step's directory is still there"
}

@test "2: a step seeded from the pool finds a complete hit inside its own directory" {
    on_n1 -- "python3 $LAB/work/triton_cache.py lookup \"\$TRITON_CACHE_DIR\" $KEY add_kernel \"\$SLURM_EXT_CACHE_DIR\""
    assert_equal "$OUT" "hit inside"
}

@test "2b: a step that adds no kernel puts the cache back whole; the next step hits inside its own directory" {
    local key line
    key=$(lab_node n1 find "$POOL/$ITEST_UID" -mindepth 1 -maxdepth 1 -type d -printf '%f\n')
    on_n1 -- "python3 $LAB/work/triton_cache.py lookup \"\$TRITON_CACHE_DIR\" $KEY add_kernel \"\$SLURM_EXT_CACHE_DIR\""
    assert_equal "$OUT" "hit inside"
    # this step's end, and test 2's before it: every directory moved went whole, Triton's too
    line=$(grep -a "node pool: moved .* into key $key" "$(lab_log n1)" | tail -n 1)
    grep -qE "moved ([1-9][0-9]*) entr(y|ies) into key $key \(\1 of them a whole cache directory" <<<"$line" ||
        fail "not back whole: $line"
    itest_poll 120 pool_has 1 || fail "the kernel is not back in the pool"
    on_n1 -- "python3 $LAB/work/triton_cache.py lookup \"\$TRITON_CACHE_DIR\" $KEY add_kernel \"\$SLURM_EXT_CACHE_DIR\""
    assert_equal "$OUT" "hit inside"
}

@test "3: a step seeded from DIR finds a complete hit inside its own directory" {
    on_n1 --ext-cache-seed="$W/pub" -- \
        "python3 $LAB/work/triton_cache.py lookup \"\$TRITON_CACHE_DIR\" $KEY add_kernel \"\$SLURM_EXT_CACHE_DIR\""
    assert_equal "$OUT" "hit inside"
}

@test "4: in a container's part of the directory, keyed by its image, the same holds" {
    # shellcheck disable=SC2016 # expanded by the task
    local inner='$SLURM_EXT_CACHE_DIR/container/triton'
    on_n1 --container-image="$LAB/work/img/t.sqsh" -- \
        "python3 $LAB/work/triton_cache.py put \"$inner\" $KEY add_kernel"
    itest_poll 120 pool_has 2 || fail "the kernel never reached the image's key"
    on_n1 --container-image="$LAB/work/img/t.sqsh" -- \
        "python3 $LAB/work/triton_cache.py lookup \"$inner\" $KEY add_kernel \"\$SLURM_EXT_CACHE_DIR/container\""
    assert_equal "$OUT" "hit inside"
    itest_no_drain
}
