#!/usr/bin/env bats
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
#      than the rank), and still leaves nothing in /tmp or the home; the first
#      compiled call's time, cold and seeded, per rank: printed, never asserted
# torch before 2.0 (Debian 12's 1.13) has no torch.compile: there every case
# asserts exactly that, says so, and has nothing else to run.
# Needs python3-torch, libtorch-dev, python3-dev and g++; missing ones fail
# the suite, they are never skipped. Tests 2 and 3 use what test 1 made.

load lib/itest

PY=/usr/bin/python3
RUN_TIMEOUT=${EXTC_RUN_TIMEOUT:-900}
HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
# Other labs may use the same user: everything of this suite lives in one directory of its own.
W=$HOME_DIR/.extc-inductor-$(basename "$LAB")
PUB=$W/pub
PASS="SLURM_EXT_CACHE_KEY TORCHINDUCTOR_AUTOGRAD_CACHE"
# what is in the home, but this suite's own directory: nothing may be added
home_list() { find "$HOME_DIR" -path "$W" -prune -o -print 2>/dev/null | sort; }

setup_file() {
    local autograd
    rm -rf -- "$W"
    # before any python ran
    home_list >"$BATS_FILE_TMPDIR/home0"
    itest_setup_file
    lab_user "$PY" -c 'import torch' || fail "$PY does not import torch: install python3-torch (scripts/install-deps.sh test)"
    TORCH_VERSION=$(lab_user "$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)
    TORCH_MAJOR=${TORCH_VERSION%%.*}
    TORCH_MM=$(cut -d. -f1,2 <<<"$TORCH_VERSION")
    HAS_COMPILE=$(lab_user "$PY" -c 'import torch; print(int(hasattr(torch, "compile")))' 2>/dev/null)
    export TORCH_VERSION TORCH_MAJOR TORCH_MM HAS_COMPILE
    echo "# torch $TORCH_VERSION" >&3
    rm -rf "$LAB/work/torch"
    if ! { cp -r "$ITEST_DIR/torch" "$LAB/work/torch" && chmod -R a+rX,go-w "$LAB/work/torch"; }; then
        fail "cannot copy the torch helpers to $LAB/work"
    fi
    itest_cluster "base=$ITEST_BASE"
    [ "$TORCH_MAJOR" -ge 2 ] || return 0
    lab_user bash -c 'command -v g++' >/dev/null || fail "no g++ on the user's PATH (g++)"
    lab_user "$PY" -c '
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
        fail "Python.h is not installed (python3-dev)"
    # the generated C++ includes cpp_prefix.h (torch/_inductor/codegen/ in 2.6,
    # torch/csrc/inductor/ in later versions), which includes ATen's vectorized
    # headers: libtorch-dev
    lab_user "$PY" -c '
import os, sys, torch, torch.utils.cpp_extension as c
inc = c.include_paths()
pre = [os.path.join(os.path.dirname(torch.__file__), "_inductor", "codegen", "cpp_prefix.h")]
pre += [os.path.join(p, "torch", "csrc", "inductor", "cpp_prefix.h") for p in inc]
vec = [os.path.join(p, "ATen", "cpu", "vec", "vec.h") for p in inc]
sys.exit(not (any(map(os.path.exists, pre)) and any(map(os.path.exists, vec))))' ||
        fail "Inductor's cpp_prefix.h or ATen's vec headers are not installed (libtorch-dev)"
    lab_user mkdir -p "$W" || fail "cannot make $W"
    export SLURM_EXT_CACHE_KEY=inductor-$TORCH_VERSION
    # The AOT-autograd cache is off by default in torch 2.6
    # (torch/_functorch/config.py: enable_autograd_cache reads
    # TORCHINDUCTOR_AUTOGRAD_CACHE, default "0") and on in later versions:
    # where it is off, the suite turns it on, so that there is one to look at.
    autograd=$(lab_user "$PY" -c 'import torch._functorch.config as c; print(int(bool(c.enable_autograd_cache)))' 2>&1)
    if [ "$autograd" = 0 ]; then
        export TORCHINDUCTOR_AUTOGRAD_CACHE=1
        echo "# torch $TORCH_VERSION: the AOT-autograd cache is off by default; this suite sets TORCHINDUCTOR_AUTOGRAD_CACHE=1" >&3
    else
        echo "# torch $TORCH_VERSION: the AOT-autograd cache is on by default ($autograd)" >&3
    fi
}

teardown_file() {
    rm -rf -- "$W"
    itest_teardown_file
}

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
tmp_expect() {
    case $TORCH_MM in
        2.6) echo "" ;;
        2.14) echo precompiled_headers ;;
        *) echo unknown ;;
    esac
}

# has_compile: true on torch 2.0 or later; before 2.0 asserts that torch has
# no torch.compile (the case has nothing else to run there), says so, false
has_compile() {
    if [ "$TORCH_MAJOR" -lt 2 ]; then
        assert_equal "torch $TORCH_VERSION has torch.compile: $HAS_COMPILE" "torch $TORCH_VERSION has torch.compile: 0"
        echo "# torch $TORCH_VERSION has no torch.compile: this case runs on the releases whose torch has it" >&3
        return 1
    fi
    assert_equal "torch $TORCH_VERSION has torch.compile: $HAS_COMPILE" "torch $TORCH_VERSION has torch.compile: 1"
}

# shellcheck disable=SC2016  # an awk program: $i is awk's field
KV='function kv(  i, k) { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }'
rfield() { awk "$KV"' { kv(); print F["'"$1"'"] }' <<<"$RES"; }

# run_ind TAG SRUN-ARGS...: every rank of `srun SRUN-ARGS` runs inductor.py,
# all ranks released at once by a barrier in $W/bar-TAG. Sets OUT, RC, RES.
run_ind() {
    local tag=$1
    shift
    lab_user mkdir -p "$W/bar-$tag"
    RC=0
    OUT=$(LAB_PASS_ENV=$PASS lab_user timeout -k 10 "$RUN_TIMEOUT" \
        srun "$@" "$PY" "$LAB/work/torch/inductor.py" "$W/bar-$tag" 6 2>&1) || RC=$?
    RES=$(grep '^RESULT ' <<<"$OUT" || true)
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
# ranks_failing COND: "node rank" of the ranks for which the awk COND (on F[]) is false
ranks_failing() { awk "$KV"' { kv(); if (!('"$1"')) print F["node"], F["rank"] }' <<<"$RES" | sort; }
slurmd_lines() { grep -ah "ext-cache: job $1 " "$LAB"/log/slurmd-n*.log; }
# default_dir: /tmp/torchinductor_<user> on every node (inside its namespace)
# holds what this torch version puts there (tmp_expect), and no cache entry:
# only headers, precompiled headers and their locks
default_dir() {
    local n d=/tmp/torchinductor_$LAB_USER got="" other="" expect
    expect=$(tmp_expect)
    for n in $(lab_nodes); do
        if [ -z "$expect" ]; then
            itest_absent "$n" "$d" || got="$got $n:$(lab_node "$n" ls -A "$d" | paste -sd, -)"
        else
            got="$got $n:$(lab_node "$n" ls -A "$d" 2>&1 | paste -sd, -)"
            other="$other$(lab_node "$n" find "$d" -type f ! -name '*.h' ! -name '*.h.gch' ! -name '*.lock' 2>&1)"
        fi
    done
    if [ -z "$expect" ]; then
        # it does not exist on any node (looked at inside each node's namespace)
        assert_equal "$d:$got" "$d:"
    else
        # torch $TORCH_MM puts it there whatever TORCHINDUCTOR_CACHE_DIR says,
        # and no cache entry of the step: only headers and their locks
        assert_equal "$d:$got" "$d:$(printf ' n%s:%s' 1 "$expect" 2 "$expect" 3 "$expect")"
        assert_equal "$other" ""
        echo "#   $d on n1: $(lab_node n1 du -sh "$d" 2>&1 | cut -f1), $(lab_node n1 find "$d" -type f 2>&1 | sed "s|^$d/||" | paste -sd' ' -)" >&3
    fi
}
figures() {
    echo "# $1: srun rc $RC" >&3
    printf '#   %-4s %-4s %-7s %-7s %-7s %-7s %-5s %-5s %-4s %-4s %-6s %9s %9s\n' \
        node rank fx_hit fx_miss aot_hit aot_miss fxgr aotag cpp so so_new 'import' '1st call' >&3
    awk "$KV"' { kv(); printf "#   %-4s %-4s %-7s %-7s %-7s %-7s %-5s %-5s %-4s %-4s %-6s %8ss %8ss\n", F["node"], F["rank"],
        F["fx_hit"], F["fx_miss"], F["aot_hit"], F["aot_miss"], F["n_fxgraph"], F["n_aotautograd"], F["n_cpp"],
        F["n_so"], F["n_so_new"], F["t_import"], F["t_first"] }' <<<"$RES" | sort -k2,2 -k3,3n >&3
}

@test "torch.compile is there exactly from torch 2.0 on; before, no rank of any node finds it" {
    if [ "$TORCH_MAJOR" -lt 2 ]; then
        assert_equal "hasattr(torch, \"compile\"): $HAS_COMPILE" "hasattr(torch, \"compile\"): 0"
        local out rc=0
        out=$(lab_user timeout -k 10 300 srun -N3 --ntasks-per-node=2 --ext-cache=local \
            "$PY" "$LAB/work/torch/inductor.py" 2>&1) || rc=$?
        assert_equal "rc $rc" "rc 0"
        # every one of the 6 ranks, on every node, finds no torch.compile
        assert_equal "$(grep '^RESULT ' <<<"$out" | awk "$KV"' { kv(); print F["node"], F["compile"] }' | sort)" \
            "$(printf 'n%s no\n' 1 1 2 2 3 3)"
        echo "# torch $TORCH_VERSION has no torch.compile, so there is no Inductor to test on this release:" >&3
        echo "# the Inductor cases (step-local caches, FX graph cache hits after a seed, publish without locks/)" >&3
        echo "# run on the releases whose torch has it (tests/releases/run-release.sh trixie|forky)." >&3
        return 0
    fi
    assert_equal "hasattr(torch, \"compile\"): $HAS_COMPILE" "hasattr(torch, \"compile\"): 1"
    # an expectation is recorded for what this torch puts in /tmp/torchinductor_<user>
    [ "$(tmp_expect)" != unknown ] || fail "nothing recorded for what torch $TORCH_VERSION puts in /tmp/torchinductor_<user>: measure it"
}

@test "1: cold: every rank compiles, its caches are in its step directory, nothing in the home" {
    local j1 want_default
    has_compile || return 0
    if [ -n "$(tmp_expect)" ]; then want_default=1; else want_default=0; fi
    run_ind 1 -N3 --ntasks-per-node=2 --ext-cache=local --ext-cache-publish="$PUB"
    j1=$(rfield job | head -n1)
    figures "job 1 (${j1:-?}): srun -N3 --ntasks-per-node=2 --ext-cache=local --ext-cache-publish=$PUB"
    echo "#   Inductor's cache_dir() on n1 rank 0: $(per_rank inddir | awk 'NR == 1 {print $3}'); compile_threads $(rfield compile_threads | head -n1)" >&3
    echo "#   what the step directory's torchinductor/ held on n1 (2-character code directories left out): $(per_rank top | awk 'NR == 1 {print $3}')" >&3
    [ "$RC" -eq 0 ] || fail "srun exited $RC: $(tail -n 30 <<<"$OUT")"
    # all 6 ranks (2 per node) compiled and called the function, which returned what the eager one does
    assert_equal "$(rfield node | sort)" "$(printf 'n%s\n' 1 1 2 2 3 3)"
    assert_equal "$(bad_results)" ""
    # every rank's TORCHINDUCTOR_CACHE_DIR, and Inductor's own cache_dir(), is SLURM_EXT_CACHE_DIR/torchinductor
    assert_equal "$(step_layout)" ""
    # Inductor's default would have been /tmp/torchinductor_<user>; the AOT-autograd cache was on
    assert_equal "$(rfield default_dir | sort -u)" "/tmp/torchinductor_$LAB_USER"
    assert_equal "autograd cache $(rfield autograd_cache | sort -u)" "autograd cache 1"
    # every rank missed the FX graph cache (counters["inductor"]["fxgraph_cache_miss"] >= 1, no hit, no bypass)
    assert_equal "fx graph cache not missed: $(ranks_failing 'F["fx_miss"] >= 1 && F["fx_hit"] == 0 && F["fx_bypass"] == 0')" \
        "fx graph cache not missed: "
    # ... and the AOT-autograd cache (counters["aot_autograd"]["autograd_cache_miss"] >= 1, no hit)
    assert_equal "aot cache not missed: $(ranks_failing 'F["aot_miss"] >= 1 && F["aot_hit"] == 0 && F["aot_bypass"] == 0')" \
        "aot cache not missed: "
    # every rank's step directory held fxgraph/, aotautograd/, generated .cpp and .so, compiled in this step
    assert_equal "entries missing: $(ranks_failing 'F["n_fxgraph"] >= 1 && F["n_aotautograd"] >= 1 && F["n_cpp"] >= 1 && F["n_so"] >= 1')" \
        "entries missing: "
    assert_equal "no new .so: $(ranks_failing 'F["n_so_new"] >= 1')" "no new .so: "
    # after its call every rank saw /tmp/torchinductor_<user> present exactly
    # when this torch puts something there (2.14's precompiled header)
    assert_equal "default dir not as expected ($want_default): $(ranks_failing 'F["default_exists"] == '"$want_default")" \
        "default dir not as expected ($want_default): "
    lab_wait_settled 120 >/dev/null
    default_dir
    # nothing was added to the user's home (but DIR)
    assert_equal "$(comm -13 "$BATS_FILE_TMPDIR/home0" <(home_list))" ""
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID/${j1:-none}"
    itest_save j1 "$j1"
    itest_save cold "$(per_rank t_first)"
}

@test "2: what was published: completed entries, neither Inductor's locks/ nor any lock" {
    local j1 n
    has_compile || return 0
    j1=$(itest_load j1)
    for n in $(lab_nodes); do
        echo "#   slurmd $n: $(grep -ah "ext-cache: job $j1 .*published" "$(lab_log "$n")" | tail -n1 | sed 's/.*ext-cache: //')" >&3
    done
    assert_equal "$(slurmd_lines "$j1" | grep -i 'error')" ""
    echo "#   DIR/torchinductor: $(find "$PUB/torchinductor" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>&1 | sort | paste -sd' ' -)" >&3
    [ -n "$(find "$PUB/torchinductor/fxgraph" -type f 2>/dev/null)" ] || fail "no FX-graph entry in $PUB/torchinductor/fxgraph"
    [ -n "$(find "$PUB/torchinductor/aotautograd" -type f 2>/dev/null)" ] || fail "no AOT-autograd entry in $PUB/torchinductor/aotautograd"
    [ -n "$(find "$PUB/torchinductor" -name '*.cpp')" ] || fail "no generated .cpp in $PUB/torchinductor"
    [ -n "$(find "$PUB/torchinductor" -name '*.so')" ] || fail "no .so in $PUB/torchinductor"
    # no locks/ directory, no lock file, no stage, no temporary manifest, no Inductor temporary
    assert_equal "$(find "$PUB" -name locks 2>&1)" ""
    assert_equal "$(find "$PUB" \( -name '*.lock' -o -name lock \) 2>&1)" ""
    assert_equal "$(find "$PUB" \( -name '.ext-cache-stage.*' -o -name '.ext-cache-manifest.*' -o -name '.*.tmp' \) 2>&1)" ""
    [[ $(cat "$PUB/.ext-cache-manifest" 2>&1) == *"key=$SLURM_EXT_CACHE_KEY"* ]] ||
        fail "the manifest does not name key=$SLURM_EXT_CACHE_KEY: $(cat "$PUB/.ext-cache-manifest" 2>&1)"
}

@test "3: seeded: every rank hits the FX graph and AOT-autograd caches and compiles no C++" {
    local j2 cold seeded
    has_compile || return 0
    cold=$(itest_load cold)
    run_ind 2 -N3 --ntasks-per-node=2 --ext-cache=local --ext-cache-seed="$PUB"
    j2=$(rfield job | head -n1)
    figures "job 2 (${j2:-?}): srun -N3 --ntasks-per-node=2 --ext-cache=local --ext-cache-seed=$PUB"
    [ "$RC" -eq 0 ] || fail "srun exited $RC: $(tail -n 30 <<<"$OUT")"
    assert_equal "$(rfield node | sort)" "$(printf 'n%s\n' 1 1 2 2 3 3)"
    assert_equal "$(bad_results)" ""
    assert_equal "$(step_layout)" ""
    # every node seeded its step from DIR
    assert_equal "seed lines: $(slurmd_lines "${j2:-none}" | grep -c 'seeded .* from ')" "seed lines: 3"
    echo "#   slurmd n1: $(grep -ah "ext-cache: job ${j2:-none} .*seeded" "$(lab_log n1)" | tail -n1 | sed 's/.*ext-cache: //')" >&3
    # every rank HIT the FX graph cache (fxgraph_cache_hit >= 1, no miss) and the AOT-autograd cache
    assert_equal "fx graph cache not hit: $(ranks_failing 'F["fx_hit"] >= 1 && F["fx_miss"] == 0 && F["fx_bypass"] == 0')" \
        "fx graph cache not hit: "
    assert_equal "aot cache not hit: $(ranks_failing 'F["aot_hit"] >= 1 && F["aot_miss"] == 0 && F["aot_bypass"] == 0')" \
        "aot cache not hit: "
    # no rank compiled C++: every .so in the step directory is the seeded one (older than the rank)
    assert_equal "compiled C++: $(ranks_failing 'F["n_so"] >= 1 && F["n_so_new"] == 0')" "compiled C++: "
    lab_wait_settled 120 >/dev/null
    default_dir
    assert_equal "$(comm -13 "$BATS_FILE_TMPDIR/home0" <(home_list))" ""
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID/${j2:-none}"
    # the first compiled call (trace, compile or cache load, run), cold and seeded: printed, never asserted
    seeded=$(per_rank t_first)
    echo "# first compiled call, seconds, torch $TORCH_VERSION:" >&3
    printf '#   %-4s %-4s %9s %9s %7s\n' node rank cold seeded ratio >&3
    join <(awk '{print $1 "/" $2, $3}' <<<"$cold" | sort) <(awk '{print $1 "/" $2, $3}' <<<"$seeded" | sort) |
        awk '{ split($1, a, "/"); printf "#   %-4s %-4s %8ss %8ss %7s\n", a[1], a[2], $2, $3, ($3 > 0 ? sprintf("%.1f", $2 / $3) : "-") }' |
        sort -k2,2 -k3,3n >&3
    echo "#   (6 ranks share this machine's $(nproc) cores: the figures are this lab's, not a real node's)" >&3
}

@test "no node drained, no ext-cache error in any slurmd or slurmstepd log" {
    itest_no_drain
    assert_equal "$(grep -h 'error: ext-cache' "$LAB"/log/slurmd-n*.log 2>/dev/null || true)" ""
}
