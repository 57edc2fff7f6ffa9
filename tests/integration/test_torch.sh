#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# PyTorch JIT extensions on a real 3-node Slurm, as the unprivileged user:
# every rank JIT-builds a small C++ op with torch.utils.cpp_extension.load(),
# the way DeepSpeed's op builder does (torch/extc_op.cpp via torch/extload.py),
# and calls it.  The three failure modes users hit are reproduced without the
# plugin and shown fixed with --ext-cache=local:
#   1. many ranks, one build per node, nothing in ~/.cache/torch_extensions
#   2. a stale `lock` left by a killed build hangs every later load()
#   3. a home shared by every node (as NFS is) makes nodes wait on each other
#   4. a header changed with an old mtime: a persistent cache serves the old build
# Each scenario prints its figures (who built, who waited, seconds).  Times are
# printed, never asserted.  Needs python3-torch, libtorch-dev, python3-dev,
# ninja-build and g++; missing ones fail the suite, they are never skipped.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

PY=/usr/bin/python3
TORCH_SRC=$ITEST_DIR/torch
HANG_TIMEOUT=${EXTC_HANG_TIMEOUT:-25}
RUN_TIMEOUT=${EXTC_RUN_TIMEOUT:-420}
SUITE_T0=$EPOCHREALTIME

# seconds since an $EPOCHREALTIME value, 1 decimal
since() {
    local since_us=${1/[.,]/} now_us=${EPOCHREALTIME/[.,]/}
    printf '%d.%d' $(((now_us - since_us) / 1000000)) $(((now_us - since_us) % 1000000 / 100000))
}

itest_begin

# ---- prerequisites: fail loudly, never skip ------------------------------------
prereq_ok=1
need() { # need NAME CMD...: t_check, remembering a failure
    t_check "prerequisite: $1" "${@:2}" || prereq_ok=0
}
need "$PY imports torch and torch.utils.cpp_extension (python3-torch)" \
    lab_user "$PY" -c 'import torch, torch.utils.cpp_extension'
need "ninja on the user's PATH (ninja-build)" lab_user bash -c 'command -v ninja'
need "c++ / g++ on the user's PATH (g++)" lab_user bash -c 'command -v c++ && command -v g++'
need "torch/extension.h installed (libtorch-dev)" lab_user "$PY" -c '
import os, sys, torch.utils.cpp_extension as c
sys.exit(not any(os.path.exists(os.path.join(p, "torch", "extension.h")) for p in c.include_paths()))'
need "Python.h installed (python3-dev)" lab_user "$PY" -c '
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
if [ "$prereq_ok" != 1 ]; then
    t_fail "prerequisites" "install python3-torch libtorch-dev python3-dev ninja-build g++ (scripts/install-deps.sh test)"
    itest_end
    exit 1
fi

# The job scripts and sources live in $LAB/work (every node sees it; the repo
# may sit under /tmp, which nodes hide).  Root-owned: the header is a
# "package" the user cannot change.
rm -rf "$LAB/work/torch"
if ! { cp -r "$TORCH_SRC" "$LAB/work/torch" && chmod -R a+rX,go-w "$LAB/work/torch"; }; then
    t_fail "copy helpers to $LAB/work" "cp failed"; itest_end; exit 1
fi
HEADER=$LAB/work/torch/include/extc_version.h
set_header() { # set_header VERSION MTIME: the "package" header, with an old mtime
    sed -i "s/^#define EXTC_OP_VERSION .*/#define EXTC_OP_VERSION $1/" "$HEADER" &&
        touch -d "$2" "$HEADER"
}
set_header 1 "2023-01-01 00:00:00"

HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
HOME_EXT=$HOME_DIR/.cache/torch_extensions
# The root torch uses when TORCH_EXTENSIONS_DIR is unset (its _get_build_directory).
DEFAULT_ROOT=$(lab_user "$PY" -c '
import sys, torch, torch.utils.cpp_extension as c
cu = "cpu" if torch.version.cuda is None else "cu" + torch.version.cuda.replace(".", "")
print("%s/py%d%d_%s" % (c.get_default_build_root(), sys.version_info[0], sys.version_info[1], cu))' 2>/dev/null)
TORCH_VERSION=$(lab_user "$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)
TORCH_MM=$(cut -d. -f1,2 <<<"$TORCH_VERSION")
t_note "torch $TORCH_VERSION"
t_eq "the user's default extensions root is in the shared home" \
    "$HOME_EXT/py$(lab_user "$PY" -c 'import sys; print("%d%d" % sys.version_info[:2])')_cpu" "$DEFAULT_ROOT"
clean_home() { rm -rf -- "$HOME_EXT"; }

itest_cluster "base=$ITEST_BASE" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }
LAB_T0=$EPOCHREALTIME

# run_ext TIMEOUT NAME SRUN-ARGS...: as the user, `srun SRUN-ARGS python3
# extload.py NAME` bounded by TIMEOUT seconds.  Sets OUT (stdout+stderr),
# RES (the RESULT lines), RC and SECS (wall time).
run_ext() {
    local to=$1 name=$2 t0=$EPOCHREALTIME
    shift 2
    OUT=$(MAX_JOBS=1 LAB_PASS_ENV=MAX_JOBS lab_user timeout -k 10 "$to" \
        srun "$@" "$PY" "$LAB/work/torch/extload.py" "$name" 2>&1)
    RC=$?
    SECS=$(since "$t0")
    RES=$(grep '^RESULT ' <<<"$OUT")
}

# awk prelude: kv() loads the RESULT line's key=value fields into F[].
# shellcheck disable=SC2016  # an awk program: $i is awk's field
KV='function kv(  i, k) { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }'

# rfield KEY: the KEY field of every RESULT line in $RES, one per line.
rfield() { awk "$KV"' { kv(); print F["'"$1"'"] }' <<<"$RES"; }

# figures TITLE: print who built, who waited and the seconds, per rank.  A
# waiter's "on" names the node whose rank built the directory it waited for
# (the same directory: equal st_dev:st_ino, not merely an equal path).
figures() {
    t_note "$1 -- wall ${SECS} s, srun rc $RC"
    [ -n "$RES" ] || { t_note "  (no rank reported a result)"; return; }
    t_note "$(printf '  %-4s %-4s %-7s %-14s %8s %8s %8s %8s  %s' node rank role on waited ninja 'load()' total 'build directory')"
    awk "$KV"'
        { kv(); n++; for (k in F) R[n, k] = F[k]; if (F["role"] == "built") b[F["dirid"]] = F["node"] " rank " F["rank"] }
        END {
            for (i = 1; i <= n; i++) {
                on = "-"
                if (R[i, "role"] == "waited") on = (R[i, "dirid"] in b) ? b[R[i, "dirid"]] : "?"
                printf "  %-4s %-4s %-7s %-14s %7ss %7ss %7ss %7ss  %s\n", R[i, "node"], R[i, "rank"], R[i, "role"], on,
                    R[i, "waited"], R[i, "build_s"], R[i, "t_load"], R[i, "t_total"], R[i, "builddir"]
            }
        }' <<<"$RES" | sort -k1,1 -k2,2n | while IFS= read -r line; do t_note "$line"; done
}

# per_node: "node ranks builds waits reused dirs log_o log_so" per node, sorted;
# log_o/log_so: compiles/links in the node's .ninja_log (the most any rank saw).
per_node() {
    awk "$KV"'
        { kv(); x = F["node"]; r[x]++; if (F["role"] == "built") b[x]++; if (F["role"] == "waited") w[x]++
          if (F["role"] == "reused") u[x]++
          if (!((x, F["dirid"]) in seen)) { seen[x, F["dirid"]] = 1; d[x]++ }
          if (F["log_o"] + 0 > lo[x]) lo[x] = F["log_o"] + 0; if (F["log_so"] + 0 > ls[x]) ls[x] = F["log_so"] + 0 }
        END { for (x in r) print x, r[x], b[x] + 0, w[x] + 0, u[x] + 0, d[x], lo[x] + 0, ls[x] + 0 }' <<<"$RES" | sort
}

# cross_waits: how many ranks waited for a directory a rank of ANOTHER node built.
cross_waits() {
    awk "$KV"'
        { kv(); n++; node[n] = F["node"]; role[n] = F["role"]; dir[n] = F["dirid"]; if (F["role"] == "built") b[F["dirid"]] = F["node"] }
        END { c = 0; for (i = 1; i <= n; i++) if (role[i] == "waited" && (dir[i] in b) && b[dir[i]] != node[i]) c++; print c }' <<<"$RES"
}

# summary: one line of figures per node, "n1: rank 1 built 30.1s, rank 0 waited 29.8s for n1"
summary() {
    awk "$KV"'
        { kv(); if (F["role"] == "built") b[F["dirid"]] = F["node"]; n++; for (k in F) R[n, k] = F[k] }
        END { for (i = 1; i <= n; i++) {
                x = R[i, "node"]; r = R[i, "role"]
                if (r == "built") t = sprintf("rank %s built in %ss", R[i, "rank"], R[i, "build_s"])
                else if (r == "waited") t = sprintf("rank %s waited %ss for %s", R[i, "rank"], R[i, "waited"], b[R[i, "dirid"]])
                else t = sprintf("rank %s loaded the existing build", R[i, "rank"])
                s[x] = (c[x]++ ? s[x] ", " : "") t }
              for (x in s) print x ": " s[x] }' <<<"$RES" | sort | paste -sd ';' - | sed 's/;/; /g'
}

# bad_results: RESULT lines whose op returned a wrong result
bad_results() { awk "$KV"' { kv(); if (F["ok"] != "1") print }' <<<"$RES"; }

# private_layout JOBID: RESULT lines NOT laid out as the plugin promises:
# mode local, SLURM_EXT_CACHE_DIR = <base>/<uid>/<job>/<step>, torch's root =
# TORCH_EXTENSIONS_DIR = that/torch_extensions, the .so inside it.
private_layout() {
    awk "$KV"' { kv(); d = "'"$ITEST_BASE/$ITEST_UID/"'" F["job"] "/" F["step"]
        if (F["mode"] != "local" || F["cachedir"] != d || F["tedir"] != d "/torch_extensions" ||
            F["root"] != F["tedir"] || index(F["so"], F["tedir"] "/") != 1) print }' <<<"$RES"
}

# ==================================================================================
# Scenario 1: many ranks, one build per node
# ==================================================================================
clean_home
run_ext "$RUN_TIMEOUT" extc_s1 -N3 --ntasks-per-node=2 --ext-cache=local
figures "Scenario 1: srun -N3 --ntasks-per-node=2 --ext-cache=local, every rank calls load()"
t_eq "s1: srun exits 0" 0 "$RC"
t_eq "s1: all 6 ranks loaded the op" 6 "$(grep -c . <<<"$RES")"
t_eq "s1: every rank's op call returned the right result" "" "$(bad_results)"
t_eq "s1: every rank built/loaded in its step's private directory (SLURM_EXT_CACHE_DIR/torch_extensions)" \
    "" "$(private_layout)"
t_eq "s1: torch announced the private root to every rank" 6 \
    "$(grep -cE "^Using $ITEST_BASE/$ITEST_UID/[0-9]+/0/torch_extensions as PyTorch extensions root" <<<"$OUT")"
# node ranks builds waits reused dirs log_o log_so
t_eq "s1: per node: 2 ranks, exactly 1 built, 1 waited for it, 0 reused, 1 directory, 1 compile and 1 link in its ninja log" \
    "$(printf 'n%s 2 1 1 0 1 1 1\n' 1 2 3)" "$(per_node)"
t_eq "s1: 3 distinct build directories (one per node)" 3 "$(rfield dirid | sort -u | wc -l)"
t_eq "s1: the two ranks of a node loaded the same .so file" 3 \
    "$(awk "$KV"' { kv(); print F["node"], F["dirid"], F["so_ino"] }' <<<"$RES" | sort -u | wc -l)"
t_eq "s1: no rank waited on another node's build" 0 "$(cross_waits)"
t_check "s1: nothing was written under ~/.cache/torch_extensions" test ! -e "$HOME_EXT"
s1_job=$(rfield job | head -n1)
lab_wait_idle 30 >/dev/null
itest_gone_everywhere "s1: the step's directory (with the builds) is gone on every node" "$ITEST_BASE/$ITEST_UID/${s1_job:-none}"
for n in $(lab_nodes); do
    l=$(grep -h "ext-cache: job ${s1_job:-none} step 0: removed" "$(lab_log "$n")" | tail -n 1)
    t_note "  slurmd $n: ${l#*ext-cache: }"
done
S1_FIG="wall ${SECS}s; $(summary)"

# ==================================================================================
# Scenario 2: a stale lock left by a killed build
# ==================================================================================
# kill_build NODE: SIGKILL the building python rank (started by this suite)
# on NODE, then its ninja and compiler processes, as an OOM kill of the job
# does.  (Killing only python is not enough: ninja and the compiler, in their
# own process group, go on and finish the build while the step waits for them.)
kill_build() {
    local pid pids
    pid=$(lab_procs | awk -v n="$1" '$2 == "ns" && $3 == n && $4 == "python3" {print $1; exit}')
    [ -n "$pid" ] || { t_fail "kill the building rank on $1" "no python3 process found"; return 1; }
    kill -KILL "$pid"
    for _ in 1 2 3; do
        pids=$(lab_procs | awk -v n="$1" '$2 == "ns" && $3 == n && $4 ~ /^(ninja|c\+\+|g\+\+|cc1plus|as|ld|collect2)$/ {print $1}')
        [ -n "$pids" ] || break
        # shellcheck disable=SC2086  # a list of pids, split into words on purpose
        kill -KILL $pids 2>/dev/null
        sleep 0.2
    done
}
# compiling_on NODE: a compiler (cc1plus) started by this suite runs on NODE
compiling_on() {
    [ -n "$(lab_procs | awk -v n="$1" '$2 == "ns" && $3 == n && $4 == "cc1plus" {print $1; exit}')" ]
}
clean_home
# A real killed build: start one without the plugin, wait until torch has
# taken its lock and the compiler runs, then SIGKILL the rank and its
# compilers, as the OOM killer or scancel after KillWait do.  (A plain
# SIGTERM does not always leave the lock: when ninja dies first, torch's
# `finally` still removes it.)
t0=$EPOCHREALTIME
MAX_JOBS=1 LAB_PASS_ENV=MAX_JOBS lab_user srun -N1 -w n1 -J killed-build \
    "$PY" "$LAB/work/torch/extload.py" extc_s2 >"$LAB/work/s2-killed.out" 2>&1 &
killed_pid=$!
lock=$DEFAULT_ROOT/extc_s2/lock
for _ in $(seq 600); do
    [ -e "$lock" ] && break
    sleep 0.1
done
t_check "s2: the build to kill took torch's lock and runs the compiler" itest_poll 120 compiling_on n1
killed_job=$(lab_root squeue -h -n killed-build -o %A)
kill_build n1
wait "$killed_pid"
lab_wait_idle 30 >/dev/null
t_note "Scenario 2: a build killed (SIGKILL) after $(since "$t0") s (job ${killed_job:-?})"
t_check "s2: the killed build left torch's lock in the user's default cache" test -e "$lock"
t_check "s2: ... and no built op" test ! -e "$DEFAULT_ROOT/extc_s2/extc_s2.so"

# Without the plugin: on the torch versions whose cpp_extension waits for the
# lock file to disappear (torch/utils/file_baton.py's FileBaton, polling
# os.path.exists), every later load() of that op hangs on the lock. torch
# 2.14 holds an OS advisory lock on the file instead, which died with the
# killed build: the next load() just builds. The expectation is recorded per
# version that was run here; a version with none fails until measured.
case $TORCH_MM in
    1.13 | 2.6) stale_lock_hangs=1 ;;
    2.14) stale_lock_hangs=0 ;;
    *) stale_lock_hangs=unknown ;;
esac
t_check "s2: an expectation is recorded for torch $TORCH_VERSION's stale lock" test "$stale_lock_hangs" != unknown
run_ext "$HANG_TIMEOUT" extc_s2 -N3 --ntasks-per-node=1
figures "Scenario 2 without the plugin: srun -N3 under timeout $HANG_TIMEOUT"
if [ "$stale_lock_hangs" = 1 ]; then
    t_eq "s2 without the plugin (torch $TORCH_MM): srun killed by the timeout after ${HANG_TIMEOUT}s (exit 124)" 124 "$RC"
    t_eq "s2 without the plugin: all 3 ranks got as far as 'Using $DEFAULT_ROOT as PyTorch extensions root...'" 3 \
        "$(grep -cF "Using $DEFAULT_ROOT as PyTorch extensions root..." <<<"$OUT")"
    t_eq "s2 without the plugin: no rank loaded the op" 0 "$(grep -c . <<<"$RES")"
    t_eq "s2 without the plugin: no rank started a build (every one was stuck on the stale lock)" 0 \
        "$(grep -c 'Building extension module' <<<"$OUT")"
    S2_HANG="torch $TORCH_MM: timed out after ${SECS}s (rc $RC), $(grep -cF "Using $DEFAULT_ROOT" <<<"$OUT")/3 ranks stuck after 'Using $DEFAULT_ROOT ...', 0 results"
else
    t_eq "s2 without the plugin (torch $TORCH_MM): the stale lock does not hang, srun exits 0" 0 "$RC"
    t_eq "s2 without the plugin: all 3 ranks loaded the op from the shared home" 3 "$(grep -c . <<<"$RES")"
    S2_HANG="torch $TORCH_MM: no hang, completed in ${SECS}s (rc $RC), $(grep -c . <<<"$RES")/3 results"
fi
t_note "  what the user saw:"
while IFS= read -r l; do t_note "    $l"; done < <(grep -v '^No CUDA runtime' <<<"$OUT" | head -n 12)
lab_user scancel -u "$LAB_USER" 2>/dev/null
lab_wait_idle 30 >/dev/null
if [ "$stale_lock_hangs" = 0 ]; then
    # the same lock, planted again, for the run with the plugin below
    mkdir -p "$(dirname "$lock")" && : >"$lock" && chown "$LAB_USER:" "$lock"
fi

# With the plugin: the same job, lock still in place, completes.
run_ext "$RUN_TIMEOUT" extc_s2 -N3 --ntasks-per-node=1 --ext-cache=local
figures "Scenario 2 with the plugin: srun -N3 --ext-cache=local, stale lock still in ~/.cache"
t_eq "s2 with the plugin: srun exits 0" 0 "$RC"
t_eq "s2 with the plugin: all 3 ranks loaded the op" 3 "$(grep -c . <<<"$RES")"
t_eq "s2 with the plugin: every op call returned the right result" "" "$(bad_results)"
t_eq "s2 with the plugin: every rank built in its private directory" "" "$(private_layout)"
t_eq "s2 with the plugin: one build on each node" "$(printf 'n%s 1 1 0 0 1 1 1\n' 1 2 3)" "$(per_node)"
t_check "s2 with the plugin: the stale lock in ~/.cache is still there (left alone, just not used)" test -e "$lock"
S2_FIX="completed in ${SECS}s (rc $RC); $(summary)"
lab_wait_idle 30 >/dev/null

# With the plugin a killed build cannot leave a lock for anyone: its lock
# dies with the step's directory.
t0=$EPOCHREALTIME
MAX_JOBS=1 LAB_PASS_ENV=MAX_JOBS lab_user srun -N1 -w n1 -J killed-local --ext-cache=local \
    "$PY" "$LAB/work/torch/extload.py" extc_s2 >"$LAB/work/s2-killed-local.out" 2>&1 &
killed_pid=$!
killed_job=
for _ in $(seq 600); do
    [ -n "$killed_job" ] || killed_job=$(lab_root squeue -h -n killed-local -o %A)
    [ -n "$killed_job" ] && lab_node n1 test -e "$ITEST_BASE/$ITEST_UID/$killed_job/0/torch_extensions/extc_s2/lock" && break
    sleep 0.1
done
t_check "s2 with the plugin: a build killed the same way had its lock in the private directory" \
    lab_node n1 test -e "$ITEST_BASE/$ITEST_UID/${killed_job:-none}/0/torch_extensions/extc_s2/lock"
t_check "s2 with the plugin: ... and runs the compiler" itest_poll 120 compiling_on n1
kill_build n1
wait "$killed_pid"
lab_wait_idle 30 >/dev/null
t_note "Scenario 2 with the plugin: a build killed the same way after $(since "$t0") s (job ${killed_job:-?})"
itest_gone_everywhere "s2 with the plugin: ... and after the kill its directory, lock included, is gone" \
    "$ITEST_BASE/$ITEST_UID/${killed_job:-none}"
t_eq "s2 with the plugin: no compiler outlived the killed step" "" "$(lab_procs | awk '$4 ~ /^(cc1plus|ninja|c\+\+|python3)$/')"

# ==================================================================================
# Scenario 3: one home seen by every node (as NFS is)
# ==================================================================================
clean_home
run_ext "$RUN_TIMEOUT" extc_s3 -N3 --ntasks-per-node=1
figures "Scenario 3 without the plugin: srun -N3, every node uses ~/.cache/torch_extensions"
t_eq "s3 without the plugin: srun exits 0" 0 "$RC"
t_eq "s3 without the plugin: all 3 ranks loaded the op" 3 "$(grep -c . <<<"$RES")"
t_eq "s3 without the plugin: every node used the default root in the shared home" \
    "$DEFAULT_ROOT" "$(rfield root | sort -u)"
t_eq "s3 without the plugin: every node used ONE directory (same st_dev:st_ino)" 1 "$(rfield dirid | sort -u | wc -l)"
t_eq "s3 without the plugin: one build for the 3 nodes (1 link in the shared ninja log)" "1 1" \
    "$(grep -c '^built$' <<<"$(rfield role)") $(rfield log_so | sort -n | tail -n1)"
t_eq "s3 without the plugin: the 2 other nodes waited on the builder node's lock" 2 "$(cross_waits)"
S3_OFF="wall ${SECS}s; $(summary); cross-node waits: $(cross_waits)"
lab_wait_idle 30 >/dev/null
clean_home
run_ext "$RUN_TIMEOUT" extc_s3 -N3 --ntasks-per-node=1 --ext-cache=local
figures "Scenario 3 with the plugin: srun -N3 --ext-cache=local"
t_note "  (the lab's 3 nodes share this machine's $(nproc) cores, so 3 private builds at once take longer here than on 3 real nodes)"
t_eq "s3 with the plugin: srun exits 0" 0 "$RC"
t_eq "s3 with the plugin: all 3 ranks loaded the op" 3 "$(grep -c . <<<"$RES")"
t_eq "s3 with the plugin: every rank built in its node's private directory" "" "$(private_layout)"
t_eq "s3 with the plugin: each new leaf held only torch_kernels at task start, torch made torch_extensions itself" \
    "$(printf 'n%s torch_kernels no\n' 1 2 3)" \
    "$(awk "$KV"' { kv(); print F["node"], F["leaf0"], F["tedir0"] }' <<<"$RES" | sort)"
t_eq "s3 with the plugin: 3 directories, one per node" 3 "$(rfield dirid | sort -u | wc -l)"
t_eq "s3 with the plugin: each node built once, none waited" "$(printf 'n%s 1 1 0 0 1 1 1\n' 1 2 3)" "$(per_node)"
t_eq "s3 with the plugin: no node waited on another node's lock" 0 "$(cross_waits)"
t_check "s3 with the plugin: nothing in the shared home" test ! -e "$HOME_EXT"
S3_ON="wall ${SECS}s; $(summary); cross-node waits: $(cross_waits)"
lab_wait_idle 30 >/dev/null

# ==================================================================================
# Scenario 4: a stale binary after an environment change
# ==================================================================================
clean_home
set_header 1 "2023-01-01 00:00:00"
run_ext "$RUN_TIMEOUT" extc_s4 -N1 -w n1
figures "Scenario 4a without the plugin: first job on n1, header says 1"
t_eq "s4a: srun exits 0" 0 "$RC"
t_eq "s4a: built into the home cache, op reports version 1, header 1" "built 1 1 $DEFAULT_ROOT" \
    "$(awk "$KV"' { kv(); print F["role"], F["version"], F["header"], F["root"] }' <<<"$RES")"
S4A="$(rfield version) (built in $(rfield build_s)s)"
# The "package" is upgraded: the header now says 2 but keeps an old mtime,
# as dpkg/rpm/pip/conda install files with the mtime they were packaged with.
set_header 2 "2023-06-01 00:00:00"
so=$DEFAULT_ROOT/extc_s4/extc_s4.so
t_note "header mtime $(stat -c %y "$HEADER"), cached op built $(stat -c %y "$so" 2>/dev/null)"
lab_wait_idle 30 >/dev/null
run_ext "$RUN_TIMEOUT" extc_s4 -N1 -w n2
figures "Scenario 4b without the plugin: a later job on n2 after the upgrade, header says 2"
t_eq "s4b: srun exits 0" 0 "$RC"
t_eq "s4b: the persistent cache silently served the OLD build: op reports 1 while the header says 2, nothing rebuilt" \
    "reused 1 2 0" "$(awk "$KV"' { kv(); print F["role"], F["version"], F["header"], F["compiled"] + F["linked"] }' <<<"$RES")"
t_contains "s4b: ninja found nothing to do" "ninja: no work to do." "$OUT"
S4B="$(rfield version) (header $(rfield header), ninja: no work to do)"
lab_wait_idle 30 >/dev/null
run_ext "$RUN_TIMEOUT" extc_s4 -N1 -w n2 --ext-cache=local
figures "Scenario 4c with the plugin: the same job on n2 with --ext-cache=local"
t_eq "s4c: srun exits 0" 0 "$RC"
t_eq "s4c: the fresh private directory built against the new header: op reports 2" \
    "built 2 2" "$(awk "$KV"' { kv(); print F["role"], F["version"], F["header"] }' <<<"$RES")"
t_eq "s4c: built in the private directory" "" "$(private_layout)"
S4C="$(rfield version) (built in $(rfield build_s)s)"
set_header 1 "2023-01-01 00:00:00"
clean_home
lab_assert_no_drain "no node drained after the torch scenarios"
t_eq "no ext-cache error in any slurmd/slurmstepd log" "" \
    "$(grep -h 'error: ext-cache' "$LAB"/log/slurmd-n*.log 2>/dev/null)"

t_note "==== figures ===="
t_note "1 one build per node:  $S1_FIG"
t_note "2 stale lock:          without plugin: $S2_HANG"
t_note "                       with plugin:    $S2_FIX"
t_note "3 shared home:         without plugin: $S3_OFF"
t_note "                       with plugin:    $S3_ON"
t_note "4 stale binary:        v1 job reports $S4A; after the header upgrade, without plugin reports $S4B; with plugin reports $S4C"
t_note "suite ran $(since "$SUITE_T0") s, $(since "$LAB_T0") s of it on the cluster"
itest_end
