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
n1_log_has() { grep -qE -- "$1" "$(lab_log n1)"; }
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

# what a case started in the background and has not ended itself (case 85)
teardown() {
    if [ -f "$W/bound.pids" ]; then
        # shellcheck disable=SC2046 # one pid a word
        kill $(cat "$W/bound.pids") 2>/dev/null || true
        rm -f "$W/bound.pids"
    fi
}

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

pass_logged() { tail -n +"$(($1 + 1))" "$(lab_log n1)" | grep -qE 'node pool: [0-9]+ keys? of [0-9]+ users?, '; }

# trigger_pass: a job of the victim, whose epilog starts an eviction pass on
# n1; waits for the pass's line and sets PASS_LINE to it
trigger_pass() {
    local logged
    logged=$(wc -l <"$(lab_log n1)")
    as_victim env SLURM_EXT_CACHE_KEY=trigger srun -N1 -w n1 --ext-cache=local true ||
        fail "the triggering job failed"
    itest_poll 60 pass_logged "$logged" || fail "no eviction pass was logged on n1"
    PASS_LINE=$(tail -n +"$((logged + 1))" "$(lab_log n1)" | grep -E 'node pool: [0-9]+ keys? of [0-9]+ users?, ' | tail -n1)
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
    itest_match 'node pool: [0-9]+ keys? of [0-9]+ users?, 1 in use; evicted 0 ' "$PASS_LINE"
    # counted as allocated, each inode once: about 1.3 MiB, neither 15 TiB nor 51 MiB
    kept=$(sed -nE 's/.* ([0-9]+) bytes and [0-9]+ inodes? kept.*/\1/p' <<<"$PASS_LINE")
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
    # va used an hour before vb, before vb's step: two steps a second apart at most
    # would tie (the record's time is in seconds), a tie goes by key name, and the
    # pass after vb's own epilog could then take vb, over pool_max with va
    lab_node n1 touch -d '1 hour ago' "$POOL/$VICTIM_UID/$va.use"
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

# finishers_max N1_PID OUT SECONDS: until killed, or for SECONDS, count
# every 2 ms the step ends (root processes named extc-finisher whose parent
# is not one: not a helper still root between its fork and its switch to
# the user) alive in n1's mount namespace, and keep the most seen at once
# in OUT. The process started in the background is the counter itself.
finishers_max() {
    exec python3 - "$1" "$2" "$3" <<'PY'
import os, sys, time
anchor, out, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
ns = os.readlink("/proc/%s/ns/mnt" % anchor)
def field(p, what):
    try:
        with open("/proc/%s/%s" % (p, what)) as f:
            return f.read()
    except OSError:
        return ""
def is_end(p):
    if field(p, "comm").strip() != "extc-finisher":
        return False
    uid = [l.split()[1] for l in field(p, "status").splitlines() if l.startswith("Uid:")]
    stat = field(p, "stat")
    try:
        same_ns = os.readlink("/proc/%s/ns/mnt" % p) == ns
    except OSError:
        return False
    if uid != ["0"] or not same_ns or ")" not in stat:
        return False
    return field(stat.rsplit(")", 1)[1].split()[1], "comm").strip() != "extc-finisher"
most = 0
with open(out, "w") as f:
    f.write("0\n")
deadline = time.monotonic() + limit
while time.monotonic() < deadline:
    n = sum(1 for p in filter(str.isdigit, os.listdir("/proc")) if is_end(p))
    if n > most:
        most = n
        with open(out, "w") as f:
            f.write("%d\n" % most)
    time.sleep(0.002)
PY
}

# ends_on_n1: the pids of the step ends (root extc-finisher) alive on n1 now
ends_on_n1() {
    local p
    for p in $(pgrep -U 0 -x extc-finisher); do
        [ "$(readlink "/proc/$p/ns/mnt")" = "$(readlink "/proc/$(cat "$LAB/run/lab-slurmd-n1.pid")/ns/mnt")" ] || continue
        [ "$(cat "/proc/$(awk '{print $4}' "/proc/$p/stat")/comm" 2>/dev/null)" = extc-finisher ] || echo "$p"
    done
    return 0
}

# ends_are N: exactly N step ends are alive on n1
ends_are() { [ "$(ends_on_n1 | wc -l)" -eq "$1" ]; }

@test "case 85: a user's stopped helpers hold at most 4 step ends (extc-finisher) on a node; the others are not detached and leave their directories to the epilog" {
    local n1 catcher counter job out over helpers pub=$W/bound-pub
    # publish_timeout (300 s) is what a stopped publish helper holds its end for
    itest_cluster "base=$ITEST_BASE pool=node publish_timeout=300"
    mkdir -p "$pub" && chown "$ITEST_UID:$ITEST_GID" "$pub" || fail "cannot make $pub"
    n1=$(cat "$LAB/run/lab-slurmd-n1.pid")
    # every helper of the user's step ends stopped the moment it appears
    # (lib/stop_helper.py), as many as there are steps: without the bound,
    # each step would keep a root end waiting on its stopped helper
    # (both bounded, without bats' descriptor 3, and ended by teardown
    # should the case fail before it ends them)
    python3 "$ITEST_DIR/lib/stop_helper.py" "$n1" "$ITEST_UID" extc-finisher 400 10 >"$W/bound.helpers" 2>&1 3>&- &
    catcher=$!
    finishers_max "$n1" "$W/bound.max" 400 3>&- &
    counter=$!
    echo "$catcher $counter" >"$W/bound.pids"
    # one job, 10 steps one after another, each leaving 2000 entries of its
    # own for its end to publish, then put back into the pool
    cat >"$W/bound.sh" <<SH
#!/bin/bash
for i in \$(seq 10); do
    srun -N1 -n1 -w n1 --ext-cache=local --ext-cache-publish='$pub' bash -c \\
        'mkdir -p "\$TRITON_CACHE_DIR" && cd "\$TRITON_CACHE_DIR" && seq -f "s\${SLURM_STEP_ID}_%g" 2000 | xargs touch' ||
        exit 1
done
SH
    chmod 755 "$W/bound.sh"
    SECONDS=0
    # (itest_sbatch's 120 s are short for 10 steps on a loaded 2-core machine)
    job=$(lab_user sbatch --parsable -o "$LAB/work/%j.out" -N1 -w n1 "$W/bound.sh" 2>&1) ||
        fail "sbatch: $job"
    job=${job%%;*}
    assert_equal "$(lab_wait_job "$job" 240)" COMPLETED
    echo "# the job's 10 steps took ${SECONDS} s" >&3
    # the job is over; 4 ends wait on their stopped publish helpers, the other 6 were not detached
    itest_poll 30 ends_are 4 ||
        fail "not 4 step ends alive on n1: $(ends_on_n1 | wc -l)"
    out=$(grep -E "job $job step [0-9]+: the step's end is not detached" "$(lab_log n1)" || true)
    assert_equal "$(grep -cE "job $job step [0-9]+: the step's end is not detached: 4 detached step ends of this user are running on this node, the bound per user \(waited 1500 ms\); nothing of it is published, and its directory is left in place for the job epilog, which moves its builds into the node pool" <<<"$out")" 6
    echo "# most step ends alive at once on n1: $(cat "$W/bound.max")" >&3
    assert_equal "$(cat "$W/bound.max")" 4
    # the directories of the steps that were not detached were left to the epilog, which
    # moved their builds into the pool while the 4 ends still wait: the bound lost none
    itest_poll 60 n1_log_has "job $job: epilog: node pool: put back what 6 of its steps' directories held \(12000 entries\)" ||
        fail "the epilog did not pool the 6 directories: $(grep "job $job: epilog" "$(lab_log n1)" | tail -n 4)"
    for over in $(grep -oE "step [0-9]+:" <<<"$out" | tr -dc '0-9\n'); do
        assert_equal "$(lab_node n1 find "$POOL/$ITEST_UID" -name "s${over}_*" | wc -l)" 2000
    done
    helpers=$(grep -E '^[0-9]+$' "$W/bound.helpers" | paste -sd' ')
    assert_equal "$(wc -w <<<"$helpers")" 4
    kill "$catcher" "$counter"
    wait "$catcher" "$counter" 2>/dev/null || true
    rm -f "$W/bound.pids"
    # let them go: every end publishes and moves its step's builds into the
    # pool, the epilog's work ends, the job's tree goes
    # shellcheck disable=SC2086 # one pid a word
    kill -CONT $helpers
    lab_wait_settled 180 || fail "the step ends did not end: $(ends_on_n1 | paste -sd' ')"
    assert_equal "$(ends_on_n1)" ""
    assert_equal "$(grep -cE "job $job step [0-9]+: published to .*: 2000 new entries" "$(lab_log n1)")" 4
    # and every step's builds are in the key: the 4 ends moved theirs (or, past their
    # own bound on a loaded machine, left them to the epilog, which moved them)
    itest_poll 60 itest_absent n1 "$ITEST_BASE/$ITEST_UID/$job" || fail "job $job's directory is still there"
    for over in $(seq 0 9); do
        assert_equal "$(lab_node n1 find "$POOL/$ITEST_UID" -name "s${over}_*" | wc -l)" 2000
    done
    # nothing of the steps that were not detached was published
    for over in $(grep -oE "step [0-9]+:" <<<"$out" | tr -dc '0-9\n'); do
        assert_equal "$(find "$pub" -name "s${over}_*" | wc -l)" 0
    done
    itest_poll 60 itest_absent n1 "$ITEST_BASE/$ITEST_UID/$job" || fail "job $job's directory is still there"
    itest_no_drain
}
