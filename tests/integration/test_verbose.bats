#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# --ext-cache-verbose (and SLURM_EXT_CACHE_VERBOSE) on a real 3-node Slurm
# with the node pool, as the unprivileged user: the user's terminal gets one
# line per node saying whether the step started cold (and why: the pool's key
# holds nothing yet) or warm (from the node pool, how many entries); without
# it, not a line. The builds are a file in TORCH_EXTENSIONS_DIR, no torch.

load lib/itest

POOL=$ITEST_BASE/.pool
# every task writes the same "build"; the step says whether it found one
# shellcheck disable=SC2016 # expanded by the task's bash, not here
BUILD='d=$TORCH_EXTENSIONS_DIR/vb; if [ -e "$d/vb.so" ]; then echo "found $SLURMD_NODENAME"; fi; mkdir -p "$d" && printf x >"$d/vb.so"'
LINE='ext-cache: job [0-9]+ step [0-9]+: node'

setup_file() {
    itest_setup_file
    itest_cluster "base=$ITEST_BASE pool=node"
}

teardown_file() { itest_teardown_file; }

# run_step [ENV=VALUE...] -- SRUN-ARGS...: $BUILD on every node, as the user, 2 tasks a node. Sets OUT.
run_step() {
    local envs=(SLURM_EXT_CACHE_KEY=verbose-suite)
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    OUT=$(lab_user env "${envs[@]}" timeout -k 10 120 srun -N3 --ntasks-per-node=2 --ext-cache=local \
        "$@" bash -c "$BUILD" 2>&1) || fail "srun failed: $OUT"
}

# moved_in K: on every node the ends of K steps have moved their builds into
# the pool and recorded the key's size (in the background, after srun returned)
moved_in() {
    local n
    for n in $(lab_nodes); do
        [ "$(grep -c 'node pool: moved ' "$(lab_log "$n")")" -ge "$1" ] || return 1
    done
}
pooled() {
    local n
    for n in $(lab_nodes); do
        lab_node "$n" sh -c "test -e $POOL/$ITEST_UID/*/torch_extensions/vb/vb.so" || return 1
    done
}

# per_node PATTERN: the nodes with a line matching PATTERN, each once, sorted
per_node() { grep -oE "$LINE (n[0-9]+): $1" <<<"$OUT" | awk '{print $7}' | tr -d : | sort; }

@test "a first step with --ext-cache-verbose: one line per node, cold, the key holds nothing yet" {
    run_step -- --ext-cache-verbose
    assert_equal "$(per_node "cold: the node pool's key for this environment \([0-9a-f]{8}\.\.\.\) holds nothing yet")" \
        "$(printf 'n%s\n' 1 2 3)"
    assert_equal "$(grep -cE "$LINE" <<<"$OUT")" 3
    itest_poll 30 moved_in 1 || fail "the steps' ends never moved their builds in"
    pooled || fail "the builds are not in the pool: $(lab_node n1 find "$POOL" 2>&1)"
}

@test "without the option: started warm, and not a line about it" {
    itest_poll 30 moved_in 1 || fail "the first test's builds are not in the pool"
    run_step --
    assert_equal "$(grep -c '^found n' <<<"$OUT")" 6
    assert_equal "$(grep -c 'ext-cache' <<<"$OUT")" 0
}

@test "the next step with --ext-cache-verbose (or SLURM_EXT_CACHE_VERBOSE=1): warm, from the node pool, how many" {
    itest_poll 30 moved_in 2 || fail "the builds never went back to the pool"
    run_step -- --ext-cache-verbose
    assert_equal "$(grep -c '^found n' <<<"$OUT")" 6
    assert_equal "$(per_node "warm: (took [1-9][0-9]* entr(y|ies)|seeded [1-9][0-9]* files?).* from the node pool \(key [0-9a-f]{8}\.\.\.\)")" \
        "$(printf 'n%s\n' 1 2 3)"
    assert_equal "$(grep -cE "$LINE" <<<"$OUT")" 3
    itest_poll 30 moved_in 3 || fail "the builds never went back to the pool"
    run_step SLURM_EXT_CACHE_VERBOSE=1 --
    assert_equal "$(per_node "warm: ")" "$(printf 'n%s\n' 1 2 3)"
    itest_no_drain
}
