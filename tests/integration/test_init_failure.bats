#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# What a SPANK init failing in slurmstepd does to the job and the node, on
# this Slurm release, for real:
#   A. Slurm itself (tests/integration/plugins/init_fail.c, a plugin that
#      fails on purpose): with slurm_spank_init_failure_mode at its default
#      (node failure) the node drains and the batch job is requeued; with
#      ESPANK_JOB_FAILURE (25.05 and later) the job fails and the node stays.
#   B. ext_cache: its init fails in slurmstepd only for a bad plugstack line,
#      which srun/sbatch/salloc refuse at submission. A job queued before the
#      line went bad meets it at launch: from 25.05 on the job fails and no
#      node drains; before 25.05 Slurm has no choice to offer and drains.

load lib/itest

setup_file() {
    itest_setup_file
    local n
    n=$(awk '$2 == "SLURM_VERSION_NUMBER" {print $3}' /usr/include/slurm/slurm_version.h)
    HAS_FAILURE_MODE=0
    [ $((n)) -ge $(((25 << 16) + (5 << 8))) ] && HAS_FAILURE_MODE=1
    export HAS_FAILURE_MODE
    echo "# Slurm $(slurmd -V | awk '{print $2}'): slurm_spank_init_failure_mode $([ "$HAS_FAILURE_MODE" = 1 ] && echo exists || echo 'does not exist')" >&3
    gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -o "$LAB/lib/init_fail.so" \
        "$ITEST_DIR/plugins/init_fail.c" || fail "init_fail.so does not build against this release's spank.h"
    itest_cluster "base=$ITEST_BASE"
}

teardown_file() { itest_teardown_file; }

# wait_outcome JOB NODE: poll (bounded) until NODE drained or the job
# FAILED; prints "drained", "failed" or "neither: STATE". (22.05 records
# a batch job whose launch drained the node as COMPLETED, 24.11 requeues
# it: the drain, not the job's state, is what each release has in common.)
wait_outcome() {
    local job=$1 node=$2 deadline final=0 s
    [ -n "$job" ] || { echo "neither: no job was submitted"; return; }
    deadline=$(($(date +%s) + 90))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        if lab_drained_nodes | grep -qx "$node"; then
            echo drained
            return
        fi
        s=$(lab_job_state "$job")
        case $s in
            FAILED | NODE_FAIL | BOOT_FAIL | CANCELLED) echo failed; return ;;
            COMPLETED | TIMEOUT | OUT_OF_MEMORY)
                # a drain is recorded after the job's end: give it 10 s
                [ "$final" -gt 0 ] || final=$(($(date +%s) + 10))
                [ "$(date +%s)" -lt "$final" ] || { echo "neither: $s"; return; }
                ;;
        esac
        sleep 0.2
    done
    echo "neither: $(lab_job_state "$job") after 90 s"
}

# back_to_normal NODE: the plugin line restored, the node resumed, no job left
back_to_normal() {
    lab_set_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"
    lab_root scancel --user="$LAB_USER" >/dev/null 2>&1 || true
    lab_wait_idle 30 >/dev/null 2>&1 || true
    lab_resume "$1" >/dev/null 2>&1 || true
    lab_wait_idle 30 >/dev/null 2>&1 || true
}

node_reason() { lab_root sinfo -h -N -n "$1" -o '%E' | head -n1; }

# init_fail_case MODE: init_fail.so loaded with MODE, a batch job on n2; sets OUTCOME, JOB
init_fail_case() {
    lab_set_plugstack "required $LAB_PLUGIN base=$ITEST_BASE" "required $LAB/lib/init_fail.so mode=$1"
    JOB=$(lab_user sbatch --parsable -w n2 -o /dev/null --wrap true)
    OUTCOME=$(wait_outcome "$JOB" n2)
    echo "# init_fail mode=$1: $OUTCOME; job $(lab_job_state "$JOB"); n2 reason: $(node_reason n2)" >&3
}

# expect_drain: the node drained with Slurm's reason, and the job is not marked failed
expect_drain() {
    assert_equal "$OUTCOME" drained
    [[ $(node_reason n2) == *"batch job complete failure"* ]] ||
        fail "n2's reason is not Slurm's for a failed batch launch: $(node_reason n2)"
    [ "$(lab_job_state "$JOB")" != FAILED ] || fail "job $JOB is marked FAILED"
}

@test "A. Slurm's default failure mode (node): the node drains, the job is not marked failed" {
    init_fail_case node
    expect_drain
    back_to_normal n2
    itest_no_drain
}

@test "A. ESPANK_JOB_FAILURE: the batch job fails and the node stays (25.05 on; before, ignored: the node drains)" {
    init_fail_case job
    if [ "$HAS_FAILURE_MODE" = 1 ]; then
        assert_equal "$OUTCOME" failed
        assert_equal "$(lab_drained_nodes)" ""
    else
        expect_drain
    fi
    back_to_normal n2
    itest_no_drain
}

@test "B. ext_cache: a job queued before the line went bad fails from 25.05 on (drains before), new submissions are refused" {
    job=$(lab_user sbatch --parsable --hold -w n2 -o /dev/null --ext-cache=local --wrap true)
    [ -n "$job" ] || fail "no held job was queued while the line is good"
    lab_set_plugstack "required $LAB_PLUGIN base=$ITEST_BASE defualt=local"
    rc=0
    out=$(lab_user sbatch --parsable --wrap true 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "a new submission was accepted: $out"
    assert_equal "$(grep -c 'ext-cache: defualt=local: unknown argument' <<<"$out")" 1
    lab_root scontrol release "$job"
    outcome=$(wait_outcome "$job" n2)
    echo "# ext_cache with a bad line, queued job released: $outcome; job $(lab_job_state "$job"); n2 reason: $(node_reason n2)" >&3
    grep -qE 'ext-cache: (job [0-9]+ batch: )?defualt=local: unknown argument' "$(lab_log n2)" ||
        fail "slurmstepd did not log the bad argument on n2"
    if [ "$HAS_FAILURE_MODE" = 1 ]; then
        assert_equal "$outcome" failed
        assert_equal "$(lab_drained_nodes)" ""
    else
        assert_equal "$outcome" drained
    fi
    back_to_normal n2
    itest_no_drain
}
