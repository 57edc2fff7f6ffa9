#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Core behaviour on a real 3-node Slurm: one private node-local directory per
# step per node, exported to every rank, gone after the step and the job;
# modes, the environment form, the admin default, and refusal of bad input.

load lib/itest

setup_file() {
    itest_setup_file
    # One line per rank: node rank mode dir inode owner:mode torchdir listing
    cat >"$LAB/work/rank.sh" <<'RANK'
#!/bin/bash
per_node=$1
d=${SLURM_EXT_CACHE_DIR:-}
if [ -z "$d" ]; then echo "NOENV $SLURMD_NODENAME $SLURM_PROCID"; exit 0; fi
# the leaf starts without it: make it as torch's cpp_extension does
mkdir -p "$TORCH_EXTENSIONS_DIR" && touch "$TORCH_EXTENSIONS_DIR/rank.$SLURM_PROCID" || exit 3
for _ in $(seq 200); do
    [ "$(ls "$TORCH_EXTENSIONS_DIR" | wc -l)" -ge "$per_node" ] && break
    sleep 0.05
done
echo "$SLURMD_NODENAME $SLURM_PROCID $SLURM_EXT_CACHE_MODE $d $(stat -c '%i %U:%a' "$d") $TORCH_EXTENSIONS_DIR $(ls "$TORCH_EXTENSIONS_DIR" | sort | paste -sd, -)"
RANK
    cat >"$LAB/work/leaf_at_start.sh" <<'LEAF'
#!/bin/bash
d=$SLURM_EXT_CACHE_DIR
echo "LEAF $SLURMD_NODENAME $(ls -A "$d" | paste -sd, -) $(stat -c '%U:%a' "$d"/* 2>/dev/null | paste -sd, -) ${PYTORCH_KERNEL_CACHE_PATH#$d/} ${TORCH_EXTENSIONS_DIR#$d/} ${1:+${!1#$d/}}"
LEAF
    cat >"$LAB/work/script_line.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1
#SBATCH --ext-cache=job
echo "BATCH $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"
srun -N1 -n1 bash -c 'echo "STEP $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "STEP failed $?"
JOB
    chmod 755 "$LAB/work/rank.sh" "$LAB/work/leaf_at_start.sh" "$LAB/work/script_line.sh"
    itest_cluster "base=$ITEST_BASE"
}

teardown_file() { itest_teardown_file; }

setup() { itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"; }

# check_ranks OUTPUT NNODES PER_NODE MODE: the placement proof.
check_ranks() {
    local out=$1 nnodes=$2 per_node=$3 mode=$4 bad
    assert_equal "$(grep -c . <<<"$out") lines, $(grep -c '^NOENV' <<<"$out") without SLURM_EXT_CACHE_DIR" \
        "$((nnodes * per_node)) lines, 0 without SLURM_EXT_CACHE_DIR"
    # mode, owner, 0700, TORCH_EXTENSIONS_DIR inside
    bad=$(awk -v m="$mode" -v u="$LAB_USER" '$3 != m || $6 != u":700" || $7 != $4"/torch_extensions"' <<<"$out")
    [ -z "$bad" ] || fail "not mode $mode, owner $LAB_USER, 0700 with TORCH_EXTENSIONS_DIR inside: $bad"
    # ranks of one node: one directory (same inode) listing exactly that node's ranks
    bad=$(awk '{ ino[$1] = ino[$1] " " $5; files[$1] = $8; ranks[$1] = ranks[$1] " rank." $2 }
        END { for (n in ino) { split(ino[n], a, " "); for (i in a) if (a[i] != a[1]) print n " has two dirs";
              split(ranks[n], r, " "); c = split(files[n], f, ",");
              if (c != length(r)) print n " lists " files[n] " for" ranks[n];
              for (i in r) if (index("," files[n] ",", "," r[i] ",") == 0) print n " misses " r[i] } }' <<<"$out")
    [ -z "$bad" ] || fail "ranks on one node do not share one directory holding only their files: $bad"$'\n'"$out"
    # every node has its own directory, spread over NNODES nodes
    assert_equal "$(awk '{print $5}' <<<"$out" | sort -u | wc -l) dirs on $(awk '{print $1}' <<<"$out" | sort -u | wc -l) nodes" \
        "$nnodes dirs on $nnodes nodes"
}

# refused CMD...: CMD (as the user) fails; its output is in $output
refused() {
    run lab_user "$@"
    [ "$status" -ne 0 ] || fail "$* succeeded: $output"
}

@test "srun -N3 -n6 --ext-cache=local: one private directory per node, gone after the job, logged by the emptier" {
    local out jobid n
    out=$(lab_user srun -N3 -n6 --ext-cache=local "$LAB/work/rank.sh" 2 2>&1) || fail "srun exited $?: $out"
    check_ranks "$(grep -v '^srun' <<<"$out")" 3 2 local
    jobid=$(awk '{print $4}' <<<"$out" | head -1 | awk -F/ '{print $(NF-1)}')
    # the path is <base>/<uid>/<jobid>/0
    itest_match "^n[0-9] [0-9] local $ITEST_BASE/$ITEST_UID/$jobid/0 " "$out"
    lab_wait_settled 120 >/dev/null
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID/$jobid"
    # the user's level is gone once empty
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID"
    for n in $(lab_nodes); do
        assert_equal "$n trash $(lab_node "$n" stat -c '%U:%a' "$ITEST_BASE/.trash")" "$n trash root:700"
        assert_equal "$n base $(lab_node "$n" stat -c '%U:%a' "$ITEST_BASE")" "$n base root:711"
    done
    itest_poll 5 grep -q "ext-cache: job $jobid: emptied the trash after the epilog: removed [1-9]" "$(lab_log n1)" ||
        fail "no emptier line for job $jobid in $(lab_log n1)"
    itest_match "ext-cache: job $jobid: emptied the trash after the epilog: removed [1-9][0-9]*, could not remove 0" \
        "$(cat "$(lab_log n1)")"
    itest_no_drain
}

@test "a new leaf holds only the directories no tool makes itself" {
    local out
    # with the built-in list, PYTORCH_KERNEL_CACHE_PATH's (docs/cache-dirs.md),
    # the part for containers (its env file and its own torch_kernels,
    # docs/containers.md); the first task's turn is marked in memory, not in
    # the leaf; one rank per node, so no sibling made anything yet
    out=$(lab_user srun -N3 -n3 --ext-cache=local "$LAB/work/leaf_at_start.sh" 2>&1)
    assert_equal "$(grep -cE "^LEAF n[0-9] container,torch_kernels $LAB_USER:700,$LAB_USER:700 torch_kernels torch_extensions $" <<<"$out")" 3
    # vars=: PYTORCH_KERNEL_CACHE_PATH's and a tool the plugin does not know;
    # TORCH_EXTENSIONS_DIR keeps its default SUBDIR (torch_extensions_dir)
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE vars=TORCH_EXTENSIONS_DIR,PYTORCH_KERNEL_CACHE_PATH:pk,MY_JIT_CACHE:myjit"
    out=$(lab_user srun -N3 -n3 --ext-cache=local "$LAB/work/leaf_at_start.sh" MY_JIT_CACHE 2>&1)
    assert_equal "$(grep -cE "^LEAF n[0-9] container,myjit,pk $LAB_USER:700,$LAB_USER:700,$LAB_USER:700 pk torch_extensions_dir myjit$" <<<"$out")" 3
}

@test "sbatch, two steps: different directories, each gone after its step" {
    local job out
    cat >"$LAB/work/two_steps.sh" <<'JOB'
#!/bin/bash
#SBATCH -N3
#SBATCH --ext-cache=local
echo "BATCH $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR $TORCH_EXTENSIONS_DIR"
srun -N3 -n3 bash -c 'echo "S1 $SLURMD_NODENAME $SLURM_EXT_CACHE_DIR $TORCH_EXTENSIONS_DIR"; mkdir -p $TORCH_EXTENSIONS_DIR && touch $TORCH_EXTENSIONS_DIR/marker'
first=$(dirname "$(srun -N1 -n1 -w "$SLURMD_NODENAME" printenv SLURM_EXT_CACHE_DIR)")
srun -N3 -n3 bash -c 'echo "S3 $SLURMD_NODENAME $SLURM_EXT_CACHE_DIR $TORCH_EXTENSIONS_DIR"
  job=$(dirname "$SLURM_EXT_CACHE_DIR"); if [ -e "$job/0" ]; then echo "STALE0 $SLURMD_NODENAME"; fi'
JOB
    itest_sbatch job two_steps.sh
    out=$(cat "$LAB/work/$job.out")
    # the batch step has its own directory (batch)
    itest_match "^BATCH local $ITEST_BASE/$ITEST_UID/$job/batch $ITEST_BASE/$ITEST_UID/$job/batch/torch_extensions$" "$out"
    # step 0 ran with its own directory on 3 nodes; step 2 replaced the batch step's values
    assert_equal "$(grep -c "^S1 n[0-9] $ITEST_BASE/$ITEST_UID/$job/0 $ITEST_BASE/$ITEST_UID/$job/0/torch_extensions$" <<<"$out")" 3
    assert_equal "$(grep -c "^S3 n[0-9] $ITEST_BASE/$ITEST_UID/$job/2 $ITEST_BASE/$ITEST_UID/$job/2/torch_extensions$" <<<"$out")" 3
    # step 0's directory was gone on every node while the job still ran
    assert_equal "$(grep '^STALE0' <<<"$out")" ""
    lab_wait_settled 120 >/dev/null
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID/$job"
    itest_no_drain
}

@test "--ext-cache=job: the second step finds what the first built on its node; the epilog removes it" {
    local job out
    cat >"$LAB/work/job_mode.sh" <<'JOB'
#!/bin/bash
#SBATCH -N3
#SBATCH --ext-cache=job
srun -N3 -n3 bash -c 'mkdir -p $TORCH_EXTENSIONS_DIR; echo "built on $SLURMD_NODENAME" > $TORCH_EXTENSIONS_DIR/op.so; echo "J1 $SLURMD_NODENAME $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"'
srun -N3 -n3 bash -c 'echo "J2 $SLURMD_NODENAME $SLURM_EXT_CACHE_DIR $(cat $TORCH_EXTENSIONS_DIR/op.so 2>&1)"'
JOB
    itest_sbatch job job_mode.sh
    out=$(cat "$LAB/work/$job.out")
    assert_equal "$(grep -c "^J1 n[0-9] job $ITEST_BASE/$ITEST_UID/$job/job$" <<<"$out")" 3
    assert_equal "$(grep -cE "^J2 (n[0-9]) $ITEST_BASE/$ITEST_UID/$job/job built on \\1$" <<<"$out")" 3
    lab_wait_settled 120 >/dev/null
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID/$job"
    itest_no_drain
}

@test "one source: the last value given wins, nothing is refused for coming twice" {
    local job out
    out=$(lab_user srun -N1 -n1 --ext-cache=local --ext-cache=local "$LAB/work/rank.sh" 1 2>&1) ||
        fail "srun --ext-cache=local --ext-cache=local exited $?: $out"
    check_ranks "$out" 1 1 local
    out=$(lab_user srun -N1 -n1 --ext-cache=off --ext-cache=job "$LAB/work/rank.sh" 1 2>&1) ||
        fail "srun --ext-cache=off --ext-cache=job exited $?: $out"
    check_ranks "$out" 1 1 job
    # two values on sbatch's command line; two #SBATCH lines
    itest_sbatch job script_line.sh --ext-cache=off --ext-cache=local
    out=$(cat "$LAB/work/$job.out")
    itest_match "^BATCH local $ITEST_BASE/$ITEST_UID/$job/batch$" "$out"
    itest_match "^STEP local $ITEST_BASE/$ITEST_UID/$job/0$" "$out"
    cat >"$LAB/work/two_lines.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1
#SBATCH --ext-cache=job
#SBATCH --ext-cache=local
echo "BATCH $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"
JOB
    itest_sbatch job two_lines.sh
    itest_match "^BATCH local $ITEST_BASE/$ITEST_UID/$job/batch$" "$(cat "$LAB/work/$job.out")"
    itest_no_drain
}

@test "sources: the command line beats SLURM_EXT_CACHE, which beats #SBATCH lines" {
    local job out
    # script_line.sh has #SBATCH --ext-cache=job
    SLURM_EXT_CACHE=local LAB_PASS_ENV=SLURM_EXT_CACHE itest_sbatch job script_line.sh
    out=$(cat "$LAB/work/$job.out")
    itest_match "^BATCH local $ITEST_BASE/$ITEST_UID/$job/batch$" "$out"
    itest_match "^STEP local $ITEST_BASE/$ITEST_UID/$job/0$" "$out"
    SLURM_EXT_CACHE=local LAB_PASS_ENV=SLURM_EXT_CACHE itest_sbatch job script_line.sh --ext-cache=off
    out=$(cat "$LAB/work/$job.out")
    itest_match "^BATCH  $" "$out"
    itest_match "^STEP  $" "$out"
    # the command line over #SBATCH: the batch step and a step inside get local
    itest_sbatch job script_line.sh --ext-cache=local
    out=$(cat "$LAB/work/$job.out")
    itest_match "^BATCH local $ITEST_BASE/$ITEST_UID/$job/batch$" "$out"
    itest_match "^STEP local $ITEST_BASE/$ITEST_UID/$job/0$" "$out"
    out=$(SLURM_EXT_CACHE=off LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N1 -n1 --ext-cache=local "$LAB/work/rank.sh" 1 2>&1) ||
        fail "SLURM_EXT_CACHE=off srun --ext-cache=local exited $?: $out"
    check_ranks "$out" 1 1 local
    itest_no_drain
}

@test "a step inside a job: its own option wins over the job's, and it can give itself another mode" {
    local job out
    cat >"$LAB/work/inherit.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1
srun -N1 -n1 --ext-cache=local bash -c 'echo "OWN $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "OWN failed $?"
srun -N1 -n1 bash -c 'echo "INHERITED $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "INHERITED failed $?"
srun -N1 -n1 --ext-cache=job bash -c 'echo "SAME $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "SAME failed $?"
srun -N1 -n1 --ext-cache=job --ext-cache=local bash -c 'echo "LAST $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "LAST failed $?"
JOB
    itest_sbatch job inherit.sh --ext-cache=job
    out=$(cat "$LAB/work/$job.out")
    # sbatch --ext-cache=job; srun --ext-cache=local inside: local; srun
    # without the option or with --ext-cache=job: the job's mode; the last
    # of two values on srun's command line
    itest_match "^OWN local $ITEST_BASE/$ITEST_UID/$job/0$" "$out"
    itest_match "^INHERITED job $ITEST_BASE/$ITEST_UID/$job/job$" "$out"
    itest_match "^SAME job $ITEST_BASE/$ITEST_UID/$job/job$" "$out"
    itest_match "^LAST local $ITEST_BASE/$ITEST_UID/$job/3$" "$out"
    itest_no_drain
}

@test "heterogeneous jobs: one value of the option for the whole command, as Slurm forwards it" {
    local job out
    # srun: Slurm forwards one value of a plugin's option to every component
    cat >"$LAB/work/mode.sh" <<'MODE'
#!/bin/bash
echo "$1 ${SLURM_EXT_CACHE_MODE:-none}"
MODE
    chmod 755 "$LAB/work/mode.sh"
    out=$(lab_user srun -N1 --ext-cache=local "$LAB/work/mode.sh" A : -N1 "$LAB/work/mode.sh" B 2>&1) ||
        fail "het srun exited $?: $out"
    assert_equal "$(sort <<<"$out")" $'A local\nB local'
    out=$(lab_user srun -N1 --ext-cache=local "$LAB/work/mode.sh" A : \
        -N1 --ext-cache=off "$LAB/work/mode.sh" B 2>&1) || fail "het srun exited $?: $out"
    assert_equal "$(sort <<<"$out")" $'A none\nB none'
    # sbatch: the batch step runs in the first component, with the value that
    # component ended with; steps inside, in either component, get it too
    cat >"$LAB/work/het.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1 --ext-cache=job
#SBATCH hetjob
#SBATCH -N1 --ext-cache=local
echo "BATCH $SLURM_EXT_CACHE_MODE"
srun --het-group=0,1 bash -c 'echo "STEP $SLURM_EXT_CACHE_MODE"' || echo "STEP failed $?"
srun --het-group=1 --ext-cache=local bash -c 'echo "OWN $SLURM_EXT_CACHE_MODE"' || echo "OWN failed $?"
JOB
    itest_sbatch job het.sh
    out=$(cat "$LAB/work/$job.out")
    itest_match "^BATCH job$" "$out"
    assert_equal "$(grep -c '^STEP job$' <<<"$out")" 2
    itest_match "^OWN local$" "$out"
    itest_no_drain
}

@test "salloc -N2 --ext-cache=local: srun inside gets a private directory per node" {
    local out
    out=$(lab_user salloc -N2 -n4 --ext-cache=local srun -N2 -n4 "$LAB/work/rank.sh" 2 2>&1) ||
        fail "salloc exited $?: $out"
    check_ranks "$(grep -Ev '^(salloc|srun)' <<<"$out")" 2 2 local
    itest_no_drain
}

@test "SLURM_EXT_CACHE=local without the option" {
    local out
    out=$(SLURM_EXT_CACHE=local LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N3 -n3 "$LAB/work/rank.sh" 1 2>&1) ||
        fail "srun exited $?: $out"
    check_ranks "$out" 3 1 local
}

@test "admin default=local: on without asking, off when the user says so, the option over the variable" {
    local out
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE default=local"
    out=$(lab_user srun -N3 -n3 "$LAB/work/rank.sh" 1 2>&1)
    check_ranks "$out" 3 1 local
    out=$(lab_user srun -N3 -n3 --ext-cache=off "$LAB/work/rank.sh" 1 2>&1)
    assert_equal "--ext-cache=off: $(grep -c '^NOENV' <<<"$out") ranks without a cache" "--ext-cache=off: 3 ranks without a cache"
    out=$(SLURM_EXT_CACHE=off LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N3 -n3 "$LAB/work/rank.sh" 1 2>&1)
    assert_equal "SLURM_EXT_CACHE=off: $(grep -c '^NOENV' <<<"$out") ranks without a cache" "SLURM_EXT_CACHE=off: 3 ranks without a cache"
    out=$(SLURM_EXT_CACHE=off LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N3 -n3 --ext-cache=job "$LAB/work/rank.sh" 1 2>&1)
    check_ranks "$out" 3 1 job
    itest_no_drain
}

@test "a mistyped mode is refused before anything is submitted, naming the value" {
    local before after
    before=$(lab_user sbatch --parsable --wrap true)
    refused srun -N1 --ext-cache=lcoal true
    assert_output --partial "ext-cache: --ext-cache=lcoal: invalid mode (did you mean 'local'?): valid modes are local, job, off"
    refused sbatch --ext-cache=lcoal --wrap true
    assert_output --partial "ext-cache: --ext-cache=lcoal: invalid mode (did you mean 'local'?): valid modes are local, job, off"
    refused salloc -N1 --ext-cache=lcoal true
    assert_output --partial "ext-cache: --ext-cache=lcoal: invalid mode (did you mean 'local'?): valid modes are local, job, off"
    # a bad value is refused even when a later one would replace it
    refused srun -N1 --ext-cache=lcoal --ext-cache=local true
    assert_output --partial "ext-cache: --ext-cache=lcoal: invalid mode"
    SLURM_EXT_CACHE=bogus LAB_PASS_ENV=SLURM_EXT_CACHE refused srun -N1 true
    assert_output --partial "SLURM_EXT_CACHE=bogus: invalid mode"
    SLURM_EXT_CACHE=bogus LAB_PASS_ENV=SLURM_EXT_CACHE refused sbatch --wrap true
    assert_output --partial "SLURM_EXT_CACHE=bogus: invalid mode"
    # refused commands submitted no job
    after=$(lab_user sbatch --parsable --wrap true)
    assert_equal "$after" "$((before + 1))"
    itest_no_drain
}

@test "a user squats the base on one node: that step fails or warns, no node drains" {
    local out rc job
    itest_plugstack "required $LAB_PLUGIN base=/var/tmp/squatted"
    lab_node n2 setpriv --reuid="$LAB_USER" --regid="$ITEST_GID" --init-groups mkdir -p -m 777 /var/tmp/squatted
    rc=0
    # shellcheck disable=SC2016  # expanded by the job's shell
    out=$(lab_user srun -N3 --ext-cache=local bash -c 'echo "$SLURMD_NODENAME ${SLURM_EXT_CACHE_DIR:-none}"' 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "squatted base, --ext-cache=local: the step did not fail: $out"
    # the user is told which node and why, naming the directory and the refusal
    itest_match "error: ext-cache: job [0-9]+ step 0: no private cache on node n2, failing the step: " "$out"
    [[ $out == *"/var/tmp/squatted: owned by uid $ITEST_UID with mode 0777"* ]] ||
        fail "the message does not name the directory and the refusal: $out"
    # admin default only: the step goes on, n2 without the variables, n1 with its cache, a warning
    itest_plugstack "required $LAB_PLUGIN base=/var/tmp/squatted default=local"
    # shellcheck disable=SC2016  # expanded by the job's shell
    out=$(lab_user srun -N3 bash -c 'echo "$SLURMD_NODENAME ${SLURM_EXT_CACHE_DIR:-none}"' 2>&1) ||
        fail "squatted base, admin default only: srun exited $?: $out"
    itest_match "^n2 none$" "$out"
    itest_match "^n1 /var/tmp/squatted/$ITEST_UID/[0-9]+/0$" "$out"
    [[ $out == *"going on without one"* ]] || fail "the user is not warned: $out"
    # the squatted directory is left exactly as it was
    assert_equal "$(lab_node n2 stat -c '%U:%a' /var/tmp/squatted)" "$LAB_USER:777"
    # a batch job asking for a cache there fails; no node drains (batch step included)
    printf '#!/bin/bash\necho "batch ran"\n' >"$LAB/work/batch_squat.sh"
    itest_plugstack "required $LAB_PLUGIN base=/var/tmp/squatted"
    job=$(lab_user sbatch --parsable -w n2 --ext-cache=local -o "$LAB/work/%j.out" "$LAB/work/batch_squat.sh")
    assert_equal "$(lab_wait_job "$job" 60)" FAILED
    itest_no_drain
}

@test "a bad admin argument is refused, naming it" {
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE defualt=local"
    refused srun -N1 true
    assert_output --partial "ext-cache: defualt=local: unknown argument"
    itest_plugstack "required $LAB_PLUGIN base=relative"
    run lab_user srun -N1 true
    assert_output --partial "ext-cache: base=relative: must be an absolute path"
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"
    itest_no_drain
}
