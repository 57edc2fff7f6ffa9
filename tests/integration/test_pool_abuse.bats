#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The node pool's accounting against a user who games it (docs/security-cases.md,
# E3.3 to E3.5), on a real 3-node Slurm with two ordinary users: the lab's
# user is the one who games, a second user ($VICTIM) the one who must not
# pay for it. What is counted is what root's own walk finds (allocated
# blocks, each inode once); what it cannot measure is not kept; every
# user's keys are reached by every eviction pass, bounded in keys, bytes
# and inodes. Each case asserts that no node drains and that the victim's
# files are intact.

load lib/itest

POOL=$ITEST_BASE/.pool
VICTIM=${EXTC_LAB_VICTIM:-extcvictim}

setup_file() {
    itest_setup_file
    # a second ordinary user, made as lab_setup makes the first
    if ! id -u "$VICTIM" >/dev/null 2>&1; then
        useradd -m -d "/home/$VICTIM" -s /bin/bash "$VICTIM" || fail "useradd $VICTIM failed"
    fi
    VICTIM_UID=$(id -u "$VICTIM")
    W=$LAB/work/abuse
    rm -rf -- "$W"
    mkdir -p "$W" || fail "cannot make $W"
    chmod 1777 "$W"
    export VICTIM VICTIM_UID W
}

teardown_file() { itest_teardown_file; }

as_victim() { LAB_USER=$VICTIM lab_user "$@"; }

# keys_of UID: the key directories of UID on n1
keys_of() { lab_node n1 find "$POOL/$1" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort; }

# new_key WHO NAME SCRIPT: a step of WHO (lab_user or as_victim) on n1
# with SLURM_EXT_CACHE_KEY=NAME runs SCRIPT; prints the key it made
new_key() {
    local who=$1 name=$2 script=$3 uid before key
    uid=$ITEST_UID
    [ "$who" = as_victim ] && uid=$VICTIM_UID
    before=$(keys_of "$uid")
    "$who" env SLURM_EXT_CACHE_KEY="$name" srun -N1 -w n1 --ext-cache=local bash -c "$script" >&2 ||
        fail "the step of key $name failed"
    lab_wait_settled 120 >/dev/null
    key=$(comm -13 <(echo "$before") <(keys_of "$uid"))
    if [ -z "$key" ] || [ "$(wc -l <<<"$key")" -ne 1 ]; then
        fail "no one new key for $name: [$key]"
    fi
    echo "$key"
}

# fill BYTES: a step's script that leaves one build of BYTES random bytes
fill() { echo "mkdir -p \"\$TRITON_CACHE_DIR/k\" && head -c $1 /dev/urandom >\"\$TRITON_CACHE_DIR/k/f\""; }

pass_logged() { tail -n +"$(($1 + 1))" "$(lab_log n1)" | grep -qE 'node pool: [0-9]+ keys of [0-9]+ users, '; }

# trigger_pass: a job of the victim, whose epilog starts an eviction pass on
# n1; waits for the pass's line and sets PASS_LINE to it
trigger_pass() {
    local logged
    logged=$(wc -l <"$(lab_log n1)")
    as_victim env SLURM_EXT_CACHE_KEY=trigger srun -N1 -w n1 --ext-cache=local true ||
        fail "the triggering job failed"
    itest_poll 60 pass_logged "$logged" || fail "no eviction pass was logged on n1"
    PASS_LINE=$(tail -n +"$((logged + 1))" "$(lab_log n1)" | grep -E 'node pool: [0-9]+ keys of [0-9]+ users, ' | tail -n1)
}

# sum_of UID KEY: a checksum of a key's files, to find them intact later
sum_of() { lab_node n1 bash -c "cd '$POOL/$1/$2' && find . -type f -print0 | sort -z | xargs -0 md5sum"; }

@test "E3.3: a 15 TiB sparse file and 50 hard links in a held key cost no other user a key" {
    itest_cluster "base=$ITEST_BASE pool=node pool_max=4M pool_total_max=8M"
    old=$(new_key lab_user att-old "$(fill 65536)")
    victim=$(new_key as_victim v1 "$(fill 262144)")
    before=$(sum_of "$VICTIM_UID" "$victim")
    att=$(new_key lab_user att "$(fill 4096)")
    # a step holds key att while another step of it moves the attack in
    rm -f "$W/held.started" "$W/held.release"
    lab_user env SLURM_EXT_CACHE_KEY=att srun -N1 -w n1 --ext-cache=local bash -c \
        "touch $W/held.started; for _ in \$(seq 600); do [ -e $W/held.release ] && break; sleep 0.1; done" \
        >"$W/held.out" 2>&1 3>&- &
    held_pid=$!
    itest_poll 30 test -e "$W/held.started" || fail "the holding step did not start: $(cat "$W/held.out")"
    # shellcheck disable=SC2016 # expanded by the job's shell
    lab_user env SLURM_EXT_CACHE_KEY=att srun -N1 -w n1 --ext-cache=local bash -c \
        'k=$TRITON_CACHE_DIR/k2; mkdir -p $k && truncate -s 15T $k/sparse &&
        head -c 1M /dev/urandom >$k/blob && for i in $(seq 50); do ln $k/blob $k/l$i; done' ||
        fail "the attacking step failed"
    # the attack is in place: 15 TiB by st_size, nothing allocated; one inode of 51 names
    itest_poll 30 lab_node n1 test -e "$POOL/$ITEST_UID/$att/triton/k2/l50" || fail "the attack was not moved in"
    assert_equal "$(lab_node n1 stat -c '%s %b' "$POOL/$ITEST_UID/$att/triton/k2/sparse")" "16492674416640 0"
    assert_equal "$(lab_node n1 stat -c '%h' "$POOL/$ITEST_UID/$att/triton/k2/blob")" 51
    trigger_pass
    itest_match 'node pool: [0-9]+ keys of [0-9]+ users, 1 in use; evicted 0 ' "$PASS_LINE"
    # counted as allocated, each inode once: about 1.3 MiB, neither 15 TiB nor 51 MiB
    kept=$(sed -nE 's/.* ([0-9]+) bytes and [0-9]+ inodes kept.*/\1/p' <<<"$PASS_LINE")
    [ "$kept" -gt 1048576 ] && [ "$kept" -lt 4194304 ] || fail "bytes kept: $kept ($PASS_LINE)"
    assert_equal "$(sum_of "$VICTIM_UID" "$victim")" "$before"
    lab_node n1 test -s "$POOL/$ITEST_UID/$old/triton/k/f" || fail "the user's own older key went"
    touch "$W/held.release"
    wait "$held_pid" || fail "the holding step failed: $(cat "$W/held.out")"
    itest_no_drain
}

@test "E3.4: a key deeper than root's walk goes, inodes are bounded, and what is written in later is measured again" {
    itest_cluster "base=$ITEST_BASE pool=node pool_max=4M pool_max_inodes=1000"
    wide=$(new_key lab_user wide "$(fill 4096)")
    deep=$(new_key lab_user deep "$(fill 4096)")
    small=$(new_key lab_user small "$(fill 4096)")
    victim=$(new_key as_victim v2 "$(fill 131072)")
    before=$(sum_of "$VICTIM_UID" "$victim")
    # least recently used first: a record's mtime is its key's last use, in seconds
    lab_node n1 touch -d '3 minutes ago' "$POOL/$ITEST_UID/$wide.use"
    lab_node n1 touch -d '2 minutes ago' "$POOL/$ITEST_UID/$deep.use"
    # written into the keys by path, after root measured them: 1500 files, 80 levels
    lab_user srun -N1 -w n1 bash -c "cd '$POOL/$ITEST_UID/$wide' && seq 1500 | xargs touch &&
        mkdir -p '$POOL/$ITEST_UID/$deep/'\$(printf 'd/%.0s' \$(seq 80))" || fail "writing into the keys failed"
    trigger_pass
    itest_poll 30 itest_absent n1 "$POOL/$ITEST_UID/$deep" || fail "the key deeper than the walk's limit is kept"
    itest_poll 30 itest_absent n1 "$POOL/$ITEST_UID/$wide" || fail "the key over pool_max_inodes is kept"
    lab_node n1 test -s "$POOL/$ITEST_UID/$small/triton/k/f" || fail "the user's newest key went"
    # grown over pool_max by path, after its record: the next pass measures it again
    lab_user srun -N1 -w n1 bash -c "head -c 6M /dev/urandom >'$POOL/$ITEST_UID/$small/later'" ||
        fail "writing into the key failed"
    trigger_pass
    itest_poll 30 itest_absent n1 "$POOL/$ITEST_UID/$small" || fail "a key grown over pool_max after its record is kept"
    assert_equal "$(sum_of "$VICTIM_UID" "$victim")" "$before"
    itest_no_drain
}

@test "E3.5: one user's 5000 keys hide no other user's from pool_ttl and pool_max; keys per user are bounded" {
    itest_cluster "base=$ITEST_BASE pool=node pool_max=1M pool_max_keys=20"
    own=$(new_key lab_user own "$(fill 4096)")
    # 5000 more keys of the user, as 5000 steps with a new SLURM_EXT_CACHE_KEY leave them
    lab_node n1 python3 - "$POOL/$ITEST_UID" "$ITEST_UID" "$ITEST_GID" <<'PY' || fail "making the keys failed"
import os, sys, time
level, uid, gid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
now = time.time()
for i in range(5000):
    key = os.path.join(level, '%032x' % (0xabc00000 + i))
    os.mkdir(key, 0o700)
    os.chown(key, uid, gid)
    os.close(os.open(key + '.use', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.utime(key + '.use', (now - 7200 - i, now - 7200 - i))
PY
    assert_equal "$(keys_of "$ITEST_UID" | wc -l)" 5001
    # every pass from here on meets the 5000 keys first or last, as readdir has it
    stale=$(new_key as_victim stale "$(fill 4096)")
    lab_node n1 touch -d '30 days ago' "$POOL/$VICTIM_UID/$stale.use"
    va=$(new_key as_victim va "$(fill 716800)")
    vb=$(new_key as_victim vb "$(fill 716800)")
    before=$(sum_of "$VICTIM_UID" "$vb")
    trigger_pass
    itest_poll 30 itest_absent n1 "$POOL/$VICTIM_UID/$stale" || fail "the victim's key unused past pool_ttl is kept"
    itest_poll 30 itest_absent n1 "$POOL/$VICTIM_UID/$va" || fail "the victim's older key over pool_max is kept"
    assert_equal "$(sum_of "$VICTIM_UID" "$vb")" "$before"
    # the newest 20: the user's own step's key and the 19 newest of the others
    assert_equal "$(keys_of "$ITEST_UID" | wc -l)" 20
    lab_node n1 test -d "$POOL/$ITEST_UID/$own" || fail "the user's newest key went"
    itest_no_drain
}
