#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# torch.compile with Inductor's CPU backend on a real 3-node Slurm, 2 ranks
# per node, as the unprivileged user, with this release's own Debian torch:
# every rank compiles a small function (a matmul and a few elementwise ops,
# torch/inductor.py) with torch.compile(fn, backend="inductor") and calls it.
#   1. job 1 (--ext-cache=local --ext-cache-publish=DIR): every rank's
#      FX-graph, AOT-autograd and generated C++ (.cpp, .so) caches are in its
#      node's step directory (TORCHINDUCTOR_CACHE_DIR under
#      SLURM_EXT_CACHE_DIR); nothing new in the home; in
#      /tmp/torchinductor_<user> on every node, what that torch version puts
#      there whatever TORCHINDUCTOR_CACHE_DIR says (2.6: nothing; 2.14: its
#      precompiled header, nothing else); Inductor's own counters show a miss
#      on every rank
#   2. DIR holds the completed entries, and neither Inductor's locks/
#      directory nor any lock file
#   3. job 2 (--ext-cache-seed=DIR, same SLURM_EXT_CACHE_KEY): every rank hits
#      the FX graph cache (Inductor's counters), compiles no C++ (no .so newer
#      than the rank), and still leaves nothing in /tmp or the home
#   4. the first compiled call's time, cold and seeded, per rank: printed,
#      never asserted
# torch before 2.0 (Debian 12's 1.13) has no torch.compile: there the suite
# asserts exactly that on every node, says so, and has nothing else to run.
# Needs python3-torch, libtorch-dev, python3-dev and g++; missing ones fail
# the suite, they are never skipped.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

PY=/usr/bin/python3
RUN_TIMEOUT=${EXTC_RUN_TIMEOUT:-900}
SUITE_T0=$EPOCHREALTIME
since() {
    local since_us=${1/[.,]/} now_us=${EPOCHREALTIME/[.,]/}
    printf '%d.%d' $(((now_us - since_us) / 1000000)) $(((now_us - since_us) % 1000000 / 100000))
}

itest_begin

HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
# Other labs may use the same user: everything of this suite lives in one directory of its own.
W=$HOME_DIR/.extc-inductor-$(basename "$LAB")
rm -rf -- "$W"
# what is in the home, but this suite's own directory, before any python ran: nothing may be added
home_list() { find "$HOME_DIR" -path "$W" -prune -o -print 2>/dev/null | sort; }
HOME0=$(home_list)

prereq_ok=1
need() { t_check "prerequisite: $1" "${@:2}" || prereq_ok=0; }
need "$PY imports torch (python3-torch)" lab_user "$PY" -c 'import torch'
if [ "$prereq_ok" != 1 ]; then
    t_fail "prerequisites" "install python3-torch (scripts/install-deps.sh test)"
    itest_end
    exit 1
fi
TORCH_VERSION=$(lab_user "$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)
TORCH_MAJOR=${TORCH_VERSION%%.*}
HAS_COMPILE=$(lab_user "$PY" -c 'import torch; print(int(hasattr(torch, "compile")))' 2>/dev/null)
t_note "torch $TORCH_VERSION"

rm -rf "$LAB/work/torch"
if ! { cp -r "$ITEST_DIR/torch" "$LAB/work/torch" && chmod -R a+rX,go-w "$LAB/work/torch"; }; then
    t_fail "copy helpers to $LAB/work" "cp failed"; itest_end; exit 1
fi

itest_cluster "base=$ITEST_BASE" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }
LAB_T0=$EPOCHREALTIME
# shellcheck disable=SC2016  # an awk program: $i is awk's field
KV='function kv(  i, k) { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }'
rfield() { awk "$KV"' { kv(); print F["'"$1"'"] }' <<<"$RES"; }

# ==================================================================================
# torch before 2.0: no torch.compile (it came with torch 2.0)
# ==================================================================================
if [ "$TORCH_MAJOR" -lt 2 ] 2>/dev/null; then
    t_eq "torch $TORCH_VERSION (before 2.0) has no torch.compile: hasattr(torch, \"compile\") is false" 0 "$HAS_COMPILE"
    OUT=$(lab_user timeout -k 10 300 srun -N3 --ntasks-per-node=2 --ext-cache=local \
        "$PY" "$LAB/work/torch/inductor.py" 2>&1)
    RC=$?
    RES=$(grep '^RESULT ' <<<"$OUT")
    t_eq "srun -N3 --ntasks-per-node=2 --ext-cache=local exits 0" 0 "$RC"
    t_eq "... and every one of the 6 ranks, on every node, finds no torch.compile in torch $TORCH_VERSION" \
        "$(printf 'n%s no\n' 1 1 2 2 3 3)" "$(awk "$KV"' { kv(); print F["node"], F["compile"] }' <<<"$RES" | sort)"
    t_note "torch $TORCH_VERSION has no torch.compile, so there is no Inductor to test on this release:"
    t_note "the Inductor cases (step-local caches, FX graph cache hits after a seed, publish without locks/)"
    t_note "run on the releases whose torch has it (tests/releases/run-release.sh trixie|forky)."
    lab_assert_no_drain "no node drained"
    itest_end
    exit $?
fi
t_eq "torch $TORCH_VERSION (2.0 or later) has torch.compile" 1 "$HAS_COMPILE"
TORCH_MM=$(cut -d. -f1,2 <<<"$TORCH_VERSION")
# What Inductor writes to its default directory, /tmp/torchinductor_<user>
# (tempfile.gettempdir(): the lab's nodes have no TMPDIR), although
# TORCHINDUCTOR_CACHE_DIR names another; recorded per torch version that was
# run here, a version with none fails until measured:
#  2.6:  nothing: every directory Inductor writes derives from cache_dir()
#        (torch/_inductor/runtime/cache_dir_utils.py)
#  2.14: the precompiled header of its CPU kernels (cpp_cache_precompile_headers,
#        on by default: torch/_inductor/config.py), on purpose in
#        default_cache_dir()/precompiled_headers (torch/_inductor/codecache.py,
#        _HEADER_DIR: "these headers need to be global"); about 110 MB, kept
#        after the job. TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS=0 turns it off.
case $TORCH_MM in
    2.6) TMP_EXPECT="" ;;
    2.14) TMP_EXPECT=precompiled_headers ;;
    *) TMP_EXPECT=unknown ;;
esac
t_check "an expectation is recorded for what torch $TORCH_VERSION puts in /tmp/torchinductor_<user>" \
    test "$TMP_EXPECT" != unknown
[ -n "$TMP_EXPECT" ] && WANT_DEFAULT=1 || WANT_DEFAULT=0

# ==================================================================================
# torch 2.0 and later
# ==================================================================================
need "g++ on the user's PATH (g++)" lab_user bash -c 'command -v g++'
need "Python.h installed (python3-dev)" lab_user "$PY" -c '
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
# the generated C++ includes cpp_prefix.h (torch/_inductor/codegen/ in 2.6,
# torch/csrc/inductor/ in later versions), which includes ATen's vectorized
# headers: libtorch-dev
need "Inductor's cpp_prefix.h and ATen's vec headers installed (libtorch-dev)" lab_user "$PY" -c '
import os, sys, torch, torch.utils.cpp_extension as c
inc = c.include_paths()
pre = [os.path.join(os.path.dirname(torch.__file__), "_inductor", "codegen", "cpp_prefix.h")]
pre += [os.path.join(p, "torch", "csrc", "inductor", "cpp_prefix.h") for p in inc]
vec = [os.path.join(p, "ATen", "cpu", "vec", "vec.h") for p in inc]
sys.exit(not (any(map(os.path.exists, pre)) and any(map(os.path.exists, vec))))'
if [ "$prereq_ok" != 1 ]; then
    t_fail "prerequisites" "install python3-torch libtorch-dev python3-dev g++ (scripts/install-deps.sh test)"
    itest_end
    exit 1
fi

lab_user mkdir -p "$W" || { t_fail "make $W" "mkdir failed"; itest_end; exit 1; }
PUB=$W/pub
export SLURM_EXT_CACHE_KEY=inductor-$TORCH_VERSION
PASS="SLURM_EXT_CACHE_KEY"
# The AOT-autograd cache is off by default in torch 2.6
# (torch/_functorch/config.py: enable_autograd_cache reads
# TORCHINDUCTOR_AUTOGRAD_CACHE, default "0") and on in later versions: where
# it is off, the suite turns it on, so that there is one to look at.
AUTOGRAD_DEFAULT=$(lab_user "$PY" -c 'import torch._functorch.config as c; print(int(bool(c.enable_autograd_cache)))' 2>&1)
if [ "$AUTOGRAD_DEFAULT" = 0 ]; then
    export TORCHINDUCTOR_AUTOGRAD_CACHE=1
    PASS="$PASS TORCHINDUCTOR_AUTOGRAD_CACHE"
    t_note "torch $TORCH_VERSION: the AOT-autograd cache is off by default; this suite sets TORCHINDUCTOR_AUTOGRAD_CACHE=1"
else
    t_note "torch $TORCH_VERSION: the AOT-autograd cache is on by default ($AUTOGRAD_DEFAULT)"
fi

# run_ind TAG SRUN-ARGS...: every rank of `srun SRUN-ARGS` runs inductor.py,
# all ranks released at once by a barrier in $W/bar-TAG.  Sets OUT, RC, RES, SECS.
run_ind() {
    local tag=$1 t0=$EPOCHREALTIME
    shift
    lab_user mkdir -p "$W/bar-$tag"
    OUT=$(LAB_PASS_ENV=$PASS lab_user timeout -k 10 "$RUN_TIMEOUT" \
        srun "$@" "$PY" "$LAB/work/torch/inductor.py" "$W/bar-$tag" 6 2>&1)
    RC=$?
    SECS=$(since "$t0")
    RES=$(grep '^RESULT ' <<<"$OUT")
}
bad_results() { awk "$KV"' { kv(); if (F["ok"] != "1") print }' <<<"$RES"; }
# step_layout: RESULT lines NOT laid out as the plugin promises: mode local,
# SLURM_EXT_CACHE_DIR = <base>/<uid>/<job>/<step>, TORCHINDUCTOR_CACHE_DIR =
# that/torchinductor, and Inductor's own cache_dir() that same directory.
step_layout() {
    awk "$KV"' { kv(); d = "'"$ITEST_BASE/$ITEST_UID/"'" F["job"] "/" F["step"]
        if (F["mode"] != "local" || F["cachedir"] != d || F["inddir_env"] != d "/torchinductor" ||
            F["inddir"] != F["inddir_env"]) print }' <<<"$RES"
}
# per_rank FIELD...: "node rank FIELD..." per rank, sorted
per_rank() {
    local f prog='{ kv(); printf "%s %s", F["node"], F["rank"]'
    for f in "$@"; do prog="$prog"'; printf " %s", F["'"$f"'"]'; done
    awk "$KV $prog"'; printf "\n" }' <<<"$RES" | sort -k1,1 -k2,2n
}
# ranks_where COND: "node rank" of the ranks for which the awk COND (on F[]) is false
ranks_failing() { awk "$KV"' { kv(); if (!('"$1"')) print F["node"], F["rank"] }' <<<"$RES" | sort; }
slurmd_lines() { grep -ah "ext-cache: job $1 " "$LAB"/log/slurmd-n*.log; }
# default_dir NAME: /tmp/torchinductor_<user> on every node (inside its
# namespace) holds what this torch version puts there (TMP_EXPECT), and no
# cache entry: only headers, precompiled headers and their locks
default_dir() {
    local n d=/tmp/torchinductor_$LAB_USER got="" other=""
    for n in $(lab_nodes); do
        if [ -z "$TMP_EXPECT" ]; then
            itest_absent "$n" "$d" || got="$got $n:$(lab_node "$n" ls -A "$d" | paste -sd, -)"
        else
            got="$got $n:$(lab_node "$n" ls -A "$d" 2>&1 | paste -sd, -)"
            other="$other$(lab_node "$n" find "$d" -type f ! -name '*.h' ! -name '*.h.gch' ! -name '*.lock' 2>&1)"
        fi
    done
    if [ -z "$TMP_EXPECT" ]; then
        t_eq "$1: /tmp/torchinductor_$LAB_USER does not exist on any node (looked at inside each node's namespace)" "" "$got"
    else
        t_eq "$1: /tmp/torchinductor_$LAB_USER on every node holds only $TMP_EXPECT/ (torch $TORCH_MM puts it there whatever TORCHINDUCTOR_CACHE_DIR says)" \
            "$(printf ' n%s:%s' 1 "$TMP_EXPECT" 2 "$TMP_EXPECT" 3 "$TMP_EXPECT")" "$got"
        t_eq "$1: ... and no cache entry of the step: no FX graph, AOT-autograd, .cpp or .so, only headers and their locks" "" "$other"
        t_note "  /tmp/torchinductor_$LAB_USER on n1: $(lab_node n1 du -sh "$d" 2>&1 | cut -f1), $(lab_node n1 find "$d" -type f 2>&1 | sed "s|^$d/||" | paste -sd' ' -)"
    fi
}
figures() {
    t_note "$1: wall ${SECS}s, srun rc $RC"
    t_note "$(printf '  %-4s %-4s %-7s %-7s %-7s %-7s %-5s %-5s %-4s %-4s %-6s %9s %9s' \
        node rank fx_hit fx_miss aot_hit aot_miss fxgr aotag cpp so so_new 'import' '1st call')"
    awk "$KV"' { kv(); printf "  %-4s %-4s %-7s %-7s %-7s %-7s %-5s %-5s %-4s %-4s %-6s %8ss %8ss\n", F["node"], F["rank"],
        F["fx_hit"], F["fx_miss"], F["aot_hit"], F["aot_miss"], F["n_fxgraph"], F["n_aotautograd"], F["n_cpp"],
        F["n_so"], F["n_so_new"], F["t_import"], F["t_first"] }' <<<"$RES" | sort -k1,1 -k2,2n |
        while IFS= read -r l; do t_note "$l"; done
}

# ==================================================================================
# 1. cold: compile on every rank, caches in the step directory, publish
# ==================================================================================
run_ind 1 -N3 --ntasks-per-node=2 --ext-cache=local --ext-cache-publish="$PUB"
j1=$(rfield job | head -n1)
figures "job 1 (${j1:-?}): srun -N3 --ntasks-per-node=2 --ext-cache=local --ext-cache-publish=$PUB"
t_note "  Inductor's cache_dir() on n1 rank 0: $(per_rank inddir | awk 'NR == 1 {print $3}'); compile_threads $(rfield compile_threads | head -n1)"
t_note "  what the step directory's torchinductor/ held on n1 (2-character code directories left out): $(per_rank top | awk 'NR == 1 {print $3}')"
t_eq "1: srun exits 0" 0 "$RC" || t_note "$(tail -n 30 <<<"$OUT")"
t_eq "1: all 6 ranks (2 per node) compiled and called the function" "$(printf 'n%s\n' 1 1 2 2 3 3)" \
    "$(rfield node | sort)"
t_eq "1: every rank's compiled function returned what the eager one does" "" "$(bad_results)"
t_eq "1: every rank's TORCHINDUCTOR_CACHE_DIR, and Inductor's own cache_dir(), is SLURM_EXT_CACHE_DIR/torchinductor of its step" \
    "" "$(step_layout)"
t_eq "1: Inductor's default would have been /tmp/torchinductor_$LAB_USER on every rank" \
    "/tmp/torchinductor_$LAB_USER" "$(rfield default_dir | sort -u)"
t_eq "1: the AOT-autograd cache was on in every rank" 1 "$(rfield autograd_cache | sort -u)"
t_eq "1: every rank missed the FX graph cache (counters[\"inductor\"][\"fxgraph_cache_miss\"] >= 1, no hit, no bypass)" \
    "" "$(ranks_failing 'F["fx_miss"] >= 1 && F["fx_hit"] == 0 && F["fx_bypass"] == 0')"
t_eq "1: every rank missed the AOT-autograd cache (counters[\"aot_autograd\"][\"autograd_cache_miss\"] >= 1, no hit)" \
    "" "$(ranks_failing 'F["aot_miss"] >= 1 && F["aot_hit"] == 0 && F["aot_bypass"] == 0')"
t_eq "1: every rank's step directory held FX-graph entries (fxgraph/), AOT-autograd entries (aotautograd/), generated .cpp and .so" \
    "" "$(ranks_failing 'F["n_fxgraph"] >= 1 && F["n_aotautograd"] >= 1 && F["n_cpp"] >= 1 && F["n_so"] >= 1')"
t_eq "1: ... and the .so was compiled in this step (newer than the rank's start)" \
    "" "$(ranks_failing 'F["n_so_new"] >= 1')"
t_eq "1: after its call every rank saw /tmp/torchinductor_$LAB_USER on its node $([ "$WANT_DEFAULT" = 1 ] && echo "present (torch $TORCH_MM's precompiled header)" || echo absent)" \
    "" "$(ranks_failing 'F["default_exists"] == '"$WANT_DEFAULT")"
lab_wait_idle 60 >/dev/null
default_dir "1"
t_eq "1: nothing was added to the user's home (but DIR)" "" "$(comm -13 <(echo "$HOME0") <(home_list))"
itest_gone_everywhere "1: the step's directory is gone on every node" "$ITEST_BASE/$ITEST_UID/${j1:-none}"
COLD=$(per_rank t_first)

# ==================================================================================
# 2. what was published: completed entries, no locks
# ==================================================================================
for n in $(lab_nodes); do
    t_note "  slurmd $n: $(grep -ah "ext-cache: job ${j1:-none} .*published" "$(lab_log "$n")" | tail -n1 | sed 's/.*ext-cache: //')"
done
t_eq "2: no publish error" "" "$(slurmd_lines "${j1:-none}" | grep -i 'error')"
t_note "  DIR/torchinductor: $(find "$PUB/torchinductor" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>&1 | sort | paste -sd' ' -)"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
t_check "2: DIR holds FX-graph entries (torchinductor/fxgraph/)" \
    bash -c '[ -n "$(find "$0/torchinductor/fxgraph" -type f 2>/dev/null)" ]' "$PUB"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
t_check "2: DIR holds AOT-autograd entries (torchinductor/aotautograd/)" \
    bash -c '[ -n "$(find "$0/torchinductor/aotautograd" -type f 2>/dev/null)" ]' "$PUB"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
t_check "2: DIR holds the generated .cpp and its .so" \
    bash -c '[ -n "$(find "$0/torchinductor" -name "*.cpp")" ] && [ -n "$(find "$0/torchinductor" -name "*.so")" ]' "$PUB"
t_eq "2: no 'locks' anywhere in DIR (Inductor's locks/ directory is not published)" "" \
    "$(find "$PUB" -name locks 2>&1)"
t_eq "2: no lock file anywhere in DIR (*.lock, lock)" "" "$(find "$PUB" \( -name '*.lock' -o -name lock \) 2>&1)"
t_eq "2: no stage, no temporary manifest, no Inductor temporary (.*.tmp) in DIR" "" \
    "$(find "$PUB" \( -name '.ext-cache-stage.*' -o -name '.ext-cache-manifest.*' -o -name '.*.tmp' \) 2>&1)"
t_contains "2: the manifest names the key" "key=$SLURM_EXT_CACHE_KEY" "$(cat "$PUB/.ext-cache-manifest" 2>&1)"

# ==================================================================================
# 3. seeded: the FX graph cache hits on every rank, nothing compiled
# ==================================================================================
run_ind 2 -N3 --ntasks-per-node=2 --ext-cache=local --ext-cache-seed="$PUB"
j2=$(rfield job | head -n1)
figures "job 2 (${j2:-?}): srun -N3 --ntasks-per-node=2 --ext-cache=local --ext-cache-seed=$PUB"
t_eq "3: srun exits 0" 0 "$RC" || t_note "$(tail -n 30 <<<"$OUT")"
t_eq "3: all 6 ranks (2 per node) called the compiled function" "$(printf 'n%s\n' 1 1 2 2 3 3)" \
    "$(rfield node | sort)"
t_eq "3: every rank's compiled function returned what the eager one does" "" "$(bad_results)"
t_eq "3: every rank's caches were in its step directory" "" "$(step_layout)"
t_eq "3: every node seeded its step from DIR" 3 "$(slurmd_lines "${j2:-none}" | grep -c 'seeded .* from ')"
t_note "  slurmd n1: $(grep -ah "ext-cache: job ${j2:-none} .*seeded" "$(lab_log n1)" | tail -n1 | sed 's/.*ext-cache: //')"
t_eq "3: every rank HIT the FX graph cache (counters[\"inductor\"][\"fxgraph_cache_hit\"] >= 1, no miss)" \
    "" "$(ranks_failing 'F["fx_hit"] >= 1 && F["fx_miss"] == 0 && F["fx_bypass"] == 0')"
t_eq "3: every rank hit the AOT-autograd cache (counters[\"aot_autograd\"][\"autograd_cache_hit\"] >= 1, no miss)" \
    "" "$(ranks_failing 'F["aot_hit"] >= 1 && F["aot_miss"] == 0 && F["aot_bypass"] == 0')"
t_eq "3: no rank compiled C++: every .so in the step directory is the seeded one (older than the rank)" \
    "" "$(ranks_failing 'F["n_so"] >= 1 && F["n_so_new"] == 0')"
lab_wait_idle 60 >/dev/null
default_dir "3"
t_eq "3: nothing was added to the user's home (but DIR)" "" "$(comm -13 <(echo "$HOME0") <(home_list))"
itest_gone_everywhere "3: the step's directory is gone on every node" "$ITEST_BASE/$ITEST_UID/${j2:-none}"
SEEDED=$(per_rank t_first)

# ==================================================================================
# 4. the first compiled call, cold and seeded (printed, never asserted)
# ==================================================================================
t_note "==== first compiled call (trace, compile or cache load, run), seconds, torch $TORCH_VERSION ===="
t_note "$(printf '  %-4s %-4s %9s %9s %7s' node rank cold seeded ratio)"
join <(awk '{print $1 "/" $2, $3}' <<<"$COLD" | sort) <(awk '{print $1 "/" $2, $3}' <<<"$SEEDED" | sort) |
    awk '{ split($1, a, "/"); printf "  %-4s %-4s %8ss %8ss %7s\n", a[1], a[2], $2, $3, ($3 > 0 ? sprintf("%.1f", $2 / $3) : "-") }' |
    sort -k1,1 -k2,2n | while IFS= read -r l; do t_note "$l"; done
t_note "  (6 ranks share this machine's $(nproc) cores: the figures are this lab's, not a real node's)"

lab_assert_no_drain "no node drained"
t_eq "no ext-cache error in any slurmd/slurmstepd log" "" \
    "$(grep -h 'error: ext-cache' "$LAB"/log/slurmd-n*.log 2>/dev/null)"
t_note "suite ran $(since "$SUITE_T0") s, $(since "$LAB_T0") s of it on the cluster"
rm -rf -- "$W"
itest_end
