#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Core behaviour on a real 3-node Slurm: one private node-local directory per
# step per node, exported to every rank, gone after the step and the job;
# modes, the environment form, the admin default, and refusal of bad input.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

itest_begin

# ---- job scripts (run as the test user) ----------------------------------
cat >"$LAB/work/rank.sh" <<'RANK'
#!/bin/bash
# One line per rank: node rank mode dir inode owner:mode torchdir listing
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
chmod 755 "$LAB/work/rank.sh"

# check_ranks NAME OUTPUT NNODES PER_NODE MODE: the placement proof.
check_ranks() {
    local name=$1 out=$2 nnodes=$3 per_node=$4 mode=$5 bad
    local expect=$((nnodes * per_node))
    t_eq "$name: one line per rank" "$expect" "$(grep -c . <<<"$out")"
    t_eq "$name: every rank got SLURM_EXT_CACHE_DIR" 0 "$(grep -c '^NOENV' <<<"$out")"
    bad=$(awk -v m="$mode" -v u="$LAB_USER" '$3 != m || $6 != u":700" || $7 != $4"/torch_extensions"' <<<"$out")
    t_eq "$name: mode $mode, owner $LAB_USER, 0700, TORCH_EXTENSIONS_DIR inside" "" "$bad"
    # ranks of one node: one directory (same inode) listing exactly that node's ranks
    bad=$(awk '{ ino[$1] = ino[$1] " " $5; files[$1] = $8; ranks[$1] = ranks[$1] " rank." $2 }
        END { for (n in ino) { split(ino[n], a, " "); for (i in a) if (a[i] != a[1]) print n " has two dirs";
              split(ranks[n], r, " "); c = split(files[n], f, ",");
              if (c != length(r)) print n " lists " files[n] " for" ranks[n];
              for (i in r) if (index("," files[n] ",", "," r[i] ",") == 0) print n " misses " r[i] } }' <<<"$out")
    t_eq "$name: ranks on one node share one directory holding only their files" "" "$bad"
    t_eq "$name: every node has its own directory" "$nnodes" "$(awk '{print $5}' <<<"$out" | sort -u | wc -l)"
    t_eq "$name: spread over $nnodes nodes" "$nnodes" "$(awk '{print $1}' <<<"$out" | sort -u | wc -l)"
}

itest_cluster "base=$ITEST_BASE" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }

# ---- srun -N3 -n6 --ext-cache=local ----------------------------------------
out=$(lab_user srun -N3 -n6 --ext-cache=local "$LAB/work/rank.sh" 2 2>&1)
rc=$?
t_eq "srun -N3 -n6 --ext-cache=local exits 0" 0 "$rc"
check_ranks "srun local" "$(grep -v '^srun' <<<"$out")" 3 2 local
jobid=$(awk '{print $4}' <<<"$out" | head -1 | awk -F/ '{print $(NF-1)}')
itest_match "srun local: path is $ITEST_BASE/<uid>/<jobid>/0" \
    "^n[0-9] [0-9] local $ITEST_BASE/$ITEST_UID/$jobid/0 " "$out"
lab_wait_idle 30 >/dev/null
itest_gone_everywhere "srun local: the job's tree is gone on every node" "$ITEST_BASE/$ITEST_UID/$jobid"
itest_gone_everywhere "srun local: the user's level is gone once empty" "$ITEST_BASE/$ITEST_UID"
for n in $(lab_nodes); do
    t_eq "trash on $n is root-owned 0700" "root:700" "$(lab_node "$n" stat -c '%U:%a' "$ITEST_BASE/.trash")"
done
for _ in $(seq 50); do
    grep -q "ext-cache: job $jobid: emptied the trash after the epilog: removed [1-9]" "$(lab_log n1)" && break
    sleep 0.1
done
itest_match "the background emptier logs what it removed, naming the job" \
    "ext-cache: job $jobid: emptied the trash after the epilog: removed [1-9][0-9]*, could not remove 0" \
    "$(cat "$(lab_log n1)")"
for n in $(lab_nodes); do
    t_eq "base on $n is root-owned 0711" "root:711" "$(lab_node "$n" stat -c '%U:%a' "$ITEST_BASE")"
done
lab_assert_no_drain "no node drained after srun local"

# ---- what a new leaf holds at task start ------------------------------------
# Only the directories no tool makes itself: with the built-in list,
# PYTORCH_KERNEL_CACHE_PATH's (docs/cache-dirs.md); the others are made by
# their tool on first use. One rank per node, so no sibling made anything yet.
cat >"$LAB/work/leaf_at_start.sh" <<'LEAF'
#!/bin/bash
d=$SLURM_EXT_CACHE_DIR
echo "LEAF $SLURMD_NODENAME $(ls -A "$d" | paste -sd, -) $(stat -c '%U:%a' "$d"/* 2>/dev/null | paste -sd, -) ${PYTORCH_KERNEL_CACHE_PATH#$d/} ${TORCH_EXTENSIONS_DIR#$d/} ${1:+${!1#$d/}}"
LEAF
chmod 755 "$LAB/work/leaf_at_start.sh"
out=$(lab_user srun -N3 -n3 --ext-cache=local "$LAB/work/leaf_at_start.sh" 2>&1)
t_eq "a new leaf holds only torch_kernels ($LAB_USER, 0700) on every node" 3 \
    "$(grep -cE "^LEAF n[0-9] torch_kernels $LAB_USER:700 torch_kernels torch_extensions $" <<<"$out")" ||
    t_note "$out"
# TORCH_EXTENSIONS_DIR keeps its built-in flag under its default SUBDIR (torch_extensions_dir)
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE vars=TORCH_EXTENSIONS_DIR,PYTORCH_KERNEL_CACHE_PATH:pk,MY_JIT_CACHE:myjit"
out=$(lab_user srun -N3 -n3 --ext-cache=local "$LAB/work/leaf_at_start.sh" MY_JIT_CACHE 2>&1)
t_eq "vars=: the leaf holds the directories of PYTORCH_KERNEL_CACHE_PATH and of a tool the plugin does not know" 3 \
    "$(grep -cE "^LEAF n[0-9] myjit,pk $LAB_USER:700,$LAB_USER:700 pk torch_extensions_dir myjit$" <<<"$out")" ||
    t_note "$out"
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"

# ---- sbatch, two steps: different directories, each gone after its step ----
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
if itest_sbatch job two_steps.sh; then
    out=$(cat "$LAB/work/$job.out")
    itest_match "sbatch: the batch step has its own directory (batch)" \
        "^BATCH local $ITEST_BASE/$ITEST_UID/$job/batch $ITEST_BASE/$ITEST_UID/$job/batch/torch_extensions$" "$out"
    t_eq "sbatch: step 0 ran with its own directory on 3 nodes" 3 \
        "$(grep -c "^S1 n[0-9] $ITEST_BASE/$ITEST_UID/$job/0 $ITEST_BASE/$ITEST_UID/$job/0/torch_extensions$" <<<"$out")"
    t_eq "sbatch: step 2 replaced the batch step's values with its own" 3 \
        "$(grep -c "^S3 n[0-9] $ITEST_BASE/$ITEST_UID/$job/2 $ITEST_BASE/$ITEST_UID/$job/2/torch_extensions$" <<<"$out")"
    t_eq "sbatch: step 0's directory was gone on every node while the job still ran" 0 \
        "$(grep -c '^STALE0' <<<"$out")"
    lab_wait_idle 30 >/dev/null
    itest_gone_everywhere "sbatch: nothing left on any node after the job" "$ITEST_BASE/$ITEST_UID/$job"
fi
lab_assert_no_drain "no node drained after sbatch local"

# ---- --ext-cache=job: the second step sees what the first wrote -------------
cat >"$LAB/work/job_mode.sh" <<'JOB'
#!/bin/bash
#SBATCH -N3
#SBATCH --ext-cache=job
srun -N3 -n3 bash -c 'mkdir -p $TORCH_EXTENSIONS_DIR; echo "built on $SLURMD_NODENAME" > $TORCH_EXTENSIONS_DIR/op.so; echo "J1 $SLURMD_NODENAME $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"'
srun -N3 -n3 bash -c 'echo "J2 $SLURMD_NODENAME $SLURM_EXT_CACHE_DIR $(cat $TORCH_EXTENSIONS_DIR/op.so 2>&1)"'
JOB
if itest_sbatch job job_mode.sh; then
    out=$(cat "$LAB/work/$job.out")
    t_eq "job mode: first step used <job>/job on 3 nodes" 3 \
        "$(grep -c "^J1 n[0-9] job $ITEST_BASE/$ITEST_UID/$job/job$" <<<"$out")"
    t_eq "job mode: second step found what the first built on its own node" 3 \
        "$(grep -cE "^J2 (n[0-9]) $ITEST_BASE/$ITEST_UID/$job/job built on \\1$" <<<"$out")"
    lab_wait_idle 30 >/dev/null
    itest_gone_everywhere "job mode: the epilog removed the job's tree on every node" "$ITEST_BASE/$ITEST_UID/$job"
fi
lab_assert_no_drain "no node drained after job mode"

# ---- the same option twice; a step's own option over the job's -------------------
out=$(lab_user srun -N1 -n1 --ext-cache=local --ext-cache=local "$LAB/work/rank.sh" 1 2>&1)
t_eq "srun --ext-cache=local --ext-cache=local exits 0" 0 "$?"
check_ranks "the same option twice" "$out" 1 1 local
cat >"$LAB/work/inherit.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1
srun -N1 -n1 --ext-cache=local bash -c 'echo "OWN $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "OWN failed $?"
srun -N1 -n1 bash -c 'echo "INHERITED $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "INHERITED failed $?"
srun -N1 -n1 --ext-cache=job bash -c 'echo "SAME $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "SAME failed $?"
JOB
if itest_sbatch job inherit.sh --ext-cache=job; then
    out=$(cat "$LAB/work/$job.out")
    itest_match "sbatch --ext-cache=job, srun --ext-cache=local inside: the step gets local mode" \
        "^OWN local $ITEST_BASE/$ITEST_UID/$job/0$" "$out"
    itest_match "sbatch --ext-cache=job, srun inside without the option: the job's mode" \
        "^INHERITED job $ITEST_BASE/$ITEST_UID/$job/job$" "$out"
    itest_match "sbatch --ext-cache=job, srun --ext-cache=job inside: the job's mode" \
        "^SAME job $ITEST_BASE/$ITEST_UID/$job/job$" "$out"
fi
cat >"$LAB/work/script_line.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1
#SBATCH --ext-cache=job
echo "BATCH $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"
srun -N1 -n1 bash -c 'echo "STEP $SLURM_EXT_CACHE_MODE $SLURM_EXT_CACHE_DIR"' || echo "STEP failed $?"
JOB
if itest_sbatch job script_line.sh --ext-cache=local; then
    out=$(cat "$LAB/work/$job.out")
    itest_match "#SBATCH --ext-cache=job, sbatch --ext-cache=local: the batch step gets local mode" \
        "^BATCH local $ITEST_BASE/$ITEST_UID/$job/batch$" "$out"
    itest_match "#SBATCH --ext-cache=job, sbatch --ext-cache=local: a step inside gets local mode" \
        "^STEP local $ITEST_BASE/$ITEST_UID/$job/0$" "$out"
fi
lab_assert_no_drain "no node drained after repeated options"

# ---- salloc ---------------------------------------------------------------
out=$(lab_user salloc -N2 -n4 --ext-cache=local srun -N2 -n4 "$LAB/work/rank.sh" 2 2>&1)
t_eq "salloc -N2 --ext-cache=local: srun inside exits 0" 0 "$?"
check_ranks "salloc local" "$(grep -Ev '^(salloc|srun)' <<<"$out")" 2 2 local
lab_assert_no_drain "no node drained after salloc"

# ---- SLURM_EXT_CACHE=local without the option -------------------------------
out=$(SLURM_EXT_CACHE=local LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N3 -n3 "$LAB/work/rank.sh" 1 2>&1)
t_eq "SLURM_EXT_CACHE=local: srun exits 0" 0 "$?"
check_ranks "SLURM_EXT_CACHE=local" "$out" 3 1 local

# ---- admin default=local: on without asking, off when the user says so ---------
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE default=local"
out=$(lab_user srun -N3 -n3 "$LAB/work/rank.sh" 1 2>&1)
check_ranks "default=local, no option" "$out" 3 1 local
out=$(lab_user srun -N3 -n3 --ext-cache=off "$LAB/work/rank.sh" 1 2>&1)
t_eq "default=local, --ext-cache=off: no rank gets a cache" 3 "$(grep -c '^NOENV' <<<"$out")"
out=$(SLURM_EXT_CACHE=off LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N3 -n3 "$LAB/work/rank.sh" 1 2>&1)
t_eq "default=local, SLURM_EXT_CACHE=off: no rank gets a cache" 3 "$(grep -c '^NOENV' <<<"$out")"
out=$(SLURM_EXT_CACHE=off LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N3 -n3 --ext-cache=job "$LAB/work/rank.sh" 1 2>&1)
check_ranks "the option wins over SLURM_EXT_CACHE" "$out" 3 1 job
lab_assert_no_drain "no node drained after default=local"

# ---- a typo is refused before anything is submitted ---------------------------
before=$(lab_user sbatch --parsable --wrap true)
for cmd in srun sbatch salloc; do
    case $cmd in
        srun) out=$(lab_user srun -N1 --ext-cache=lcoal true 2>&1) ;;
        sbatch) out=$(lab_user sbatch --ext-cache=lcoal --wrap true 2>&1) ;;
        salloc) out=$(lab_user salloc -N1 --ext-cache=lcoal true 2>&1) ;;
    esac
    rc=$?
    t_check "$cmd --ext-cache=lcoal fails" test "$rc" -ne 0
    t_contains "$cmd --ext-cache=lcoal names the value and the valid modes" \
        "ext-cache: --ext-cache=lcoal: invalid mode (did you mean 'local'?): valid modes are local, job, off" "$out"
done
for cmd in srun sbatch; do
    case $cmd in
        srun) out=$(lab_user srun -N1 --ext-cache=local --ext-cache=job true 2>&1) ;;
        sbatch) out=$(lab_user sbatch --ext-cache=local --ext-cache=job --wrap true 2>&1) ;;
    esac
    rc=$?
    t_check "$cmd --ext-cache=local --ext-cache=job fails" test "$rc" -ne 0
    t_contains "$cmd --ext-cache=local --ext-cache=job names both values" \
        "ext-cache: --ext-cache=local and --ext-cache=job: given twice with different values; give it once" "$out"
done
out=$(lab_user sbatch --ext-cache=job --ext-cache=local "$LAB/work/script_line.sh" 2>&1)
t_check "sbatch --ext-cache=job --ext-cache=local over an #SBATCH line fails" test "$?" -ne 0
t_contains "sbatch --ext-cache=job --ext-cache=local names both values" \
    "ext-cache: --ext-cache=job and --ext-cache=local: given twice with different values; give it once" "$out"
printf '#!/bin/bash\n#SBATCH --ext-cache=job\n#SBATCH --ext-cache=local\ntrue\n' >"$LAB/work/two_lines.sh"
out=$(lab_user sbatch "$LAB/work/two_lines.sh" 2>&1)
t_check "two #SBATCH lines with different values fail" test "$?" -ne 0
t_contains "two #SBATCH lines with different values name both" \
    "ext-cache: --ext-cache=job and --ext-cache=local: given twice with different values; give it once" "$out"
out=$(SLURM_EXT_CACHE=bogus LAB_PASS_ENV=SLURM_EXT_CACHE lab_user srun -N1 true 2>&1)
t_check "SLURM_EXT_CACHE=bogus: srun fails" test "$?" -ne 0
t_contains "SLURM_EXT_CACHE=bogus: the message names it" "SLURM_EXT_CACHE=bogus: invalid mode" "$out"
after=$(lab_user sbatch --parsable --wrap true)
t_eq "refused commands submitted no job" "$((before + 1))" "$after"
lab_assert_no_drain "no node drained after refused modes"

# ---- a user squats the base on one node: that step fails or warns, no node drains ----
itest_plugstack "required $LAB_PLUGIN base=/var/tmp/squatted"
lab_node n2 setpriv --reuid="$LAB_USER" --regid="$ITEST_GID" --init-groups mkdir -m 777 /var/tmp/squatted
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
out=$(lab_user srun -N3 --ext-cache=local bash -c 'echo "$SLURMD_NODENAME ${SLURM_EXT_CACHE_DIR:-none}"' 2>&1)
t_check "squatted base, --ext-cache=local: the step fails" test "$?" -ne 0
itest_match "squatted base: the user is told which node and why" \
    "error: ext-cache: job [0-9]+ step 0: no private cache on node n2, failing the step: " "$out"
t_contains "squatted base: the message names the directory and the refusal" \
    "/var/tmp/squatted: owned by uid $ITEST_UID with mode 0777" "$out"
itest_plugstack "required $LAB_PLUGIN base=/var/tmp/squatted default=local"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
out=$(lab_user srun -N3 bash -c 'echo "$SLURMD_NODENAME ${SLURM_EXT_CACHE_DIR:-none}"' 2>&1)
t_eq "squatted base, admin default only: the step goes on" 0 "$?"
itest_match "squatted base, admin default only: n2 runs without the variables" "^n2 none$" "$out"
itest_match "squatted base, admin default only: n1 still gets its cache" "^n1 /var/tmp/squatted/$ITEST_UID/[0-9]+/0$" "$out"
t_contains "squatted base, admin default only: the user is warned" "going on without one" "$out"
t_eq "squatted base: the squatted directory is left exactly as it was" "$LAB_USER:777" \
    "$(lab_node n2 stat -c '%U:%a' /var/tmp/squatted)"
cat >"$LAB/work/batch_squat.sh" <<'JOB'
#!/bin/bash
echo "batch ran"
JOB
itest_plugstack "required $LAB_PLUGIN base=/var/tmp/squatted"
job=$(lab_user sbatch --parsable -w n2 --ext-cache=local -o "$LAB/work/%j.out" "$LAB/work/batch_squat.sh")
t_eq "squatted base, batch job asking for a cache: the job fails" FAILED "$(lab_wait_job "$job" 60)"
lab_assert_no_drain "squatted base: no node drained (batch step included)"
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"

# ---- a bad admin argument is refused, naming it ---------------------------------
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE defualt=local"
out=$(lab_user srun -N1 true 2>&1)
t_check "bad plugstack argument: srun fails" test "$?" -ne 0
t_contains "bad plugstack argument: the error names it" "ext-cache: defualt=local: unknown argument" "$out"
itest_plugstack "required $LAB_PLUGIN base=relative"
out=$(lab_user srun -N1 true 2>&1)
t_contains "base=relative: the error says why" "ext-cache: base=relative: must be an absolute path" "$out"
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"
lab_assert_no_drain "no node drained after bad plugstack arguments"

itest_end
