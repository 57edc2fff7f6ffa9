#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The site tier (tier=, beside pool=node) on a real 3-node Slurm, as the
# unprivileged user, with this release's own Debian torch (extc_light.cpp,
# built by torch's own load() and ninja). The tier is a directory every
# node sees at the same path, as a shared filesystem is (this machine's
# kernel has no NFS client). A 2-node job on n1,n2 builds and node 0 alone
# publishes one generation of its key; a job on n3, which never ran the
# environment, copies it into its node pool and compiles nothing; a
# generation with a truncated file is marked and the older one is used; a
# tier open to the user's group is not used, and the user is told why; a
# step whose task fails publishes nothing. A tier whose filesystem
# misbehaves (a link, full, never answering, closed to root) and two nodes
# publishing at once: test_tier_fail.bats.

load lib/itest
load lib/torchop

POOL=$ITEST_BASE/.pool

setup_file() {
    itest_setup_file
    torchop_setup
    HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
    W=$HOME_DIR/.extc-tier-$(basename "$LAB")
    rm -rf -- "$W"
    lab_user mkdir -p "$W/log" "$W/shared/$LAB_USER" || fail "cannot make $W"
    lab_user chmod 0700 "$W/shared/$LAB_USER"
    TIER=$W/shared/$LAB_USER
    export W TIER
    itest_cluster "base=$ITEST_BASE pool=node tier=$W/shared/%U tier_timeout=20"
}

teardown_file() { itest_teardown_file; }

# run_ext NAME LOG [ENV=VALUE...] -- SRUN-ARGS...: the op, with --ext-cache-verbose
run_ext() {
    local args=()
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    torchop_run "${args[@]}" -- --ext-cache-verbose "${@:2}"
}
ranks() { torchop_ranks; }
keys_on() { lab_node "$1" find "$POOL/$ITEST_UID" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort; }
# generations KEY: the tier's generations of KEY, newest first
generations() { lab_user find "$TIER/$1" -mindepth 1 -maxdepth 1 -name 'g*' -printf '%f\n' 2>/dev/null | sort -r; }
# forget NODE KEY: the key leaves NODE's pool, as after an eviction
forget() { lab_node "$1" rm -rf -- "$POOL/$ITEST_UID/$2" "$POOL/$ITEST_UID/$2.use"; }

@test "a 2-node job on n1,n2 builds; node 0 alone publishes one generation of its key, manifest last" {
    local key gen
    run_ext extc_t job1.log -- -N2 -w n1,n2 --ntasks-per-node=1 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "$(printf 'n%s built 2 1\n' 1 2)"
    lab_wait_settled 120 >/dev/null
    key=$(keys_on n1)
    [ -n "$key" ] && [ "$(wc -l <<<"$key")" -eq 1 ] || fail "n1: not one key: [$key]"
    assert_equal "$(keys_on n2)" "$key"
    gen=$(generations "$key")
    [ "$(wc -l <<<"$gen")" -eq 1 ] && [ -n "$gen" ] ||
        fail "not one generation: [$gen]; n1 logged: $(grep -a 'site tier' "$(lab_log n1)" | tail -n 3)"
    itest_match "site tier: published generation $gen of key $key" "$(cat "$(lab_log n1)")"
    ! grep -qa 'site tier: published' "$(lab_log n2)" || fail "n2 published too"
    lab_user test -s "$TIER/$key/$gen/torch_extensions/extc_t/extc_t.so" || fail "the build is not in $gen"
    itest_match '^ext-cache-generation 1$' "$(lab_user head -n 1 "$TIER/$key/$gen/.ext-cache-generation")"
    # owned by the user, private; no stage, lock or manifest of the pool's
    assert_equal "$(lab_user stat -c '%U %a' "$TIER/$key")" "$LAB_USER 700"
    assert_equal "$(lab_user find "$TIER" \( -name 'lock' -o -name '.ext-cache-stage.*' -o -name '.ext-cache-manifest' \) -print)" ""
    itest_save key "$key"
    itest_save gen "$gen"
    itest_no_drain
}

@test "a job on n3, which never ran the environment, starts warm from the tier: nothing compiled" {
    local key gen
    key=$(itest_load key)
    gen=$(itest_load gen)
    assert_equal "$(keys_on n3)" ""
    run_ext extc_t job2.log -- -N1 -w n3 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "n3 reused 0 1"
    [ ! -s "$W/log/job2.log" ] || fail "the compiler ran: $(cat "$W/log/job2.log")"
    itest_match "node n3: warm: seeded [1-9][0-9]* files?, .*, from the site tier \(generation $gen, key ${key:0:8}\.\.\.\) in [0-9.]+ s" "$OUT"
    # it went into n3's pool under the same key, and, nothing new being built, nothing was published
    lab_wait_settled 120 >/dev/null
    assert_equal "$(keys_on n3)" "$key"
    assert_equal "$(generations "$key")" "$gen"
    itest_match "site tier: the step put back nothing it did not take: nothing published" "$(cat "$(lab_log n3)")"
}

@test "a generation with a truncated file is marked bad and skipped; the older one is used" {
    local key gen bad so
    key=$(itest_load key)
    gen=$(itest_load gen)
    # a newer generation, a copy of the first, whose build is cut short after its manifest was written
    bad=$(printf 'g%020d.n9.1' "$(date +%s%N)")
    [[ $bad > $gen ]] || fail "$bad does not sort after $gen"
    lab_user cp -a "$TIER/$key/$gen" "$TIER/$key/$bad" || fail "cannot copy the generation"
    so="$TIER/$key/$bad/torch_extensions/extc_t/extc_t.so"
    lab_user truncate -s 100 "$so" || fail "cannot truncate $so"
    forget n3 "$key"
    run_ext extc_t job3.log -- -N1 -w n3 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "n3 reused 0 1"
    itest_match "from the site tier \(generation $gen," "$OUT"
    lab_user test -e "$TIER/$key/$bad/.ext-cache-bad" || fail "$bad was not marked bad"
    lab_user rm -rf -- "$TIER/$key/$bad"
}

@test "a tier open to the user's group is not used, and --ext-cache-verbose says why" {
    local key
    key=$(itest_load key)
    lab_wait_settled 120 >/dev/null
    forget n3 "$key"
    lab_user chmod 0770 "$TIER"
    run_ext extc_t job4.log -- -N1 -w n3 --ext-cache=local
    lab_user chmod 0700 "$TIER"
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "n3 built 2 1"
    itest_match "node n3: cold: the site tier is not used: .*group- or world-writable" "$OUT"
    itest_no_drain
}

@test "a step whose task fails publishes nothing, even with new builds" {
    local before
    lab_wait_settled 120 >/dev/null
    before=$(lab_user find "$TIER" -mindepth 2 -maxdepth 2 -name 'g*' | wc -l)
    RC=0
    # shellcheck disable=SC2016 # expanded by the job's shell
    OUT=$(lab_user env SLURM_EXT_CACHE_KEY=fails srun -N1 -w n1 --ext-cache=local --ext-cache-verbose bash -c \
        'mkdir -p "$TORCHINDUCTOR_CACHE_DIR/x" && echo built >"$TORCHINDUCTOR_CACHE_DIR/x/y" && exit 3' 2>&1) || RC=$?
    [ "$RC" -ne 0 ] || fail "the step did not fail: $OUT"
    lab_wait_settled 120 >/dev/null
    itest_match "site tier: a task of the step did not exit 0 on this node: nothing published" "$(cat "$(lab_log n1)")"
    assert_equal "$(lab_user find "$TIER" -mindepth 2 -maxdepth 2 -name 'g*' | wc -l)" "$before"
    # the same step that ends well publishes
    # shellcheck disable=SC2016 # expanded by the job's shell
    lab_user env SLURM_EXT_CACHE_KEY=fails srun -N1 -w n1 --ext-cache=local bash -c \
        'mkdir -p "$TORCHINDUCTOR_CACHE_DIR/z" && echo built >"$TORCHINDUCTOR_CACHE_DIR/z/y"' || fail "srun failed"
    lab_wait_settled 120 >/dev/null
    assert_equal "$(lab_user find "$TIER" -mindepth 2 -maxdepth 2 -name 'g*' | wc -l)" "$((before + 1))"
}
