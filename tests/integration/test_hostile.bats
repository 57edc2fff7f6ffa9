#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 13 on a real Slurm (docs/security-cases.md, case 59; 52, 53, 55): a job's
# user mounts a FUSE filesystem that never answers, through fusermount3
# -o allow_other, inside its leaf, on a local step's leaf and on the job's
# leaf itself, and leaves the daemon running detached from its steps. With
# PrologEpilogTimeout set, so that an epilog left waiting drains the node:
#   1. each entry point meets the mount and none waits on it: a later
#      job-mode step's leaf creation refuses it, the local step's removal
#      leaves it, and no process of the lab waits on it (D state, a FUSE
#      request, a blocking flock);
#   2. meanwhile other jobs of the same user on the same node start,
#      complete and their epilogs finish (one without a cache, whose
#      epilog sweeps the node's levels, one with); no node drained;
#   3. the hostile job's own epilog finishes, and its emptier detaches the
#      mounts that moved to the root-only trash with the job's tree and
#      removes the rest; no node drained, no process stuck;
#   4. cleanup: the daemons killed, any mount left detached (umount -l in the
#      node's namespace); a later job's epilog leaves nothing behind;
#   5.-6. the same with the node pool, and without allow_other;
#   7. a container image named on such a mount (case 76): only the key's
#      fingerprint process, the user's, looks at it, and gives up at its
#      bound; the step runs cold and unpooled.
# Every wait is a poll with a deadline. The cases run in order: each goes on
# from the state the one before left.

# Each @test runs in a process of its own: a variable one sets is never
# meant for another (they pass values through files), so shellcheck's
# warning about changes lost in a subshell does not apply.
# shellcheck disable=SC2030,SC2031
load lib/itest
load lib/fuse

# An epilog still running after PrologEpilogTimeout is killed and its node
# drained (22.05: "epilog: timeout after 20000 ms", then "epilog error on
# n1, draining the node"); slurmd's own bound on the SPANK part alone is
# max(PrologEpilogTimeout, 120 s). A job still COMPLETING after 150 s, past
# both, is stuck for good.
EPILOG_BOUND=150
B=$ITEST_BASE
# n1's base as the host sees it: the mounts exist only in n1's mount
# namespace, so nothing looked at through this path can wait on them
NB=$LAB/nodes/n1/vartmp${B#/var/tmp}

# ---- helpers ------------------------------------------------------------------

hostile_exit() {
    hang_cleanup >/dev/null 2>&1
    lab_stop >/dev/null 2>&1
    fuse_restore
}

# proc_state PID[/task/TID]: the state letter of its stat (empty if gone)
proc_state() {
    local st
    { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 0
    st=${st##*) }
    echo "${st%% *}"
}

# stuck_threads PID: the threads of PID that wait on what a user controls:
# in D state, in a FUSE request (FUSE waits interruptibly until a signal
# comes, so such a waiter shows S) or in a blocking flock; one
# "TID STATE WCHAN" line each
stuck_threads() {
    local t st wchan
    for t in /proc/"$1"/task/*; do
        st=$(proc_state "$1/task/${t##*/}")
        wchan=$(cat "$t/wchan" 2>/dev/null) || true
        case "$st $wchan" in
            "D "* | *" request_wait_answer" | *" locks_lock_inode_wait") echo "${t##*/} $st $wchan" ;;
        esac
    done
}

# stuck_procs: every lab process (lab_procs: daemons, slurmstepds, epilogs,
# emptiers, tasks; the FUSE daemons themselves wait in a read, not here)
# with a stuck thread now and in each of 10 more samples over 2 s, one
# "PID COMM uid UID: TID STATE WCHAN ..." line each. A passing D state
# (disk I/O) is not stuck; a wait on a daemon that never answers is.
stuck_procs() {
    local pid _kind _node _comm p
    local -a cand=() still=()
    while read -r pid _kind _node _comm; do
        [ -n "$pid" ] && [ -n "$(stuck_threads "$pid")" ] && cand+=("$pid")
    done <<<"$(lab_procs)"
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        [ "${#cand[@]}" -gt 0 ] || return 0
        sleep 0.2
        still=()
        for p in "${cand[@]}"; do
            [ -n "$(stuck_threads "$p")" ] && still+=("$p")
        done
        cand=(${still[@]+"${still[@]}"})
    done
    for p in ${cand[@]+"${cand[@]}"}; do
        echo "$p $(cat "/proc/$p/comm" 2>/dev/null) uid $(awk '$1 == "Uid:" {print $2}' "/proc/$p/status" 2>/dev/null):" \
            "$(stuck_threads "$p" | paste -sd' ')"
    done
}

# assert_none_stuck: no lab process waits on the mounts (D state, FUSE request, flock)
assert_none_stuck() {
    local stuck
    stuck=$(stuck_procs)
    [ -z "$stuck" ] || fail "waiting on the user's mount or a lock:"$'\n'"$stuck"
}

# log_has REGEX [TIMEOUT=30]: a line of n1's slurmd log matches REGEX
# within TIMEOUT seconds
log_has() {
    local re=$1 timeout=${2:-30}
    itest_poll "$timeout" grep -qE -- "$re" "$(lab_log n1)" ||
        fail "no line matches /$re/ within ${timeout} s; the plugin said:"$'\n'"$(grep 'ext-cache:' "$(lab_log n1)" | tail -n 12)"
}

# wait_out JOB WORD TIMEOUT: the job's output has a line starting with WORD
wait_out() {
    local deadline=$((SECONDS + $3))
    until grep -q "^$2" "$LAB/work/$1.out" 2>/dev/null; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.2
    done
}

# steps_of JOB: the job's steps slurmctld still lists, one per line
steps_of() {
    lab_root squeue -h -s -j "$1" -o '%i' 2>/dev/null | sort
}

# wait_steps JOB EXPECTED TIMEOUT: poll until steps_of JOB is EXPECTED; print the last answer
wait_steps() {
    local deadline=$((SECONDS + $3)) got
    while :; do
        got=$(steps_of "$1" | paste -sd' ')
        if [ "$got" = "$2" ] || [ "$SECONDS" -ge "$deadline" ]; then
            echo "$got"
            return 0
        fi
        sleep 0.2
    done
}

# wait_gone PATH TIMEOUT: poll until PATH (a host path) does not exist
wait_gone() {
    local deadline=$((SECONDS + $2))
    while [ -e "$1" ] || [ -L "$1" ]; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}

# trash_entries: what is in n1's trash (host view), .kept's content included
trash_entries() {
    find "$NB/.trash" -mindepth 1 -maxdepth 2 2>/dev/null | sed "s|^$NB/||" | sort
}

no_hang_daemon() { [ -z "$(hang_pids)" ]; }
# base_settled: n1's trash is empty and nothing else is in its base
base_settled() { [ -z "$(trash_entries)$(find "$NB" -mindepth 1 -maxdepth 1 ! -name .trash 2>/dev/null)" ]; }

setup_file() {
    # shellcheck disable=SC2034  # read by lab_start (lib/cluster.sh)
    LAB_SLURM_CONF_EXTRA=$'SlurmdDebug=verbose\nPrologEpilogTimeout=20'
    itest_setup_file
    fuse_allow_users || fail "cannot set user_allow_other in $FUSE_CONF or make /dev/fuse 0666"
    fuse_hang_build
    itest_cluster "base=$B"
    # $1 fuse_hang, $2 the work dir. Mounts never-answering FUSE filesystems as
    # its user: inside its leaf, on a local step's leaf (then the step ends),
    # on the job's leaf itself; then starts a job-mode step, says READY and
    # keeps the job running until the test creates <work>/<job>.go.
    cat >"$LAB/work/hostile.sh" <<'JOB'
#!/bin/bash
hang=$1 work=$2 leaf=$SLURM_EXT_CACHE_DIR id=$SLURM_JOB_ID
echo "LEAF $leaf"
mkdir "$leaf/sub" && "$hang" "$leaf/sub" "$work/$id.pid.sub" && echo "MOUNTED sub"
timeout -k 5 40 srun --overlap -n1 --ext-cache=local bash -c \
    '"$1" "$SLURM_EXT_CACHE_DIR" "$2" && echo "MOUNTED local $SLURM_EXT_CACHE_DIR"' \
    hang "$hang" "$work/$id.pid.local"
echo "LOCALSTEP rc=$?"
"$hang" "$leaf" "$work/$id.pid.leaf" && echo "MOUNTED leaf"
timeout -k 5 40 srun --overlap -n1 --ext-cache=job bash -c 'echo "JOBSTEP ran in $SLURM_EXT_CACHE_DIR"'
echo "JOBSTEP rc=$?"
echo READY
for _ in $(seq 1500); do
    [ -e "$work/$id.go" ] && break
    sleep 0.2
done
echo END
JOB
    chmod 0755 "$LAB/work/hostile.sh"
}

teardown_file() {
    hang_cleanup >/dev/null 2>&1 || true
    itest_teardown_file
    fuse_restore
}

@test "FUSE is open to users (user_allow_other, /dev/fuse 0666); slurm.conf sets PrologEpilogTimeout=20" {
    grep -qx user_allow_other "$FUSE_CONF" || fail "$FUSE_CONF does not say user_allow_other"
    assert_equal "/dev/fuse $(stat -c %a /dev/fuse)" "/dev/fuse 666"
    assert_equal "PrologEpilogTimeout $(lab_root scontrol show config | awk '$1 == "PrologEpilogTimeout" {print $3}')" \
        "PrologEpilogTimeout 20"
}

@test "1: a hostile job mounts never-answering FUSE inside its leaf, on a local step's leaf and on the job's leaf" {
    local jobA outA leafA daemons l U=$ITEST_UID
    jobA=$(lab_user sbatch --parsable -w n1 -N1 -n1 --ext-cache=job -o "$LAB/work/%j.out" \
        "$LAB/work/hostile.sh" "$HANG" "$LAB/work" 2>&1)
    [[ $jobA =~ ^[0-9]+$ ]] || fail "the hostile job is not submitted: $jobA"
    echo "$jobA" >"$BATS_FILE_TMPDIR/jobA"
    # two sruns bounded at 45 s each: READY comes within 120 s whatever they do
    wait_out "$jobA" READY 120 ||
        fail "no READY in 120 s; job $(lab_job_state "$jobA"); output:"$'\n'"$(cat "$LAB/work/$jobA.out" 2>&1)"
    outA=$(cat "$LAB/work/$jobA.out")
    leafA=$B/$U/$jobA/job
    echo "# hostile job $jobA:" >&3
    while IFS= read -r l; do echo "#   $l"; done <<<"$outA" >&3
    # the hostile job runs in job mode on n1
    assert_equal "$(grep '^LEAF ' <<<"$outA")" "LEAF $leafA"
    # the user mounted FUSE (fusermount3 -o allow_other) inside its leaf, a
    # local step on its own leaf, and on the job's leaf itself
    itest_match "^MOUNTED sub$" "$outA"
    itest_match "^MOUNTED local $B/$U/$jobA/0$" "$outA"
    itest_match "^MOUNTED leaf$" "$outA"
    assert_equal "$(hang_mounts | sort | paste -sd' ')" "$B/$U/$jobA/0 $leafA $leafA/sub"
    # each mounted by the user (user_id=U)
    assert_equal "$(lab_node n1 cat /proc/self/mountinfo | grep -F -- "$HANG_FS" | grep -c "user_id=$U,") mounts by uid $U" \
        "3 mounts by uid $U"
    # three daemons run, detached from the steps that started them, all as the user
    daemons=$(hang_pids)
    assert_equal "$(grep -c . <<<"$daemons") daemons" "3 daemons"
    assert_equal "daemon uids: $(for p in $daemons; do awk '$1 == "Uid:" {print $2}' "/proc/$p/status"; done | sort -u | paste -sd' ')" \
        "daemon uids: $U"
}

@test "1: each entry point meets the mount and none waits on it" {
    local jobA outA leafA U=$ITEST_UID
    jobA=$(cat "$BATS_FILE_TMPDIR/jobA") || fail "the hostile job was not submitted"
    outA=$(cat "$LAB/work/$jobA.out")
    leafA=$B/$U/$jobA/job
    # the step's removal at its end (local mode): the local step ended, its
    # end found a mount on its leaf and left it alone, acting on nothing
    assert_equal "$(grep '^LOCALSTEP ' <<<"$outA")" "LOCALSTEP rc=0"
    log_has "ext-cache: job $jobA step 0: removing $B/$U/$jobA/0: .*is a mount point.*\\(the job epilog tries again\\)" 30
    # a later job-mode step's leaf creation and identity check: it fails at
    # once (exit 75), not held by the mount, refusing the mount on the job's leaf
    assert_equal "$(grep '^JOBSTEP rc=' <<<"$outA")" "JOBSTEP rc=75"
    log_has "ext-cache: job $jobA step 1: no private cache for this step \\(failing it\\): $leafA: is a mount point; refusing it" 10
    # only the batch step is left: no slurmstepd of the two steps waits on a mount
    assert_equal "$(wait_steps "$jobA" "$jobA.batch" 30)" "$jobA.batch"
    assert_none_stuck
}

@test "2: other jobs of the user on n1 start, complete and finish their epilogs while the hang is in place" {
    local jobA jobOff jobB stateB outB U=$ITEST_UID
    jobA=$(cat "$BATS_FILE_TMPDIR/jobA") || fail "the hostile job was not submitted"
    # n1 has 2 cores and the hostile job holds one: one job at a time.
    # First a job without a cache: its epilog still sweeps the node's levels,
    # the hostile user's included (a sweep that waited on that level's lock,
    # held by a step stuck in the mount, would time out and drain n1).
    # shellcheck disable=SC2016  # expanded in the job
    jobOff=$(lab_user sbatch --parsable -w n1 --ext-cache=off -o "$LAB/work/%j.out" \
        --wrap 'echo "OFF ${SLURM_EXT_CACHE_DIR:-none}"' 2>&1)
    assert_equal "job without a cache: $(lab_wait_job "$jobOff" "$EPILOG_BOUND")" "job without a cache: COMPLETED"
    assert_equal "$(cat "$LAB/work/$jobOff.out" 2>/dev/null)" "OFF none"
    # without failing: no node drained (PrologEpilogTimeout=20)
    assert_equal "drained: $(lab_drained_nodes)" "drained: "
    # Then one with a cache: its tree is made beside the mounts and retired by its epilog
    # shellcheck disable=SC2016  # expanded in the job
    jobB=$(lab_user sbatch --parsable -w n1 --ext-cache=local -o "$LAB/work/%j.out" \
        --wrap 'echo "B $SLURM_EXT_CACHE_DIR"' 2>&1)
    stateB=$(lab_wait_job "$jobB" 60) || true
    assert_equal "job with a cache: $stateB" "job with a cache: COMPLETED"
    outB=$(cat "$LAB/work/$jobB.out" 2>/dev/null)
    assert_equal "$outB" "B $B/$U/$jobB/batch"
    log_has "ext-cache: job $jobB: epilog: moved the job's tree to the trash" 10
    wait_gone "$NB/$U/$jobB" 30 || fail "job $jobB's tree is still on n1"
    # the hostile job still runs, its three mounts still hang; no node drained
    assert_equal "$(lab_job_state "$jobA") $(hang_mounts | wc -l)" "RUNNING 3"
    assert_equal "drained: $(lab_drained_nodes)" "drained: "
    assert_none_stuck
}

@test "3: the hostile job's epilog finishes; its emptier detaches the mounts; nothing left, stuck or drained" {
    local jobA U=$ITEST_UID
    jobA=$(cat "$BATS_FILE_TMPDIR/jobA") || fail "the hostile job was not submitted"
    touch "$LAB/work/$jobA.go"
    assert_equal "hostile job: $(lab_wait_job "$jobA" "$EPILOG_BOUND")" "hostile job: COMPLETED"
    # its script ran to its end
    itest_match "^END$" "$(cat "$LAB/work/$jobA.out" 2>/dev/null)"
    # its epilog moved the job's tree, mounts and all, to the root-only trash;
    # the emptier detached the three mounts and removed the rest
    log_has "ext-cache: job $jobA: epilog: moved the job's tree to the trash" 10
    log_has "ext-cache: job $jobA: emptied the trash after the epilog: removed [0-9]+, could not remove 0, mount points left alone 0, detached 3 in" 60
    assert_equal "$(grep -E "ext-cache: job $jobA: .*(epilog|trash)" "$(lab_log n1)" | grep 'error:' || true)" ""
    # nothing of the hostile job is left on n1, in its level or the trash
    assert_equal "$( (wait_gone "$NB/$U/$jobA" 30 || echo "$U/$jobA"); trash_entries)" ""
    assert_equal "mounts left: $(hang_mounts)" "mounts left: "
    itest_no_drain
    assert_none_stuck
    # slurmd and slurmctld logged no epilog error or timeout
    assert_equal "$(grep -iE 'spank/epilog timed out|epilog: timeout|epilog error|epilog failed' "$(lab_log n1)" "$(lab_ctld_log)" || true)" ""
    # the last reference to a detached mount gone, the kernel ends its FUSE
    # connection and the daemon's read fails: the daemons end by themselves
    itest_poll 10 no_hang_daemon || fail "daemons still running: $(hang_pids | paste -sd' ')"
}

@test "4: cleanup: no daemon, no mount; a later job's epilog leaves n1's base holding only an empty trash" {
    local jobC
    hang_cleanup
    assert_equal "daemons: $(hang_pids)" "daemons: "
    assert_equal "mounts: $(hang_mounts)" "mounts: "
    jobC=$(lab_user sbatch --parsable -w n1 --ext-cache=local -o /dev/null --wrap true 2>&1)
    assert_equal "later job: $(lab_wait_job "$jobC" 60)" "later job: COMPLETED"
    itest_poll 30 base_settled || true
    assert_equal "$(find "$NB" -mindepth 1 | sed "s|^$NB/||" | sort | paste -sd' ')" ".trash"
    itest_no_drain
}

@test "5: with the node pool, a never-answering mount in a step's cache: exit and the epilog return at once, no drain" {
    local out rc=0 job U=$ITEST_UID
    # publish_timeout=60, as long as UnkillableStepTimeout: a hook that
    # waited on the helper would hold the step past it
    itest_cluster "base=$B pool=node publish_timeout=60"
    # the step builds one entry and mounts fuse_hang beside it, then ends:
    # the helper that moves its builds into the pool meets the mount
    # shellcheck disable=SC2016 # expanded by the task
    out=$(lab_user timeout -k 5 60 srun -w n1 -N1 -n1 --ext-cache=local bash -c \
        'mkdir -p "$TRITON_CACHE_DIR/hang" && touch "$TRITON_CACHE_DIR/built" &&
         "$1" "$TRITON_CACHE_DIR/hang" "$2" && echo "JOB $SLURM_JOB_ID"' hang "$HANG" "$LAB/work/pool.pid.hang" 2>&1) || rc=$?
    [ "$rc" -eq 0 ] || fail "srun failed ($rc): $out"
    job=$(awk '/^JOB/ {print $2}' <<<"$out")
    # exit returned with the move still waiting on the mount, and so did the epilog
    log_has "job $job step 0: the step's builds are still being published or moved into the node pool after 3000 ms" 30
    assert_equal "$(lab_wait_job "$job" 60)" COMPLETED
    # the helper still waits (it is killed at 60 s): the job ended without it
    assert_equal "$(grep -cE "job $job step 0: node pool: (moved|nothing moved)" "$(lab_log n1)")" 0
    itest_no_drain
    assert_equal "$(grep -iE 'spank/epilog timed out|epilog: timeout|epilog error|epilog failed' "$(lab_log n1)" "$(lab_ctld_log)" || true)" ""
    # the daemon killed: the helper's request fails, the move and the removal follow
    hang_cleanup
    log_has "job $job step 0: node pool: (moved|nothing moved|not everything moved)" 60
    assert_equal "$( (wait_gone "$NB/$U/$job" 60 || echo "$U/$job left"); hang_mounts)" ""
    itest_no_drain
}

@test "6: a FUSE mount made without allow_other in a step's cache is detached by the emptier, never parked; no drain" {
    local out rc=0 job
    itest_cluster "base=$B"
    # no allow_other, so no user_allow_other needed: root's statx of the
    # mount is refused (EACCES) by the kernel, which never asks the daemon
    # shellcheck disable=SC2016 # expanded by the task
    out=$(lab_user env FUSE_HANG_PRIVATE=1 timeout -k 5 60 srun -w n1 -N1 -n1 --ext-cache=local bash -c \
        'mkdir -p "$TRITON_CACHE_DIR/hang" && "$1" "$TRITON_CACHE_DIR/hang" "$2" && echo "JOB $SLURM_JOB_ID"' \
        hang "$HANG" "$LAB/work/private.pid.hang" 2>&1) || rc=$?
    [ "$rc" -eq 0 ] || fail "srun failed ($rc): $out"
    job=$(awk '/^JOB/ {print $2}' <<<"$out")
    assert_equal "$(lab_wait_job "$job" 60)" COMPLETED
    # the step's removal left the mount; the epilog moved the tree to the
    # trash, and the emptier detached it and removed the rest
    log_has "ext-cache: job $job: emptied the trash after the epilog: removed [0-9]+, could not remove 0, mount points left alone 0, detached 1 in" 60
    # nothing parked in .trash/.kept, no mount left, no daemon (it ends once detached)
    assert_equal "trash: $(trash_entries)" "trash: "
    assert_equal "mounts left: $(hang_mounts)" "mounts left: "
    itest_poll 10 no_hang_daemon || fail "daemons still running: $(hang_pids | paste -sd' ')"
    itest_no_drain
    assert_none_stuck
}

@test "7: a container image named on a never-answering FUSE mount: the key's process gives up, the step runs cold and unpooled; no drain" {
    local out rc=0 job mnt=$LAB/work/imghang
    itest_cluster "base=$B pool=node"
    # a stand-in for the runtime, so that the step's argv names the image
    printf '#!/bin/sh\nshift 2\nexec "$@"\n' >"$LAB/work/apptainer" && chmod 0755 "$LAB/work/apptainer"
    lab_user mkdir -p "$mnt" || fail "cannot make $mnt"
    out=$(lab_user timeout -k 5 60 srun -w n1 -N1 -n1 "$HANG" "$mnt" "$LAB/work/img.pid.hang" 2>&1) ||
        fail "cannot mount fuse_hang at $mnt: $out"
    [ -n "$(hang_mounts)" ] || fail "no fuse_hang mount in n1's namespace"
    # only the key's fingerprint process (the user's) looks at the image
    # shellcheck disable=SC2016 # expanded by the task
    out=$(lab_user timeout -k 5 60 srun -w n1 -N1 -n1 --ext-cache=local \
        "$LAB/work/apptainer" exec "$mnt/img.sqsh" sh -c 'echo "JOB $SLURM_JOB_ID"' 2>&1) || rc=$?
    [ "$rc" -eq 0 ] || fail "srun failed ($rc): $out"
    job=$(awk '/^JOB/ {print $2}' <<<"$out")
    log_has "job $job step 0: node pool: no key for this step \(.*\): it starts cold and is not pooled" 30
    assert_equal "$(lab_wait_job "$job" 60)" COMPLETED
    itest_no_drain
    hang_cleanup
    assert_equal "mounts left: $(hang_mounts)" "mounts left: "
}
