# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The torch op the node pool's and the site tier's suites build: this
# release's own Debian torch, torch's own load(), lock and ninja, on
# extc_light.cpp (a source that compiles in seconds). Sourced by a .bats
# file after lib/itest; W (the user's work directory) must be set before
# torchop_run.

PY=/usr/bin/python3
# shellcheck disable=SC2016 # an awk program: $i is awk's field
KV='function kv(  i, k) { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }'

# torchop_setup: torch, ninja and a compiler for the user; the op's sources
# in $LAB/work/torch; $LAB/work/bin/cxx, the compiler every job names
torchop_setup() {
    lab_user "$PY" -c 'import torch.utils.cpp_extension' || fail "python3-torch is missing (scripts/install-deps.sh test)"
    lab_user bash -c 'command -v ninja && command -v c++' >/dev/null || fail "ninja-build and g++ are missing"
    rm -rf "$LAB/work/torch" "$LAB/work/bin"
    cp -r "$ITEST_DIR/torch" "$LAB/work/torch" && chmod -R a+rX,go-w "$LAB/work/torch" && mkdir -p "$LAB/work/bin"
    # torch writes $CXX into build.ninja: one path in every job, or ninja rebuilds for the command line
    cat >"$LAB/work/bin/cxx" <<'SH'
#!/bin/sh
case " $* " in *" -o "*) echo "${SLURMD_NODENAME:-?} ${SLURM_JOB_ID:-?} $*" >>"$CXX_LOG" ;; esac
exec c++ "$@"
SH
    chmod 0755 "$LAB/work/bin/cxx"
}

# torchop_run NAME LOG [ENV=VALUE...] -- SRUN-ARGS...: extload.py NAME on the
# nodes, as the user; compiles logged to $W/log/LOG. Sets OUT, RC, RES.
# shellcheck disable=SC2034 # RC, OUT and RES are the caller's
torchop_run() {
    local name=$1 log=$2 envs=()
    shift 2
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    RC=0
    OUT=$(lab_user env CXX="$LAB/work/bin/cxx" CXX_LOG="$W/log/$log" MAX_JOBS=1 EXTC_OP_LIGHT=1 "${envs[@]}" \
        timeout -k 10 600 srun "$@" "$PY" "$LAB/work/torch/extload.py" "$name" 2>&1) || RC=$?
    RES=$(grep '^RESULT ' <<<"$OUT" || true)
}

# per rank: node role compiled+linked ok
torchop_ranks() { awk "$KV"' { kv(); print F["node"], F["role"], F["compiled"] + F["linked"], F["ok"] }' <<<"$RES" | sort; }
