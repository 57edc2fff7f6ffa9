#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The site tier (tier=, beside pool=node) when its filesystem misbehaves, on
# a real 3-node Slurm, as the unprivileged user, with steps that write their
# own files into $TORCHINDUCTOR_CACHE_DIR (each case a key of its own, so a
# node's key starts empty). The tier is $W/shared/<user> under the user's
# home, which every node sees at the same path; a case mounts something
# else there inside one node's mount namespace only:
#   1. a tier that is a symbolic link (to a root-owned sticky directory the
#      user could write) is refused, and nothing is written through it;
#   2. a full tier filesystem (a 64 KiB tmpfs): the publish fails with a
#      line naming it, leaves no stage, and the step and node are fine;
#   3. two one-node steps of one new key on n1 and n2 at once (each node 0
#      of its own step): two generations, each with its manifest, no stage;
#   4. a tier root cannot read (bindfs without allow_other, as NFS with
#      root_squash refuses root) works: root never needs it;
#   5. a tier that never answers (FUSE, fuse_hang, with allow_other, so that
#      a root process that looked would wait too) costs one step
#      tier_timeout= and a cold start, root notes it, and the next step on
#      that node does not read the tier; no node drained.
# Every wait is a poll with a deadline. The cases run in order (5 last: its
# note keeps n3 off the tier for 600 s).

load lib/itest
load lib/fuse

POOL=$ITEST_BASE/.pool
TIMEOUT=5

setup_file() {
    command -v bindfs >/dev/null 2>&1 || fail "no bindfs in PATH: apt-get install bindfs (scripts/install-deps.sh)"
    itest_setup_file
    fuse_hang_build
    fuse_allow_users || fail "cannot set user_allow_other in $FUSE_CONF or make /dev/fuse 0666"
    HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
    W=$HOME_DIR/.extc-tierfail-$(basename "$LAB")
    TIER=$W/shared/$LAB_USER
    rm -rf -- "$W"
    lab_user mkdir -p "$TIER" "$W/real" || fail "cannot make $W"
    lab_user chmod 0700 "$TIER" "$W/real"
    export W TIER HOME_DIR
    itest_cluster "base=$ITEST_BASE pool=node tier=$W/shared/%U tier_timeout=$TIMEOUT"
}

teardown_file() {
    hang_cleanup n3 >/dev/null 2>&1 || true
    for n in n1 n2 n3; do tier_unmount "$n"; done
    itest_teardown_file
    fuse_restore
}

# at_tier NODE: what is mounted at the tier in NODE's namespace, from its
# mountinfo (filesystem type and source; nothing asked of the mount itself)
at_tier() {
    lab_node "$1" cat /proc/self/mountinfo 2>/dev/null |
        awk -v m="$TIER" '$5 == m { for (i = 7; $i != "-"; i++) ; print $(i + 1), $(i + 2) }'
}

# tier_unmount NODE: detach whatever is mounted at the tier in NODE's namespace
tier_unmount() {
    for _ in 1 2 3 4; do
        [ -n "$(at_tier "$1")" ] || return 0
        lab_node "$1" umount -c -l "$TIER" 2>/dev/null || true
    done
    [ -z "$(at_tier "$1")" ]
}

# node_user NODE CMD...: CMD as the user, inside NODE's mount namespace
node_user() {
    local n=$1
    shift
    lab_node "$n" setpriv --reuid="$ITEST_UID" --regid="$ITEST_GID" --init-groups -- \
        env -i HOME="$HOME_DIR" PATH=/usr/bin:/bin "$@"
}

# step NODE KEY SCRIPT: a one-node step of pool key KEY on NODE running
# bash -c SCRIPT, with --ext-cache-verbose; sets OUT and RC
step() {
    RC=0
    OUT=$(lab_user env SLURM_EXT_CACHE_KEY="$2" timeout -k 5 120 srun -N1 -w "$1" --ext-cache=local \
        --ext-cache-verbose bash -c "$3" 2>&1) || RC=$?
}

# the step's build: one new file of SIZE bytes (default 4096) in the cache
build() {
    # shellcheck disable=SC2016 # expanded by the job's shell
    printf 'mkdir -p "$TORCHINDUCTOR_CACHE_DIR/built" && head -c %s /dev/urandom >"$TORCHINDUCTOR_CACHE_DIR/built/$SLURMD_NODENAME.%s"' \
        "${1:-4096}" "$RANDOM"
}

# tier_keys: the keys in the tier (as the user, on the host)
tier_keys() { lab_user find "$TIER" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort; }
# generations KEY [DIR=$TIER]: KEY's generations, newest first
generations() { lab_user find "${2:-$TIER}/$1" -mindepth 1 -maxdepth 1 -name 'g*' -printf '%f\n' 2>/dev/null | sort -r; }
# keys_n1: n1's pool keys
keys_n1() { lab_node n1 find "$POOL/$ITEST_UID" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort; }
# stages: stages left in the tier
stages() { lab_user find "$TIER" -name '.ext-cache-stage.*' -printf '%P\n' 2>/dev/null; }
# log_has NODE REGEX: NODE's slurmd log says REGEX within 30 s
log_has() {
    itest_poll 30 grep -qaE -- "$2" "$(lab_log "$1")" ||
        fail "$1: no line matches /$2/; the plugin said:"$'\n'"$(grep -a 'ext-cache:' "$(lab_log "$1")" | tail -n 12)"
}

@test "a tier that is a symbolic link (to a root-owned sticky directory) is refused, and nothing is written through it" {
    local elsewhere=$LAB/work/not-a-tier
    rm -rf -- "$elsewhere"
    mkdir -m 1777 "$elsewhere"
    lab_user mv "$TIER" "$TIER.real" && lab_user ln -s "$elsewhere" "$TIER" || fail "cannot make the link"
    step n1 link "$(build)"
    lab_wait_settled 60 >/dev/null
    lab_user rm -f "$TIER" && lab_user mv "$TIER.real" "$TIER"
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    itest_match "node n1: cold: the site tier is not used: .*is a symbolic link" "$OUT"
    log_has n1 "site tier: key [0-9a-f]+ not published: .*is a symbolic link"
    assert_equal "written through the link: $(find "$elsewhere" -mindepth 1 -printf '%P ')" "written through the link: "
    ! grep -qa 'site tier: published' "$(lab_log n1)" || fail "n1 published: $(grep -a 'site tier: published' "$(lab_log n1)")"
    itest_no_drain
}

@test "a full tier filesystem: the publish fails with a line naming it, no stage is left, the step and node are fine" {
    local key before
    before=$(keys_n1)
    lab_node n1 mount -t tmpfs -o "size=64k,mode=0700,uid=$ITEST_UID,gid=$ITEST_GID" extc-tier-full "$TIER" ||
        fail "cannot mount a tmpfs at the tier on n1"
    assert_equal "$(at_tier n1)" "tmpfs extc-tier-full"
    step n1 full "$(build 262144)"
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    lab_wait_settled 60 >/dev/null
    key=$(comm -13 <(echo "$before") <(keys_n1))
    [ -n "$key" ] && [ "$(wc -l <<<"$key")" -eq 1 ] || fail "n1: not one new key: [$key]"
    log_has n1 "site tier: key $key not published: .*the filesystem is full"
    # nothing staged is left on the full filesystem; the build is in n1's pool
    assert_equal "stages: $(node_user n1 find "$TIER" -name '.ext-cache-stage.*')" "stages: "
    assert_equal "generations: $(node_user n1 find "$TIER" -mindepth 2 -maxdepth 2 -name 'g*')" "generations: "
    [ -n "$(lab_node n1 find "$POOL/$ITEST_UID/$key" -type f -name 'n1.*' -print -quit)" ] ||
        fail "the build is not in n1's pool key $key"
    tier_unmount n1 || fail "cannot unmount the tmpfs"
    itest_no_drain
}

@test "two nodes publishing one new key at once: two generations, each with its manifest, no stage left" {
    local before key gens g pid1 pid2 rc1=0 rc2=0
    before=$(tier_keys)
    lab_user env SLURM_EXT_CACHE_KEY=both timeout -k 5 120 srun -N1 -w n1 --ext-cache=local bash -c "$(build)" \
        >"$BATS_FILE_TMPDIR/both.n1" 2>&1 &
    pid1=$!
    lab_user env SLURM_EXT_CACHE_KEY=both timeout -k 5 120 srun -N1 -w n2 --ext-cache=local bash -c "$(build)" \
        >"$BATS_FILE_TMPDIR/both.n2" 2>&1 &
    pid2=$!
    wait "$pid1" || rc1=$?
    wait "$pid2" || rc2=$?
    assert_equal "rc $rc1 $rc2" "rc 0 0"
    lab_wait_settled 60 >/dev/null
    key=$(comm -13 <(echo "$before") <(tier_keys))
    [ -n "$key" ] && [ "$(wc -l <<<"$key")" -eq 1 ] || fail "not one new key in the tier: [$key]"
    log_has n1 "site tier: published generation g[0-9]+\.n1\.[0-9]+ of key $key"
    log_has n2 "site tier: published generation g[0-9]+\.n2\.[0-9]+ of key $key"
    gens=$(generations "$key")
    assert_equal "$(sed -E 's/^g[0-9]+\.(n[0-9]+)\.[0-9]+$/\1/' <<<"$gens" | sort | paste -sd' ')" "n1 n2"
    for g in $gens; do
        itest_match '^ext-cache-generation 1$' "$(lab_user head -n 1 "$TIER/$key/$g/.ext-cache-generation")"
    done
    assert_equal "stages: $(stages)" "stages: "
    itest_no_drain
}

@test "a tier root cannot read (bindfs without allow_other, as NFS root_squash refuses root) works: root never needs it" {
    local n out gen key
    # an empty mount point (bindfs, with libfuse 2, refuses another); the
    # tier's earlier keys are put back at the end
    lab_user mv "$TIER" "$TIER.before" && lab_user mkdir -m 0700 "$TIER" || fail "cannot empty the tier"
    for n in n1 n3; do
        node_user "$n" bindfs --no-allow-other "$W/real" "$TIER" || fail "$n: bindfs did not mount"
        itest_match "^fuse $W/real$" "$(at_tier "$n")"
    done
    # root is refused by the kernel, as root_squash refuses it
    out=$(lab_node n1 ls "$TIER" 2>&1) && fail "root could list the tier: $out"
    itest_match "Permission denied" "$out"
    step n1 bind "$(build)"
    [ "$RC" -eq 0 ] || fail "srun on n1 failed ($RC): $OUT"
    lab_wait_settled 60 >/dev/null
    key=$(lab_user ls "$W/real")
    gen=$(generations "$key" "$W/real")
    [ -n "$key" ] && [ -n "$gen" ] || fail "nothing published into $W/real: [$key] [$gen]"
    log_has n1 "site tier: published generation $gen of key $key"
    # it went through bindfs into the user's directory
    lab_user test -s "$W/real/$key/$gen/.ext-cache-generation" || fail "$gen is not in $W/real/$key"
    # shellcheck disable=SC2016 # expanded by the job's shell
    step n3 bind 'cat "$TORCHINDUCTOR_CACHE_DIR"/built/n1.* | wc -c'
    [ "$RC" -eq 0 ] || fail "srun on n3 failed ($RC): $OUT"
    itest_match "node n3: warm: seeded [1-9][0-9]* files?, .*, from the site tier \(generation $gen, key ${key:0:8}\.\.\.\) in [0-9.]+ s" "$OUT"
    itest_match "^4096$" "$OUT"
    for n in n1 n3; do tier_unmount "$n" || fail "$n: cannot unmount bindfs"; done
    lab_user rmdir "$TIER" && lab_user mv "$TIER.before" "$TIER" || fail "cannot put the tier back"
    itest_no_drain
}

@test "a FUSE tier that never answers: the step starts cold within tier_timeout=, no drain, and the next step does not wait again" {
    local note=$POOL/$ITEST_UID/tier.unreachable
    itest_absent n3 "$note" || fail "n3 has a note already"
    node_user n3 "$HANG" "$TIER" "$LAB/work/tier.pid.hang" || fail "n3: fuse_hang did not mount"
    assert_equal "$(hang_mounts n3)" "$TIER"
    step n3 hang true
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    itest_match "node n3: cold: the site tier did not answer within $TIMEOUT s: not read on this node for 600 s" "$OUT"
    log_has n3 "site tier: no answer within tier_timeout=$TIMEOUT s"
    # root's note, in n3's node-local pool
    itest_poll 30 lab_node n3 test -f "$note" || fail "no $note on n3"
    assert_equal "$(lab_node n3 stat -c '%U' "$note")" root
    # the user's next step on n3, of the same key (its put-back moved nothing:
    # only empty directories), the mount still hanging, does not read the
    # tier, which would wait tier_timeout= again and say so; it builds, and
    # its end does not publish to the tier either (a child stuck there until
    # publish_timeout=)
    lab_wait_settled 60 >/dev/null
    step n3 hang "$(build)"
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    itest_match "node n3: cold: the site tier did not answer on this node less than 600 s ago: not read" "$OUT"
    ! grep -q 'did not answer within' <<<"$OUT" || fail "the second step read the tier: $OUT"
    itest_poll 60 grep -qa "site tier: it did not answer on this node less than 600 s ago: key [0-9a-f]* not published" "$(lab_log n3)" ||
        fail "the end did not skip the publish: $(grep -a 'site tier' "$(lab_log n3)" | tail -n 3)"
    lab_wait_settled 60 >/dev/null || fail "detached work left on the lab after the skipped publish"
    assert_equal "$(grep -ac "site tier: no answer within tier_timeout=" "$(lab_log n3)")" 1
    itest_no_drain
    hang_cleanup n3
    assert_equal "mounts left: $(hang_mounts n3)" "mounts left: "
    lab_node n3 rm -f -- "$note"
}
