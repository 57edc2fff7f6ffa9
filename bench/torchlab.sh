# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# For the warm start benchmarks (bench/warm.sh, bench/compile.sh,
# bench/pool.sh; bench_alone_nolab for bench/end.sh and bench/tier.sh):
#   bench_alone NAME DATA      run alone (not from bench/run.sh): root
#                          checked, WORK, DATA (the argument or
#                          $WORK/NAME-data), PY, the lab's directory and
#                          ports as bench/run.sh has them, and run.sh's say,
#                          now_us and section_time
#   bench_in_tmpfs DIR INODES CMD...   CMD in a mount namespace of its own,
#                          with a 3 GB tmpfs of INODES inodes on DIR
#   bench_ext4_image IMG INODES SECTION  a 3 GB journaled ext4 image of
#                          INODES inodes, its features noted in
#                          DATA/machine.txt for SECTION
#   bench_in_ext4 IMG DIR CMD...  CMD in a mount namespace of its own, IMG
#                          mounted on DIR
# and after tests/integration/lib/cluster.sh's lab_setup:
#   bench_torch_lab WHAT TOP   restart the lab with the plugin loaded and
#                          slurmd verbose (the plugin logs its seeds), and give
#                          it a copy of TOP/tests/integration/torch in
#                          $LAB/work/torch; on failure says so, naming WHAT,
#                          and returns 1
bench_torch_lab() {
    lab_stop >/dev/null 2>&1
    # shellcheck disable=SC2034 # read by lab_start
    LAB_SLURM_CONF_EXTRA="SlurmdDebug=verbose"
    if ! { lab_set_plugstack "required $LAB_PLUGIN base=/var/tmp/ext-cache" && lab_start >/dev/null; }; then
        lab_tail_logs >&2
        echo "bench: $1: cluster start failed" >&2
        return 1
    fi
    rm -rf "$LAB/work/torch" && cp -r "$2/tests/integration/torch" "$LAB/work/torch" &&
        chmod -R a+rX,go-w "$LAB/work/torch"
}

bench_in_tmpfs() {
    local dir=$1 inodes=$2
    shift 2
    # shellcheck disable=SC2016 # expanded by the inner shell
    unshare -m --propagation private -- sh -c \
        'mount -t tmpfs -o "size=3g,nr_inodes=$1,mode=0711" ext-cache-bench "$2" && shift 2 && exec "$@"' \
        _ "$inodes" "$dir" "$@"
}

bench_ext4_image() {
    rm -f "$1"
    { truncate -s 3G "$1" && mkfs.ext4 -q -F -E nodiscard -N "$2" "$1"; } || return 1
    echo "ext4 for $3: a loop image, $(dumpe2fs -h "$1" 2>/dev/null | grep -i '^Filesystem features' | tr -s ' ')" >>"$DATA/machine.txt"
}

bench_in_ext4() {
    local img=$1 dir=$2
    shift 2
    # shellcheck disable=SC2016 # expanded by the inner shell
    unshare -m --propagation private -- sh -c \
        'mount -o loop "$1" "$2" && chmod 0711 "$2" && shift 2 && exec "$@"' _ "$img" "$dir" "$@"
}

# run.sh's say, now_us and section_time (DATA/durations.txt), for a benchmark run alone
# shellcheck disable=SC2317
bench_alone_helpers() {
    say() { printf '[%s] %s\n' "$(date +%T)" "$*"; }
    now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
    section_time() { echo "$1 $((($(now_us) - $2) / 1000000))" >>"$DATA/durations.txt"; }
}

# bench_nolab_entry ARGV0 SOURCE [WORK]: a benchmark without a lab, sourced
# by bench/run.sh (SOURCE is not ARGV0: nothing to do) or run alone (top
# from SOURCE's folder, then bench_alone_nolab WORK)
# shellcheck disable=SC2034
bench_nolab_entry() {
    [ "$1" = "$2" ] || return 0
    top=$(cd "$(dirname "$2")/.." && pwd) && bench_alone_nolab "${3:-}"
}

# bench_alone_nolab [WORK]: a benchmark without a lab (bench/end.sh,
# bench/tier.sh) run alone: build (EXTC_BENCH_BUILD, else the caller's top),
# WORK (the argument, default /var/lib/ext-cache-bench), DATA ($WORK/data,
# made) and bench_alone_helpers
# shellcheck disable=SC2034,SC2154
bench_alone_nolab() {
    build=${EXTC_BENCH_BUILD:-$top}
    WORK=${1:-/var/lib/ext-cache-bench}
    DATA=$WORK/data
    mkdir -p "$DATA" || return 1
    bench_alone_helpers
}

# (say, now_us, section_time and PY are for the caller)
# shellcheck disable=SC2034
bench_alone() {
    WORK=${EXTC_BENCH_WORK:-/var/lib/ext-cache-bench}
    DATA=${2:-$WORK/$1-data}
    PY=/usr/bin/python3
    export EXTC_LAB=${EXTC_LAB:-$WORK/ext-cache-lab}
    export EXTC_LAB_CTLD_PORT=${EXTC_LAB_CTLD_PORT:-17817}
    export EXTC_LAB_SLURMD_PORT=${EXTC_LAB_SLURMD_PORT:-17818}
    bench_alone_helpers
    [ "$(id -u)" -eq 0 ] || { echo "bench/$1.sh: must run as root" >&2; return 1; }
    mkdir -p "$DATA"
}

# bench_alone_lab NAME DATA [MAKE TARGET...]: bench_alone, then build the
# plugin (and the targets) in the caller's $top and set up a lab with it,
# stopped on exit
# shellcheck disable=SC2154
bench_alone_lab() {
    bench_alone "$1" "$2" || return 1
    shift 2
    (cd "$top" && make ext_cache.la "$@") >"$DATA/build.log" 2>&1 || { tail -20 "$DATA/build.log"; return 1; }
    # shellcheck source=../tests/integration/lib/cluster.sh
    . "$top/tests/integration/lib/cluster.sh"
    trap 'lab_stop >/dev/null 2>&1' EXIT
    lab_setup >/dev/null && lab_install_plugin "$top/.libs/ext_cache.so"
}
