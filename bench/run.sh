#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank-ext-cache benchmarks: the one command (`make bench` runs it too).
#
#   bench/run.sh [--quick] [--only launch] [-o FILE]
#
# As root, on a machine set up for the tests (scripts/install-deps.sh test).
# Builds the plugin and bench/rm_bench, then runs:
#   1. step launch overhead on the lab's 3-node Slurm: `srun -N3 -n6 true`
#      with the plugin loaded and --ext-cache=local vs not loaded, at least 81
#      interleaved pairs, the base on the nodes' disk and on tmpfs (and, as a
#      diagnostic, on a journaled ext4 loop image of each node's own); as
#      diagnostics default=off, local with one cache variable, and a stand-in
#      plugin with an option (bench/launch_stub.c), alone and setting as many
#      variables as local does. `--only launch` runs this section alone (a few
#      minutes) and prints its tables (to FILE with -o)
#   2. the removal engine vs GNU `rm -rf` on cache-shaped trees built afresh
#   3. job epilog wall time with a 100000-file job tree vs an empty one; and
#      how long such a tree keeps the node when a local step ends
#   4. slurmstepd RSS and descriptors across 1000 steps with and 1000 without
#      the plugin, interleaved
#   5. warm start (bench/warm.sh): first torch load() seeded vs cold, and the
#      seed copy engine vs `cp -a`
#   6. torch.compile warm start (bench/compile.sh): the first compiled call
#      seeded vs cold, with Inductor's FX graph cache counters (in the
#      forky chroot of tests/releases when the host's torch has no torch.compile)
#   7. the node pool (bench/pool.sh): the first load() in a new job from the
#      pool vs cold vs the user's own home cache without the plugin; the launch
#      with an empty pool vs pool=off; seeding seconds per 100 MB; 7d
#      (bench/end.sh, no lab): a step's end that added nothing to a key of
#      2000/20000/300000 entries, the old way vs the new, tmpfs and ext4; 7e
#      (bench/tier.sh, no lab): the site tier's fetch of a Triton-shaped and a
#      torch-shaped key against `cp -a` of the same generation, and its publish
# and writes FILE (default bench/RESULTS.md): the machine, the raw medians and
# the ratios. Every figure is a ratio (or difference) of two things measured in
# the same run, interleaved, as medians over repeated runs; absolute times are
# only reported, never compared with a threshold. It is not part of the test
# suite (tests/run-all.sh). About 25 minutes; --quick: a smoke run of a few minutes.
#
# Knobs: EXTC_BENCH_WORK scratch and raw data (default /var/lib/ext-cache-bench);
# EXTC_BENCH_BUILD the configured build directory, built there (default the source
# tree, configured in place if it has no Makefile); EXTC_BENCH_BUILT=1 builds nothing;
# EXTC_LAB, EXTC_LAB_CTLD_PORT, EXTC_LAB_SLURMD_PORT the lab cluster (default
# $EXTC_BENCH_WORK/ext-cache-lab on ports 17817-17820, apart from the tests');
# BENCH_LAUNCH_PAIRS (81), BENCH_RM_RUNS (11), BENCH_RM_DISK_SHAPES ("torch"),
# BENCH_EPILOG_RUNS (11), BENCH_EPILOG_FILES (100000), BENCH_STEPEND_RUNS (5),
# BENCH_FOOT_STEPS (1000), WARM_LOAD_RUNS (3), WARM_COPY_RUNS (9), COMPILE_RUNS (5),
# POOL_LOAD_RUNS (3), POOL_LAUNCH_RUNS (48), POOL_SEED_RUNS (5), POOL_SEED_MB (100),
# EXTC_BENCH_RELEASE (forky: the chroot for section 6).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/bench/RESULTS.md
out_given=0
quick=0
only=
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --only) only=${2:-}; shift ;;
        -o) out=$2; out_given=1; shift ;;
        *) echo "usage: bench/run.sh [--quick] [--only launch] [-o FILE]" >&2; exit 2 ;;
    esac
    shift
done
case $only in
    '' | launch) ;;
    *) echo "bench/run.sh: --only takes: launch" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
    echo "bench/run.sh: must run as root (it starts a Slurm lab cluster and mounts tmpfs)" >&2
    exit 1
fi

WORK=${EXTC_BENCH_WORK:-/var/lib/ext-cache-bench}
export EXTC_LAB=${EXTC_LAB:-$WORK/ext-cache-lab}
export EXTC_LAB_CTLD_PORT=${EXTC_LAB_CTLD_PORT:-17817}
export EXTC_LAB_SLURMD_PORT=${EXTC_LAB_SLURMD_PORT:-17818}
if [ "$quick" = 1 ]; then
    : "${BENCH_LAUNCH_PAIRS:=5}" "${BENCH_RM_RUNS:=3}" "${BENCH_EPILOG_RUNS:=3}" "${BENCH_STEPEND_RUNS:=1}" "${BENCH_FOOT_STEPS:=20}"
    : "${WARM_LOAD_RUNS:=1}" "${WARM_COPY_RUNS:=3}" "${COMPILE_RUNS:=1}"
    : "${POOL_LOAD_RUNS:=1}" "${POOL_LAUNCH_RUNS:=3}" "${POOL_SEED_RUNS:=1}"
fi
LAUNCH_PAIRS=${BENCH_LAUNCH_PAIRS:-81}
RM_RUNS=${BENCH_RM_RUNS:-11}
RM_DISK_SHAPES=${BENCH_RM_DISK_SHAPES:-torch}
EPILOG_RUNS=${BENCH_EPILOG_RUNS:-11}
EPILOG_FILES=${BENCH_EPILOG_FILES:-100000}
STEPEND_RUNS=${BENCH_STEPEND_RUNS:-5}
FOOT_STEPS=${BENCH_FOOT_STEPS:-1000}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

DATA=$WORK/data
mkdir -p "$WORK" && rm -rf "$DATA" && mkdir -p "$DATA" || exit 1
T_ALL=$EPOCHREALTIME
say() { printf '[%s] %s\n' "$(date +%T)" "$*"; }
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
section_time() { echo "$1 $((($(now_us) - $2) / 1000000))" >>"$DATA/durations.txt"; }

# ---- build ----------------------------------------------------------------------
build=${EXTC_BENCH_BUILD:-$top}
if [ "${EXTC_BENCH_BUILT:-0}" != 1 ]; then
    say "build"
    (
        # a build directory given is built there: never configure the source tree beside it
        cd "$build" || exit 1
        if [ ! -f Makefile ]; then
            [ "$build" = "$top" ] || { echo "bench: $build has no Makefile (configure it first)"; exit 1; }
            autoreconf -fi && ./configure || exit 1
        fi
        make ext_cache.la bench/rm_bench bench/warm_bench bench/end_bench
    ) >"$DATA/build.log" 2>&1 || { tail -30 "$DATA/build.log"; echo "bench: build failed" >&2; exit 1; }
fi
SO=$build/.libs/ext_cache.so
RMB=$build/bench/rm_bench
STUB=$WORK/launch_stub.so
# shellcheck disable=SC2086 # CPPFLAGS: words
${CC:-cc} ${CPPFLAGS:-} -shared -fPIC -O2 -o "$STUB" "$top/bench/launch_stub.c" 2>>"$DATA/build.log" ||
    { tail -30 "$DATA/build.log"; echo "bench: bench/launch_stub.c does not build" >&2; exit 1; }
if [ ! -f "$SO" ] || [ ! -x "$RMB" ]; then
    echo "bench: $SO or $RMB missing" >&2
    exit 1
fi

# ---- the machine -----------------------------------------------------------------
{
    echo "date: $(date -u '+%F %T UTC')"
    echo "kernel: $(uname -sr)"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "cores: $(nproc)"
    echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
    echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "slurm: $(slurmd -V 2>/dev/null)"
    echo "rm: $(rm --version | head -1)"
    echo "python: $($PY --version 2>&1)"
    echo "compiler: $(${CC:-cc} --version 2>/dev/null | head -1)"
    echo "commit: $(git -C "$top" rev-parse --short HEAD 2>/dev/null)$(git -C "$top" diff --quiet HEAD -- plugin 2>/dev/null || echo ' (plugin/ modified)')"
    echo "work fs: $(findmnt -n -o SOURCE,FSTYPE,OPTIONS --target "$WORK" | head -1)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "params: launch_pairs=$LAUNCH_PAIRS rm=$RM_RUNS rm_disk=\"$RM_DISK_SHAPES\" epilog=$EPILOG_RUNS files=$EPILOG_FILES steps=$FOOT_STEPS"
} >"$DATA/machine.txt"

# ---- the lab cluster -------------------------------------------------------------
# shellcheck source=../tests/integration/lib/cluster.sh
. "$top/tests/integration/lib/cluster.sh"
trap 'lab_stop >/dev/null 2>&1' EXIT
lab_setup >/dev/null || { echo "bench: lab_setup failed" >&2; exit 1; }
lab_install_plugin "$SO" || exit 1
lab_install_plugin "$STUB" launch_stub.so || exit 1
PLUG="required $LAB_PLUGIN base=/var/tmp/ext-cache"
# restart with SlurmdDebug LEVEL and the plugin in plugstack (so slurmd runs its epilog)
cluster() {
    # shellcheck disable=SC2034 # read by lab_start
    LAB_SLURM_CONF_EXTRA="SlurmdDebug=$1"
    lab_stop >/dev/null 2>&1
    if ! lab_set_plugstack "$PLUG" || ! lab_start >/dev/null; then
        lab_tail_logs >&2
        exit 1
    fi
}

# ==================================================================================
# 1. Step launch overhead
# ==================================================================================
say "1. launch overhead: srun -N3 -n6 true, $LAUNCH_PAIRS rounds of 6 variants (disk), of 3 (tmpfs, ext4)"
T=$(now_us)
cluster verbose # the plugin logs how long it took to make and remove each step's directory
n=$(lab_user srun -Q -N3 -n6 --ext-cache=local printenv SLURM_EXT_CACHE_DIR 2>&1 | grep -c '^/var/tmp/ext-cache/')
[ "$n" = 6 ] || { echo "bench: the plugin does not work on the lab ($n of 6 tasks)" >&2; exit 1; }
# how many variables a local step exports: the stand-in plugin sets as many
STUB_SETENV=$(comm -13 <(lab_user srun -Q -N1 -n1 env | cut -d= -f1 | sort) \
    <(lab_user srun -Q -N1 -n1 --ext-cache=local env | cut -d= -f1 | sort) | grep -vc SPANK)
echo "local exports: $STUB_SETENV variables" >>"$DATA/machine.txt"
# quiet: the previous job's epilog is done (idle nodes) and so is the emptier it
# started in the background on each node, so that no run pays for another's
quiet() {
    local ns n p t mine
    lab_wait_idle 60 >/dev/null || return 1
    mine=" "
    for n in $(lab_nodes); do
        mine="$mine$(readlink "/proc/$(cat "$LAB/run/lab-slurmd-$n.pid")/ns/mnt") "
    done
    for ((t = 0; t < 200; t++)); do
        ns=
        for p in $(pgrep -f '^/usr/sbin/slurmstepd spank epilog'); do
            [[ $mine == *" $(readlink "/proc/$p/ns/mnt" 2>/dev/null) "* ]] && ns=1
        done
        [ -z "$ns" ] && return 0
        sleep 0.02
    done
}
# launch_one VARIANT: one timed srun (microseconds) on a quiet cluster
launch_one() {
    local opt=
    quiet || exit 1
    case $1 in
        none) lab_set_plugstack "" ;;
        off) lab_set_plugstack "$PLUG default=off" ;;
        local) lab_set_plugstack "$PLUG"; opt=--ext-cache=local ;;
        local1) lab_set_plugstack "$PLUG vars=TORCH_EXTENSIONS_DIR"; opt=--ext-cache=local ;;
        stub) lab_set_plugstack "required $LAB/lib/launch_stub.so"; opt=--launch-stub=x ;;
        stub-env) lab_set_plugstack "required $LAB/lib/launch_stub.so setenv=$STUB_SETENV"; opt=--launch-stub=x ;;
    esac
    # shellcheck disable=SC2016
    lab_user bash -c 't0=$EPOCHREALTIME; srun -Q -N3 -n6 '"$opt"' true || exit 1
        t1=$EPOCHREALTIME; echo $((${t1/[.,]/} - ${t0/[.,]/}))'
}
# williams V...: the orders of a Williams design, one a line: every variant
# follows every other one equally often (two squares for an odd count)
williams() {
    local -a v=("$@") base=()
    local n=$# i j lo=1 hi=$(($# - 1))
    base=(0)
    for ((j = 1; j < n; j++)); do
        if ((j % 2)); then base+=("$lo"); lo=$((lo + 1)); else base+=("$hi"); hi=$((hi - 1)); fi
    done
    for ((i = 0; i < n; i++)); do
        local -a row=()
        for ((j = 0; j < n; j++)); do row+=("${v[(base[j] + i) % n]}"); done
        echo "${row[*]}"
        ((n % 2)) && for ((j = n - 1; j >= 0; j--)); do printf '%s ' "${row[j]}"; done && echo
    done
}
# launch_rounds FS ROUNDS VARIANT...: the design's orders in turn, one per round
launch_rounds() {
    local fs=$1 rounds=$2 r v us
    shift 2
    local -a orders
    mapfile -t orders < <(williams "$@")
    for v in "$@" "$@"; do launch_one "$v" >/dev/null || exit 1; done # warm-up
    for ((r = 0; r < rounds; r++)); do
        for v in ${orders[r % ${#orders[@]}]}; do
            us=$(launch_one "$v") || { echo "bench: srun failed ($v)" >&2; exit 1; }
            echo "$fs $r $v $us" >>"$DATA/launch.tsv"
        done
    done
}
lab_set_plugstack ""
[ "$(lab_user srun --help 2>&1 | grep -c ext-cache)" = 0 ] || { echo "bench: plugin still loaded" >&2; exit 1; }
echo "fs round variant us" >"$DATA/launch.tsv"
launch_rounds disk "$LAUNCH_PAIRS" none local off local1 stub stub-env
# the same with every node's /var/tmp (the base) on a tmpfs inside its namespace,
# where making and removing directories is cheap
say "1b. launch overhead with the base on tmpfs, $LAUNCH_PAIRS rounds of 3 variants"
for n in $(lab_nodes); do echo "==== bench: tmpfs ====" >>"$(lab_log "$n")"; done
for n in $(lab_nodes); do
    if ! { lab_node "$n" mount -t tmpfs -o mode=1777,size=256m ext-cache-bench /var/tmp &&
           lab_node "$n" mkdir -m 0711 /var/tmp/ext-cache; }; then
        echo "bench: tmpfs on $n" >&2
        exit 1
    fi
done
launch_rounds tmpfs "$LAUNCH_PAIRS" none local stub-env
# and on a journaled ext4 of each node's own (a loop image, mounted over the tmpfs):
# a disk filesystem as nodes usually have it, where this machine's root ext4 has no
# journal, and so makes every new inode pass over those freed in the last minutes
say "1c. launch overhead with the base on a journaled ext4, $LAUNCH_PAIRS rounds of 3 variants"
quiet
for n in $(lab_nodes); do echo "==== bench: ext4 ====" >>"$(lab_log "$n")"; done
for n in $(lab_nodes); do
    img=$WORK/launch-ext4-$n.img
    rm -f "$img"
    if ! { truncate -s 512M "$img" && mkfs.ext4 -q -F -E nodiscard "$img" &&
           lab_node "$n" mount -o loop "$img" /var/tmp && lab_node "$n" chmod 1777 /var/tmp &&
           lab_node "$n" mkdir -m 0711 /var/tmp/ext-cache; }; then
        echo "bench: ext4 on $n" >&2
        exit 1
    fi
    rm -f "$img" # the mount keeps it until the node's namespace goes
done
# the last of the mounts stacked on /var/tmp (the lab's own, the tmpfs, this) is the one seen
echo "ext4 fs: $(lab_node n1 findmnt -n -o SOURCE,FSTYPE,OPTIONS --mountpoint /var/tmp | tail -1)" >>"$DATA/machine.txt"
launch_rounds ext4 "$LAUNCH_PAIRS" none local stub-env
quiet
for n in $(lab_nodes); do cp "$(lab_log "$n")" "$DATA/launch-slurmd-$n.log"; done
section_time launch "$T"
if [ "$only" = launch ]; then
    lab_stop >/dev/null 2>&1
    trap - EXIT
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$DATA/machine.txt"
    if [ "$out_given" = 1 ]; then
        "$PY" "$top/bench/report.py" --launch-only "$DATA" >"$out.new" && mv -f "$out.new" "$out" || exit 1
        say "wrote $out (raw data in $DATA)"
    else
        "$PY" "$top/bench/report.py" --launch-only "$DATA" || exit 1
    fi
    exit 0
fi

# ==================================================================================
# 2. Removal engine vs rm -rf
# ==================================================================================
say "2. removal: engine vs rm -rf, $RM_RUNS runs per shape"
T=$(now_us)
: >"$DATA/rm.txt"
mkdir -p "$WORK/rm-tmpfs" "$WORK/rm-disk"
for shape in triton torch chain; do
    # a private tmpfs, in a mount namespace of its own (gone with it)
    # shellcheck disable=SC2016
    unshare -m --propagation private -- sh -c \
        'mount -t tmpfs -o size=3g,mode=0700 ext-cache-bench "$1" && exec "$2" -r "$3" -R "$(command -v rm)" "$1" "$4"' \
        _ "$WORK/rm-tmpfs" "$RMB" "$RM_RUNS" "$shape" | sed 's/^/tmpfs /' >>"$DATA/rm.txt" ||
        { echo "bench: rm_bench $shape failed" >&2; exit 1; }
done
for shape in $RM_DISK_SHAPES; do
    rm -rf --one-file-system "${WORK:?}/rm-disk/"*
    "$RMB" -r "$RM_RUNS" -R "$(command -v rm)" "$WORK/rm-disk" "$shape" | sed 's/^/disk /' >>"$DATA/rm.txt" ||
        { echo "bench: rm_bench $shape on disk failed" >&2; exit 1; }
done
echo "disk fs: $(findmnt -n -o FSTYPE,OPTIONS --target "$WORK/rm-disk" | head -1)" >>"$DATA/machine.txt"
section_time removal "$T"

# ==================================================================================
# 3. Epilog wall time, big tree vs empty tree
# ==================================================================================
say "3. epilog: $EPILOG_FILES-file job tree vs empty, $EPILOG_RUNS rounds"
T=$(now_us)
cluster debug
# n1's /var/tmp is a tmpfs inside its mount namespace (see RESULTS.md); the base on it
if ! { lab_node n1 mount -t tmpfs -o mode=1777,size=2g ext-cache-bench /var/tmp &&
       lab_node n1 mkdir -m 0711 /var/tmp/ext-cache; }; then
    echo "bench: tmpfs on n1" >&2
    exit 1
fi
cp "$top/bench/mkfiles.py" "$LAB/work/mkfiles.py" && chmod 644 "$LAB/work/mkfiles.py"
trash_empty() { [ -z "$(lab_node n1 find /var/tmp/ext-cache/.trash -mindepth 1 -maxdepth 1 2>/dev/null | head -1)" ]; }
epilog_one() {
    local files=$1 jid i
    # shellcheck disable=SC2016
    jid=$(lab_user srun -Q -N1 -w n1 --ext-cache=job bash -c \
        'echo $SLURM_JOB_ID; mkdir -p "$TRITON_CACHE_DIR" && exec '"$PY $LAB/work/mkfiles.py"' "$TRITON_CACHE_DIR" '"$files") || return 1
    lab_wait_idle 60 >/dev/null || return 1
    for ((i = 0; i < 1200; i++)); do trash_empty && break; sleep 0.1; done
    echo "$jid"
}
for v in big empty; do epilog_one 0 >/dev/null || exit 1; done # warm-up
echo "round variant files job" >"$DATA/epilog-jobs.tsv"
for ((r = 0; r < EPILOG_RUNS; r++)); do
    if ((r % 2)); then order="empty big"; else order="big empty"; fi
    for v in $order; do
        files=0
        [ "$v" = big ] && files=$EPILOG_FILES
        jid=$(epilog_one "$files") || { echo "bench: epilog job failed" >&2; exit 1; }
        echo "$r $v $files $jid" >>"$DATA/epilog-jobs.tsv"
    done
done
# 3b. the same big tree in a local step: removed when the step ends, in slurmstepd
say "3b. step end: $EPILOG_FILES-file tree in a local step vs in a job-mode step, $STEPEND_RUNS rounds"
echo "round variant files job" >"$DATA/stepend-jobs.tsv"
stepend_one() {
    local mode=$1 jid i
    # shellcheck disable=SC2016
    jid=$(lab_user srun -Q -N1 -w n1 --ext-cache="$mode" bash -c \
        'echo $SLURM_JOB_ID; mkdir -p "$TRITON_CACHE_DIR" && exec '"$PY $LAB/work/mkfiles.py"' "$TRITON_CACHE_DIR" '"$EPILOG_FILES") || return 1
    lab_wait_idle 60 >/dev/null || return 1
    for ((i = 0; i < 1200; i++)); do trash_empty && break; sleep 0.1; done
    echo "$jid"
}
for ((r = 0; r < STEPEND_RUNS; r++)); do
    if ((r % 2)); then order="local job"; else order="job local"; fi
    for v in $order; do
        jid=$(stepend_one "$v") || { echo "bench: step-end job failed" >&2; exit 1; }
        echo "$r $v $EPILOG_FILES $jid" >>"$DATA/stepend-jobs.tsv"
    done
done
sleep 1
cp "$(lab_log n1)" "$DATA/slurmd-n1-epilog.log"
section_time epilog "$T"

# ==================================================================================
# 4. Footprint across steps
# ==================================================================================
say "4. footprint: $FOOT_STEPS steps with the plugin and $FOOT_STEPS without, interleaved"
T=$(now_us)
cluster info
FP=$LAB/work/fp
mkdir -p "$FP" && chmod 755 "$FP"
cat >"$FP/task.sh" <<'TASK'
#!/bin/bash
echo "step $SLURM_STEP_ID $PPID ${SLURM_EXT_CACHE_MODE:-none}" >"$FP/req"
read -r _ <"$FP/ack"
TASK
cat >"$FP/job.sh" <<'JOB'
#!/bin/bash
echo "batch $PPID" >"$FP/req"
read -r _ <"$FP/ack"
for ((i = 0; i < TOTAL; i++)); do
    mode=$(cat "$FP/next")
    case $mode in
        plugin) srun -Q -n1 --ext-cache=local "$FP/task.sh" ;;
        none) srun -Q -n1 "$FP/task.sh" ;;
        *) break ;;
    esac || { echo "step $i ($mode) failed"; exit 1; }
done
JOB
chmod 755 "$FP/task.sh" "$FP/job.sh"
rm -f "$FP/next"
"$PY" "$top/bench/footprint.py" "$FP" "$FOOT_STEPS" "$LAB_PLUGSTACK" "$PLUG" \
    "$(cat "$LAB/run/lab-slurmd-n1.pid")" "$DATA/footprint.tsv" &
sampler=$!
for _ in $(seq 100); do [ -s "$FP/next" ] && break; sleep 0.1; done
jid=$(lab_user sbatch --parsable -N1 -n1 -w n1 -o "$LAB/work/fp-%j.out" \
    --export="ALL,FP=$FP,TOTAL=$((2 * FOOT_STEPS))" "$FP/job.sh") || exit 1
state=$(lab_wait_job "$jid" $((FOOT_STEPS + 120)))
if [ "$state" != COMPLETED ]; then
    echo "bench: footprint job $jid: $state: $(cat "$LAB/work/fp-$jid.out" 2>/dev/null)" >&2
    kill "$sampler" 2>/dev/null
    exit 1
fi
wait "$sampler" || { echo "bench: footprint sampler failed" >&2; exit 1; }
section_time footprint "$T"

# ==================================================================================
# 5. Warm start
# ==================================================================================
# shellcheck source=warm.sh
. "$top/bench/warm.sh"

# ==================================================================================
# 6. torch.compile warm start
# ==================================================================================
# shellcheck source=compile.sh
. "$top/bench/compile.sh"

# ==================================================================================
# 7. The node pool
# ==================================================================================
# shellcheck source=pool.sh
. "$top/bench/pool.sh"
# 7d. a step's end that added nothing (no lab: bench/end_bench on its own keys)
# shellcheck source=end.sh
. "$top/bench/end.sh"
# 7e. the site tier's copies (no lab: bench/tier_bench on its own keys)
# shellcheck source=tier.sh
. "$top/bench/tier.sh"

lab_stop >/dev/null 2>&1
trap - EXIT
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$DATA/machine.txt"
section_time total "${T_ALL/[.,]/}"
"$PY" "$top/bench/report.py" "$DATA" >"$out.new" && mv -f "$out.new" "$out" || exit 1
say "wrote $out (raw data in $DATA)"
