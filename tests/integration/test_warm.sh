#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Warm start on a real 3-node Slurm, as the unprivileged user, with the
# PyTorch JIT op of tests/integration/torch (extload.py):
#   1. job 1 builds on every node and publishes (--ext-cache-publish=DIR, DIR
#      in the user's home, which every lab node sees, as NFS would): all three
#      nodes publish the same entry at once, DIR ends with one complete entry;
#      1b. three nodes whose steps end at one instant race to publish a large
#      entry: one wins, the others see they lost, DIR holds one whole copy
#   2. job 2 is seeded from DIR (--ext-cache-seed=DIR) and loads the op on every
#      node without compiling: CXX is a wrapper that logs every compile and link
#   3. the admin's seed= pattern seeds a job that names no seed
#   4. a job with another SLURM_EXT_CACHE_KEY is refused the seed (message) and builds
#   5. a seed directory the user cannot read is refused with a message
#   6. seed_max= exceeded: message naming the sizes, nothing copied
#   7. bad values are refused by srun before anything is submitted; a seed
#      without a private directory is ignored with a message
# Needs python3-torch, libtorch-dev, python3-dev, ninja-build and g++; missing
# ones fail the suite, they are never skipped.  Two rounds of builds: ~3 min.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

PY=/usr/bin/python3
RUN_TIMEOUT=${EXTC_RUN_TIMEOUT:-420}
SUITE_T0=$EPOCHREALTIME
since() {
    local since_us=${1/[.,]/} now_us=${EPOCHREALTIME/[.,]/}
    printf '%d.%d' $(((now_us - since_us) / 1000000)) $(((now_us - since_us) % 1000000 / 100000))
}

itest_begin

prereq_ok=1
need() { t_check "prerequisite: $1" "${@:2}" || prereq_ok=0; }
need "$PY imports torch.utils.cpp_extension (python3-torch)" lab_user "$PY" -c 'import torch.utils.cpp_extension'
need "ninja on the user's PATH (ninja-build)" lab_user bash -c 'command -v ninja'
need "c++ on the user's PATH (g++)" lab_user bash -c 'command -v c++'
if [ "$prereq_ok" != 1 ]; then
    t_fail "prerequisites" "install python3-torch libtorch-dev python3-dev ninja-build g++ (scripts/install-deps.sh test)"
    itest_end
    exit 1
fi

# Sources and the compiler wrapper in $LAB/work (every node sees it), root-owned.
rm -rf "$LAB/work/torch" "$LAB/work/bin"
if ! { cp -r "$ITEST_DIR/torch" "$LAB/work/torch" && chmod -R a+rX,go-w "$LAB/work/torch" &&
    mkdir -p "$LAB/work/bin"; }; then
    t_fail "copy helpers to $LAB/work" "cp failed"; itest_end; exit 1
fi
# torch writes $CXX into build.ninja: the wrapper's path must be the same in
# every job, or ninja would rebuild for the changed command line.  It logs
# compiles and links (they have -o), not torch's `$CXX -dumpversion`.
cat >"$LAB/work/bin/cxx" <<'SH'
#!/bin/sh
case " $* " in *" -o "*) echo "${SLURMD_NODENAME:-?} ${SLURM_JOB_ID:-?} $*" >>"$CXX_LOG" ;; esac
exec c++ "$@"
SH
chmod 0755 "$LAB/work/bin/cxx"

HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
# Other labs may use the same user: everything of this suite lives in one directory of its own.
W=$HOME_DIR/.extc-warm-$(basename "$LAB")
rm -rf -- "$W"
lab_user mkdir -p "$W/log" || { t_fail "make $W" "mkdir failed"; itest_end; exit 1; }
PUB=$W/pub-k1
export CXX=$LAB/work/bin/cxx MAX_JOBS=1 SLURM_EXT_CACHE_KEY=k1
PASS="MAX_JOBS CXX CXX_LOG SLURM_EXT_CACHE_KEY"

itest_cluster "base=$ITEST_BASE" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }
LAB_T0=$EPOCHREALTIME

# run_ext NAME LOG SRUN-ARGS...: `srun SRUN-ARGS python3 extload.py NAME` as the
# user, compiles logged to $W/log/LOG.  Sets OUT, RC, RES (RESULT lines), SECS.
run_ext() {
    local name=$1 t0=$EPOCHREALTIME
    export CXX_LOG=$W/log/$2
    shift 2
    OUT=$(LAB_PASS_ENV=$PASS lab_user timeout -k 10 "$RUN_TIMEOUT" \
        srun "$@" "$PY" "$LAB/work/torch/extload.py" "$name" 2>&1)
    RC=$?
    SECS=$(since "$t0")
    RES=$(grep '^RESULT ' <<<"$OUT")
}
# shellcheck disable=SC2016  # an awk program: $i is awk's field
KV='function kv(  i, k) { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }'
rfield() { awk "$KV"' { kv(); print F["'"$1"'"] }' <<<"$RES"; }
# per rank: node role compiled+linked version-ok
ranks() { awk "$KV"' { kv(); print F["node"], F["role"], F["compiled"] + F["linked"], F["ok"] }' <<<"$RES" | sort; }
compiles() { [ -f "$W/log/$1" ] && grep -c . "$W/log/$1" || echo 0; }
# srun_user OUTVAR SRUN-ARGS...: srun as the user (key k1 unless changed), output and rc
srun_user() {
    local __v=$1
    shift
    printf -v "$__v" '%s' "$(LAB_PASS_ENV=$PASS lab_user timeout -k 10 120 srun "$@" 2>&1)"
}
slurmd_lines() { grep -ah "ext-cache: job $1 " "$LAB"/log/slurmd-n*.log; }

# ==================================================================================
# 1. build on 3 nodes, publish the same entry from all of them at once
# ==================================================================================
run_ext extc_w job1.log -N3 --ntasks-per-node=1 --ext-cache=local --ext-cache-publish="$PUB"
j1=$(rfield job | head -n1)
t_note "job 1 ($j1): srun -N3 --ext-cache=local --ext-cache-publish=$PUB: ${SECS}s, rc $RC, $(compiles job1.log) compiler runs"
t_eq "1: srun exits 0" 0 "$RC"
t_eq "1: every node built the op (compiled and linked) and it works" \
    "$(printf 'n%s built 2 1\n' 1 2 3)" "$(ranks)"
t_check "1: the compiler wrapper logged the compiles (so an empty log means none ran)" \
    test "$(compiles job1.log)" -ge 6
lab_wait_idle 30 >/dev/null
t_eq "1: DIR holds exactly one entry: torch_extensions/extc_w" "extc_w" "$(ls -A "$PUB/torch_extensions" 2>&1)"
t_check "1: the entry has its .so" test -s "$PUB/torch_extensions/extc_w/extc_w.so"
t_eq "1: no lock, no stage, no temporary manifest anywhere in DIR" "" \
    "$(find "$PUB" \( -name lock -o -name '.ext-cache-stage.*' -o -name '.ext-cache-manifest.*' \) 2>&1)"
t_eq "1: the published tree is the user's" "" "$(find "$PUB" ! -user "$LAB_USER" 2>&1)"
t_contains "1: the manifest names the key" "key=k1" "$(cat "$PUB/.ext-cache-manifest" 2>&1)"
t_contains "1: the manifest names the publishing job" "job=$j1" "$(cat "$PUB/.ext-cache-manifest" 2>&1)"
t_check "1: the manifest names the ISA" grep -qE '^isa=[0-9a-f]{16}$' "$PUB/.ext-cache-manifest"
pubs=$(slurmd_lines "$j1" | grep -o 'published to [^:]*: [0-9]* new entries' | awk '{s += $(NF-2)} END {print s + 0}')
others=$(slurmd_lines "$j1" | grep -oE '[0-9]+ already there, [0-9]+ published first by another node' |
    awk '{s += $1 + $4} END {print s + 0}')
t_eq "1: the 3 nodes published: 1 entry renamed into place, the 2 others found it there or lost the race" \
    "1 2" "$pubs $others"
for n in $(lab_nodes); do
    t_note "  slurmd $n: $(grep -ah "ext-cache: job $j1 .*published" "$(lab_log "$n")" | tail -n1 | sed 's/.*ext-cache: //')"
done
t_eq "1: no publish error" "" "$(slurmd_lines "$j1" | grep -i 'error')"
# import the published .so as is (a load() here would write a lock and build.ninja into DIR)
t_eq "1: the published op imports and works as it is" 1 "$(lab_user "$PY" -c '
import sys, importlib.util as u, torch
s = u.spec_from_file_location("extc_w", sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m)
print(m.version())' "$PUB/torch_extensions/extc_w/extc_w.so" 2>&1 | tail -n1)"

# ==================================================================================
# 1b. the race itself: the 3 nodes' steps end at one instant and publish a 96 MiB
#     entry of the same name with different contents; copying it takes long
#     enough that every node starts before any finishes. Up to 3 rounds until
#     a node reports it lost; every round must leave DIR consistent.
# ==================================================================================
cat >"$LAB/work/race.sh" <<'RACE'
#!/bin/bash
# race.sh BARRIER: a 96 MiB triton entry unique to this node, then wait for all 3 nodes
set -e
mkdir -p "$TRITON_CACHE_DIR"
{ echo "$SLURMD_NODENAME"; head -c 100663296 /dev/urandom; } >"$TRITON_CACHE_DIR/big"
echo "SHA $SLURMD_NODENAME $(sha256sum <"$TRITON_CACHE_DIR/big" | cut -d' ' -f1) $SLURM_JOB_ID"
touch "$1/$SLURMD_NODENAME"
for _ in $(seq 12000); do
    [ "$(ls "$1" | wc -l)" -ge 3 ] && exit 0
    sleep 0.005
done
echo "barrier: timed out" >&2
exit 1
RACE
chmod 755 "$LAB/work/race.sh"
raced=0
for round in 1 2 3; do
    RDIR=$W/race-$round
    lab_user mkdir -p "$RDIR.bar"
    srun_user out -N3 --ntasks-per-node=1 --ext-cache=local --ext-cache-publish="$RDIR" \
        "$LAB/work/race.sh" "$RDIR.bar"
    jr=$(grep '^SHA ' <<<"$out" | head -n1 | awk '{print $4}')
    lab_wait_idle 60 >/dev/null
    t_eq "1b round $round: the step ran on 3 nodes" 3 "$(grep -c '^SHA ' <<<"$out")"
    t_eq "1b round $round: DIR/triton holds the one entry" "big" "$(ls -A "$RDIR/triton" 2>&1)"
    t_contains "1b round $round: the entry is one node's whole file" \
        "$(sha256sum <"$RDIR/triton/big" 2>&1 | cut -d' ' -f1)" "$(grep '^SHA ' <<<"$out" | awk '{print $3}')"
    t_eq "1b round $round: no stage left in DIR" "" "$(find "$RDIR" -name '.ext-cache-*.*' 2>&1)"
    lines=$(slurmd_lines "$jr" | grep "published to $RDIR:")
    t_eq "1b round $round: each node logged its publish, none failed" "3 0" \
        "$(grep -c . <<<"$lines") $(slurmd_lines "$jr" | grep -ci 'error')"
    counts=$(grep -oE '[0-9]+ new entries|[0-9]+ already there|[0-9]+ published first by another node' <<<"$lines" |
        awk '/new/ {p += $1} /already/ {a += $1} /first/ {l += $1} END {print p + 0, a + 0, l + 0}')
    t_note "  round $round (job $jr): published, already there, lost = $counts"
    t_eq "1b round $round: one node renamed it in, the 2 others found it there or lost" "1 2" \
        "$(awk '{print $1, $2 + $3}' <<<"$counts")"
    if [ "$(awk '{print $3}' <<<"$counts")" -ge 1 ]; then
        raced=1
        break
    fi
done
t_eq "1b: a node lost the race to another (publishers overlapped) within 3 rounds" 1 "$raced"
lab_user rm -rf "$W"/race-*

# ==================================================================================
# 2. seeded: loads on every node without compiling
# ==================================================================================
run_ext extc_w job2.log -N3 --ntasks-per-node=1 --ext-cache=local --ext-cache-seed="$PUB"
j2=$(rfield job | head -n1)
t_note "job 2 ($j2): srun -N3 --ext-cache=local --ext-cache-seed=$PUB: ${SECS}s, rc $RC, load() $(rfield t_load | paste -sd' ')s"
t_eq "2: srun exits 0" 0 "$RC"
t_eq "2: every node loaded the seeded op, nothing compiled, and it works" \
    "$(printf 'n%s reused 0 1\n' 1 2 3)" "$(ranks)"
t_eq "2: the compiler wrapper logged nothing" 0 "$(compiles job2.log)"
t_eq "2: ninja had nothing to do on each node" 3 "$(grep -c 'ninja: no work to do' <<<"$OUT")"
t_eq "2: loaded from the step's private directory" \
    "$(printf '%s\n' "$ITEST_BASE/$ITEST_UID/$j2/0/torch_extensions/extc_w/extc_w.so" | sed 'p;p')" "$(rfield so)"
t_eq "2: every node logged its seed" 3 "$(slurmd_lines "$j2" | grep -c 'seeded .* from ')"
t_note "  slurmd n1: $(grep -ah "ext-cache: job $j2 .*seeded" "$(lab_log n1)" | tail -n1 | sed 's/.*ext-cache: //')"
lab_wait_idle 30 >/dev/null

# ==================================================================================
# 3. the admin's seed= pattern
# ==================================================================================
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE seed=$W/pub-%U-%%"
lab_user ln -sfn "$PUB" "$W/pub-$LAB_USER-%"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
srun_user out -N1 --ext-cache=local bash -c 'ls "$TORCH_EXTENSIONS_DIR"'
t_eq "3: seed=$W/pub-%U-%% seeds a job that names no seed" "extc_w" "$out"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
srun_user out -N1 --ext-cache=local --ext-cache-seed="$W/nonexistent" bash -c 'ls "$TORCH_EXTENSIONS_DIR"'
t_contains "3: a seed the user names wins over the admin's, and a missing one is reported" \
    "--ext-cache-seed=$W/nonexistent: not seeded, the step goes on with an empty cache: cannot open it: No such file or directory" "$out"
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"
lab_wait_idle 30 >/dev/null

# ==================================================================================
# 4. another key: refused with a message, and the job builds its own
# ==================================================================================
SLURM_EXT_CACHE_KEY=k2 run_ext extc_w job4.log -N1 -w n2 --ext-cache=local --ext-cache-seed="$PUB"
t_note "job 4: SLURM_EXT_CACHE_KEY=k2 ... --ext-cache-seed=$PUB: ${SECS}s, rc $RC"
t_eq "4: srun exits 0 (the step goes on)" 0 "$RC"
t_contains "4: the user is told why the seed was refused" \
    "--ext-cache-seed=$PUB: not seeded, the step goes on with an empty cache: it was published with SLURM_EXT_CACHE_KEY='k1' (job $j1 on " "$OUT"
t_contains "4: ... naming this job's key" "this job has 'k2'" "$OUT"
t_eq "4: the job built the op itself" "n2 built 2 1" "$(ranks)"
t_check "4: the compiler ran" test "$(compiles job4.log)" -ge 2
lab_wait_idle 30 >/dev/null

# ==================================================================================
# 5. a seed the user cannot read (root's, 0700): refused, as the user, with a message
# ==================================================================================
mkdir -p "$W/rootonly/torch_extensions/secret" && echo secret >"$W/rootonly/torch_extensions/secret/x.so" &&
    chown -R root:root "$W/rootonly" && chmod 0700 "$W/rootonly"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
srun_user out -N1 --ext-cache=local --ext-cache-seed="$W/rootonly" bash -c 'ls -A "$SLURM_EXT_CACHE_DIR"; echo rc=$?'
t_contains "5: refused with a message on the user's terminal" \
    "error: ext-cache: job" "$out"
t_contains "5: ... naming the directory and the reason" \
    "--ext-cache-seed=$W/rootonly: not seeded, the step goes on with an empty cache: cannot open it: Permission denied" "$out"
# a fresh leaf holds only the directory the plugin makes (torch_kernels, docs/cache-dirs.md)
t_eq "5: the step ran with an empty cache (nothing of root's was copied)" "torch_kernels rc=0" \
    "$(grep -v 'ext-cache' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"

# ==================================================================================
# 6. seed_max= exceeded
# ==================================================================================
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE seed_max=4K"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
srun_user out -N1 --ext-cache=local --ext-cache-seed="$PUB" bash -c 'ls -A "$SLURM_EXT_CACHE_DIR"; echo rc=$?'
size=$(du -sb --apparent-size "$PUB/torch_extensions" | cut -f1)
t_contains "6: refused with both sizes named" "not seeded, the step goes on with an empty cache: it holds " "$out"
t_contains "6: ... the limit" "more than the 4.0 KiB (4096 bytes) the admin allows (seed_max=); nothing was copied" "$out"
t_eq "6: nothing was copied (the task's directory holds only torch_kernels)" "torch_kernels rc=0" \
    "$(grep -v 'ext-cache' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE seed_max=0"
srun_user out -N1 --ext-cache=local --ext-cache-seed="$PUB" true
t_contains "6: seed_max=0: seeding disabled, the user is told" "ignored: seeding is disabled on this cluster (seed_max=0)" "$out"
itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"
t_note "  (the seed's torch_extensions: $size bytes)"

# ==================================================================================
# 7. client-side refusals; a seed without a private directory
# ==================================================================================
srun_user out -N1 --ext-cache=local --ext-cache-seed=relative/dir true
t_contains "7: a relative seed is refused by srun" \
    "--ext-cache-seed=relative/dir: not an absolute path: give an absolute directory path" "$out"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
t_check "7: ... before anything was submitted (srun failed, no job ran)" bash -c '! grep -q "job [0-9]" <<<"$0"' "$out"
out=$(SLURM_EXT_CACHE_PUBLISH=rel LAB_PASS_ENV="$PASS SLURM_EXT_CACHE_PUBLISH" lab_user srun -N1 true 2>&1)
t_contains "7: SLURM_EXT_CACHE_PUBLISH=rel is refused by srun" "SLURM_EXT_CACHE_PUBLISH=rel: not an absolute path" "$out"
srun_user out -N1 --ext-cache-seed="$PUB" true
t_contains "7: a seed without a private directory is ignored, and the user told" \
    "--ext-cache-seed=$PUB: ignored: this step has no private cache directory" "$out"

lab_assert_no_drain "no node drained"
t_note "suite ran $(since "$SUITE_T0") s, $(since "$LAB_T0") s of it on the cluster"
rm -rf -- "$W"
itest_end
