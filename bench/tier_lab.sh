#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank-ext-cache benchmark 7e on the lab: a node that never ran the job
# while the site tier holds its builds. Standalone, as root, from a built
# tree: `bench/tier_lab.sh [DATA_DIR]` (default
# /var/lib/ext-cache-bench/tier-lab-data). It sets up and starts the lab of
# tests/integration/lib/cluster.sh (EXTC_LAB and its ports as the caller
# has them, else that file's defaults), with the plugin loaded with
# `pool=node tier=<dir>/%U tier_timeout=60`, the tier a directory of the
# user's that every node sees at the same path. A job on n1 builds the torch
# op of tests/integration/torch (extload.py, as bench/pool.sh runs it) and
# publishes it; a job on n2 copies it in. Then TIER_RUNS (default 3)
# interleaved rounds on n2, one job per mode, the order rotating:
#   cold  SLURM_EXT_CACHE_KEY new each round: an empty pool key, nothing on
#         the tier for it
#   pool  the key of the first jobs, present in n2's node pool
#   tier  the same key, removed from n2's node pool (as root, before the
#         round): the step copies it from the tier
#   home  --ext-cache=off, TORCH_EXTENSIONS_DIR in the user's home, built
#         once before: the world without the plugin
# The cluster settles (no job, no detached end) before every job. Per job:
# the op's load() seconds, the whole srun's, the srun's less the task's own
# (the time to the first task and back), the compiles, and the seconds of
# the copy from the tier the step reported (--ext-cache-verbose), if any. Raw data DATA/tier-lab.tsv; the
# table (medians per mode, the ratios) on stdout and in DATA/tier-lab.md.
set -u

[ "$(id -u)" -eq 0 ] || { echo "bench/tier_lab.sh: must run as root" >&2; exit 1; }
top=$(cd "$(dirname "$0")/.." && pwd)
DATA=${1:-${EXTC_BENCH_WORK:-/var/lib/ext-cache-bench}/tier-lab-data}
PY=/usr/bin/python3
: "${TIER_RUNS:=3}"
mkdir -p "$DATA" || exit 1
(cd "$top" && make ext_cache.la) >"$DATA/build.log" 2>&1 || { tail -20 "$DATA/build.log"; exit 1; }
# shellcheck source=../tests/integration/lib/cluster.sh
. "$top/tests/integration/lib/cluster.sh"
trap 'lab_stop >/dev/null 2>&1' EXIT
# shellcheck source=torchlab.sh
{ lab_setup >/dev/null && lab_install_plugin "$top/.libs/ext_cache.so" &&
    . "$top/bench/torchlab.sh" && bench_torch_lab tier "$top"; } || exit 1
printf '[%s] 7e lab: cold/pool/tier/home on n2, %s rounds\n' "$(date +%T)" "$TIER_RUNS"

uhome=$(getent passwd "$LAB_USER" | cut -d: -f6)
uid=$(id -u "$LAB_USER")
tdir=$uhome/.extc-bench-tier
hcache=$uhome/.extc-bench-home
rm -rf -- "$tdir" "$hcache"
lab_user mkdir -p "$tdir/$LAB_USER" && lab_user chmod 0700 "$tdir/$LAB_USER" || exit 1
lab_set_plugstack "required $LAB_PLUGIN base=/var/tmp/ext-cache pool=node tier=$tdir/%U tier_timeout=60" || exit 1
keypool=/var/tmp/ext-cache/.pool/$uid

# op_job MODE ROUND NODE: one job running the op; prints the tsv line's fields after the round
op_job() {
    local mode=$1 key=bench-tier opt=--ext-cache=local started wall_us res
    local -a extra=()
    case $mode in
        cold) key=bench-tier-cold-$$-$2 ;;
        home) opt=--ext-cache=off extra=(TORCH_EXTENSIONS_DIR="$hcache") ;;
        tier) lab_node n2 rm -rf -- "$keypool/$pkey" "$keypool/$pkey.use" || return 1 ;;
    esac
    lab_wait_settled 300 >/dev/null || return 1
    started=${EPOCHREALTIME/[.,]/}
    res=$(lab_user env MAX_JOBS=1 SLURM_EXT_CACHE_KEY="$key" "${extra[@]}" \
        srun -N1 -w "$3" "$opt" --ext-cache-verbose "$PY" "$LAB/work/torch/extload.py" extc_tier 2>&1) ||
        { echo "bench: tier lab: the $mode job failed: $res" >&2; return 1; }
    wall_us=$((${EPOCHREALTIME/[.,]/} - started))
    grep -q '^RESULT ' <<<"$res" || { echo "bench: tier lab: no RESULT from the $mode job: $res" >&2; return 1; }
    # the load(), the srun, the srun less the task's own time, the compiles, the copy from the tier's seconds
    "$PY" -c '
import re, sys
mode, wall, out = sys.argv[1], int(sys.argv[2]) / 1e6, sys.argv[3]
kv = dict(w.split("=", 1) for w in re.search(r"^RESULT (.*)$", out, re.M).group(1).split())
t = re.search(r"from the site tier \(generation .*\) in ([0-9.]+) s", out)
print(mode, kv["t_load"], "%.3f" % wall, "%.3f" % (wall - float(kv["t_total"])),
      int(kv["compiled"]) + int(kv["linked"]), t.group(1) if t else "-")' "$mode" "$wall_us" "$res"
}

# the builds: on n1 (published to the tier), then n2 takes them from the tier; the home cache
pkey=
op_job pool prime n1 >/dev/null && lab_wait_settled 300 >/dev/null || exit 1
pkey=$(grep -aoE 'site tier: published generation [^ ]+ of key [0-9a-f]+' "$(lab_log n1)" | tail -n 1 | awk '{ print $NF }')
[ -n "$pkey" ] || { echo "bench: tier lab: n1 published nothing ($(lab_log n1))" >&2; exit 1; }
op_job tier prime n2 >"$DATA/tier-lab-prime.txt" && op_job home prime n2 >/dev/null || exit 1
read -r _ _ _ _ compiled fetched <"$DATA/tier-lab-prime.txt"
if [ "$compiled" != 0 ] || [ "$fetched" = - ]; then
    echo "bench: tier lab: n2's first job did not start from the tier ($(cat "$DATA/tier-lab-prime.txt"))" >&2
    exit 1
fi
echo "round mode load_s wall_s to_task_s compiled tier_copy_s" >"$DATA/tier-lab.tsv"
orders=("cold pool tier home" "pool tier home cold" "tier home cold pool" "home cold pool tier")
for ((r = 0; r < TIER_RUNS; r++)); do
    for m in ${orders[r % 4]}; do
        line=$(op_job "$m" "$r" n2) && [ -n "$line" ] || exit 1
        echo "$r $line" | tee -a "$DATA/tier-lab.tsv"
    done
done
grep -ah 'ext-cache: .*\(site tier\|node pool\)' "$(lab_log n2)" >"$DATA/tier-lab-slurmd-n2.log"
lab_stop >/dev/null 2>&1
trap - EXIT
"$PY" - "$DATA/tier-lab.tsv" <<'PY' | tee "$DATA/tier-lab.md"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
med = {}
print("| mode | runs | load() s | srun s | srun less the task's own s | compiles | copy from the tier s |")
print("|---|---|---|---|---|---|---|")
for m in ("cold", "pool", "tier", "home"):
    r = [x for x in rows if x[1] == m]
    med[m] = [statistics.median(float(x[i]) for x in r) for i in (2, 3, 4)]
    print("| %s | %d | %.2f | %.2f | %.2f | %s | %s |" % (m, len(r), med[m][0], med[m][1], med[m][2],
          "/".join(x[5] for x in r), "/".join(x[6] for x in r)))
print()
print("| ratio of medians | load() | srun | srun less the task's own |")
print("|---|---|---|---|")
for a, b in (("cold", "tier"), ("tier", "pool"), ("tier", "home")):
    print("| %s / %s | %s |" % (a, b, " | ".join("%.2f" % (med[a][i] / med[b][i]) if med[b][i] > 0 else "-"
                                              for i in range(3))))
PY
