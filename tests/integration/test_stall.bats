#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Nothing a user does to the plugin's own helpers holds a node (the third
# hostile review, docs/security-cases.md cases 72 to 74), on a real Slurm
# with the node pool on, PrologEpilogTimeout=20 and UnkillableStepTimeout=60
# (a hook still waiting past either drains the node):
#   - E3.1: the helper that publishes a step's builds and moves them into
#     the pool, a process with all of the job user's ids (so the user may
#     stop it), is stopped (SIGSTOP) the moment it appears. The step, its
#     srun and the job end; no node drains; the work goes on once the
#     helper is let go, and the directory outlives it.
#   - E3.2: the same for the helper of a job-mode job's epilog.
#   - E3.7: a job-mode job whose steps hold different keys pools nothing
#     it made and returns what it took; one whose steps share a key pools
#     its builds under that key.
#   - case 80: a job requeued onto n1 while its first run's end is held by
#     a stopped helper: that end leaves the second run's directory, made
#     at the same path, alone.
#   - case 83: slurmstepd SIGKILLed while its step holds a key taken from
#     the pool: the job's epilog returns the key's builds, whole.
#   - case 84: the process that seeds a step (extc-seed, a child of the
#     task), stopped mid-copy, holds none of the descriptors the task has
#     from slurmstepd; let go, it finishes and the step sees its seed.
# The helpers are caught by their process name: every process the plugin
# starts after a hook has returned is named extc-finisher (a step's end) or
# extc-epilog (the epilog's), and so are the user's children it starts; the
# seed's process is extc-seed.
# The catcher runs as root and looks only in n1's mount namespace: the
# user's own pkill would do the same, but would also reach the helpers of
# other labs on this machine run by a user of the same uid (the release
# lanes beside this suite).
# Every wait is a poll with a deadline; no case asserts a duration.

# shellcheck disable=SC2030,SC2031 # each @test is a process of its own
load lib/itest

B=$ITEST_BASE
POOL=$ITEST_BASE/.pool
# entries a step leaves: enough that the user's helper lives long enough to be caught
ENTRIES=20000

setup_file() {
    # shellcheck disable=SC2034  # read by lab_start (lib/cluster.sh)
    LAB_SLURM_CONF_EXTRA=$'SlurmdDebug=verbose\nPrologEpilogTimeout=20\nUnkillableStepTimeout=60'
    itest_setup_file
    HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
    W=$HOME_DIR/.extc-stall-$(basename "$LAB")
    rm -rf -- "$W"
    lab_user mkdir -p "$W" || fail "cannot make $W"
    export W
    itest_cluster "base=$B pool=node"
}

# never leave a stopped helper behind, whatever failed (only those this suite caught)
release_all() {
    local p
    for p in $(stopped_pids); do kill -CONT "$p" 2>/dev/null; done
    return 0
}

teardown() { release_all; }

teardown_file() {
    release_all
    itest_teardown_file
}

# no_drain_now: no node is drained or down at this moment (another job may still run)
no_drain_now() {
    local d
    d=$(lab_drained_nodes 2>&1) || fail "cannot query node states: $d"
    [ -z "$d" ] || fail "drained/down: $(tr '\n' ' ' <<<"$d")"
}

# start_catcher NAME: watch n1 for the user's process NAME, in the background
start_catcher() {
    rm -f "$BATS_FILE_TMPDIR/caught"
    python3 "$ITEST_DIR/lib/stop_helper.py" "$(cat "$LAB/run/lab-slurmd-n1.pid")" "$ITEST_UID" "$1" 120 \
        >"$BATS_FILE_TMPDIR/caught" 2>&1 &
}

# stopped_pids: what the catcher stopped (empty until it has)
stopped_pids() { grep -E '^[0-9]+$' "$BATS_FILE_TMPDIR/caught" 2>/dev/null; }
caught() { [ -n "$(stopped_pids)" ]; }

# all_stopped PIDS...: each is there and stopped (state T)
all_stopped() {
    local p st
    [ "$#" -gt 0 ] || return 1
    for p in "$@"; do
        { read -r st <"/proc/$p/stat"; } 2>/dev/null || return 1
        st=${st##*) }
        [ "${st%% *}" = T ] || return 1
    done
}

# job_over JOB: slurmctld has it in a final state and not completing
job_over() {
    case $(lab_job_state "$1") in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) return 0 ;; esac
    return 1
}

n1_log_has() { grep -qE -- "$1" "$(lab_log n1)"; }

# stop_helper_while NAME KEY SRUN-ARGS...: a step on n1 under
# SLURM_EXT_CACHE_KEY=KEY leaves ENTRIES entries; the user's helper NAME (lib/stop_helper.py) is
# stopped the moment it appears, and the job ends while it is stopped, with
# no node drained. Sets JOB and HELPERS.
stop_helper_while() {
    local name=$1 key=$2 out rc=0
    shift 2
    start_catcher "$name"
    # shellcheck disable=SC2016 # expanded by the task
    out=$(lab_user env SLURM_EXT_CACHE_KEY="$key" timeout -k 5 120 srun -w n1 -N1 -n1 "$@" \
        bash -c 'mkdir -p "$TRITON_CACHE_DIR" && cd "$TRITON_CACHE_DIR" && seq "$1" | xargs touch && echo "JOB $SLURM_JOB_ID"' job "$ENTRIES" 2>&1) || rc=$?
    [ "$rc" -eq 0 ] || fail "srun failed ($rc): $out"
    JOB=$(awk '/^JOB/ {print $2}' <<<"$out")
    itest_poll 60 caught || fail "nothing caught: $(cat "$BATS_FILE_TMPDIR/caught")"
    read -ra HELPERS <<<"$(stopped_pids)"
    # SIGSTOP takes effect when the helper next leaves the kernel: one in the
    # middle of a slow write (state D on a loaded disk) shows T a moment later
    itest_poll 30 all_stopped "${HELPERS[@]}" || fail "not stopped: ${HELPERS[*]}"
    # a process of the user's: the user itself may signal (and so stop) it
    lab_user kill -0 "${HELPERS[@]}" || fail "the user cannot signal its helper ${HELPERS[*]}"
    # the job ends and leaves the node while the helper is stopped
    itest_poll 60 job_over "$JOB" || fail "job $JOB is $(lab_job_state "$JOB") while the helper is stopped"
    assert_equal "$(lab_job_state "$JOB")" COMPLETED
    no_drain_now
}

@test "E3.1: the user stops its step's publish and pool helper: the step and its job end, no node drains" {
    local job finisher
    lab_user mkdir -p "$W/pub"
    stop_helper_while extc-finisher stall-local --ext-cache=local --ext-cache-publish="$W/pub"
    job=$JOB
    # the step's detached end (root) is still there, waiting for the helper
    finisher=$(pgrep -U 0 -x extc-finisher | paste -sd' ')
    [ -n "$finisher" ] || fail "no root extc-finisher left"
    # exit returned while the work was not done: it did not wait on the stopped helper
    n1_log_has "job $job step 0: .*still being published or moved into the node pool" ||
        fail "exit did not say it left the work running: $(grep 'ext-cache:' "$(lab_log n1)" | tail -n 8)"
    # the directory outlives the step while its builds are read
    lab_node n1 test -d "$B/$ITEST_UID/$job/0/triton" || fail "the step's directory went before its publish"
    # let it go: the publish, the move into the pool and the removal follow
    kill -CONT "${HELPERS[@]}"
    itest_poll 120 n1_log_has "job $job step 0: published to .*: $ENTRIES new entries" ||
        fail "no publish logged: $(grep "job $job" "$(lab_log n1)" | tail -n 8)"
    itest_poll 120 n1_log_has "job $job step 0: node pool: moved ($ENTRIES|$((ENTRIES + 1))) entries into key" ||
        fail "no move into the pool logged: $(grep "job $job" "$(lab_log n1)" | tail -n 8)"
    assert_equal "$(find "$W/pub/triton" -type f | wc -l)" "$ENTRIES"
    itest_poll 60 itest_absent n1 "$B/$ITEST_UID/$job" || fail "job $job's directory is still there"
    itest_no_drain
}

@test "E3.2: the user stops a job-mode job's epilog helper: the epilog returns, no node drains" {
    local job
    stop_helper_while extc-epilog stall-job --ext-cache=job
    job=$JOB
    # the epilog returned without its first part: it did not wait on the stopped helper
    n1_log_has "job $job: epilog: the job's directory is not retired after [0-9]+ ms" ||
        fail "the epilog did not say it left the work running: $(grep "job $job" "$(lab_log n1)" | tail -n 8)"
    kill -CONT "${HELPERS[@]}"
    itest_poll 120 n1_log_has "job $job: epilog: node pool: moved $ENTRIES entries in" ||
        fail "no epilog move logged: $(grep "job $job" "$(lab_log n1)" | tail -n 8)"
    itest_poll 60 itest_absent n1 "$B/$ITEST_UID/$job" || fail "job $job's directory is still there"
    itest_no_drain
}

# fill_key KEY NAME...: a local-mode job on n1 under SLURM_EXT_CACHE_KEY=KEY leaves the
# files NAME... in its TRITON_CACHE_DIR; its step's end puts them into the key (and,
# where the file system stamps finer than its clock ticks, maybe one empty cache
# directory of the step's tree besides, whole)
fill_key() {
    local key=$1 job n
    shift
    n=$#
    job=$(lab_user env SLURM_EXT_CACHE_KEY="$key" sbatch --parsable -w n1 -N1 -n1 --ext-cache=local \
        -o "$LAB/work/%j.out" \
        --wrap "srun -n1 bash -c 'mkdir -p \$TRITON_CACHE_DIR && cd \$TRITON_CACHE_DIR && touch $*'" 2>&1)
    [[ $job =~ ^[0-9]+$ ]] || fail "not submitted: $job"
    assert_equal "$(lab_wait_job "$job" 120)" COMPLETED
    itest_poll 60 n1_log_has "job $job step 0: node pool: moved ($n|$((n + 1))) entries into key" ||
        fail "no put-back logged: $(grep "job $job" "$(lab_log n1)" | tail -n 8)"
}

@test "E3.7: a job-mode job whose steps hold different keys pools nothing it made, and returns what it took; one key, pooled under it" {
    local mixed same out
    # key mix-a holds one build
    fill_key mix-a from-prior
    # shellcheck disable=SC2016 # expanded by the job
    mixed=$(lab_user env SLURM_EXT_CACHE_KEY=mix-a sbatch --parsable -w n1 -N1 -n1 --ext-cache=job \
        -o "$LAB/work/%j.out" --wrap 'srun -n1 bash -c "mkdir -p \$TRITON_CACHE_DIR && touch \$TRITON_CACHE_DIR/from-mix-a"
            SLURM_EXT_CACHE_KEY=mix-b srun -n1 bash -c "mkdir -p \$TRITON_CACHE_DIR && touch \$TRITON_CACHE_DIR/from-mix-b"' 2>&1)
    [[ $mixed =~ ^[0-9]+$ ]] || fail "not submitted: $mixed"
    assert_equal "$(lab_wait_job "$mixed" 120)" COMPLETED
    itest_poll 60 n1_log_has "job $mixed: epilog: node pool: the job's steps on this node ran in different environments" ||
        fail "no refusal logged: $(grep "job $mixed" "$(lab_log n1)" | tail -n 8)"
    itest_poll 60 itest_absent n1 "$B/$ITEST_UID/$mixed" || fail "job $mixed's directory is still there"
    assert_equal "$(lab_node n1 find "$POOL/$ITEST_UID" -name 'from-mix-*' 2>/dev/null)" ""
    # the first step took key mix-a's build into the job's directory: it came back,
    # unchanged; what the two steps made (from-mix-a, from-mix-b) is said not returned
    assert_equal "$(lab_node n1 find "$POOL/$ITEST_UID" -name from-prior | wc -l)" 1
    n1_log_has "job $mixed: epilog: node pool: 1 of its steps' directories did not go back whole into their keys; .*2 entries made or changed during the job" ||
        fail "the return is not logged: $(grep "job $mixed" "$(lab_log n1)" | tail -n 8)"
    # key mix-a's next step on n1 is told, once; it starts warm from what came back
    out=$(lab_user env SLURM_EXT_CACHE_KEY=mix-a srun -N1 -w n1 --ext-cache=local --ext-cache-verbose true 2>&1)
    [[ $out == *"node n1: the node pool's key "*" lost builds at the end of job $mixed, 2 entries made or changed during the job"* ]] ||
        fail "the key's next step was not told: $out"
    [[ $out == *"node n1: warm: took 1 entry from the node pool"* ]] || fail "not warm from what came back: $out"
    out=$(lab_user env SLURM_EXT_CACHE_KEY=mix-a srun -N1 -w n1 --ext-cache=local --ext-cache-verbose true 2>&1)
    [[ $out != *"lost builds"* ]] || fail "told twice: $out"

    # shellcheck disable=SC2016 # expanded by the job
    same=$(lab_user env SLURM_EXT_CACHE_KEY=one sbatch --parsable -w n1 -N1 -n1 --ext-cache=job \
        -o "$LAB/work/%j.out" --wrap 'srun -n1 bash -c "mkdir -p \$TRITON_CACHE_DIR && touch \$TRITON_CACHE_DIR/from-one-a"
            srun -n1 bash -c "mkdir -p \$TRITON_CACHE_DIR && touch \$TRITON_CACHE_DIR/from-one-b"' 2>&1)
    [[ $same =~ ^[0-9]+$ ]] || fail "not submitted: $same"
    assert_equal "$(lab_wait_job "$same" 120)" COMPLETED
    itest_poll 60 n1_log_has "job $same: epilog: node pool: moved 2 entries in" ||
        fail "no move logged: $(grep "job $same" "$(lab_log n1)" | tail -n 8)"
    # both builds, under one key
    assert_equal "$(lab_node n1 find "$POOL/$ITEST_UID" -name 'from-one-*' -printf '%h\n' | sort -u | wc -l)" 1
    assert_equal "$(lab_node n1 find "$POOL/$ITEST_UID" -name 'from-one-*' | wc -l)" 2
    itest_no_drain
}

# job_state_is JOB STATE / now_at_least SECONDS: conditions to poll for
job_state_is() { [ "$(lab_job_state "$1")" = "$2" ]; }
now_at_least() { [ "$(date +%s)" -ge "$1" ]; }

@test "case 80: requeue onto the same node while the first run's end is held: the new run's directory is left to it" {
    local job pending_at leaf
    start_catcher extc-finisher
    lab_user mkdir -p "$W/pub-rq"
    cat >"$W/requeue.sh" <<JOB
#!/bin/bash
#SBATCH -N1 -w n1
#SBATCH --requeue
#SBATCH --ext-cache=local
#SBATCH --ext-cache-publish=$W/pub-rq
mkdir -p "\$TRITON_CACHE_DIR" && cd "\$TRITON_CACHE_DIR" || exit 1
if [ "\${SLURM_RESTART_COUNT:-0}" = 0 ]; then
    # enough entries that the first run's publish helper lives to be caught
    seq $ENTRIES | xargs touch
    echo "RUN0 \$SLURM_EXT_CACHE_DIR"
    sleep 120    # until the test requeues it
else
    touch second_run
    echo "RUN1 \$SLURM_EXT_CACHE_DIR"
    # held until the test has looked (bounded: 120 s)
    for _ in \$(seq 1200); do [ -e "$W/release.\$SLURM_JOB_ID" ] && break; sleep 0.1; done
fi
JOB
    chmod 755 "$W/requeue.sh"
    job=$(lab_user sbatch --parsable -o "$W/%j.out" --open-mode=append "$W/requeue.sh")
    itest_poll 60 grep -qs '^RUN0' "$W/$job.out" || fail "job $job's first run never started"
    # the first run's batch step ends: its end publishes, and the user's helper is stopped
    lab_root scontrol requeue "$job"
    itest_poll 60 caught || fail "nothing caught: $(cat "$BATS_FILE_TMPDIR/caught")"
    read -ra HELPERS <<<"$(stopped_pids)"
    itest_poll 30 all_stopped "${HELPERS[@]}" || fail "not stopped: ${HELPERS[*]}"
    # the second run, on the same node, in a later second than the kill (as in test_lifecycle)
    itest_poll 60 job_state_is "$job" PENDING || fail "job $job not pending again: $(lab_job_state "$job")"
    pending_at=$(date +%s)
    itest_poll 5 now_at_least $((pending_at + 2))
    lab_root scontrol update jobid="$job" starttime=now 2>/dev/null
    itest_poll 90 grep -qs '^RUN1' "$W/$job.out" || fail "job $job's second run never started"
    leaf=$B/$ITEST_UID/$job/batch
    lab_node n1 test -e "$leaf/triton/second_run" || fail "the second run's build is not in $leaf"
    # the first run's end goes on: it finds the directory replaced and acts on nothing
    kill -CONT "${HELPERS[@]}"
    itest_poll 120 n1_log_has "job $job .*the step's directory .* was replaced by a later run" ||
        fail "no replaced line: $(grep "job $job" "$(lab_log n1)" | tail -n 8)"
    lab_node n1 test -e "$leaf/triton/second_run" || fail "the first run's end took the second run's directory"
    [ -z "$(find "$W/pub-rq" -name second_run)" ] || fail "the second run's build was published by the first run's end"
    touch "$W/release.$job"
    lab_wait_job "$job" 120 >/dev/null
    itest_no_drain
}

# fd_links PID: "FD=TARGET" a line for each descriptor PID holds, as node n1 sees them
fd_links() {
    # shellcheck disable=SC2016 # expanded in n1's namespace
    lab_node n1 bash -c 'for f in /proc/$1/fd/*; do printf "%s=%s\n" "${f##*/}" "$(readlink "$f")"; done' fds "$1" |
        sort -n
}

# seed_caught_while KEY SRUN-ARGS...: a step on n1 under SLURM_EXT_CACHE_KEY=KEY that
# prints the entries its TRITON_CACHE_DIR starts with; its seeding process
# (extc-seed) is stopped the moment it appears, its descriptors read next to
# its task's and asserted, then let go. Sets OUT (the step's output) and JOB.
seed_caught_while() {
    local key=$1 rc=0 srun_pid seeder task held task_held stray
    shift
    start_catcher extc-seed
    # shellcheck disable=SC2016 # expanded by the task
    lab_user env SLURM_EXT_CACHE_KEY="$key" timeout -k 5 120 srun -w n1 -N1 -n1 "$@" \
        bash -c 'echo "SEEDED $(ls "$TRITON_CACHE_DIR" | wc -l)"; echo "JOB $SLURM_JOB_ID"' \
        >"$BATS_FILE_TMPDIR/seed.out" 2>&1 &
    srun_pid=$!
    itest_poll 60 caught || fail "no seeding process caught: $(cat "$BATS_FILE_TMPDIR/caught")"
    seeder=$(stopped_pids)
    itest_poll 30 all_stopped "$seeder" || fail "not stopped: $seeder"
    held=$(fd_links "$seeder")
    task=$(awk '/^PPid:/ {print $2}' "/proc/$seeder/status")
    task_held=$(fd_links "$task")
    echo "# the task ($task) holds: $(paste -sd' ' <<<"$task_held")" >&3
    echo "# its seeding process ($seeder) holds: $(paste -sd' ' <<<"$held")" >&3
    # the control: the task it was forked from holds slurmstepd's log, the job level, the key's record
    grep -q "=$LAB/log/slurmd-n1.log$" <<<"$task_held" || fail "the task holds no slurmd log: $task_held"
    grep -qE "=$B/$ITEST_UID/[0-9]+$" <<<"$task_held" || fail "the task holds no job level: $task_held"
    grep -qE "=$POOL/$ITEST_UID/[0-9a-f]+\.use$" <<<"$task_held" || fail "the task holds no key record: $task_held"
    # stdio on /dev/null, at 3 the result pipe the task reads, past it only what the seed
    # itself opened: the step's own directory (uid/job/step), the seed or the key's
    # directory; no log, no socket, no other pipe, no root-owned level or record
    assert_equal "$(sed -n '1,3p' <<<"$held" | paste -sd' ')" "0=/dev/null 1=/dev/null 2=/dev/null"
    [[ $(sed -n 4p <<<"$held") =~ ^3=(pipe:\[[0-9]+\])$ ]] || fail "fd 3 is not a pipe: $held"
    cut -d= -f2- <<<"$task_held" | grep -qxF "${BASH_REMATCH[1]}" ||
        fail "fd 3 is not a pipe the task holds: $held"
    stray=$(sed '1,4d' <<<"$held" |
        grep -vE "^[0-9]+=($B/$ITEST_UID/[0-9]+/[0-9]+|$W/seed|$POOL/$ITEST_UID/[0-9a-f]+)(/.*)?$" || true)
    [ -z "$stray" ] || fail "the seeding process holds what it did not open itself: $stray"
    # the user's own process: the user may stop it, and so holds only their own task
    lab_user kill -0 "$seeder" || fail "the user cannot signal its seeding process $seeder"
    kill -CONT "$seeder"
    wait "$srun_pid" || rc=$?
    OUT=$(cat "$BATS_FILE_TMPDIR/seed.out")
    [ "$rc" -eq 0 ] || fail "srun failed ($rc): $OUT"
    JOB=$(awk '/^JOB/ {print $2}' <<<"$OUT")
}

@test "case 84: the process that seeds a step holds no descriptor of slurmstepd; let go, it seeds, and the pool's take after it" {
    local job n=5000
    # a seed large enough that its copy lives to be caught (a second or more here;
    # the catcher scans /proc without pause)
    lab_user bash -c "mkdir -p '$W/seed/triton' && cd '$W/seed/triton' && seq $n | xargs touch" ||
        fail "cannot make the seed"
    seed_caught_while stall-seed --ext-cache=local --ext-cache-seed="$W/seed"
    assert_equal "$(grep '^SEEDED' <<<"$OUT")" "SEEDED $n"
    job=$JOB
    # its end moves what it was seeded with into the key: entry by entry, or, as the
    # copy kept the seed's times, the Triton directory whole by one rename; the next
    # step's seed is the pool's take, with every entry
    itest_poll 120 n1_log_has "job $job step 0: node pool: moved [1-9][0-9]* entries into key" ||
        fail "no move into the pool logged: $(grep "job $job" "$(lab_log n1)" | tail -n 8)"
    # the take runs through the same child (test_warm.c shows what it holds); a rename of
    # one directory is over too soon to be caught reliably, so here only what it does:
    # the step starts with every entry, and the user is told the take's line
    # shellcheck disable=SC2016 # expanded by the task
    OUT=$(lab_user env SLURM_EXT_CACHE_KEY=stall-seed srun -w n1 -N1 -n1 --ext-cache=local --ext-cache-verbose \
        bash -c 'echo "SEEDED $(ls "$TRITON_CACHE_DIR" | wc -l)"' 2>&1) || fail "srun failed: $OUT"
    assert_equal "$(grep '^SEEDED' <<<"$OUT")" "SEEDED $n"
    grep -qE "warm: took $n entries.* from the node pool" <<<"$OUT" || fail "no warm line for the pool's take: $OUT"
    no_drain_now
}

# step_stepd JOB: the pid of slurmstepd of JOB's step 0 on n1 (in n1's mount namespace only)
step_stepd() {
    local ns p
    ns=$(readlink "/proc/$(cat "$LAB/run/lab-slurmd-n1.pid")/ns/mnt")
    for p in $(pgrep -x slurmstepd); do
        [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
        tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "[$1.0]" && { echo "$p"; return 0; }
    done
    return 1
}

# take_and_wait KEY: a step on n1 (srun alone: a batch step would take the key
# first) takes key KEY's builds, says how many it has, and waits for $W/let-go.
# Sets JOB, TOOK and SRUN_PID.
take_and_wait() {
    rm -f "$W/took" "$W/let-go"
    # shellcheck disable=SC2016 # expanded by the step
    lab_user env SLURM_EXT_CACHE_KEY="$1" W="$W" timeout -k 5 180 srun -w n1 -N1 -n1 --ext-cache=local \
        bash -c 'echo "$SLURM_JOB_ID $(ls "$TRITON_CACHE_DIR" | wc -l)" >"$W/took"; until [ -e "$W/let-go" ]; do sleep 0.2; done' \
        >"$BATS_FILE_TMPDIR/take.out" 2>&1 &
    SRUN_PID=$!
    itest_poll 60 test -s "$W/took" || fail "the step did not start: $(cat "$BATS_FILE_TMPDIR/take.out")"
    read -r JOB TOOK <"$W/took"
}

# whole_again KEY N: the key's next step on n1 starts from all N entries and is told of no loss
whole_again() {
    local out
    out=$(lab_user env SLURM_EXT_CACHE_KEY="$1" srun -N1 -w n1 --ext-cache=local --ext-cache-verbose true 2>&1)
    [[ $out == *"node n1: warm: took $2 entries from the node pool"* ]] || fail "the key is not whole: $out"
    [[ $out != *"lost builds"* ]] || fail "a loss was told: $out"
}

@test "case 83: slurmstepd killed while its step holds a key taken from the pool: the epilog returns it whole" {
    local stepd
    # key killed-mid holds 50 builds
    # shellcheck disable=SC2046 # one name a word
    fill_key killed-mid $(seq 50)
    take_and_wait killed-mid
    assert_equal "$TOOK" 50
    # slurmstepd of the step dies: no exit hook runs, its directory stays with the key's builds
    stepd=$(step_stepd "$JOB") || fail "no slurmstepd for $JOB.0 on n1"
    kill -KILL "$stepd"
    touch "$W/let-go"
    wait "$SRUN_PID" || true
    # slurmctld still counts the step: the job ends as an admin or the time limit would end it
    lab_root scancel "$JOB"
    itest_poll 120 job_over "$JOB" || fail "job $JOB is not over: $(lab_job_state "$JOB")"
    itest_poll 60 n1_log_has "job $JOB: epilog: node pool: put back what 1 of its steps' directories held \(50 entries\)" ||
        fail "no return logged: $(grep "job $JOB" "$(lab_log n1)" | tail -n 8)"
    itest_poll 60 itest_absent n1 "$B/$ITEST_UID/$JOB" || fail "job $JOB's directory is still there"
    whole_again killed-mid 50
    no_drain_now
}

# n1_back: n1 is in service (the admin resumes it once its slurmd has registered)
n1_back() {
    [ -n "$(lab_drained_nodes)" ] || return 0
    lab_resume n1 2>/dev/null
    [ -z "$(lab_drained_nodes)" ]
}

@test "case 83: a node crashes while a step holds a key taken from the pool: once it is back, the key is whole" {
    local stepd by
    # shellcheck disable=SC2046 # one name a word
    fill_key crashed $(seq 50)
    take_and_wait crashed
    assert_equal "$TOOK" 50
    # what a crash leaves: slurmd and slurmstepd gone at once, no exit hook, no
    # epilog; the admin marks the node down, which ends its job in slurmctld
    stepd=$(step_stepd "$JOB") || fail "no slurmstepd for $JOB.0 on n1"
    lab_kill_slurmd n1
    kill -KILL "$stepd"
    touch "$W/let-go"
    wait "$SRUN_PID" || true
    lab_root scontrol update nodename=n1 state=down reason=extc-crash
    itest_poll 120 job_over "$JOB" || fail "job $JOB is not over: $(lab_job_state "$JOB")"
    lab_start_slurmd n1 >/dev/null
    itest_poll 60 n1_back || fail "n1 did not come back: $(lab_drained_nodes)"
    # The node back, either the job's epilog runs (slurmctld still has the job
    # and ends it on the node: what Slurm 22.05 does here) or, for a job
    # slurmctld no longer knows, a later epilog's sweep retires the tree: the
    # stamp aged so that this sweep asks slurmctld, and another job ends on n1.
    lab_node n1 python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.ext-cache.sweep", b"0")' "$B/.trash"
    lab_user srun -N1 -w n1 true
    itest_poll 60 n1_log_has "(job $JOB: epilog|sweep): node pool: put back what 1 of its steps' directories held \(50 entries\)" ||
        fail "no return logged: $(grep -E 'sweep|epilog' "$(lab_log n1)" | tail -n 8)"
    by=$(grep -oE "(job $JOB: epilog|sweep): node pool: put back what 1 of its" "$(lab_log n1)" | head -n 1)
    echo "# after the crash, returned by: ${by%%: node pool*}" >&3
    itest_poll 60 itest_absent n1 "$B/$ITEST_UID/$JOB" || fail "job $JOB's directory is still there"
    whole_again crashed 50
    no_drain_now
}
