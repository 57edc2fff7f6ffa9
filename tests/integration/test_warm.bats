#!/usr/bin/env bats
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
# ones fail the suite, they are never skipped. Tests 2-6 use what test 1
# published. Two rounds of builds: ~3 min.

load lib/itest

PY=/usr/bin/python3
RUN_TIMEOUT=${EXTC_RUN_TIMEOUT:-420}
HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
# Other labs may use the same user: everything of this suite lives in one directory of its own.
W=$HOME_DIR/.extc-warm-$(basename "$LAB")
PUB=$W/pub-k1
export CXX=$LAB/work/bin/cxx MAX_JOBS=1 SLURM_EXT_CACHE_KEY=k1
PASS="MAX_JOBS CXX CXX_LOG SLURM_EXT_CACHE_KEY"

setup_file() {
    itest_setup_file
    lab_user "$PY" -c 'import torch.utils.cpp_extension' ||
        fail "$PY does not import torch.utils.cpp_extension: install python3-torch libtorch-dev python3-dev (scripts/install-deps.sh test)"
    lab_user bash -c 'command -v ninja' >/dev/null || fail "no ninja on the user's PATH (ninja-build)"
    lab_user bash -c 'command -v c++' >/dev/null || fail "no c++ on the user's PATH (g++)"
    # sources and the compiler wrapper in $LAB/work (every node sees it), root-owned
    rm -rf "$LAB/work/torch" "$LAB/work/bin"
    if ! { cp -r "$ITEST_DIR/torch" "$LAB/work/torch" && chmod -R a+rX,go-w "$LAB/work/torch" &&
        mkdir -p "$LAB/work/bin"; }; then
        fail "cannot copy the torch helpers to $LAB/work"
    fi
    # torch writes $CXX into build.ninja: the wrapper's path must be the same in
    # every job, or ninja would rebuild for the changed command line. It logs
    # compiles and links (they have -o), not torch's `$CXX -dumpversion`.
    cat >"$LAB/work/bin/cxx" <<'SH'
#!/bin/sh
case " $* " in *" -o "*) echo "${SLURMD_NODENAME:-?} ${SLURM_JOB_ID:-?} $*" >>"$CXX_LOG" ;; esac
exec c++ "$@"
SH
    chmod 0755 "$LAB/work/bin/cxx"
    rm -rf -- "$W"
    lab_user mkdir -p "$W/log" || fail "cannot make $W"
    itest_cluster "base=$ITEST_BASE"
}

teardown_file() {
    rm -rf -- "$W"
    itest_teardown_file
}

setup() { itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"; }

# run_ext NAME LOG SRUN-ARGS...: `srun SRUN-ARGS python3 extload.py NAME` as the
# user, compiles logged to $W/log/LOG. Sets OUT, RC, RES (RESULT lines).
run_ext() {
    local name=$1
    export CXX_LOG=$W/log/$2
    shift 2
    RC=0
    OUT=$(LAB_PASS_ENV=$PASS lab_user timeout -k 10 "$RUN_TIMEOUT" \
        srun "$@" "$PY" "$LAB/work/torch/extload.py" "$name" 2>&1) || RC=$?
    RES=$(grep '^RESULT ' <<<"$OUT" || true)
}
# shellcheck disable=SC2016  # an awk program: $i is awk's field
KV='function kv(  i, k) { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }'
rfield() { awk "$KV"' { kv(); print F["'"$1"'"] }' <<<"$RES"; }
# per rank: node role compiled+linked version-ok
ranks() { awk "$KV"' { kv(); print F["node"], F["role"], F["compiled"] + F["linked"], F["ok"] }' <<<"$RES" | sort; }
compiles() { if [ -f "$W/log/$1" ]; then grep -c . "$W/log/$1"; else echo 0; fi; }
# srun_user SRUN-ARGS...: srun as the user (key k1 unless changed); output in $out
# (its exit status is not the test's: the output says what happened)
srun_user() { out=$(LAB_PASS_ENV=$PASS lab_user timeout -k 10 120 srun "$@" 2>&1) || true; }
slurmd_lines() { grep -ah "ext-cache: job $1 " "$LAB"/log/slurmd-n*.log; }
# every_node_published JOB DIR: each node has logged its publish of JOB to DIR. The
# publish runs in the step's detached end, which lab_wait_idle does not wait for
every_node_published() { [ "$(slurmd_lines "$1" | grep -c "published to $2:")" -ge "$(lab_nodes | wc -w)" ]; }
# contains TEXT SUBSTRING
contains() { [[ $1 == *"$2"* ]] || fail "no '$2' in:"$'\n'"$1"; }

@test "1: three nodes build, publish the same entry at once; DIR ends with one complete entry" {
    local j1 pubs others n
    run_ext extc_w job1.log -N3 --ntasks-per-node=1 --ext-cache=local --ext-cache-publish="$PUB"
    j1=$(rfield job | head -n1)
    echo "# job 1 ($j1): rc $RC, $(compiles job1.log) compiler runs" >&3
    assert_equal "rc $RC" "rc 0"
    # every node built the op (compiled and linked) and it works
    assert_equal "$(ranks)" "$(printf 'n%s built 2 1\n' 1 2 3)"
    # the wrapper logged the compiles (so an empty log later means none ran)
    [ "$(compiles job1.log)" -ge 6 ] || fail "only $(compiles job1.log) compiler runs logged"
    lab_wait_settled 120 >/dev/null
    itest_poll 120 every_node_published "$j1" "$PUB" || echo "# not every node logged its publish in 120 s" >&3
    assert_equal "$(ls -A "$PUB/torch_extensions" 2>&1)" "extc_w"
    [ -s "$PUB/torch_extensions/extc_w/extc_w.so" ] || fail "the entry has no .so: $(ls -la "$PUB/torch_extensions/extc_w" 2>&1)"
    # no lock, no stage, no temporary manifest anywhere in DIR; all the user's
    assert_equal "$(find "$PUB" \( -name lock -o -name '.ext-cache-stage.*' -o -name '.ext-cache-manifest.*' \) 2>&1)" ""
    assert_equal "$(find "$PUB" ! -user "$LAB_USER" 2>&1)" ""
    # the manifest names the key, the publishing job, the ISA
    contains "$(cat "$PUB/.ext-cache-manifest" 2>&1)" "key=k1"
    contains "$(cat "$PUB/.ext-cache-manifest" 2>&1)" "job=$j1"
    grep -qE '^isa=[0-9a-f]{16}$' "$PUB/.ext-cache-manifest" || fail "no isa= line: $(cat "$PUB/.ext-cache-manifest")"
    # 1 entry renamed into place, the 2 others found it there or lost the race
    pubs=$(slurmd_lines "$j1" | grep -o 'published to [^:]*: [0-9]* new entries' | awk '{s += $(NF-2)} END {print s + 0}')
    others=$(slurmd_lines "$j1" | grep -oE '[0-9]+ already there, [0-9]+ published first by another node' |
        awk '{s += $1 + $4} END {print s + 0}')
    for n in $(lab_nodes); do
        echo "#   slurmd $n: $(grep -ah "ext-cache: job $j1 .*published" "$(lab_log "$n")" | tail -n1 | sed 's/.*ext-cache: //')" >&3
    done
    assert_equal "$pubs $others" "1 2"
    assert_equal "$(slurmd_lines "$j1" | grep -i 'error')" ""
    # the published op imports and works as it is (a load() would write into DIR)
    assert_equal "$(lab_user "$PY" -c '
import sys, importlib.util as u, torch
s = u.spec_from_file_location("extc_w", sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m)
print(m.version())' "$PUB/torch_extensions/extc_w/extc_w.so" 2>&1 | tail -n1)" 1
    itest_save j1 "$j1"
}

@test "1b: three nodes racing to publish one large entry leave DIR one node's whole copy" {
    local raced=0 round rdir jr lines counts
    # the 3 nodes' steps end at one instant and publish a 96 MiB entry of the
    # same name with different contents; copying it takes long enough that
    # every node starts before any finishes. Up to 3 rounds until a node
    # reports it lost; every round must leave DIR consistent.
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
    for round in 1 2 3; do
        rdir=$W/race-$round
        lab_user mkdir -p "$rdir.bar"
        srun_user -N3 --ntasks-per-node=1 --ext-cache=local --ext-cache-publish="$rdir" "$LAB/work/race.sh" "$rdir.bar"
        jr=$(grep '^SHA ' <<<"$out" | head -n1 | awk '{print $4}')
        lab_wait_settled 120 >/dev/null
        itest_poll 120 every_node_published "$jr" "$rdir" || true # the assertions below tell
        assert_equal "round $round: $(grep -c '^SHA ' <<<"$out") nodes ran" "round $round: 3 nodes ran"
        assert_equal "$(ls -A "$rdir/triton" 2>&1)" "big"
        # the entry is one node's whole file; no stage left in DIR
        contains "$(grep '^SHA ' <<<"$out" | awk '{print $3}')" "$(sha256sum <"$rdir/triton/big" 2>&1 | cut -d' ' -f1)"
        assert_equal "$(find "$rdir" -name '.ext-cache-*.*' 2>&1)" ""
        # each node logged its publish, none failed
        lines=$(slurmd_lines "$jr" | grep "published to $rdir:")
        assert_equal "round $round: $(grep -c . <<<"$lines") publish lines, $(slurmd_lines "$jr" | grep -ci 'error') errors" \
            "round $round: 3 publish lines, 0 errors"
        counts=$(grep -oE '[0-9]+ new entries|[0-9]+ already there|[0-9]+ published first by another node' <<<"$lines" |
            awk '/new/ {p += $1} /already/ {a += $1} /first/ {l += $1} END {print p + 0, a + 0, l + 0}')
        echo "#   round $round (job $jr): published, already there, lost = $counts" >&3
        # one node renamed it in, the 2 others found it there or lost
        assert_equal "round $round: $(awk '{print $1, $2 + $3}' <<<"$counts")" "round $round: 1 2"
        if [ "$(awk '{print $3}' <<<"$counts")" -ge 1 ]; then
            raced=1
            break
        fi
    done
    lab_user rm -rf "$W"/race-*
    # a node lost the race to another (publishers overlapped) within 3 rounds
    assert_equal "lost a race: $raced" "lost a race: 1"
}

@test "2: a job seeded from DIR loads the op on every node without compiling" {
    local j2
    itest_load j1 >/dev/null
    run_ext extc_w job2.log -N3 --ntasks-per-node=1 --ext-cache=local --ext-cache-seed="$PUB"
    j2=$(rfield job | head -n1)
    echo "# job 2 ($j2): rc $RC, load() $(rfield t_load | paste -sd' ')s" >&3
    assert_equal "rc $RC" "rc 0"
    assert_equal "$(ranks)" "$(printf 'n%s reused 0 1\n' 1 2 3)"
    assert_equal "compiler runs: $(compiles job2.log)" "compiler runs: 0"
    assert_equal "ninja idle on $(grep -c 'ninja: no work to do' <<<"$OUT") nodes" "ninja idle on 3 nodes"
    # loaded from the step's private directory
    assert_equal "$(rfield so)" "$(printf '%s\n' "$ITEST_BASE/$ITEST_UID/$j2/0/torch_extensions/extc_w/extc_w.so" | sed 'p;p')"
    assert_equal "seed lines: $(slurmd_lines "$j2" | grep -c 'seeded .* from ')" "seed lines: 3"
    lab_wait_settled 120 >/dev/null
}

@test "3: the admin's seed= pattern seeds a job that names no seed; the user's own seed wins" {
    itest_load j1 >/dev/null
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE seed=$W/pub-%U-%%"
    lab_user ln -sfn "$PUB" "$W/pub-$LAB_USER-%"
    # shellcheck disable=SC2016  # expanded by the job's shell
    srun_user -N1 --ext-cache=local bash -c 'ls "$TORCH_EXTENSIONS_DIR"'
    assert_equal "$out" "extc_w"
    # shellcheck disable=SC2016  # expanded by the job's shell
    srun_user -N1 --ext-cache=local --ext-cache-seed="$W/nonexistent" bash -c 'ls "$TORCH_EXTENSIONS_DIR"'
    contains "$out" "--ext-cache-seed=$W/nonexistent: not seeded, the step goes on with an empty cache: cannot open it: No such file or directory"
    lab_wait_settled 120 >/dev/null
}

@test "4: a job with another SLURM_EXT_CACHE_KEY is refused the seed, told why, and builds" {
    local j1
    j1=$(itest_load j1)
    SLURM_EXT_CACHE_KEY=k2 run_ext extc_w job4.log -N1 -w n2 --ext-cache=local --ext-cache-seed="$PUB"
    assert_equal "rc $RC" "rc 0"
    contains "$OUT" "--ext-cache-seed=$PUB: not seeded, the step goes on with an empty cache: it was published with SLURM_EXT_CACHE_KEY='k1' (job $j1 on "
    contains "$OUT" "this job has 'k2'"
    assert_equal "$(ranks)" "n2 built 2 1"
    [ "$(compiles job4.log)" -ge 2 ] || fail "the compiler ran $(compiles job4.log) times"
    lab_wait_settled 120 >/dev/null
}

@test "5: a seed the user cannot read is refused, as the user, with a message" {
    mkdir -p "$W/rootonly/torch_extensions/secret" && echo secret >"$W/rootonly/torch_extensions/secret/x.so" &&
        chown -R root:root "$W/rootonly" && chmod 0700 "$W/rootonly"
    # shellcheck disable=SC2016  # expanded by the job's shell
    srun_user -N1 --ext-cache=local --ext-cache-seed="$W/rootonly" bash -c 'ls -A "$SLURM_EXT_CACHE_DIR"; echo rc=$?'
    contains "$out" "error: ext-cache: job"
    contains "$out" "--ext-cache-seed=$W/rootonly: not seeded, the step goes on with an empty cache: cannot open it: Permission denied"
    # an empty cache: a fresh leaf holds only torch_kernels (docs/cache-dirs.md) and the part for
    # containers (docs/containers.md)
    assert_equal "$(grep -v 'ext-cache' <<<"$out" | tr '\n' ' ' | sed 's/ $//')" "container torch_kernels rc=0"
}

@test "6: seed_max= exceeded: refused naming both sizes, nothing copied; seed_max=0 disables seeding" {
    itest_load j1 >/dev/null
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE seed_max=4K"
    # shellcheck disable=SC2016  # expanded by the job's shell
    srun_user -N1 --ext-cache=local --ext-cache-seed="$PUB" bash -c 'ls -A "$SLURM_EXT_CACHE_DIR"; echo rc=$?'
    echo "#   (the seed's torch_extensions: $(du -sb --apparent-size "$PUB/torch_extensions" | cut -f1) bytes)" >&3
    contains "$out" "not seeded, the step goes on with an empty cache: it holds "
    contains "$out" "more than the 4.0 KiB (4096 bytes) the admin allows (seed_max=); nothing was copied"
    assert_equal "$(grep -v 'ext-cache' <<<"$out" | tr '\n' ' ' | sed 's/ $//')" "container torch_kernels rc=0"
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE seed_max=0"
    srun_user -N1 --ext-cache=local --ext-cache-seed="$PUB" true
    contains "$out" "ignored: seeding is disabled on this cluster (seed_max=0)"
}

@test "7: bad values are refused by srun before anything is submitted; a seed without a cache is ignored" {
    srun_user -N1 --ext-cache=local --ext-cache-seed=relative/dir true
    contains "$out" "--ext-cache-seed=relative/dir: not an absolute path: give an absolute directory path"
    # before anything was submitted (srun failed, no job ran)
    if grep -q "job [0-9]" <<<"$out"; then fail "a job ran: $out"; fi
    out=$(SLURM_EXT_CACHE_PUBLISH=rel LAB_PASS_ENV="$PASS SLURM_EXT_CACHE_PUBLISH" lab_user srun -N1 true 2>&1) || true
    contains "$out" "SLURM_EXT_CACHE_PUBLISH=rel: not an absolute path"
    srun_user -N1 --ext-cache-seed="$PUB" true
    contains "$out" "--ext-cache-seed=$PUB: ignored: this step has no private cache directory"
    itest_no_drain
}
