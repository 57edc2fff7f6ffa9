#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank-ext-cache benchmark 5, warm start (bench/run.sh runs it as its last
# section; it also runs alone: `bench/warm.sh [DATA_DIR]`, as root, which
# starts its own lab cluster and prints its table).
#   5a. first torch load() in a new job, seeded (--ext-cache-seed) vs cold:
#       the JIT op of tests/integration/torch on one lab node, WARM_LOAD_RUNS
#       (default 3) of each, interleaved (the order alternates); the figure is
#       the ratio of the medians of load()'s own time, and of the whole srun.
#   5b. the seed copy engine vs `cp -a` of the same 3000-file, 51 MiB
#       cache-shaped tree (bench/warm_bench), WARM_COPY_RUNS (default 9)
#       interleaved runs, on a private tmpfs and on this machine's disk.
# Raw data: DATA/warm-load.tsv, DATA/warm-copy.txt.
set -u

warm_standalone=0
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    warm_standalone=1
    top=$(cd "$(dirname "$0")/.." && pwd)
    # shellcheck source=torchlab.sh
    . "$top/bench/torchlab.sh"
    bench_alone_lab warm "${1:-}" bench/warm_bench || exit 1
fi
WARM_LOAD_RUNS=${WARM_LOAD_RUNS:-3}
WARM_COPY_RUNS=${WARM_COPY_RUNS:-9}

say "5. warm start: first load() seeded vs cold ($WARM_LOAD_RUNS each), seed copy vs cp -a ($WARM_COPY_RUNS runs)"
T=$(now_us)
# shellcheck source=torchlab.sh
. "$top/bench/torchlab.sh"
bench_torch_lab warm "$top" || exit 1
home=$(getent passwd "$LAB_USER" | cut -d: -f6)
wpub=$home/.extc-bench-warm
rm -rf -- "$wpub"
# warm_one MODE: one job on n1 loading the op; prints "MODE load_s wall_s compiled+linked"
warm_one() {
    local extra=() t0 out
    [ "$1" = seeded ] && extra=(--ext-cache-seed="$wpub")
    [ "$1" = publish ] && extra=(--ext-cache-publish="$wpub")
    lab_wait_idle 60 >/dev/null || return 1
    t0=$(now_us)
    out=$(MAX_JOBS=1 SLURM_EXT_CACHE_KEY=bench LAB_PASS_ENV="MAX_JOBS SLURM_EXT_CACHE_KEY" \
        lab_user srun -N1 -w n1 --ext-cache=local "${extra[@]}" "$PY" "$LAB/work/torch/extload.py" extc_bench 2>&1) ||
        { echo "bench: warm: $1 job failed: $out" >&2; return 1; }
    awk -v m="$1" -v w="$((($(now_us) - t0) / 1000))" '/^RESULT / {
        for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) }
        printf "%s %s %.3f %d\n", m, F["t_load"], w / 1000, F["compiled"] + F["linked"] }' <<<"$out"
}
warm_one publish >/dev/null || exit 1
[ -s "$wpub/torch_extensions/extc_bench/extc_bench.so" ] || { echo "bench: warm: nothing was published" >&2; exit 1; }
echo "round mode load_s wall_s compiled" >"$DATA/warm-load.tsv"
for ((r = 0; r < WARM_LOAD_RUNS; r++)); do
    if ((r % 2)); then order="seeded cold"; else order="cold seeded"; fi
    for m in $order; do
        line=$(warm_one "$m") && [ -n "$line" ] || exit 1
        echo "$r $line" >>"$DATA/warm-load.tsv"
    done
done
lab_wait_idle 60 >/dev/null
grep -ah 'ext-cache: .* seeded ' "$(lab_log n1)" | sed 's/.*ext-cache: //' >"$DATA/warm-seed-log.txt"
rm -rf -- "$wpub"
lab_stop >/dev/null 2>&1

mkdir -p "$WORK/warm-tmpfs" "$WORK/warm-disk"
: >"$DATA/warm-copy.txt"
# shellcheck disable=SC2016
unshare -m --propagation private -- sh -c \
    'mount -t tmpfs -o size=1g,mode=0700 ext-cache-bench "$1" && exec "$2" -r "$3" "$1"' \
    _ "$WORK/warm-tmpfs" "${build:-$top}/bench/warm_bench" "$WARM_COPY_RUNS" | sed 's/^/tmpfs /' >>"$DATA/warm-copy.txt" ||
    { echo "bench: warm_bench on tmpfs failed" >&2; exit 1; }
"${build:-$top}/bench/warm_bench" -r "$WARM_COPY_RUNS" "$WORK/warm-disk" | sed 's/^/disk /' >>"$DATA/warm-copy.txt" ||
    { echo "bench: warm_bench on disk failed" >&2; exit 1; }
rm -rf --one-file-system "${WORK:?}/warm-disk"
section_time warm "$T"

if [ "$warm_standalone" = 1 ]; then
    lab_stop >/dev/null 2>&1
    trap - EXIT
    "$PY" "$top/bench/report.py" --warm-only "$DATA"
fi
