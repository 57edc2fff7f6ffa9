#!/bin/bash
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
#      node's namespace); a later job's epilog leaves nothing behind.
# Every wait is a poll with a deadline. Prints ok/not ok lines and
# "N passed, M failed".
# shellcheck source-path=SCRIPTDIR
set -u
# shellcheck source=common.sh disable=SC1091  # followed with shellcheck -x
. "$(dirname "$0")/common.sh"

# An epilog still running after PrologEpilogTimeout is killed and its node
# drained (22.05: "epilog: timeout after 20000 ms", then "epilog error on
# n1, draining the node"); slurmd's own bound on the SPANK part alone is
# max(PrologEpilogTimeout, 120 s). A job still COMPLETING after 150 s, past
# both, is stuck for good.
EPILOG_BOUND=150
# shellcheck disable=SC2034  # read by lab_start (lib/cluster.sh)
LAB_SLURM_CONF_EXTRA=$'SlurmdDebug=verbose\nPrologEpilogTimeout=20'

itest_begin
B=$ITEST_BASE
U=$ITEST_UID
# n1's base as the host sees it: the mounts exist only in n1's mount
# namespace, so nothing looked at through this path can wait on them
NB=$LAB/nodes/n1/vartmp${B#/var/tmp}
HANG=$LAB/lib/fuse_hang
# fuse_hang.c's fsname and subtype, as n1's mountinfo shows them
HANG_FS=" - fuse.extchang extc-hang "

# ---- FUSE for users: user_allow_other and /dev/fuse 0666, undone at exit ----
FUSE_CONF=/etc/fuse.conf
FUSE_MARK="# added by spank-ext-cache's test_hostile.sh, removed at its end"
fuse_conf_added=0
fuse_conf_created=0
fuse_dev_mode=

fuse_allow_users() {
    local mode
    if ! grep -qE '^[[:space:]]*user_allow_other[[:space:]]*$' "$FUSE_CONF" 2>/dev/null; then
        [ -e "$FUSE_CONF" ] || fuse_conf_created=1
        printf '%s\nuser_allow_other\n' "$FUSE_MARK" >>"$FUSE_CONF" || return 1
        fuse_conf_added=1
    fi
    mode=$(stat -c %a /dev/fuse) || return 1
    if [ "$mode" != 666 ]; then
        fuse_dev_mode=$mode
        chmod 0666 /dev/fuse || return 1
    fi
}

# Take out exactly what fuse_allow_users added (other tests on this machine
# may change the file meanwhile: a snapshot put back could undo theirs).
fuse_restore() {
    local kept
    if [ "$fuse_conf_added" = 1 ] && [ -f "$FUSE_CONF" ]; then
        kept=$(awk -v m="$FUSE_MARK" '
            skip && $0 == "user_allow_other" { skip = 0; next }
            { skip = 0 }
            $0 == m { skip = 1; next }
            { print }' "$FUSE_CONF")
        if [ "$fuse_conf_created" = 1 ] && [ -z "$kept" ]; then
            rm -f -- "$FUSE_CONF"
        else
            printf '%s\n' "$kept" >"$FUSE_CONF"
        fi
    fi
    fuse_conf_added=0
    [ -n "$fuse_dev_mode" ] && chmod "$fuse_dev_mode" /dev/fuse
    fuse_dev_mode=
    return 0
}

# ---- helpers ------------------------------------------------------------------

# hang_mounts: mount points of fuse_hang's filesystems in n1's namespace
# (read from mountinfo: nothing is asked of the filesystems themselves)
hang_mounts() {
    lab_node n1 cat /proc/self/mountinfo 2>/dev/null | grep -F -- "$HANG_FS" | awk '{print $5}'
}

# hang_pids: the fuse_hang daemons the hostile job recorded that still run
hang_pids() {
    local f pid
    for f in "$LAB"/work/*.pid.*; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        [[ $pid =~ ^[0-9]+$ ]] || continue
        [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$HANG" ] && echo "$pid"
    done
    return 0
}

# hang_cleanup: kill the daemons (the kernel then fails every request in
# flight, which frees whatever waited on them), then detach what is still
# mounted, in rounds: a mount below another is reached once the upper one
# is gone. umount -c: no canonicalisation, which would stat the mount point.
hang_cleanup() {
    local pid m deadline round
    for pid in $(hang_pids); do
        kill -KILL "$pid" 2>/dev/null
    done
    deadline=$((SECONDS + 10))
    while [ -n "$(hang_pids)" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.1
    done
    for round in 1 2 3 4; do
        [ -n "$(hang_mounts)" ] || break
        for m in $(hang_mounts | tac); do
            lab_node n1 umount -c -l "$m" 2>/dev/null
        done
        [ "$round" -lt 4 ] || lab_node n1 cat /proc/self/mountinfo | grep -F -- "$HANG_FS" >&2
    done
    return 0
}

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
        wchan=$(cat "$t/wchan" 2>/dev/null)
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

# assert_none_stuck NAME
assert_none_stuck() {
    local stuck
    stuck=$(stuck_procs)
    if [ -z "$stuck" ]; then
        t_pass "$1"
    else
        t_fail "$1" "waiting on the user's mount or a lock:"$'\n'"$stuck"
    fi
}

# log_has NAME REGEX [TIMEOUT=30]: a line of n1's slurmd log matches REGEX
# within TIMEOUT seconds
log_has() {
    local name=$1 re=$2 timeout=${3:-30} deadline
    deadline=$((SECONDS + timeout))
    until grep -qE -- "$re" "$(lab_log n1)"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            t_fail "$name" "no line matches /$re/ within ${timeout} s; the plugin said:"$'\n'"$(grep 'ext-cache:' "$(lab_log n1)" | tail -n 12)"
            return 1
        fi
        sleep 0.1
    done
    t_pass "$name"
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

# ---- set-up: fusermount3, FUSE for users, fuse_hang, the cluster --------------
if ! command -v fusermount3 >/dev/null 2>&1; then
    t_fail "fusermount3 is installed" "no fusermount3 in PATH: apt-get install fuse3 (scripts/install-deps.sh)"
    itest_end
    exit 1
fi
trap hostile_exit EXIT
if ! fuse_allow_users; then
    t_fail "FUSE open to users" "cannot set user_allow_other in $FUSE_CONF or make /dev/fuse 0666"
    hostile_exit
    itest_end
    exit 1
fi
t_check "/etc/fuse.conf says user_allow_other, /dev/fuse is 0666" \
    bash -c "grep -qx user_allow_other $FUSE_CONF && [ \"\$(stat -c %a /dev/fuse)\" = 666 ]"
if ! t_check "fuse_hang.c builds (with tests/adversarial/fusesrv.c)" \
    gcc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -I "$ITEST_TOP/tests/adversarial" -o "$HANG" \
    "$ITEST_DIR/plugins/fuse_hang.c" "$ITEST_TOP/tests/adversarial/fusesrv.c"; then
    hostile_exit
    itest_end
    exit 1
fi
chmod 0755 "$HANG"

if ! itest_cluster "base=$B"; then
    t_fail "cluster start" "see logs"
    hostile_exit
    itest_end
    exit 1
fi
t_eq "slurm.conf sets PrologEpilogTimeout" 20 \
    "$(lab_root scontrol show config | awk '$1 == "PrologEpilogTimeout" {print $3}')"

# ---- 1. the hostile job --------------------------------------------------------
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

jobA=$(lab_user sbatch --parsable -w n1 -N1 -n1 --ext-cache=job -o "$LAB/work/%j.out" \
    "$LAB/work/hostile.sh" "$HANG" "$LAB/work" 2>&1)
if ! [[ $jobA =~ ^[0-9]+$ ]]; then
    t_fail "the hostile job is submitted" "$jobA"
    hostile_exit
    itest_end
    exit 1
fi
# two sruns bounded at 45 s each: READY comes within 120 s whatever they do
if ! wait_out "$jobA" READY 120; then
    t_fail "the hostile job's script got through its steps" \
        "no READY in 120 s; job $(lab_job_state "$jobA"); output:"$'\n'"$(cat "$LAB/work/$jobA.out" 2>&1)"
fi
outA=$(cat "$LAB/work/$jobA.out" 2>/dev/null)
leafA=$B/$U/$jobA/job
t_note "hostile job $jobA:"$'\n'"$outA"
t_eq "the hostile job runs in job mode on n1, leaf $leafA" "LEAF $leafA" "$(grep '^LEAF ' <<<"$outA")"
itest_match "the user mounted FUSE inside its leaf (fusermount3 -o allow_other)" "^MOUNTED sub$" "$outA"
itest_match "a local step of the user mounted FUSE on its own leaf" "^MOUNTED local $B/$U/$jobA/0$" "$outA"
itest_match "the user mounted FUSE on the job's leaf itself" "^MOUNTED leaf$" "$outA"
mounts=$(hang_mounts | sort | paste -sd' ')
t_eq "n1 has the three never-answering mounts" "$B/$U/$jobA/0 $leafA $leafA/sub" "$mounts"
t_eq "... each mounted by the user (user_id=$U)" 3 \
    "$(lab_node n1 cat /proc/self/mountinfo | grep -F -- "$HANG_FS" | grep -c "user_id=$U,")"
daemons=$(hang_pids)
t_eq "three daemons run, detached from the steps that started them" 3 "$(grep -c . <<<"$daemons")"
t_eq "... all as the user" "$U" \
    "$(for p in $daemons; do awk '$1 == "Uid:" {print $2}' "/proc/$p/status"; done | sort -u | paste -sd' ')"

# entry point: the step's removal at its end (local mode)
t_eq "the local step ended (srun rc 0)" "LOCALSTEP rc=0" "$(grep '^LOCALSTEP ' <<<"$outA")"
log_has "its removal at step end left the mount on its leaf alone" \
    "ext-cache: job $jobA step 0: removing $B/$U/$jobA/0: .*mount points left alone 1.*\\(the job epilog tries again\\)" 30
# entry point: a later job-mode step's leaf creation and identity check
t_eq "a later job-mode step fails at once (exit 75), not held by the mount" "JOBSTEP rc=75" \
    "$(grep '^JOBSTEP rc=' <<<"$outA")"
log_has "its leaf creation refused the mount on the job's leaf" \
    "ext-cache: job $jobA step 1: no private cache for this step \\(failing it\\): $leafA: is a mount point; refusing it" 10
t_eq "only the batch step is left: no slurmstepd of the two steps waits on a mount" "$jobA.batch" \
    "$(wait_steps "$jobA" "$jobA.batch" 30)"
assert_none_stuck "no lab process waits on the mounts (D state, FUSE request, flock)"

# ---- 2. other jobs of the user on n1 while the hang is in place -----------------
# n1 has 2 cores and the hostile job holds one: one job at a time.
# First a job without a cache: its epilog still sweeps the node's levels,
# the hostile user's included (a sweep that waited on that level's lock,
# held by a step stuck in the mount, would time out and drain n1).
# shellcheck disable=SC2016  # expanded in the job
jobOff=$(lab_user sbatch --parsable -w n1 --ext-cache=off -o "$LAB/work/%j.out" \
    --wrap 'echo "OFF ${SLURM_EXT_CACHE_DIR:-none}"' 2>&1)
stateOff=$(lab_wait_job "$jobOff" "$EPILOG_BOUND")
t_eq "a job without a cache on n1 ends and its epilog (with the sweep) returns" COMPLETED "$stateOff"
t_eq "... it ran, without a cache" "OFF none" "$(cat "$LAB/work/$jobOff.out" 2>/dev/null)"
t_eq "... without failing: no node drained (PrologEpilogTimeout=20)" "" "$(lab_drained_nodes)"
# Then one with a cache: its tree is made beside the mounts and retired by its epilog
# shellcheck disable=SC2016  # expanded in the job
jobB=$(lab_user sbatch --parsable -w n1 --ext-cache=local -o "$LAB/work/%j.out" \
    --wrap 'echo "B $SLURM_EXT_CACHE_DIR"' 2>&1)
stateB=$(lab_wait_job "$jobB" 60)
t_eq "a job of the user with a cache on n1 completes, its epilog done, within 60 s" COMPLETED "$stateB"
outB=$(cat "$LAB/work/$jobB.out" 2>/dev/null)
t_eq "... it had its own cache on n1" "B $B/$U/$jobB/batch" "$outB"
log_has "... its epilog moved its tree to the trash" "ext-cache: job $jobB: epilog: moved the job's tree to the trash" 10
if [ -n "$outB" ]; then
    t_check "... and its tree is gone from n1" wait_gone "$NB/$U/$jobB" 30
else
    t_fail "... and its tree is gone from n1" "the job never ran (state $stateB)"
fi
t_eq "the hostile job still runs, its three mounts still hang" "RUNNING 3" \
    "$(lab_job_state "$jobA") $(hang_mounts | wc -l)"
t_eq "no node drained while the hang is in place" "" "$(lab_drained_nodes)"
assert_none_stuck "no lab process waits on the mounts after the other jobs"

# ---- 3. the hostile job's own end ------------------------------------------------
touch "$LAB/work/$jobA.go"
stateA=$(lab_wait_job "$jobA" "$EPILOG_BOUND")
t_eq "the hostile job ends and its epilog finishes (within $EPILOG_BOUND s)" COMPLETED "$stateA"
itest_match "... its script ran to its end" "^END$" "$(cat "$LAB/work/$jobA.out" 2>/dev/null)"
log_has "its epilog moved the job's tree, mounts and all, to the root-only trash" \
    "ext-cache: job $jobA: epilog: moved the job's tree to the trash" 10
log_has "the emptier detached the three mounts and removed the rest" \
    "ext-cache: job $jobA: emptied the trash after the epilog: removed [0-9]+, could not remove 0, mount points left alone 0, detached 3 in" 60
t_eq "no error logged for the hostile job's epilog" "" \
    "$(grep -E "ext-cache: job $jobA: .*(epilog|trash)" "$(lab_log n1)" | grep 'error:')"
t_eq "nothing of the hostile job is left on n1, in its level or the trash" "" \
    "$( (wait_gone "$NB/$U/$jobA" 30 || echo "$U/$jobA"); trash_entries)"
t_eq "no never-answering mount is left in n1's namespace" "" "$(hang_mounts)"
lab_assert_no_drain "no node drained after the hostile job (PrologEpilogTimeout=20)"
assert_none_stuck "no lab process waits on the mounts after the hostile job's epilog"
t_eq "slurmd and slurmctld logged no epilog error or timeout" "" \
    "$(grep -iE 'spank/epilog timed out|epilog: timeout|epilog error|epilog failed' "$(lab_log n1)" "$(lab_ctld_log)")"

# the last reference to a detached mount gone, the kernel ends its FUSE
# connection and the daemon's read fails: nothing waits on these any more
deadline=$((SECONDS + 10))
while [ -n "$(hang_pids)" ] && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.1
done
t_eq "the daemons ended by themselves once their mounts were detached" "" "$(hang_pids | paste -sd' ')"

# ---- 4. cleanup: daemons killed, mounts detached, a later epilog ---------------------
hang_cleanup
t_eq "no fuse_hang daemon is left" "" "$(hang_pids)"
t_eq "no never-answering mount is left" "" "$(hang_mounts)"
jobC=$(lab_user sbatch --parsable -w n1 --ext-cache=local -o /dev/null --wrap true 2>&1)
t_eq "a later job on n1 completes" COMPLETED "$(lab_wait_job "$jobC" 60)"
deadline=$((SECONDS + 30))
while [ -n "$(trash_entries)$(find "$NB" -mindepth 1 -maxdepth 1 ! -name .trash 2>/dev/null)" ] &&
    [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.1
done
t_eq "after its epilog n1's base holds only an empty trash" ".trash" \
    "$(find "$NB" -mindepth 1 | sed "s|^$NB/||" | sort | paste -sd' ')"
lab_assert_no_drain "no node drained at the end"

hostile_exit
trap - EXIT
itest_end
