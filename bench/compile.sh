#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank-ext-cache benchmark 6, torch.compile warm start (bench/run.sh runs it
# after bench/warm.sh; alone: `bench/compile.sh [DATA_DIR]`, as root).
#   The first compiled call of tests/integration/torch/inductor.py (Inductor's
#   CPU backend) in a new one-rank job on lab node n1, cold (a fresh step
#   directory) against seeded (--ext-cache-seed= a directory one earlier job
#   published into), against the node pool (pool=node, the key of an earlier
#   job: benchmark 7's question for torch.compile) and against Inductor's
#   cache in the user's home without the plugin (--ext-cache=off, filled once
#   before), COMPILE_RUNS (default 5) of each, interleaved (the order
#   rotates). Every run records Inductor's own FX graph cache counters, so
#   the table shows which runs hit and which missed.
# torch.compile needs torch >= 2.0. Debian 12's torch is 1.13, so on such a
# host this runs inside the Debian chroot of tests/releases (default forky,
# torch 2.14; EXTC_BENCH_RELEASE=trixie for torch 2.6), built by chroot.sh
# if it is not there, with the plugin built inside against that release's
# Slurm; the chroot's lab uses its own directory and ports 17917-17920.
# Raw data: DATA/compile.tsv, DATA/compile-env.txt.
#
#   bench/compile.sh --inside DATA_DIR   the measurement itself, in a root
#                                        whose python3 has torch.compile
set -u

compile_standalone=0
compile_inside=0
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    compile_standalone=1
    top=$(cd "$(dirname "$0")/.." && pwd)
    [ "${1:-}" = --inside ] && { compile_inside=1; shift; }
    # shellcheck source=torchlab.sh
    . "$top/bench/torchlab.sh"
    bench_alone compile "${1:-}" || exit 1
fi
COMPILE_RUNS=${COMPILE_RUNS:-5}

# compile_measure: in this root, with the plugin built in $top: a lab, one
# publishing job, then the interleaved cold and seeded jobs.
compile_measure() {
    local pub home r m order orders out line
    # shellcheck source=../tests/integration/lib/cluster.sh
    . "$top/tests/integration/lib/cluster.sh"
    trap 'lab_stop >/dev/null 2>&1' EXIT
    # shellcheck source=torchlab.sh
    . "$top/bench/torchlab.sh"
    lab_setup >/dev/null && lab_install_plugin "${build:-$top}/.libs/ext_cache.so" || return 1
    bench_torch_lab compile "$top" || return 1
    home=$(getent passwd "$LAB_USER" | cut -d: -f6)
    pub=$home/.extc-bench-compile
    rm -rf -- "$pub"
    {
        echo "torch $("$PY" -c 'import torch; print(torch.__version__)' 2>&1)"
        echo "slurm $(slurmd -V 2>&1)"
        echo "os $(. /etc/os-release && echo "$PRETTY_NAME")"
        echo "compiler $(c++ --version 2>&1 | head -1)"
    } >"$DATA/compile-env.txt"
    # compile_one MODE: one job on n1; prints "MODE t_first wall_s fx_hit fx_miss".
    # pool: pool=node, the key of earlier pool jobs (section 7's question);
    # home: --ext-cache=off, Inductor's cache in the user's home, filled
    # once before (the world without the plugin)
    compile_one() {
        local extra=(--ext-cache=local) env=(SLURM_EXT_CACHE_KEY=bench) plug="" t0 res
        [ "$1" = seeded ] && extra+=(--ext-cache-seed="$pub")
        [ "$1" = publish ] && extra+=(--ext-cache-publish="$pub")
        [ "$1" = pool ] && { plug=pool=node; env=(SLURM_EXT_CACHE_KEY=bench-pool); }
        [ "$1" = home ] && { extra=(--ext-cache=off); env=(TORCHINDUCTOR_CACHE_DIR="$home/.extc-bench-ind"); }
        lab_wait_idle 60 >/dev/null || return 1
        lab_set_plugstack "required $LAB_PLUGIN base=/var/tmp/ext-cache $plug" || return 1
        t0=$(now_us)
        res=$(lab_user env "${env[@]}" srun -N1 -n1 -w n1 "${extra[@]}" "$PY" "$LAB/work/torch/inductor.py" 2>&1) ||
            { echo "bench: compile: $1 job failed: $res" >&2; return 1; }
        awk -v m="$1" -v w="$((($(now_us) - t0) / 1000))" '/^RESULT / {
            for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) }
            if (F["ok"] != "1") exit 1
            printf "%s %s %.3f %d %d\n", m, F["t_first"], w / 1000, F["fx_hit"], F["fx_miss"] }' <<<"$res"
    }
    rm -rf -- "$home/.extc-bench-ind"
    out=$(compile_one publish) && [ -n "$out" ] && out=$(compile_one pool) && out=$(compile_one home) || return 1
    [ -n "$(find "$pub/torchinductor/fxgraph" -type f 2>/dev/null | head -1)" ] ||
        { echo "bench: compile: the first job published no FX graph entry" >&2; return 1; }
    echo "round mode t_first_s wall_s fx_hit fx_miss" >"$DATA/compile.tsv"
    for ((r = 0; r < COMPILE_RUNS; r++)); do
        orders=("cold seeded pool home" "seeded pool home cold" "pool home cold seeded" "home cold seeded pool")
        order=${orders[r % 4]}
        for m in $order; do
            line=$(compile_one "$m") && [ -n "$line" ] || return 1
            echo "$r $line" >>"$DATA/compile.tsv"
        done
    done
    rm -rf -- "$pub" "$home/.extc-bench-ind"
    lab_stop >/dev/null 2>&1
    trap - EXIT
}

# compile_in_release SUITE: build the release chroot, the plugin inside it,
# and run compile_measure there; its data lands in $DATA.
compile_in_release() {
    local suite=$1 root rc
    # shellcheck source=../tests/releases/chroot.sh
    . "$top/tests/releases/chroot.sh"
    root=$(rel_root "$suite")
    say "   in the $suite chroot ($root): debootstrap if needed, PyTorch, the plugin built there"
    {
        rel_make "$suite" && rel_mount "$suite" &&
            rel_apt "$suite" "${REL_BUILD_PKGS[@]}" "${REL_RUN_PKGS[@]}"
    } >"$DATA/compile-chroot.log" 2>&1 || { tail -20 "$DATA/compile-chroot.log"; rel_umount "$suite"; return 1; }
    rel_copy_tree "$suite" "$top" /build/src || { rel_umount "$suite"; return 1; }
    rel_run "$suite" bash -c 'cd /build/src && autoreconf -fi && ./configure && make -j2 ext_cache.la' \
        </dev/null >>"$DATA/compile-chroot.log" 2>&1 || { tail -20 "$DATA/compile-chroot.log"; rel_umount "$suite"; return 1; }
    REL_PASS_ENV="EXTC_LAB EXTC_LAB_CTLD_PORT EXTC_LAB_SLURMD_PORT COMPILE_RUNS" \
        EXTC_LAB=/var/lib/bench-ext-cache-lab EXTC_LAB_CTLD_PORT=17917 EXTC_LAB_SLURMD_PORT=17918 \
        rel_run "$suite" bash /build/src/bench/compile.sh --inside /build/compile-data </dev/null
    rc=$?
    cp "$root"/build/compile-data/compile* "$DATA/" 2>/dev/null
    rel_umount "$suite"
    return "$rc"
}

if [ "$compile_inside" = 1 ]; then
    compile_measure
    exit $?
fi

say "6. torch.compile: first compiled call seeded vs cold ($COMPILE_RUNS each)"
T=$(now_us)
if "$PY" -c 'import torch, sys; sys.exit(not hasattr(torch, "compile"))' 2>/dev/null; then
    [ "$compile_standalone" = 1 ] && { (cd "$top" && make ext_cache.la) >"$DATA/compile-build.log" 2>&1 || exit 1; }
    (compile_measure) || exit 1
else
    lab_stop >/dev/null 2>&1
    compile_in_release "${EXTC_BENCH_RELEASE:-forky}" || { echo "bench: compile: the release chroot run failed" >&2; exit 1; }
fi
section_time compile "$T"
if [ "$compile_standalone" = 1 ]; then
    "$PY" "$top/bench/report.py" --compile-only "$DATA"
fi
