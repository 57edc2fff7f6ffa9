#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank-ext-cache benchmark 7, the node pool (bench/run.sh runs it after
# section 6; it also runs alone: `bench/pool.sh [DATA_DIR]`, as root, which
# starts its own lab cluster and prints its table). On lab node n1, with
# the plugin loaded with pool=node, side by side, interleaved:
#   7a. the first torch load() of the JIT op of tests/integration/torch in a
#       new job, POOL_LOAD_RUNS (default 3) of each: "pool" (the same
#       environment ran before on the node), "cold" (a key never seen: an
#       empty private directory) and "home" (--ext-cache=off and
#       TORCH_EXTENSIONS_DIR in the user's home, built once before: the
#       world without the plugin, a persistent shared cache)
#   7b. step launch with an empty pool: `srun -N3 -n6 --ext-cache=local
#       true` with pool=node against pool=off, POOL_LAUNCH_RUNS (default
#       48) rounds of three: the key derived from the environment (the
#       default; `true` builds nothing, so it stays empty) and a key never
#       seen (its directory made in the step)
#   7c. a warm start from the pool by rename: a key holding 2000 and 20000
#       empty files in 20 Triton-like directories; the wall time of `srun -N1
#       true` seeded from that key against one of a key never seen (a cold
#       start), POOL_SEED_RUNS (default 7) interleaved rounds each, with n1's
#       base on the lab's disk and on a tmpfs; the plugin's own "node pool:
#       seeded ... took N entries by rename in S s" lines say where the time
#       went
# Raw data: DATA/pool-load.tsv, DATA/pool-launch.tsv, DATA/pool-seed.tsv and
# DATA/pool-seed.txt (the log lines);
# report.py makes the table (`report.py --pool-only DATA` when run alone).
set -u

# alone, not sourced by bench/run.sh: a lab and run.sh's helpers of its own
pool_standalone=0
# shellcheck source=torchlab.sh
[ "${BASH_SOURCE[0]}" != "$0" ] || { pool_standalone=1 top=$(cd "$(dirname "$0")/.." && pwd) &&
    . "$top/bench/torchlab.sh" && bench_alone_lab pool "${1:-}"; } || exit 1
T=$(now_us)
: "${POOL_LOAD_RUNS:=3}" "${POOL_LAUNCH_RUNS:=48}" "${POOL_SEED_RUNS:=7}"
say "7. node pool: first load() pool/cold/home ($POOL_LOAD_RUNS each), launch with an empty pool ($POOL_LAUNCH_RUNS), warm start of 2000 and 20000 files ($POOL_SEED_RUNS)"
# shellcheck source=torchlab.sh
. "$top/bench/torchlab.sh" && bench_torch_lab pool "$top" || exit 1
POOL_PLUG="required $LAB_PLUGIN base=/var/tmp/ext-cache pool=node"
lab_set_plugstack "$POOL_PLUG" || exit 1
hcache=$(getent passwd "$LAB_USER" | cut -d: -f6)/.extc-bench-home
rm -rf -- "$hcache"
# pool_load MODE ROUND: one job on n1 loading the op; prints "MODE load_s wall_s compiled+linked"
# (it runs in a subshell: what makes a key new is the round it is given)
pool_load() {
    local env=(MAX_JOBS=1) opt=--ext-cache=local t0 out
    case $1 in
        pool) env+=(SLURM_EXT_CACHE_KEY=bench-pool) ;;
        cold) env+=(SLURM_EXT_CACHE_KEY="bench-cold-$$-$2") ;;
        home) env+=(TORCH_EXTENSIONS_DIR="$hcache"); opt=--ext-cache=off ;;
    esac
    lab_wait_idle 60 >/dev/null || return 1
    t0=$(now_us)
    out=$(lab_user env "${env[@]}" srun -N1 -w n1 "$opt" "$PY" "$LAB/work/torch/extload.py" extc_bench 2>&1) ||
        { echo "bench: pool: $1 job failed: $out" >&2; return 1; }
    awk -v m="$1" -v w="$((($(now_us) - t0) / 1000))" '/^RESULT / {
        for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) }
        printf "%s %s %.3f %d\n", m, F["t_load"], w / 1000, F["compiled"] + F["linked"] }' <<<"$out"
}
# prime: the pool's key and the home cache each hold one build
pool_load pool prime >/dev/null && pool_load home prime >/dev/null || exit 1
echo "round mode load_s wall_s compiled" >"$DATA/pool-load.tsv"
orders=("pool cold home" "cold home pool" "home pool cold")
for ((r = 0; r < POOL_LOAD_RUNS; r++)); do
    for m in ${orders[r % 3]}; do
        line=$(pool_load "$m" "$r") && [ -n "$line" ] || exit 1
        echo "$r $line" >>"$DATA/pool-load.tsv"
    done
done
rm -rf -- "$hcache"

# 7b: the launch with an empty pool against pool=off. "derived": no
# SLURM_EXT_CACHE_KEY, so the key comes from the environment (a fingerprint
# child of the user's at step start, what most users get), and `true` builds
# nothing, so that key stays empty; "newkey": a key never seen (ROUND), so
# its directory and record are made in the step
pool_launch() {
    local key=
    lab_wait_idle 60 >/dev/null || return 1
    case $1 in
        off) lab_set_plugstack "required $LAB_PLUGIN base=/var/tmp/ext-cache pool=off" ;;
        derived) lab_set_plugstack "$POOL_PLUG" ;;
        newkey) lab_set_plugstack "$POOL_PLUG" && key="bench-empty-$$-$2" ;;
    esac
    # shellcheck disable=SC2016 # expanded by the user's shell
    lab_user env ${key:+SLURM_EXT_CACHE_KEY=$key} bash -c 't0=$EPOCHREALTIME
        srun -Q -N3 -n6 --ext-cache=local true || exit 1
        t1=$EPOCHREALTIME; echo $((${t1/[.,]/} - ${t0/[.,]/}))'
}
echo "round variant us" >"$DATA/pool-launch.tsv"
for v in off derived newkey; do pool_launch "$v" warm >/dev/null || exit 1; done # warm-up
# the derived key must really be derived and held, or 7b measures nothing
grep -aq 'node pool: key [0-9a-z]* (derived from the environment)' "$(lab_log n1)" ||
    { echo "bench: pool: no step derived a key from the environment (see $(lab_log n1))" >&2; exit 1; }
orders=("off derived newkey" "derived newkey off" "newkey off derived")
for ((r = 0; r < POOL_LAUNCH_RUNS; r++)); do
    for v in ${orders[r % 3]}; do
        us=$(pool_launch "$v" "$r") || { echo "bench: pool: srun failed ($v)" >&2; exit 1; }
        echo "$r $v $us" >>"$DATA/pool-launch.tsv"
    done
done

# 7c: a warm start by rename, seeded against cold, 2000 and 20000 files, on
# the lab's disk and on a tmpfs
lab_set_plugstack "$POOL_PLUG"
echo "fs files mode round us" >"$DATA/pool-seed.tsv"
: >"$DATA/pool-seed.txt"
# moves_logged: how many times n1's pool took builds back (one per step end)
moves_logged() { grep -ac 'node pool: moved ' "$(lab_log n1)"; }
# seed_step FS FILES MODE ROUND KEY: one `srun true`, timed; then wait until
# its end has moved the key's builds back (a later step must find them)
seed_step() {
    local t0 us moves
    lab_wait_idle 60 >/dev/null
    moves=$(moves_logged)
    t0=$(now_us)
    lab_user env SLURM_EXT_CACHE_KEY="$5" srun -N1 -w n1 --ext-cache=local true ||
        { echo "bench: pool: $3 step failed" >&2; return 1; }
    us=$(($(now_us) - t0))
    echo "$1 $2 $3 $4 $us" >>"$DATA/pool-seed.tsv"
    for _ in $(seq 600); do [ "$(moves_logged)" -gt "$moves" ] && return 0; sleep 0.1; done
    echo "bench: pool: the $3 step's end never moved its builds back" >&2
    return 1
}
pool_seed_runs() {
    local files key fstype r logged
    logged=$(wc -l <"$(lab_log n1)")
    fstype=$(lab_node n1 findmnt -n -o FSTYPE --target /var/tmp/ext-cache | tail -n 1 | tr -cd 'a-z0-9_-')
    for files in 2000 20000; do
        key="bench-seed-$1-$files"
        lab_wait_idle 60 >/dev/null
        # shellcheck disable=SC2016 # expanded by the job's shell
        lab_user env SLURM_EXT_CACHE_KEY="$key" N="$((files / 20))" srun -N1 -w n1 --ext-cache=local bash -c \
            'for d in $(seq 20); do mkdir -p "$TRITON_CACHE_DIR/k$d" && (cd "$TRITON_CACHE_DIR/k$d" && seq "$N" | xargs touch); done' ||
            { echo "bench: pool: filling the seed key failed" >&2; return 1; }
        for ((r = 0; r < POOL_SEED_RUNS; r++)); do
            if ((r % 2)); then
                seed_step "$fstype" "$files" cold "$r" "bench-cold-$1-$files-$r" &&
                    seed_step "$fstype" "$files" seeded "$r" "$key" || return 1
            else
                seed_step "$fstype" "$files" seeded "$r" "$key" &&
                    seed_step "$fstype" "$files" cold "$r" "bench-cold-$1-$files-$r" || return 1
            fi
        done
    done
    tail -n +"$((logged + 1))" "$(lab_log n1)" | grep -aE 'node pool: seeded .* took [0-9]* entr(y|ies) by rename' |
        awk -v fs="${fstype:-unknown}" '{ sub(/.*ext-cache: /, ""); print fs, $0 }' >>"$DATA/pool-seed.txt"
}
pool_seed_runs disk || exit 1
if ! { lab_node n1 mount -t tmpfs -o mode=1777,size=1g ext-cache-bench /var/tmp &&
       lab_node n1 mkdir -m 0711 /var/tmp/ext-cache; }; then
    echo "bench: pool: tmpfs on n1" >&2
    exit 1
fi
pool_seed_runs tmpfs || exit 1
grep -ah 'ext-cache: .*node pool' "$(lab_log n1)" >"$DATA/pool-slurmd-n1.log"
lab_stop >/dev/null 2>&1

section_time pool "$T"

if [ "$pool_standalone" = 1 ]; then
    trap - EXIT
    "$PY" "$top/bench/report.py" --pool-only "$DATA"
fi
