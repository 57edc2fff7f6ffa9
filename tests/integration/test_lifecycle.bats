#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Lifecycle completeness on a real 3-node Slurm: every kind of step and job,
# concurrent steps, requeue, unclean ends (scancel, time limit, SIGKILLed
# task and slurmstepd), a crashed slurmd, user-set variables, and failure
# semantics node by node. After every case no node is drained.
# The first three cases run with an extern step (PrologFlags=Contain) and
# the interactive step; the others restart the cluster without them.

# Each @test runs in a process of its own: a variable one sets is never
# meant for another (they pass values through files), so shellcheck's
# warning about changes lost in a subshell does not apply.
# shellcheck disable=SC2030,SC2031
load lib/itest

B=$ITEST_BASE
EXTERN_CONF=$'SlurmdDebug=verbose\nPrologFlags=Contain\nLaunchParameters=use_interactive_step'

setup_file() {
    itest_setup_file
    cat >"$LAB/work/show.sh" <<'SHOW'
#!/bin/bash
# node step dir torchdir
echo "SHOW $SLURMD_NODENAME ${SLURM_STEP_ID:-none} ${SLURM_EXT_CACHE_DIR:-none} ${TORCH_EXTENSIONS_DIR:-none}"
SHOW
    chmod 755 "$LAB/work/show.sh"
    LAB_SLURM_CONF_EXTRA=$EXTERN_CONF itest_cluster "base=$B"
}

teardown_file() { itest_teardown_file; }

# cluster extern|plain: the cluster with or without the extern and
# interactive steps, restarted only when it is not that already
cluster() {
    local has=0
    grep -q '^PrologFlags=Contain' "$LAB_CONF" && has=1
    if [ "$1" = extern ] && [ "$has" = 0 ]; then
        LAB_SLURM_CONF_EXTRA=$EXTERN_CONF itest_cluster "base=$B"
    elif [ "$1" = plain ] && [ "$has" = 1 ]; then
        LAB_SLURM_CONF_EXTRA=SlurmdDebug=verbose itest_cluster "base=$B"
    fi
    itest_plugstack "required $LAB_PLUGIN base=$B"
}

# left_on_nodes: what is under the base on any node but the base and its trash
left_on_nodes() {
    local n left=""
    for n in $(lab_nodes); do
        if [ -n "$(lab_node "$n" find "$B" -mindepth 1 ! -path "$B/.trash" 2>/dev/null)" ]; then
            left="$left $n:$(lab_node "$n" find "$B" -mindepth 1 ! -path "$B/.trash" | tr '\n' ' ')"
        fi
    done
    echo "$left"
}
# nothing_left: no job tree on any node, once the nodes are idle (the trash
# is emptied in the background after each epilog)
nothing_left() {
    lab_wait_settled 120 >/dev/null
    itest_poll 10 nothing_on_nodes || fail "left:$(left_on_nodes)"
}
nothing_on_nodes() { [ -z "$(left_on_nodes)" ]; }
# job_state_is JOB STATE / now_at_least SECONDS: conditions to poll for
job_state_is() { [ "$(lab_job_state "$1")" = "$2" ]; }
now_at_least() { [ "$(date +%s)" -ge "$1" ]; }
# job_dir_on NODE JOB STEP: the step's directory exists on NODE
job_dir_on() { lab_node "$1" test -d "$B/$ITEST_UID/$2/$3"; }

@test "with an extern step: a local step gets step 0's directories, the extern step none and no log" {
    local out
    cluster extern
    out=$(lab_user srun -N3 --ext-cache=local "$LAB/work/show.sh" 2>&1)
    assert_equal "$(grep -c "^SHOW n[0-9] 0 $B/$ITEST_UID/[0-9]*/0 " <<<"$out")" 3
    nothing_left
    assert_equal "$(grep -h 'ext-cache:.*extern' "$LAB"/log/slurmd-n*.log | head -3)" ""
}

@test "with an extern step: a job-mode batch job runs in <job>/job; the extern step adds no directory" {
    local job batch_node batch_dir
    cluster extern
    # The batch step says where it runs once its directory exists, then holds
    # the job until the test has looked (bounded: it ends by itself after 60 s).
    job=$(lab_user sbatch --parsable -N2 --ext-cache=job -o "$LAB/work/%j.out" --wrap \
        "echo \$SLURMD_NODENAME \$SLURM_EXT_CACHE_DIR >$LAB/work/running.\$SLURM_JOB_ID
        for _ in \$(seq 600); do [ -e $LAB/work/release.\$SLURM_JOB_ID ] && break; sleep 0.1; done")
    itest_poll 60 test -s "$LAB/work/running.$job" ||
        fail "job $job did not start within 60 s (state $(lab_job_state "$job"))"
    read -r batch_node batch_dir <"$LAB/work/running.$job"
    assert_equal "$batch_dir" "$B/$ITEST_UID/$job/job"
    job_dir_on "$batch_node" "$job" job || fail "$batch_dir does not exist on $batch_node"
    assert_equal "$(lab_node "$batch_node" find "$B/$ITEST_UID/$job" -maxdepth 1 -name 'extern*' 2>&1)" ""
    touch "$LAB/work/release.$job"
    lab_wait_job "$job" 30 >/dev/null
    nothing_left
}

@test "salloc with use_interactive_step: the interactive step gets <job>/interactive" {
    local out
    cluster extern
    out=$(lab_user salloc -N1 --ext-cache=local 2>&1 <<'INTERACTIVE'
echo "INTERACTIVE $SLURMD_NODENAME ${SLURM_EXT_CACHE_DIR:-none} ${SLURM_STEP_ID:-}"
exit
INTERACTIVE
    )
    itest_match "^INTERACTIVE n[0-9] $B/$ITEST_UID/[0-9]+/interactive" "$out"
    nothing_left
    itest_no_drain
}

@test "20 concurrent steps of one job: each its own directory on each node, none sees another's file" {
    local job out
    cluster plain
    cat >"$LAB/work/concurrent.sh" <<'JOB'
#!/bin/bash
#SBATCH -N3
#SBATCH --ext-cache=local
# every step holds its directory until all 20 have written theirs (bounded: 60 s)
for i in $(seq 20); do
    srun --overlap -N3 -n3 bash -c 'mkdir -p "$TORCH_EXTENSIONS_DIR" && echo "$SLURM_STEP_ID" > "$TORCH_EXTENSIONS_DIR/owner"
        touch "$1.$SLURM_STEP_ID.$SLURMD_NODENAME"
        for _ in $(seq 600); do [ "$(ls "$1".* | wc -l)" -ge 60 ] && break; sleep 0.1; done
        echo "C $SLURMD_NODENAME $SLURM_STEP_ID $SLURM_EXT_CACHE_DIR $(cat $TORCH_EXTENSIONS_DIR/owner)"' _ "$SLURM_SUBMIT_DIR/conc.$SLURM_JOB_ID" &
done
wait
JOB
    itest_sbatch job concurrent.sh
    out=$(grep '^C ' "$LAB/work/$job.out")
    assert_equal "$(grep -c . <<<"$out") step-node lines" "60 step-node lines"
    # each concurrent step had its own directory on each node
    assert_equal "$(awk '{print $2, $4}' <<<"$out" | sort -u | wc -l) directories" "60 directories"
    # no concurrent step saw another step's file
    assert_equal "$(awk -v p="$B/$ITEST_UID/$job/" '$4 != p $3 || $5 != $3' <<<"$out")" ""
    nothing_left
}

@test "a local step ends while another step of the job runs on the node: only its own directory goes" {
    local job out
    cluster plain
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
    itest_sbatch job overlap.sh
    out=$(cat "$LAB/work/$job.out")
    # the long step was running when the short step started; it keeps its
    # directory; the short step's is gone when it ends
    itest_match "^LONG running$" "$out"
    itest_match "^STEP0 present$" "$out"
    itest_match "^STEP1 gone$" "$out"
    nothing_left
}

@test "a heterogeneous step and a job array: a distinct directory for each component and task" {
    local out arr i
    cluster plain
    out=$(lab_user srun --ext-cache=local -N1 "$LAB/work/show.sh" : -N1 "$LAB/work/show.sh" 2>&1)
    assert_equal "het components: $(grep -c '^SHOW' <<<"$out"), directories: $(grep '^SHOW' <<<"$out" | awk '{print $4}' | sort -u | wc -l)" \
        "het components: 2, directories: 2"
    nothing_left
    arr=$(lab_user sbatch --parsable --array=1-3 -N1 --ext-cache=local -o "$LAB/work/arr_%A_%a.out" \
        --wrap "srun $LAB/work/show.sh")
    for i in 1 2 3; do lab_wait_job "${arr}_$i" 60 >/dev/null; done
    out=$(cat "$LAB/work/arr_${arr}"_*.out 2>/dev/null)
    assert_equal "array tasks with a cache: $(grep -c "^SHOW n[0-9] 0 $B/" <<<"$out"), directories: $(grep '^SHOW' <<<"$out" | awk '{print $4}' | sort -u | wc -l)" \
        "array tasks with a cache: 3, directories: 3"
    nothing_left
    itest_no_drain
}

@test "user-set variables: kept under the admin default, replaced (and logged) when the user asks" {
    local out job replaced_re
    cluster plain
    itest_plugstack "required $LAB_PLUGIN base=$B default=local"
    out=$(TORCH_EXTENSIONS_DIR=/home/$LAB_USER/prebuilt LAB_PASS_ENV=TORCH_EXTENSIONS_DIR \
        lab_user srun -N1 "$LAB/work/show.sh" 2>&1)
    itest_match "^SHOW n[0-9] 0 $B/$ITEST_UID/[0-9]+/0 /home/$LAB_USER/prebuilt$" "$out"
    out=$(TORCH_EXTENSIONS_DIR=/home/$LAB_USER/prebuilt LAB_PASS_ENV=TORCH_EXTENSIONS_DIR \
        lab_user srun -N1 -w n1 --ext-cache=local "$LAB/work/show.sh" 2>&1)
    itest_match "^SHOW n1 0 $B/$ITEST_UID/[0-9]+/0 $B/$ITEST_UID/[0-9]+/0/torch_extensions$" "$out"
    # a verbose log line says it was replaced (slurmd may write it just after srun returns)
    replaced_re="ext-cache: job [0-9]+ step 0: TORCH_EXTENSIONS_DIR: replaced the value the user set"
    itest_poll 10 grep -qE "$replaced_re" "$(lab_log n1)" || fail "no /$replaced_re/ in $(lab_log n1)"
    cat >"$LAB/work/inherit.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1
echo "BATCH $TORCH_EXTENSIONS_DIR"
srun --ext-cache=off $SLURM_SUBMIT_DIR/show.sh
srun $SLURM_SUBMIT_DIR/show.sh
JOB
    itest_sbatch job inherit.sh
    out=$(cat "$LAB/work/$job.out")
    # the batch step got its own value; an inner step replaces the one inherited from it
    itest_match "^BATCH $B/$ITEST_UID/$job/batch/torch_extensions$" "$out"
    itest_match "^SHOW n[0-9] 1 $B/$ITEST_UID/$job/1 $B/$ITEST_UID/$job/1/torch_extensions$" "$out"
    itest_plugstack "required $LAB_PLUGIN base=$B"
    nothing_left
}

@test "scancel mid-step and a time limit: every directory gone once the job ended" {
    local job
    cluster plain
    job=$(lab_user sbatch --parsable -N3 --ext-cache=local -o /dev/null --wrap "srun -N3 sleep 60")
    itest_poll 30 job_dir_on n3 "$job" 0 || fail "step 0 of job $job never had its directory on n3"
    lab_root scancel "$job"
    nothing_left
    job=$(lab_user sbatch --parsable -N2 -t 1 --ext-cache=job -o /dev/null --wrap "srun -N2 sleep 300")
    lab_root scontrol update jobid="$job" timelimit=0:05 >/dev/null 2>&1 || true
    assert_equal "$(lab_wait_job "$job" 90)" TIMEOUT
    nothing_left
}

@test "a SIGKILLed task fails its step; a SIGKILLed slurmstepd's directory stays until the epilog, the other step's is untouched" {
    local job victim_step survivor_dir victim_pid
    cluster plain
    cat >"$LAB/work/killed.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1 -w n2
#SBATCH --ext-cache=local
# the survivor runs until the test has looked (bounded: 60 s)
srun --overlap -n1 bash -c 'mkdir -p $TORCH_EXTENSIONS_DIR && touch $TORCH_EXTENSIONS_DIR/survivor
    echo $SLURM_EXT_CACHE_DIR > $SLURM_SUBMIT_DIR/survivor.$SLURM_JOB_ID
    for _ in $(seq 600); do [ -e $SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID ] && break; sleep 0.1; done' &
while [ ! -s $SLURM_SUBMIT_DIR/survivor.$SLURM_JOB_ID ]; do sleep 0.1; done
srun --overlap -n1 bash -c 'kill -9 $$' ; echo "TASK_KILLED rc=$?"
srun --overlap -n1 bash -c 'echo $SLURM_STEP_ID > $SLURM_SUBMIT_DIR/victim.$SLURM_JOB_ID; sleep 60' &
wait
JOB
    job=$(lab_user sbatch --parsable -o "$LAB/work/%j.out" "$LAB/work/killed.sh")
    itest_poll 60 test -s "$LAB/work/victim.$job" || fail "the victim step of job $job never started"
    victim_step=$(cat "$LAB/work/victim.$job")
    survivor_dir=$(cat "$LAB/work/survivor.$job")
    victim_pid=$(pgrep -f "slurmstepd: \[$job.$victim_step\]" | head -1)
    [ -n "$victim_pid" ] || fail "no slurmstepd of step $job.$victim_step found"
    kill -9 "$victim_pid"
    # what is asserted next holds once that slurmstepd is dead: no exit hook of it can run any more
    itest_poll 10 test ! -e "/proc/$victim_pid" || fail "the SIGKILLed slurmstepd $victim_pid is still there"
    job_dir_on n2 "$job" "$victim_step" || fail "step $victim_step's directory is gone before the epilog"
    lab_node n2 test -e "$survivor_dir/torch_extensions/survivor" || fail "the surviving step's file is gone"
    itest_match "^TASK_KILLED rc=[1-9]" "$(cat "$LAB/work/$job.out")"
    touch "$LAB/work/release.$job"
    # the step whose slurmstepd died never reports back: the job ends when cancelled
    lab_root scancel "$job"
    assert_equal "$(lab_wait_job "$job" 60)" CANCELLED
    nothing_left
    itest_no_drain
}

@test "requeue: the new run starts from a new directory, never the old run's files" {
    local job pending_at out
    cluster plain
    cat >"$LAB/work/requeue.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1 -w n1
#SBATCH --requeue
#SBATCH --ext-cache=job
srun bash -c 'echo "RUN ${SLURM_RESTART_COUNT:-0} $SLURM_EXT_CACHE_DIR $(ls -A $SLURM_EXT_CACHE_DIR | paste -sd, -)"
    mkdir -p $TORCH_EXTENSIONS_DIR && touch $TORCH_EXTENSIONS_DIR/from_run_${SLURM_RESTART_COUNT:-0}'
# the first run is still there when the test requeues it (bounded: 60 s)
[ "${SLURM_RESTART_COUNT:-0}" = 0 ] && sleep 60
true
JOB
    job=$(lab_user sbatch --parsable -o "$LAB/work/%j.out" --open-mode=append "$LAB/work/requeue.sh")
    itest_poll 30 grep -qs '^RUN' "$LAB/work/$job.out" || fail "job $job's first run never ran its step"
    lab_root scontrol requeue "$job"
    # a requeued job waits out a begin-time delay; release it once it is pending
    # again (after its epilog; bounded at 60 s on a loaded machine), in a later
    # second than its kill: slurmd compares the new launch credential with the
    # revocation by whole seconds (slurm_cred_revoked, src/common/slurm_cred.c,
    # from _rpc_batch_job in src/slurmd/slurmd/req.c) and refuses a relaunch in
    # the same second ("already killed, do not launch")
    itest_poll 60 job_state_is "$job" PENDING || fail "job $job not pending again after requeue: $(lab_job_state "$job")"
    pending_at=$(date +%s)
    itest_poll 5 now_at_least $((pending_at + 2))
    lab_root scontrol update jobid="$job" starttime=now 2>/dev/null
    lab_wait_job "$job" 90 >/dev/null
    out=$(grep '^RUN' "$LAB/work/$job.out")
    # the first run used <job>/job, new (torch_kernels and the part for
    # containers alone); so does the second
    itest_match "^RUN 0 $B/$ITEST_UID/$job/job container,torch_kernels$" "$out"
    itest_match "^RUN 1 $B/$ITEST_UID/$job/job container,torch_kernels$" "$out"
    nothing_left
    itest_no_drain
}

@test "a crashed slurmd: leftovers of gone jobs are swept, a running job's tree kept" {
    local job
    cluster plain
    # the job runs until the test has looked (bounded: 300 s; the test's
    # steps while slurmd is down must find the job's processes alive, under
    # whatever load CI puts beside it)
    # shellcheck disable=SC2016  # expanded by the job's shell
    job=$(lab_user sbatch --parsable -N1 -w n1 --ext-cache=job -o /dev/null \
        --wrap 'srun bash -c "touch \$SLURM_SUBMIT_DIR/started.\$SLURM_JOB_ID
            for _ in \$(seq 3000); do [ -e \$SLURM_SUBMIT_DIR/release.\$SLURM_JOB_ID ] && break; sleep 0.1; done"')
    itest_poll 30 test -e "$LAB/work/started.$job" || fail "job $job never started its step"
    lab_kill_slurmd n1
    # what a node crash leaves: trees of jobs whose epilog never ran
    lab_node n1 mkdir -p "$B/$ITEST_UID/999001/0/torch_extensions" "$B/$ITEST_UID/999002/job"
    lab_node n1 touch "$B/$ITEST_UID/999001/0/torch_extensions/lock"
    lab_node n1 chown -R "$ITEST_UID:$ITEST_GID" "$B/$ITEST_UID/999001/0" "$B/$ITEST_UID/999002/job"
    lab_node n1 chmod 0711 "$B/$ITEST_UID/999001" "$B/$ITEST_UID/999002"
    lab_start_slurmd n1 >/dev/null
    assert_equal "after the slurmd restart job $job is $(lab_job_state "$job")" "after the slurmd restart job $job is RUNNING"
    # the node last asked slurmctld long ago (an earlier case's sweep was
    # within the minute that bounds its questions): the stamp, aged
    lab_node n1 python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.ext-cache.sweep", b"0")' "$B/.trash"
    # another job ends on n1: its epilog sweeps, in its background work
    lab_user srun -N1 -w n1 true
    itest_poll 30 grep -qE "ext-cache: job [0-9]+: epilog: moved the trees of 2 ended job" "$(lab_log n1)" ||
        fail "no sweep logged: $(grep 'epilog' "$(lab_log n1)" | tail -n 5)"
    job_dir_on n1 "$job" job || fail "the running job's tree is gone"
    itest_absent n1 "$B/$ITEST_UID/999001" || fail "the leftover of gone job 999001 is still there"
    itest_absent n1 "$B/$ITEST_UID/999002" || fail "the leftover of gone job 999002 is still there"
    touch "$LAB/work/release.$job"
    lab_wait_job "$job" 60 >/dev/null
    nothing_left
    itest_no_drain
}

@test "hostile mode values on the command line, in the environment and injected are refused; a preset SLURM_EXT_CACHE_DIR is overwritten" {
    local long i=0 v out rc
    cluster plain
    long=$(head -c 100000 /dev/zero | tr '\0' 'x') # near the kernel's 128 KiB per-argument limit
    for v in '../../etc' '/' 'local/..' $'local\nx' '%n%s%s' "$long" 'LOCAL' ''; do
        i=$((i + 1))
        rc=0
        out=$(lab_user srun -N1 "--ext-cache=$v" true 2>&1) || rc=$?
        [ "$rc" -ne 0 ] || fail "hostile --ext-cache value #$i was accepted: $out"
        [[ $out == *"valid modes are local, job, off"* ]] || fail "hostile --ext-cache value #$i: no list of valid modes in: $out"
        rc=0
        out=$(SLURM_EXT_CACHE=$v LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N1 true 2>&1) || rc=$?
        [ "$rc" -ne 0 ] || fail "hostile SLURM_EXT_CACHE value #$i was accepted: $out"
    done
    rc=0
    out=$(SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache=../x \
        LAB_PASS_ENV=SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache lab_user srun -N1 true 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "an injected SPANK option variable with a bad mode was accepted: $out"
    [[ $out == *"--ext-cache=../x"* ]] || fail "the injected value is not named: $out"
    out=$(SLURM_EXT_CACHE_DIR=/etc LAB_PASS_ENV=SLURM_EXT_CACHE_DIR lab_user srun -N1 --ext-cache=local "$LAB/work/show.sh" 2>&1)
    itest_match "^SHOW n[0-9] 0 $B/$ITEST_UID/[0-9]+/0 " "$out"
    itest_no_drain
}

@test "an optional plugin lets a bad SLURM_EXT_CACHE through sbatch: the step fails, the node does not" {
    local job
    cluster plain
    itest_plugstack "optional $LAB_PLUGIN base=$B"
    job=$(SLURM_EXT_CACHE=lcoal LAB_PASS_ENV=SLURM_EXT_CACHE lab_user sbatch --parsable -N1 -w n3 \
        -o "$LAB/work/%j.out" --wrap "echo ran" 2>/dev/null) || true
    if [ -n "$job" ]; then
        assert_equal "$(lab_wait_job "$job" 60)" FAILED
        [[ $(cat "$LAB/work/$job.out" 2>/dev/null) == *SLURM_EXT_CACHE=lcoal* ]] ||
            fail "the job's output does not name the bad value: $(cat "$LAB/work/$job.out" 2>&1)"
    else
        echo "# refused before submission" >&3
    fi
    itest_plugstack "required $LAB_PLUGIN base=$B"
    itest_no_drain
}

@test "a full disk under the base on one node: the step fails with the reason, or runs without the variables under the admin default" {
    local out rc=0
    cluster plain
    lab_node n1 mkdir -p /var/tmp/full
    lab_node n1 mount -t tmpfs -o size=64k,nr_inodes=64,mode=1777 tmpfs /var/tmp/full
    # tmpfs directories cost inodes, not blocks: use up both
    lab_node n1 dd if=/dev/zero of=/var/tmp/full/filler bs=4k count=100 2>/dev/null || true
    # shellcheck disable=SC2016  # expanded by the inner shell
    lab_node n1 bash -c 'i=0; while touch /var/tmp/full/f$i 2>/dev/null && [ $i -lt 1000 ]; do i=$((i + 1)); done'
    itest_plugstack "required $LAB_PLUGIN base=/var/tmp/full/ext-cache"
    out=$(lab_user srun -N1 -w n1 --ext-cache=local "$LAB/work/show.sh" 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "full disk, --ext-cache=local: the step did not fail: $out"
    [[ $out == *"No space left on device"* ]] || fail "the user is not told why: $out"
    itest_plugstack "required $LAB_PLUGIN base=/var/tmp/full/ext-cache default=local"
    out=$(lab_user srun -N1 -w n1 "$LAB/work/show.sh" 2>&1) || fail "full disk, admin default only: the step failed: $out"
    itest_match "^SHOW n1 0 none none$" "$out"
    itest_plugstack "required $LAB_PLUGIN base=$B"
    lab_node n1 umount /var/tmp/full
    itest_no_drain
}
