#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Deferred removal on a real 3-node Slurm. The job epilog moves a job's tree
# (here 100000 files) into <base>/.trash in O(1) and returns; a detached
# emptier removes it afterwards with the same engine and the same rules.
# This suite proves, on node n1:
#   - the epilog completes while the whole tree still waits in the trash
#     (the test holds the trash's lock, so the emptier the epilog starts
#     removes nothing), and while a running emptier is stopped mid-way
#     (SIGSTOP);
#   - the trash is root-only, out of the user's reach;
#   - an emptier SIGKILLed mid-way leaves leftovers that the next job's
#     epilog on the node finishes, and leftovers found at slurmd start are
#     emptied then;
#   - nothing outside the tree is touched: files the tree hardlinks and
#     symlinks to (in the node's /tmp, root's, another user's, the user's
#     own), the base, the trash, and the live cache of another running job;
#   - no node drains.
# No absolute time is asserted: "the epilog returned before the removal"
# is shown by the removal being held back, not by a stopwatch.
# The cases run in order: each goes on from the state the one before left.
#
# Node n1's /var/tmp is a tmpfs mounted inside its mount namespace (gone
# with it): on this machine kind's root ext4 (no journal, online discard)
# creating 100000 files soon after removing as many takes minutes. Hardlinked
# sentinels live on that same tmpfs, as a hardlink must.

# Each @test runs in a process of its own: a variable one sets is never
# meant for another (they pass values through files), so shellcheck's
# warning about changes lost in a subshell does not apply.
# shellcheck disable=SC2030,SC2031
load lib/itest

B=$ITEST_BASE
N=n1
NFILES=100000
W=$LAB/work
OTHER=nobody
SENTINELS="/tmp/extc-sentinel /tmp/extc-sentinel/user-tmp /tmp/extc-sentinel/sub
/tmp/extc-sentinel/sub/deep /var/tmp/extc-root /var/tmp/extc-root/root-file /var/tmp/extc-other
/var/tmp/extc-other/other-file /var/tmp/extc-user /var/tmp/extc-user/user-file"

setup_file() {
    # debug: the epilog logs the pid of the emptier it starts
    LAB_SLURM_CONF_EXTRA=${LAB_SLURM_CONF_EXTRA:-SlurmdDebug=debug}
    itest_setup_file
    itest_cluster "base=$B"
    # node n1: a tmpfs /var/tmp, the base on it, and the sentinels
    if ! { lab_node $N mount -t tmpfs -o mode=1777,size=1g extc-deferred /var/tmp &&
        lab_node $N mkdir -m 0711 "$B"; }; then
        fail "cannot mount a tmpfs /var/tmp on $N"
    fi
    # shellcheck disable=SC2016  # expanded by the inner shell on the node
    lab_node $N bash -euc '
    u=$1 other=$2
    mkdir -m 0755 /tmp/extc-sentinel /tmp/extc-sentinel/sub
    echo "user file in /tmp" >/tmp/extc-sentinel/user-tmp
    echo deep >/tmp/extc-sentinel/sub/deep
    chown -R "$u:" /tmp/extc-sentinel
    mkdir -m 0755 /var/tmp/extc-root
    (umask 077; echo "root only" >/var/tmp/extc-root/root-file)
    mkdir -m 0755 /var/tmp/extc-other
    (umask 077; echo "another user" >/var/tmp/extc-other/other-file)
    chown -R "$other:" /var/tmp/extc-other
    mkdir -m 0755 /var/tmp/extc-user
    echo "the user, outside the tree" >/var/tmp/extc-user/user-file
    chown -R "$u:" /var/tmp/extc-user' _ "$LAB_USER" "$OTHER" || fail "cannot make the sentinels on $N"
    sentinel_state >"$BATS_FILE_TMPDIR/sentinels"
    # the file maker the epilog benchmark uses; copied, since nodes may not see the checkout
    cp "$ITEST_TOP/bench/mkfiles.py" "$W/deferred_mkfiles.py"
    # the big job: NFILES files, then links to everything around, then it waits for "go"
    cat >"$W/deferred_big.sh" <<'JOB'
#!/bin/bash
set -eu
W=$SLURM_SUBMIT_DIR
# the leaf starts without it: Triton makes it (os.makedirs) on first use
mkdir -p "$TRITON_CACHE_DIR"
/usr/bin/python3 "$W/deferred_mkfiles.py" "$TRITON_CACHE_DIR" "$NFILES"
L=$TRITON_CACHE_DIR/d050/links
mkdir "$L"
for t in /tmp/extc-sentinel /tmp/extc-sentinel/user-tmp /var/tmp/extc-root \
    /var/tmp/extc-root/root-file /var/tmp/extc-other /var/tmp/extc-other/other-file \
    /var/tmp/extc-user /var/tmp/ext-cache /var/tmp/ext-cache/.trash /var/tmp; do
    ln -s "$t" "$L/sym$(echo "$t" | tr / _)"
done
ln -s ../../../../../.. "$L/up"
ln /var/tmp/extc-user/user-file "$L/hard-user-file"
sib=$(cat "$W/deferred.sibling")
ln -s "$sib" "$L/sibling-dir"
ln "$sib/keep" "$L/hard-sibling-keep"
printf '%s\n' "$SLURM_EXT_CACHE_DIR" "$L" "$TRITON_CACHE_DIR/d099" >"$W/deferred.$SLURM_JOB_ID.ready"
for _ in $(seq 1200); do
    [ -e "$W/deferred.$SLURM_JOB_ID.go" ] && exit 0
    sleep 0.1
done
exit 1
JOB
    # another job of the same user, running on n1 all along: its cache must survive
    cat >"$W/deferred_sibling.sh" <<'JOB'
#!/bin/bash
W=$SLURM_SUBMIT_DIR
echo "the sibling's cache" >"$SLURM_EXT_CACHE_DIR/keep"
echo "$SLURM_EXT_CACHE_DIR" >"$W/deferred.sibling"
for _ in $(seq 1800); do
    [ -e "$W/deferred.sibling.stop" ] && exit 0
    sleep 0.1
done
JOB
    chmod 755 "$W"/deferred_*.sh
    rm -f "$W"/deferred.*
    # the emptier started by an epilog on n1: a `slurmstepd spank epilog` image in
    # n1's namespace that no longer has slurmd or an epilog as its parent. Stopped
    # (SIGSTOP) as soon as seen; its pid printed.
    cat >"$W/deferred_catch.py" <<'PY'
import os, signal, sys, time
slurmd, limit = int(sys.argv[1]), float(sys.argv[2])
ns = os.readlink("/proc/%d/ns/mnt" % slurmd)
def argv(p):
    try:
        with open("/proc/%s/cmdline" % p, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []
def ppid(p):
    try:
        with open("/proc/%s/stat" % p, "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1
end = time.monotonic() + limit
while time.monotonic() < end:
    for p in os.listdir("/proc"):
        if not p.isdigit() or argv(p)[1:3] != [b"spank", b"epilog"]:
            continue
        try:
            if os.readlink("/proc/%s/ns/mnt" % p) != ns:
                continue
        except OSError:
            continue
        pp = ppid(p)
        if pp in (slurmd, -1) or argv(pp)[1:2] == [b"spank"]:
            continue
        os.kill(int(p), signal.SIGSTOP)
        print(p, pp)
        sys.exit(0)
    time.sleep(0.002)
sys.exit(1)
PY
}

teardown_file() {
    release_trash
    touch "$W/deferred.sibling.stop"
    itest_teardown_file
}

# owner, mode, link count, size, type and content digest of every sentinel
sentinel_state() {
    # shellcheck disable=SC2086,SC2016  # $N is one word; the script is expanded on the node
    lab_node $N bash -c 'for p in "$@"; do
            printf "%s %s " "$p" "$(stat -c "%U:%G %a %h %s %F" "$p" 2>&1)"
            if [ -f "$p" ]; then md5sum <"$p"; else echo; fi
        done' _ $SENTINELS
}
# trash_files: how many of the job's files (f*) are in n1's trash
trash_files() { lab_node $N find "$B/.trash" -type f -name 'f[0-9]*' 2>/dev/null | wc -l; }
trash_entries() { lab_node $N find "$B/.trash" -mindepth 1 2>/dev/null | wc -l; }
trash_empty() { [ "$(trash_entries)" -eq 0 ]; }
dir_empty() { [ -z "$(find "$1" -mindepth 1 2>/dev/null | head -1)" ]; }
proc_gone() { [ ! -e "/proc/$1" ]; }
# no_spank_epilog_on_node: no process in $N's mount namespace runs
# "slurmstepd spank epilog" (an epilog, or an emptier it started)
no_spank_epilog_on_node() {
    local ns p argv
    ns=$(readlink "/proc/$(cat "$LAB/run/lab-slurmd-$N.pid")/ns/mnt") || return 1
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
        argv=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
        case $argv in
            *" spank epilog"*) return 1 ;;
        esac
    done
    return 0
}
# log_ms TIMESTAMP: "2026-11-22T05:24:50.531" -> ms since the epoch
log_ms() {
    local d=${1%.*} ms=${1##*.}
    echo $(($(date -d "$d" +%s) * 1000 + 10#$ms))
}
# epilog_ms JOBID: slurmd on n1, from the terminate request to "epilog complete" sent
epilog_ms() {
    local a b
    a=$(grep -o "^\[[^]]*\] debug:  _rpc_terminate_job: uid = 0 JobId=$1\$" "$(lab_log $N)" | head -1)
    b=$(grep -o "^\[[^]]*\] debug:  JobId=$1: sent epilog complete msg" "$(lab_log $N)" | head -1)
    if [ -z "$a" ] || [ -z "$b" ]; then
        echo "?"
        return
    fi
    a=${a#[}
    b=${b#[}
    echo $(($(log_ms "${b%%]*}") - $(log_ms "${a%%]*}")))
}
as_user_on_node() {
    lab_node $N setpriv --reuid="$ITEST_UID" --regid="$ITEST_GID" --init-groups -- "$@"
}
log_n() { cat "$(lab_log $N)"; }

# hold_trash / release_trash: a root process on n1 holds the trash's lock
# (its pid in $W/deferred.holder), so the emptier an epilog starts finds the
# lock taken and leaves everything
hold_trash() {
    rm -f "$W/deferred.holder"
    # shellcheck disable=SC2016  # expanded by the inner shell
    lab_node $N flock -x "$B/.trash" sh -c 'echo $$ >"$1"; exec sleep 300' _ "$W/deferred.holder" \
        >/dev/null 2>&1 3>&- &
    itest_poll 5 test -s "$W/deferred.holder"
}
release_trash() {
    local holder
    holder=$(cat "$W/deferred.holder" 2>/dev/null) || true
    [ -z "$holder" ] || kill "$holder" 2>/dev/null || true
    rm -f "$W/deferred.holder"
}
job_ended() {
    case $(lab_job_state "$1") in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL) return 0 ;;
    esac
    return 1
}
big_ready_or_ended() { [ -s "$W/deferred.$1.ready" ] || job_ended "$1"; }

# big_job_into_locked_trash: run the big job on n1 while its trash is locked,
# so the emptier its epilog starts finds the lock taken and leaves
# everything. Records its job id in $W/deferred.big; every assertion about
# that epilog is here.
big_job_into_locked_trash() {
    local big leaf links deep
    hold_trash || fail "cannot hold the trash's lock on $N (flock)"
    big=$(NFILES=$NFILES LAB_PASS_ENV=NFILES lab_user sbatch --parsable -N1 -n1 -w $N \
        --ext-cache=job -o "$W/%j.out" "$W/deferred_big.sh")
    echo "$big" >"$W/deferred.big"
    itest_poll 120 big_ready_or_ended "$big" || true
    { read -r leaf && read -r links && read -r deep; } <"$W/deferred.$big.ready" ||
        fail "job $big did not make its $NFILES files: $(cat "$W/$big.out" 2>/dev/null)"
    # root puts hardlinks the user could not make into the tree
    lab_node $N ln /var/tmp/extc-root/root-file "$links/hard-root-file"
    lab_node $N ln /var/tmp/extc-other/other-file "$deep/hard-other-file"
    # the tree holds NFILES files and hardlinks to root's, another user's and its own files
    assert_equal "$(lab_node $N find "$leaf" -type f -name 'f[0-9]*' | wc -l) $(lab_node $N stat -c %h \
        /var/tmp/extc-root/root-file /var/tmp/extc-other/other-file /var/tmp/extc-user/user-file | tr '\n' ' ' | sed 's/ $//')" \
        "$NFILES 2 2 2"
    touch "$W/deferred.$big.go"
    # COMPLETED (not COMPLETING): slurmctld has the epilog's completion
    assert_equal "$(lab_wait_job "$big" 120)" COMPLETED
    # the job's tree left its path at the epilog, with all its files still waiting in the trash
    itest_absent $N "$(dirname "$leaf")" || fail "$(dirname "$leaf") is still there after the epilog"
    assert_equal "files in the trash: $(trash_files)" "files in the trash: $NFILES"
    itest_match "ext-cache: job $big: epilog: moved the job's tree to the trash in [0-9.]+ ms" "$(log_n)"
    itest_match "ext-cache: job $big: epilog: emptying the trash in the background \(pid [0-9]+\)" "$(log_n)"
    echo "# slurmd on $N: terminate request to epilog complete sent: $(epilog_ms "$big") ms" >&3
    release_trash
}

@test "the base on $N's tmpfs works; its trash is root-owned 0700; the sentinels exist" {
    local out
    out=$(lab_user srun -N1 -w $N --ext-cache=local true 2>&1)
    assert_equal "$out" ""
    itest_poll 10 trash_empty || fail "the step's tree is still in the trash: $(trash_entries) entries"
    assert_equal "$(lab_node $N stat -c '%U:%a' "$B/.trash")" "root:700"
    assert_equal "$(grep -c -E ' (regular file|directory) [0-9a-f]*' "$BATS_FILE_TMPDIR/sentinels") sentinels" \
        "$(wc -w <<<"$SENTINELS") sentinels"
}

@test "a job of the same user runs on $N throughout, with its cache" {
    local sib_job
    sib_job=$(lab_user sbatch --parsable -N1 -n1 -w $N --ext-cache=job -o "$W/%j.out" "$W/deferred_sibling.sh")
    echo "$sib_job" >"$W/deferred.sibjob"
    itest_poll 30 test -s "$W/deferred.sibling" || fail "the sibling job $sib_job never started: $(lab_job_state "$sib_job")"
    lab_node $N test -f "$(cat "$W/deferred.sibling")/keep" || fail "the sibling job's cache does not exist on $N"
}

@test "the epilog returns with the whole tree still in the locked trash; the user cannot reach it" {
    local rc=0
    big_job_into_locked_trash
    as_user_on_node ls "$B/.trash" >/dev/null 2>&1 || rc=$?
    assert_equal "the user's ls of the trash: rc $rc" "the user's ls of the trash: rc 2"
    rc=0
    as_user_on_node find "$B/.trash" -maxdepth 3 -name 'f0000' >/dev/null 2>&1 || rc=$?
    assert_equal "the user's find in the trash: rc $rc" "the user's find in the trash: rc 1"
}

@test "an emptier SIGKILLed mid-way: its epilog completed regardless; the next epilog finishes what it left" {
    local slurmd_pid killed="" attempt catcher job_c epid eppid before left job_d line removed
    slurmd_pid=$(cat "$LAB/run/lab-slurmd-$N.pid")
    for attempt in 1 2 3; do
        [ "$(trash_files)" -ne 0 ] || big_job_into_locked_trash
        /usr/bin/python3 "$W/deferred_catch.py" "$slurmd_pid" 60 >"$W/deferred.caught" 3>&- &
        catcher=$!
        job_c=$(lab_user sbatch --parsable -N1 -n1 -w $N --ext-cache=local -o "$W/%j.out" --wrap "srun true")
        wait "$catcher" || true
        read -r epid eppid <"$W/deferred.caught" || fail "no emptier appeared on $N after job $job_c in 60 s"
        # the job and its epilog completed while its emptier is stopped
        assert_equal "job $job_c: $(lab_wait_job "$job_c" 60)" "job $job_c: COMPLETED"
        before=$(trash_files)
        # let it work a little: stopped mid-way, not before it began
        for _ in $(seq 100); do
            [ "$before" -lt "$NFILES" ] && break
            kill -CONT "$epid"
            sleep 0.02
            kill -STOP "$epid"
            before=$(trash_files)
        done
        if [ "$before" -eq 0 ]; then
            kill -CONT "$epid" 2>/dev/null || true
            echo "# attempt $attempt: the emptier had already finished; trying again" >&3
            continue
        fi
        # the stopped process is the emptier job_c's epilog started, detached (parent eppid);
        # the epilog logs it as emptying the trash, or, when the catcher stopped it before
        # it had retired the job's directory within the hook's wait, as going on with that
        if ! grep -qE "ext-cache: job $job_c: epilog: (emptying the trash in the background|the job's directory is not retired after [0-9]+ ms; that goes on in the background) \(pid $epid\)" <<<"$(log_n)"; then
            kill -CONT "$epid" 2>/dev/null || true
            fail "job $job_c's epilog never named its detached process $epid:"$'\n'"$(grep 'epilog' <<<"$(log_n)")"
        fi
        echo "# emptier $epid (parent $eppid) stopped with $before of $NFILES files left" >&3
        kill -KILL "$epid"
        itest_poll 5 proc_gone "$epid" || fail "the SIGKILLed emptier $epid is still there"
        killed=$before
        break
    done
    [ -n "$killed" ] || fail "could not catch an emptier mid-way in 3 attempts"
    left=$(trash_files)
    # the emptier was killed mid-way: a part of the tree is left
    assert_equal "left in the trash: $left" "left in the trash: $killed"
    [ "$left" -gt 0 ] && [ "$left" -lt "$NFILES" ] || fail "the leftovers are not a part of the tree: $left of $NFILES"
    # only an epilog or an emptier it detached (both "slurmstepd spank epilog")
    # removes from the trash: once none runs on the node, none is left to do it
    itest_poll 30 no_spank_epilog_on_node || fail "an epilog or emptier still runs on $N"
    assert_equal "left in the trash: $(trash_files)" "left in the trash: $left"
    job_d=$(lab_user sbatch --parsable -N1 -n1 -w $N --ext-cache=local -o "$W/%j.out" --wrap "srun true")
    assert_equal "job $job_d: $(lab_wait_job "$job_d" 60)" "job $job_d: COMPLETED"
    itest_poll 90 trash_empty ||
        fail "the next job's epilog did not empty the trash: $(trash_entries) entries left: $(lab_node $N find "$B/.trash" -mindepth 1 | head -5)"
    itest_poll 5 grep -q "ext-cache: job $job_d: emptied the trash after the epilog" "$(lab_log $N)" ||
        fail "no emptier line for job $job_d"
    line=$(grep "ext-cache: job $job_d: emptied the trash after the epilog" "$(lab_log $N)" | tail -1)
    removed=$(sed -n 's/.*: removed \([0-9]*\), could not remove \([0-9]*\),.*/\1 \2/p' <<<"$line")
    # its emptier removed the leftovers (left files + their directories), could not remove 0
    [ "${removed#* }" = 0 ] && [ "${removed% *}" -ge "$left" ] ||
        fail "its emptier did not remove the $left leftovers: log: ${line:-none}"
}

@test "nothing outside the trees was touched; after the last job the trash is empty; no node drained" {
    local sib sib_job
    sib=$(cat "$W/deferred.sibling") || fail "the sibling case did not run"
    sib_job=$(cat "$W/deferred.sibjob")
    # the sentinels outside the tree are intact (owner, mode, links, content)
    assert_equal "$(sentinel_state)" "$(cat "$BATS_FILE_TMPDIR/sentinels")"
    # the running sibling job's cache is intact
    assert_equal "$(lab_node $N stat -c '%U:%a' "$B") $(lab_node $N stat -c '%u:%a' "$sib") $(lab_node $N stat -c '%h' "$sib/keep") $(lab_node $N cat "$sib/keep")" \
        "root:711 $ITEST_UID:700 1 the sibling's cache"
    assert_equal "$(lab_node $N stat -c '%U:%a' "$B/.trash")" "root:700"
    touch "$W/deferred.sibling.stop"
    assert_equal "sibling job: $(lab_wait_job "$sib_job" 60)" "sibling job: COMPLETED"
    lab_wait_idle 60 >/dev/null
    itest_poll 30 trash_empty || fail "after the last job the trash holds $(trash_entries) entries"
    itest_absent $N "$B/$ITEST_UID" || fail "something of the user is left on $N: $(lab_node $N find "$B/$ITEST_UID" | head -5)"
    itest_no_drain
}

@test "leftovers found at slurmd start are emptied then; the file they hardlinked is intact" {
    local v db left i
    # (after the restart n1 is a new namespace: its /var/tmp is the lab's disk dir)
    v=$LAB/nodes/$N/vartmp
    db=$v${B#/var/tmp}
    left=$db/.trash/4242.1.1.0/job/triton_cache/a
    rm -rf "$v/extc-root-disk"
    mkdir -m 0755 "$v/extc-root-disk"
    (umask 077 && echo "root only, on disk" >"$v/extc-root-disk/root-file")
    [ -d "$db" ] || mkdir -m 0711 "$db"
    [ -d "$db/.trash" ] || mkdir -m 0700 "$db/.trash"
    mkdir -p "$left/b"
    for i in $(seq 500); do : >"$left/f$i"; done
    chown -R "$ITEST_UID:$ITEST_GID" "$db/.trash/4242.1.1.0/job"
    ln "$v/extc-root-disk/root-file" "$left/b/hard-root"
    ln -s /var/tmp/extc-root-disk "$left/b/sym-root"
    # a leftover tree waits in n1's disk trash
    assert_equal "links: $(stat -c %h "$v/extc-root-disk/root-file")" "links: 2"
    lab_restart_slurmd $N >/dev/null 2>&1 || fail "slurmd on $N does not restart: $(lab_tail_logs 10)"
    # slurmd's start empties the trash
    itest_poll 10 dir_empty "$db/.trash" || fail "slurmd's start left: $(find "$db/.trash" -mindepth 1 2>/dev/null | head -3)"
    assert_equal "$(stat -c '%U %a %h' "$v/extc-root-disk/root-file") $(cat "$v/extc-root-disk/root-file")" \
        "root 600 1 root only, on disk"
    itest_no_drain
}
