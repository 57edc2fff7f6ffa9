#!/bin/bash
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
#
# Node n1's /var/tmp is a tmpfs mounted inside its mount namespace (gone
# with it): on this machine kind's root ext4 (no journal, online discard)
# creating 100000 files soon after removing as many takes minutes. Hardlinked
# sentinels live on that same tmpfs, as a hardlink must.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

# debug: the epilog logs the pid of the emptier it starts
LAB_SLURM_CONF_EXTRA=${LAB_SLURM_CONF_EXTRA:-SlurmdDebug=debug}
itest_begin
B=$ITEST_BASE
N=n1
NFILES=100000
W=$LAB/work
T0=$EPOCHREALTIME

itest_cluster "base=$B" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }

# ---- node n1: a tmpfs /var/tmp, the base on it, and the sentinels ------------
if ! lab_node $N mount -t tmpfs -o mode=1777,size=1g extc-deferred /var/tmp ||
    ! lab_node $N mkdir -m 0711 "$B"; then
    t_fail "tmpfs /var/tmp on $N" "cannot mount it"
    itest_end
    exit 1
fi
OTHER=nobody
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
    chown -R "$u:" /var/tmp/extc-user' _ "$LAB_USER" "$OTHER" ||
    t_fail "sentinels on $N" "cannot create them"

SENTINELS="/tmp/extc-sentinel /tmp/extc-sentinel/user-tmp /tmp/extc-sentinel/sub
/tmp/extc-sentinel/sub/deep /var/tmp/extc-root /var/tmp/extc-root/root-file /var/tmp/extc-other
/var/tmp/extc-other/other-file /var/tmp/extc-user /var/tmp/extc-user/user-file"
# owner, mode, link count, size, type and content digest of every sentinel
sentinel_state() {
    # shellcheck disable=SC2086,SC2016  # $N is one word; the script is expanded on the node
    lab_node $N bash -c 'for p in "$@"; do
            printf "%s %s " "$p" "$(stat -c "%U:%G %a %h %s %F" "$p" 2>&1)"
            if [ -f "$p" ]; then md5sum <"$p"; else echo; fi
        done' _ $SENTINELS
}
SENTINELS_BEFORE=$(sentinel_state)
t_eq "the $(wc -w <<<"$SENTINELS") sentinels exist on $N" "$(wc -w <<<"$SENTINELS")" \
    "$(grep -c -E ' (regular file|directory) [0-9a-f]*' <<<"$SENTINELS_BEFORE")"

# trash_files: how many of the job's files (f*) are in n1's trash
trash_files() {
    lab_node $N find "$B/.trash" -type f -name 'f[0-9]*' 2>/dev/null | wc -l
}
trash_entries() {
    lab_node $N find "$B/.trash" -mindepth 1 2>/dev/null | wc -l
}
# wait_trash_empty SECONDS
wait_trash_empty() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        [ "$(trash_entries)" -eq 0 ] && return 0
        sleep 0.1
    done
    return 1
}
# no_spank_epilog_on_node: no process in $N's mount namespace runs
# "slurmstepd spank epilog" (an epilog, or an emptier it started)
no_spank_epilog_on_node() {
    local ns p argv
    ns=$(readlink "/proc/$(cat "$LAB/run/lab-slurmd-$N.pid")/ns/mnt") || return 1
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
        argv=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
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

# ---- the job-side helpers ----------------------------------------------------
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

# ---- warm-up: the base on the tmpfs works, and its trash exists ---------------
out=$(lab_user srun -N1 -w $N --ext-cache=local true 2>&1)
t_eq "a step on $N with the base on tmpfs runs" "" "$out"
for _ in $(seq 50); do [ "$(trash_entries)" -eq 0 ] && break; sleep 0.1; done
t_eq "the trash on $N is root-owned 0700" "root:700" "$(lab_node $N stat -c '%U:%a' "$B/.trash")"

# ---- a job of the same user that runs on n1 throughout -------------------------
sib_job=$(lab_user sbatch --parsable -N1 -n1 -w $N --ext-cache=job -o "$W/%j.out" "$W/deferred_sibling.sh")
for _ in $(seq 300); do [ -s "$W/deferred.sibling" ] && break; sleep 0.1; done
SIB=$(cat "$W/deferred.sibling" 2>/dev/null)
t_check "the sibling job's cache exists on $N" lab_node $N test -f "$SIB/keep"

# big_job_into_locked_trash: run the big job on n1 while its trash is locked, so
# the emptier its epilog starts finds the lock taken and leaves everything.
# Sets BIG (job id) and BIG_LEAF; every assertion about that epilog is here.
HOLDER=
hold_trash() {
    rm -f "$W/deferred.holder"
    # shellcheck disable=SC2016  # expanded by the inner shell
    lab_node $N flock -x "$B/.trash" sh -c 'echo $$ >"$1"; exec sleep 300' _ "$W/deferred.holder" \
        >/dev/null 2>&1 &
    for _ in $(seq 100); do [ -s "$W/deferred.holder" ] && break; sleep 0.05; done
    HOLDER=$(cat "$W/deferred.holder" 2>/dev/null)
    [ -n "$HOLDER" ]
}
release_trash() {
    [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null
    HOLDER=
    wait 2>/dev/null
}
cleanup() {
    release_trash
    touch "$W/deferred.sibling.stop"
    lab_stop >/dev/null 2>&1
}
trap cleanup EXIT

big_job_into_locked_trash() {
    local tag=$1 state nfiles links deep
    BIG=
    hold_trash || { t_fail "$tag: hold the trash's lock" "flock on $N failed"; return 1; }
    BIG=$(NFILES=$NFILES LAB_PASS_ENV=NFILES lab_user sbatch --parsable -N1 -n1 -w $N \
        --ext-cache=job -o "$W/%j.out" "$W/deferred_big.sh")
    for _ in $(seq 1200); do
        [ -s "$W/deferred.$BIG.ready" ] && break
        case $(lab_job_state "$BIG") in
            COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL) break ;;
        esac
        sleep 0.1
    done
    { read -r BIG_LEAF && read -r links && read -r deep; } <"$W/deferred.$BIG.ready" 2>/dev/null ||
        BIG_LEAF=
    if [ -z "$BIG_LEAF" ]; then
        t_fail "$tag: the job made its $NFILES files" "$(cat "$W/$BIG.out" 2>/dev/null)"
        release_trash
        return 1
    fi
    # root puts hardlinks the user could not make into the tree
    lab_node $N ln /var/tmp/extc-root/root-file "$links/hard-root-file" &&
        lab_node $N ln /var/tmp/extc-other/other-file "$deep/hard-other-file"
    t_eq "$tag: the tree holds $NFILES files and hardlinks to root's, another user's and its own files" \
        "$NFILES 2 2 2" \
        "$(lab_node $N find "$BIG_LEAF" -type f -name 'f[0-9]*' | wc -l) $(lab_node $N stat -c %h \
            /var/tmp/extc-root/root-file /var/tmp/extc-other/other-file /var/tmp/extc-user/user-file | tr '\n' ' ' | sed 's/ $//')"
    touch "$W/deferred.$BIG.go"
    state=$(lab_wait_job "$BIG" 120)
    t_eq "$tag: the job and its epilog on $N completed" COMPLETED "$state"
    # COMPLETED (not COMPLETING): slurmctld has the epilog's completion
    t_check "$tag: the job's tree left its path at the epilog" itest_absent $N "$(dirname "$BIG_LEAF")"
    nfiles=$(trash_files)
    t_eq "$tag: the epilog returned with all $NFILES files still waiting in the trash" "$NFILES" "$nfiles"
    itest_match "$tag: the epilog logged the O(1) move" \
        "ext-cache: job $BIG: epilog: moved the job's tree to the trash in [0-9.]+ ms" "$(cat "$(lab_log $N)")"
    itest_match "$tag: the epilog started an emptier in the background" \
        "ext-cache: job $BIG: epilog: emptying the trash in the background \(pid [0-9]+\)" "$(cat "$(lab_log $N)")"
    t_note "$tag: slurmd on $N: terminate request to epilog complete sent: $(epilog_ms "$BIG") ms"
    release_trash
}

# ==============================================================================
# 1. The epilog does not wait for the removal; the trash is out of reach
# ==============================================================================
big_job_into_locked_trash "locked trash"
if [ -n "$BIG" ]; then
    as_user_on_node ls "$B/.trash" >/dev/null 2>&1
    t_eq "the user cannot list the trash" 2 "$?"
    as_user_on_node find "$B/.trash" -maxdepth 3 -name 'f0000' >/dev/null 2>&1
    t_eq "the user cannot reach the retired tree" 1 "$?"
fi

# ==============================================================================
# 2. An emptier SIGKILLed mid-way: the epilog that started it completed
#    regardless, and what it left is finished by the next epilog on the node
# ==============================================================================
slurmd_pid=$(cat "$LAB/run/lab-slurmd-$N.pid")
killed=
for attempt in 1 2 3; do
    if [ "$(trash_files)" -eq 0 ]; then
        big_job_into_locked_trash "attempt $attempt" || break
    fi
    /usr/bin/python3 "$W/deferred_catch.py" "$slurmd_pid" 60 >"$W/deferred.caught" &
    catcher=$!
    job_c=$(lab_user sbatch --parsable -N1 -n1 -w $N --ext-cache=local -o "$W/%j.out" --wrap "srun true")
    wait "$catcher"
    read -r epid eppid <"$W/deferred.caught"
    if [ -z "${epid:-}" ]; then
        t_fail "an emptier appeared on $N after job $job_c" "none seen in 60 s"
        break
    fi
    state=$(lab_wait_job "$job_c" 60)
    t_eq "job $job_c and its epilog completed while its emptier (pid $epid) is stopped" COMPLETED "$state"
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
        kill -CONT "$epid" 2>/dev/null
        t_note "attempt $attempt: the emptier had already finished; trying again"
        lab_wait_job "$job_c" 30 >/dev/null
        continue
    fi
    itest_match "the stopped process is the emptier job $job_c's epilog started, detached (parent $eppid)" \
        "ext-cache: job $job_c: epilog: emptying the trash in the background \(pid $epid\)" \
        "$(cat "$(lab_log $N)")"
    kill -KILL "$epid"
    for _ in $(seq 100); do [ -e "/proc/$epid" ] || break; sleep 0.05; done
    killed=$before
    break
done
if [ -n "$killed" ]; then
    left=$(trash_files)
    t_eq "the emptier was killed mid-way: $left of $NFILES files are left in the trash" "$killed" "$left"
    if [ "$left" -gt 0 ] && [ "$left" -lt "$NFILES" ]; then
        t_pass "the leftovers are a part of the tree ($left of $NFILES)"
    else
        t_fail "the leftovers are a part of the tree" "$left of $NFILES"
    fi
    # only an epilog or an emptier it detached (both "slurmstepd spank epilog")
    # removes from the trash: once none runs on the node, none is left to do it
    t_check "no epilog or emptier runs on $N any more" itest_poll 30 no_spank_epilog_on_node
    t_eq "nothing empties the trash until the next epilog" "$left" "$(trash_files)"

    job_d=$(lab_user sbatch --parsable -N1 -n1 -w $N --ext-cache=local -o "$W/%j.out" --wrap "srun true")
    t_eq "the next job on $N completed" COMPLETED "$(lab_wait_job "$job_d" 60)"
    if wait_trash_empty 90; then
        t_pass "the next job's epilog emptied the trash completely"
    else
        t_fail "the next job's epilog emptied the trash completely" \
            "$(trash_entries) entries left: $(lab_node $N find "$B/.trash" -mindepth 1 | head -5)"
    fi
    for _ in $(seq 50); do
        grep -q "ext-cache: job $job_d: emptied the trash after the epilog" "$(lab_log $N)" && break
        sleep 0.1
    done
    line=$(grep "ext-cache: job $job_d: emptied the trash after the epilog" "$(lab_log $N)" | tail -1)
    removed=$(sed -n 's/.*: removed \([0-9]*\), could not remove \([0-9]*\),.*/\1 \2/p' <<<"$line")
    if [ "${removed#* }" = 0 ] && [ "${removed% *}" -ge "$left" ] 2>/dev/null; then
        t_pass "its emptier removed the leftovers ($left files + their directories): ${removed% *}, could not remove 0"
    else
        t_fail "its emptier removed the leftovers, could not remove 0" "log: ${line:-none}"
    fi
else
    t_fail "an emptier interrupted mid-way" "could not catch one in 3 attempts"
fi

# ==============================================================================
# 3. Nothing outside the trees was touched
# ==============================================================================
t_eq "the sentinels outside the tree are intact (owner, mode, links, content)" \
    "$SENTINELS_BEFORE" "$(sentinel_state)"
t_eq "the running sibling job's cache is intact" "root:711 $ITEST_UID:700 1 the sibling's cache" \
    "$(lab_node $N stat -c '%U:%a' "$B") $(lab_node $N stat -c '%u:%a' "$SIB") \
$(lab_node $N stat -c '%h' "$SIB/keep") $(lab_node $N cat "$SIB/keep")"
t_eq "the trash is still root-owned 0700" "root:700" "$(lab_node $N stat -c '%U:%a' "$B/.trash")"
touch "$W/deferred.sibling.stop"
t_eq "the sibling job ended" COMPLETED "$(lab_wait_job "$sib_job" 60)"
lab_wait_idle 60 >/dev/null
if wait_trash_empty 30; then
    t_pass "after the last job the trash is empty"
else
    t_fail "after the last job the trash is empty" "$(trash_entries) entries left"
fi
t_check "after the last job nothing of the user is left on $N" itest_absent $N "$B/$ITEST_UID"
lab_assert_no_drain "no node drained"

# ==============================================================================
# 4. Leftovers found at slurmd start are emptied then
# ==============================================================================
# (after the restart n1 is a new namespace: its /var/tmp is the lab's disk dir)
V=$LAB/nodes/$N/vartmp
DB=$V${B#/var/tmp}
LEFT=$DB/.trash/4242.1.1.0/job/triton_cache/a
if ! { mkdir -m 0755 "$V/extc-root-disk" &&
    (umask 077 && echo "root only, on disk" >"$V/extc-root-disk/root-file") &&
    { [ -d "$DB" ] || mkdir -m 0711 "$DB"; } && { [ -d "$DB/.trash" ] || mkdir -m 0700 "$DB/.trash"; } &&
    mkdir -p "$LEFT/b" &&
    for i in $(seq 500); do : >"$LEFT/f$i"; done &&
    chown -R "$ITEST_UID:$ITEST_GID" "$DB/.trash/4242.1.1.0/job" &&
    ln "$V/extc-root-disk/root-file" "$LEFT/b/hard-root" &&
    ln -s /var/tmp/extc-root-disk "$LEFT/b/sym-root"; }; then
    t_fail "leftovers in the disk trash" "cannot make them"
fi
disk_before=$(stat -c '%U %a %h' "$V/extc-root-disk/root-file")
t_eq "a leftover tree waits in $N's disk trash" 2 "$(stat -c %h "$V/extc-root-disk/root-file")"
if lab_restart_slurmd $N >/dev/null 2>&1; then
    for _ in $(seq 100); do
        [ -z "$(find "$DB/.trash" -mindepth 1 2>/dev/null | head -1)" ] && break
        sleep 0.1
    done
    t_eq "slurmd's start emptied the trash" "" "$(find "$DB/.trash" -mindepth 1 2>/dev/null | head -3)"
    t_eq "the file the leftovers hardlinked is intact" "root 600 1 root only, on disk" \
        "$(stat -c '%U %a %h' "$V/extc-root-disk/root-file") $(cat "$V/extc-root-disk/root-file")"
    t_note "before: $disk_before"
else
    t_fail "slurmd on $N restarts" "$(lab_tail_logs 10)"
fi
lab_assert_no_drain "no node drained after the restart"

t_note "test_deferred.sh took $(((${EPOCHREALTIME/[.,]/} - ${T0/[.,]/}) / 1000000)) s"
trap - EXIT
release_trash
itest_end
