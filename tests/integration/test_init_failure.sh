#!/bin/bash
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
# Prints ok/not ok lines and "N passed, M failed".
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

itest_begin

slurm_number=$(awk '$2 == "SLURM_VERSION_NUMBER" {print $3}' /usr/include/slurm/slurm_version.h)
has_failure_mode=0
[ $((slurm_number)) -ge $(((25 << 16) + (5 << 8))) ] && has_failure_mode=1
t_note "Slurm $(slurmd -V | awk '{print $2}'): slurm_spank_init_failure_mode $([ "$has_failure_mode" = 1 ] && echo exists || echo 'does not exist')"

if ! t_check "init_fail.so builds against this release's spank.h" \
    gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -o "$LAB/lib/init_fail.so" "$ITEST_DIR/plugins/init_fail.c"; then
    itest_end
    exit 1
fi

itest_cluster "base=$ITEST_BASE" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }

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
    lab_root scancel --user="$LAB_USER" >/dev/null 2>&1
    lab_wait_idle 30 >/dev/null 2>&1
    lab_resume "$1" >/dev/null 2>&1
    lab_wait_idle 30 >/dev/null 2>&1
}

node_reason() { lab_root sinfo -h -N -n "$1" -o '%E' | head -n1; }

# ---- A. Slurm's own behaviour, per failure mode --------------------------------------------
for mode in node job; do
    lab_set_plugstack "required $LAB_PLUGIN base=$ITEST_BASE" "required $LAB/lib/init_fail.so mode=$mode"
    job=$(lab_user sbatch --parsable -w n2 -o /dev/null --wrap true)
    outcome=$(wait_outcome "$job" n2)
    t_note "init_fail mode=$mode: $outcome; job $(lab_job_state "$job"); n2 reason: $(node_reason n2)"
    if [ "$mode" = job ] && [ "$has_failure_mode" = 1 ]; then
        t_eq "A. ESPANK_JOB_FAILURE: the batch job fails, the node does not drain" failed "$outcome"
        t_eq "A. ... and n2 is not drained" "" "$(lab_drained_nodes)"
    else
        t_eq "A. failure mode $mode$([ "$has_failure_mode" = 0 ] && echo ' (ignored before 25.05)'): the node drains" \
            drained "$outcome"
        t_contains "A. ... with Slurm's reason for a failed batch launch" "batch job complete failure" "$(node_reason n2)"
        t_check "A. ... and the job is not marked failed" test "$(lab_job_state "$job")" != FAILED
    fi
    back_to_normal n2
done
lab_assert_no_drain "A. every node back in service"

# ---- B. ext_cache: a job queued before the plugstack line went bad ---------------------------
job=$(lab_user sbatch --parsable --hold -w n2 -o /dev/null --ext-cache=local --wrap true)
t_check "B. a held job is queued while the line is good" test -n "$job"
lab_set_plugstack "required $LAB_PLUGIN base=$ITEST_BASE defualt=local"
out=$(lab_user sbatch --parsable --wrap true 2>&1)
t_contains "B. a new submission is refused, naming the argument" "ext-cache: defualt=local: unknown argument" "$out"
lab_root scontrol release "$job"
outcome=$(wait_outcome "$job" n2)
t_note "ext_cache with a bad line, queued job released: $outcome; job $(lab_job_state "$job"); n2 reason: $(node_reason n2)"
t_check "B. slurmstepd logged the bad argument on n2" grep -qE 'ext-cache: (job [0-9]+ batch: )?defualt=local: unknown argument' "$(lab_log n2)"
if [ "$has_failure_mode" = 1 ]; then
    t_eq "B. the job fails (ESPANK_JOB_FAILURE), no node drains" failed "$outcome"
    t_eq "B. ... n2 is in service" "" "$(lab_drained_nodes)"
else
    t_eq "B. before 25.05 Slurm drains the node (no failure mode to choose)" drained "$outcome"
fi
back_to_normal n2
lab_assert_no_drain "B. every node back in service"

itest_end
