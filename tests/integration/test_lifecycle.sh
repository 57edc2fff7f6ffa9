#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Lifecycle completeness on a real 3-node Slurm: every kind of step and job,
# concurrent steps, requeue, unclean ends (scancel, time limit, SIGKILLed
# task and slurmstepd), a crashed slurmd, user-set variables, and failure
# semantics node by node. After every case no node is drained.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

itest_begin
B=$ITEST_BASE

cat >"$LAB/work/show.sh" <<'SHOW'
#!/bin/bash
# node step dir torchdir
echo "SHOW $SLURMD_NODENAME ${SLURM_STEP_ID:-none} ${SLURM_EXT_CACHE_DIR:-none} ${TORCH_EXTENSIONS_DIR:-none}"
SHOW
chmod 755 "$LAB/work/show.sh"

# nothing_left NAME: no job tree on any node (only the base and its emptied
# trash; the trash is emptied in the background after each epilog)
nothing_left() {
    local n left="" i
    lab_wait_idle 60 >/dev/null
    for i in $(seq 100); do
        left=""
        for n in $(lab_nodes); do
            if [ -n "$(lab_node "$n" find "$B" -mindepth 1 ! -path "$B/.trash" 2>/dev/null)" ]; then
                left="$left $n:$(lab_node "$n" find "$B" -mindepth 1 ! -path "$B/.trash" | tr '\n' ' ')"
            fi
        done
        [ -z "$left" ] && break
        sleep 0.1
    done
    if [ -z "$left" ]; then t_pass "$1"; else t_fail "$1" "left:$left"; fi
}

# ======================================================================
# Extern step (PrologFlags=Contain) and the interactive step
# ======================================================================
LAB_SLURM_CONF_EXTRA=$'SlurmdDebug=verbose\nPrologFlags=Contain\nLaunchParameters=use_interactive_step'
itest_cluster "base=$B" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }

out=$(lab_user srun -N3 --ext-cache=local "$LAB/work/show.sh" 2>&1)
t_eq "with an extern step: srun -N3 local gets step 0 directories" 3 \
    "$(grep -c "^SHOW n[0-9] 0 $B/$ITEST_UID/[0-9]*/0 " <<<"$out")"
nothing_left "with an extern step: nothing left after the job"
ext=$(grep -h 'ext-cache:.*extern' "$LAB"/log/slurmd-n*.log | head -3)
t_eq "the extern step made no directory and logged nothing" "" "$ext"

# The batch step says where it runs once its directory exists, then holds
# the job until the test has looked (bounded: it ends by itself after 60 s).
job=$(lab_user sbatch --parsable -N2 --ext-cache=job -o "$LAB/work/%j.out" --wrap \
    "echo \$SLURMD_NODENAME \$SLURM_EXT_CACHE_DIR >$LAB/work/running.\$SLURM_JOB_ID
    for _ in \$(seq 600); do [ -e $LAB/work/release.\$SLURM_JOB_ID ] && break; sleep 0.1; done")
itest_poll 60 test -s "$LAB/work/running.$job"
read -r batch_node batch_dir <"$LAB/work/running.$job" 2>/dev/null
t_eq "a job-mode batch job runs, in <job>/job" "$B/$ITEST_UID/$job/job" "${batch_dir:-not started}"
t_check "... and its directory exists on its node" lab_node "${batch_node:-n1}" test -d "$B/$ITEST_UID/$job/job"
t_eq "while a job-mode batch job runs, the extern step adds no directory" "" \
    "$(lab_node "${batch_node:-n1}" find "$B/$ITEST_UID/$job" -maxdepth 1 -name 'extern*' 2>&1)"
touch "$LAB/work/release.$job"
lab_wait_job "$job" 30 >/dev/null
nothing_left "job mode with extern step: nothing left"

out=$(lab_user salloc -N1 --ext-cache=local 2>&1 <<'INTERACTIVE'
echo "INTERACTIVE $SLURMD_NODENAME ${SLURM_EXT_CACHE_DIR:-none} ${SLURM_STEP_ID:-}"
exit
INTERACTIVE
)
itest_match "salloc with use_interactive_step: the interactive step gets <job>/interactive" \
    "^INTERACTIVE n[0-9] $B/$ITEST_UID/[0-9]+/interactive" "$out"
nothing_left "interactive step: nothing left after salloc ends"
lab_assert_no_drain "no drain: extern and interactive steps"

# ======================================================================
# Plain cluster for the rest
# ======================================================================
# shellcheck disable=SC2034 # read by lab_start (lib/cluster.sh)
LAB_SLURM_CONF_EXTRA=$'SlurmdDebug=verbose'
itest_cluster "base=$B" || { t_fail "cluster restart" "see logs"; itest_end; exit 1; }

# ---- 20 concurrent steps in one job ------------------------------------------
cat >"$LAB/work/concurrent.sh" <<'JOB'
#!/bin/bash
#SBATCH -N3
#SBATCH --ext-cache=local
for i in $(seq 20); do
    srun --overlap -N3 -n3 bash -c 'mkdir -p "$TORCH_EXTENSIONS_DIR" && echo "$SLURM_STEP_ID" > "$TORCH_EXTENSIONS_DIR/owner"; sleep 1
        echo "C $SLURMD_NODENAME $SLURM_STEP_ID $SLURM_EXT_CACHE_DIR $(cat $TORCH_EXTENSIONS_DIR/owner)"' &
done
wait
JOB
if itest_sbatch job concurrent.sh; then
    out=$(grep '^C ' "$LAB/work/$job.out")
    t_eq "20 concurrent srun steps x 3 nodes all ran" 60 "$(grep -c . <<<"$out")"
    t_eq "each concurrent step had its own directory on each node" 60 \
        "$(awk '{print $2, $4}' <<<"$out" | sort -u | wc -l)"
    t_eq "no concurrent step saw another step's file" "" \
        "$(awk -v p="$B/$ITEST_UID/$job/" '$4 != p $3 || $5 != $3' <<<"$out")"
fi
nothing_left "20 concurrent steps: nothing left"

# ---- a local step ends while another step of the job runs on the node ----------
cat >"$LAB/work/overlap.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1 -w n1
#SBATCH --ext-cache=local
# the long step runs until the checks are done (at most 60 s); the short one
# starts only once the long one has made its file
W=$SLURM_SUBMIT_DIR/overlap.$SLURM_JOB_ID
srun --overlap -n1 bash -c 'mkdir -p $TORCH_EXTENSIONS_DIR && touch $TORCH_EXTENSIONS_DIR/long
    touch $1.long; for _ in $(seq 600); do [ -e $1.checked ] && break; sleep 0.1; done' _ "$W" &
for _ in $(seq 600); do [ -e "$W.long" ] && break; sleep 0.1; done
echo "LONG $(test -e "$W.long" && echo running || echo "never started")"
srun --overlap -n1 bash -c 'mkdir -p $TORCH_EXTENSIONS_DIR && touch $TORCH_EXTENSIONS_DIR/short'
srun --overlap -n1 bash -c 'j=$(dirname $SLURM_EXT_CACHE_DIR)
    echo "STEP0 $(test -e $j/0/torch_extensions/long && echo present || echo gone)"
    echo "STEP1 $(test -e $j/1 && echo present || echo gone)"'
touch "$W.checked"
wait
JOB
if itest_sbatch job overlap.sh; then
    out=$(cat "$LAB/work/$job.out")
    itest_match "the long step was running when the short step started" "^LONG running$" "$out"
    itest_match "a long step's directory stays while a short step of the job ends" "^STEP0 present$" "$out"
    itest_match "the short local step's directory is gone when it ends" "^STEP1 gone$" "$out"
fi
nothing_left "overlapping steps: nothing left"

# ---- heterogeneous job and job array ---------------------------------------------
out=$(lab_user srun --ext-cache=local -N1 "$LAB/work/show.sh" : -N1 "$LAB/work/show.sh" 2>&1)
t_eq "heterogeneous step: both components ran" 2 "$(grep -c '^SHOW' <<<"$out")"
t_eq "heterogeneous step: each component has a distinct directory" 2 \
    "$(grep '^SHOW' <<<"$out" | awk '{print $4}' | sort -u | wc -l)"
nothing_left "heterogeneous job: nothing left"

arr=$(lab_user sbatch --parsable --array=1-3 -N1 --ext-cache=local -o "$LAB/work/arr_%A_%a.out" \
    --wrap "srun $LAB/work/show.sh")
for i in 1 2 3; do lab_wait_job "${arr}_$i" 60 >/dev/null; done
out=$(cat "$LAB/work/arr_${arr}"_*.out 2>/dev/null)
t_eq "job array: 3 tasks ran a step with a cache" 3 "$(grep -c "^SHOW n[0-9] 0 $B/" <<<"$out")"
t_eq "job array: every task had its own directory" 3 "$(grep '^SHOW' <<<"$out" | awk '{print $4}' | sort -u | wc -l)"
nothing_left "job array: nothing left"
lab_assert_no_drain "no drain: concurrent, overlapping, het and array jobs"

# ---- user-set variables ----------------------------------------------------------
itest_plugstack "required $LAB_PLUGIN base=$B default=local"
out=$(TORCH_EXTENSIONS_DIR=/home/$LAB_USER/prebuilt LAB_PASS_ENV=TORCH_EXTENSIONS_DIR \
    lab_user srun -N1 "$LAB/work/show.sh" 2>&1)
itest_match "admin default only: the user's TORCH_EXTENSIONS_DIR is kept" \
    "^SHOW n[0-9] 0 $B/$ITEST_UID/[0-9]+/0 /home/$LAB_USER/prebuilt$" "$out"
out=$(TORCH_EXTENSIONS_DIR=/home/$LAB_USER/prebuilt LAB_PASS_ENV=TORCH_EXTENSIONS_DIR \
    lab_user srun -N1 -w n1 --ext-cache=local "$LAB/work/show.sh" 2>&1)
itest_match "--ext-cache=local: the user's TORCH_EXTENSIONS_DIR is replaced" \
    "^SHOW n1 0 $B/$ITEST_UID/[0-9]+/0 $B/$ITEST_UID/[0-9]+/0/torch_extensions$" "$out"
# slurmd may write the line just after srun returns
replaced_re="ext-cache: job [0-9]+ step 0: TORCH_EXTENSIONS_DIR: replaced the value the user set"
itest_poll 10 grep -qE "$replaced_re" "$(lab_log n1)"
itest_match "--ext-cache=local: a verbose log line says it was replaced" "$replaced_re" "$(cat "$(lab_log n1)")"
cat >"$LAB/work/inherit.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1
echo "BATCH $TORCH_EXTENSIONS_DIR"
srun --ext-cache=off $SLURM_SUBMIT_DIR/show.sh
srun $SLURM_SUBMIT_DIR/show.sh
JOB
if itest_sbatch job inherit.sh; then
    out=$(cat "$LAB/work/$job.out")
    itest_match "the batch step got its own value" "^BATCH $B/$ITEST_UID/$job/batch/torch_extensions$" "$out"
    itest_match "an inner step replaces the value inherited from the batch step" \
        "^SHOW n[0-9] 1 $B/$ITEST_UID/$job/1 $B/$ITEST_UID/$job/1/torch_extensions$" "$out"
fi
itest_plugstack "required $LAB_PLUGIN base=$B"
nothing_left "user-set variables: nothing left"

# ---- ends that are not clean -----------------------------------------------------------
# scancel mid-step
job=$(lab_user sbatch --parsable -N3 --ext-cache=local -o /dev/null --wrap "srun -N3 sleep 60")
for _ in $(seq 100); do
    [ "$(lab_node n3 find "$B/$ITEST_UID/$job" -maxdepth 1 -name 0 2>/dev/null)" ] && break; sleep 0.1
done
t_check "scancel: the step's directory existed on n3" lab_node n3 test -d "$B/$ITEST_UID/$job/0"
lab_root scancel "$job"
nothing_left "scancel mid-step: every directory gone once the job ended"

# time limit
job=$(lab_user sbatch --parsable -N2 -t 1 --ext-cache=job -o /dev/null --wrap "srun -N2 sleep 300")
lab_root scontrol update jobid="$job" timelimit=0:05 >/dev/null 2>&1 || true
t_eq "time limit: the job ended by its limit" TIMEOUT "$(lab_wait_job "$job" 90)"
nothing_left "time limit: every directory gone"

# SIGKILL of a task, and of a slurmstepd (no exit hook runs) while another step keeps running
cat >"$LAB/work/killed.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1 -w n2
#SBATCH --ext-cache=local
srun --overlap -n1 bash -c 'mkdir -p $TORCH_EXTENSIONS_DIR && touch $TORCH_EXTENSIONS_DIR/survivor
    echo $SLURM_EXT_CACHE_DIR > $SLURM_SUBMIT_DIR/survivor.$SLURM_JOB_ID; sleep 20' &
while [ ! -s $SLURM_SUBMIT_DIR/survivor.$SLURM_JOB_ID ]; do sleep 0.1; done
srun --overlap -n1 bash -c 'kill -9 $$' ; echo "TASK_KILLED rc=$?"
srun --overlap -n1 bash -c 'echo $SLURM_STEP_ID > $SLURM_SUBMIT_DIR/victim.$SLURM_JOB_ID; sleep 60' &
wait
JOB
job=$(lab_user sbatch --parsable -o "$LAB/work/%j.out" "$LAB/work/killed.sh")
for _ in $(seq 200); do [ -s "$LAB/work/victim.$job" ] && break; sleep 0.1; done
victim_step=$(cat "$LAB/work/victim.$job" 2>/dev/null)
survivor_dir=$(cat "$LAB/work/survivor.$job" 2>/dev/null)
victim_pid=$(pgrep -f "slurmstepd: \[$job.$victim_step\]" | head -1)
t_check "a slurmstepd of the job was found" test -n "$victim_pid"
[ -n "$victim_pid" ] && kill -9 "$victim_pid"
# what is asserted next holds once that slurmstepd is dead: no exit hook of it can run any more
t_check "the SIGKILLed slurmstepd is gone" itest_poll 10 test ! -e "/proc/${victim_pid:-0}"
t_check "SIGKILLed slurmstepd: its directory stays until the epilog (no exit hook ran)" \
    lab_node n2 test -d "$B/$ITEST_UID/$job/$victim_step"
t_check "SIGKILLed slurmstepd: the other step's directory is untouched while it runs" \
    lab_node n2 test -e "$survivor_dir/torch_extensions/survivor"
itest_match "a task killed by SIGKILL fails its step" "^TASK_KILLED rc=[1-9]" "$(cat "$LAB/work/$job.out")"
# the step whose slurmstepd died never reports back: the job ends when cancelled
lab_root scancel "$job"
lab_wait_job "$job" 60 >/dev/null
nothing_left "SIGKILLed task and slurmstepd: everything gone once the job ended"
lab_assert_no_drain "no drain: scancel, time limit, SIGKILL"

# ---- requeue: the new run never sees the old run's files ------------------------------
cat >"$LAB/work/requeue.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1 -w n1
#SBATCH --requeue
#SBATCH --ext-cache=job
srun bash -c 'echo "RUN ${SLURM_RESTART_COUNT:-0} $SLURM_EXT_CACHE_DIR $(ls -A $SLURM_EXT_CACHE_DIR | paste -sd, -)"
    mkdir -p $TORCH_EXTENSIONS_DIR && touch $TORCH_EXTENSIONS_DIR/from_run_${SLURM_RESTART_COUNT:-0}'
[ "${SLURM_RESTART_COUNT:-0}" = 0 ] && sleep 30
true
JOB
job=$(lab_user sbatch --parsable -o "$LAB/work/%j.out" --open-mode=append "$LAB/work/requeue.sh")
for _ in $(seq 100); do grep -q '^RUN' "$LAB/work/$job.out" 2>/dev/null && break; sleep 0.1; done
lab_root scontrol requeue "$job"
# a requeued job waits out a begin-time delay; release it once it is pending
# again (after its epilog; bounded at 60 s on a loaded machine), in a later
# second than its kill: slurmd compares the new launch credential with the
# revocation by whole seconds (slurm_cred_revoked, src/common/slurm_cred.c, from
# _rpc_batch_job in src/slurmd/slurmd/req.c)
# and refuses a relaunch in the same second ("already killed, do not launch")
pending_at=
for _ in $(seq 300); do
    [ "$(lab_job_state "$job")" = PENDING ] && { pending_at=$(date +%s); break; }
    sleep 0.2
done
while [ -n "$pending_at" ] && [ "$(date +%s)" -lt $((pending_at + 2)) ]; do sleep 0.1; done
lab_root scontrol update jobid="$job" starttime=now 2>/dev/null
lab_wait_job "$job" 90 >/dev/null
out=$(grep '^RUN' "$LAB/work/$job.out")
itest_match "requeue: the first run used <job>/job, new (torch_kernels alone)" \
    "^RUN 0 $B/$ITEST_UID/$job/job torch_kernels$" "$out"
itest_match "requeue: the second run starts from a new directory (the old run's epilog removed it)" \
    "^RUN 1 $B/$ITEST_UID/$job/job torch_kernels$" "$out"
nothing_left "requeue: nothing left"
lab_assert_no_drain "no drain: requeue"

# ---- a crashed slurmd: leftovers of gone jobs are swept, a running job's kept ----------
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
job=$(lab_user sbatch --parsable -N1 -w n1 --ext-cache=job -o /dev/null \
    --wrap 'srun bash -c "touch \$SLURM_SUBMIT_DIR/started.\$SLURM_JOB_ID; sleep 12"')
for _ in $(seq 200); do [ -e "$LAB/work/started.$job" ] && break; sleep 0.1; done
lab_kill_slurmd n1
# what a node crash leaves: trees of jobs whose epilog never ran
lab_node n1 mkdir -p "$B/$ITEST_UID/999001/0/torch_extensions" "$B/$ITEST_UID/999002/job"
lab_node n1 touch "$B/$ITEST_UID/999001/0/torch_extensions/lock"
lab_node n1 chown -R "$ITEST_UID:$ITEST_GID" "$B/$ITEST_UID/999001/0" "$B/$ITEST_UID/999002/job"
lab_node n1 chmod 0711 "$B/$ITEST_UID/999001" "$B/$ITEST_UID/999002"
lab_start_slurmd n1 >/dev/null
t_check "slurmd restart: the running job's step survived" test "$(lab_job_state "$job")" = RUNNING
# another job ends on n1: its epilog sweeps
lab_user srun -N1 -w n1 true
lab_wait_idle 5 >/dev/null 2>&1
t_check "after a crash: the running job's tree is kept" lab_node n1 test -d "$B/$ITEST_UID/$job/job"
t_check "after a crash: the leftover of a gone job is removed" itest_absent n1 "$B/$ITEST_UID/999001"
t_check "after a crash: the leftover of another gone job is removed" itest_absent n1 "$B/$ITEST_UID/999002"
itest_match "the sweep is logged" "ext-cache: job [0-9]+: epilog: moved the trees of 2 ended job" "$(cat "$(lab_log n1)")"
lab_wait_job "$job" 60 >/dev/null
nothing_left "after a crash: nothing left once the running job ended"
lab_assert_no_drain "no drain: slurmd crash and restart"

# ======================================================================
# Failure semantics, node by node: whatever the user does, no node drains
# ======================================================================
# hostile values for the mode, on the command line and in the environment
long=$(head -c 100000 /dev/zero | tr '\0' 'x')	# near the kernel's 128 KiB per-argument limit
i=0
for v in '../../etc' '/' 'local/..' $'local\nx' '%n%s%s' "$long" 'LOCAL' ''; do
    i=$((i + 1))
    out=$(lab_user srun -N1 "--ext-cache=$v" true 2>&1)
    rc=$?
    t_check "hostile --ext-cache value #$i is refused by srun" test "$rc" -ne 0
    t_contains "hostile --ext-cache value #$i: the message lists the valid modes" "valid modes are local, job, off" "$out"
    out=$(SLURM_EXT_CACHE=$v LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N1 true 2>&1)
    rc=$?
    t_check "hostile SLURM_EXT_CACHE value #$i is refused by srun" test "$rc" -ne 0
done
out=$(SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache=../x \
    LAB_PASS_ENV=SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache lab_user srun -N1 true 2>&1)
t_check "an injected SPANK option variable with a bad mode is refused" test "$?" -ne 0
t_contains "the injected value is named" "--ext-cache=../x" "$out"
# a preset SLURM_EXT_CACHE_DIR never survives into a managed step
out=$(SLURM_EXT_CACHE_DIR=/etc LAB_PASS_ENV=SLURM_EXT_CACHE_DIR lab_user srun -N1 --ext-cache=local "$LAB/work/show.sh" 2>&1)
itest_match "a user's SLURM_EXT_CACHE_DIR=/etc is overwritten" "^SHOW n[0-9] 0 $B/$ITEST_UID/[0-9]+/0 " "$out"
lab_assert_no_drain "no drain: hostile option and environment values"

# an optional plugin lets a bad SLURM_EXT_CACHE through sbatch: the step fails, the node does not
itest_plugstack "optional $LAB_PLUGIN base=$B"
job=$(SLURM_EXT_CACHE=lcoal LAB_PASS_ENV=SLURM_EXT_CACHE lab_user sbatch --parsable -N1 -w n3 \
    -o "$LAB/work/%j.out" --wrap "echo ran" 2>/dev/null)
if [ -n "$job" ]; then
    state=$(lab_wait_job "$job" 60)
    t_eq "optional plugin, SLURM_EXT_CACHE=lcoal via sbatch: the batch step fails" FAILED "$state"
    t_contains "optional plugin: the job's output names the bad value" "SLURM_EXT_CACHE=lcoal" \
        "$(cat "$LAB/work/$job.out" 2>/dev/null)"
else
    t_pass "optional plugin, SLURM_EXT_CACHE=lcoal via sbatch: refused before submission"
fi
itest_plugstack "required $LAB_PLUGIN base=$B"
lab_assert_no_drain "no drain: a bad mode slipping past an optional plugin"

# a full disk under the base on one node
lab_node n1 mkdir -p /var/tmp/full
lab_node n1 mount -t tmpfs -o size=64k,nr_inodes=64,mode=1777 tmpfs /var/tmp/full
# tmpfs directories cost inodes, not blocks: use up both
lab_node n1 dd if=/dev/zero of=/var/tmp/full/filler bs=4k count=100 2>/dev/null
# shellcheck disable=SC2016  # expanded by the inner shell
lab_node n1 bash -c 'i=0; while touch /var/tmp/full/f$i 2>/dev/null && [ $i -lt 1000 ]; do i=$((i + 1)); done' 
itest_plugstack "required $LAB_PLUGIN base=/var/tmp/full/ext-cache"
out=$(lab_user srun -N1 -w n1 --ext-cache=local "$LAB/work/show.sh" 2>&1)
t_check "full disk, --ext-cache=local: the step fails" test "$?" -ne 0
t_contains "full disk: the user is told why" "No space left on device" "$out"
itest_plugstack "required $LAB_PLUGIN base=/var/tmp/full/ext-cache default=local"
out=$(lab_user srun -N1 -w n1 "$LAB/work/show.sh" 2>&1)
t_eq "full disk, admin default only: the step runs" 0 "$?"
itest_match "full disk, admin default only: without the variables" "^SHOW n1 0 none none$" "$out"
itest_plugstack "required $LAB_PLUGIN base=$B"
lab_node n1 umount /var/tmp/full
lab_assert_no_drain "no drain: full disk"

itest_end
