#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Numba's on-disk cache (@njit(cache=True), NUMBA_CACHE_DIR) on a real 3-node
# Slurm, as the unprivileged user, with Debian's python3-numba:
#   * without the plugin the cache of code installed read-only (as site
#     packages are) goes to ~/.cache/numba, one directory for every node;
#   * with --ext-cache=local NUMBA_CACHE_DIR reaches every task, the cache
#     lands in the step's private node-local directory, a second process of
#     the step loads from it, and the home cache is not touched;
#   * stale binary: numba keys its cache on the cached function's own source
#     file only, so after a change in a function it calls, a persistent cache
#     silently serves the old machine code; the plugin's fresh directory
#     compiles the new one.
# Missing numba fails the suite; it is never skipped.

load lib/itest

PY=/usr/bin/python3
NB=$LAB/work/numba
# shellcheck disable=SC2016  # an awk program: $i is awk's field
KV='function kv(  i, k) { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }'

setup_file() {
    itest_setup_file
    lab_user "$PY" -c 'import numba, numpy' || fail "$PY does not import numba and numpy (python3-numba)"
    # the "installed package": root-owned, read-only for the user
    rm -rf "$NB" && mkdir -p "$NB"
    cat >"$NB/helper.py" <<'PY'
from numba import njit


@njit
def scale():
    return 1.0
PY
    cat >"$NB/kernels.py" <<'PY'
from numba import njit

from helper import scale


@njit(cache=True)
def weighted_sum(x):
    s = 0.0
    for v in x:
        s += v
    return s * scale()
PY
    cat >"$NB/numba_job.py" <<'PY'
"""Call a cached numba kernel; print RESULT key=value ... (no spaces in values)."""
import os
import socket
import sys
import time

t0 = time.time()
# before numba runs: the plugin leaves this directory to numba (docs/cache-dirs.md)
pre = "yes" if os.path.isdir(os.environ.get("NUMBA_CACHE_DIR") or "/nonexistent") else "no"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import helper  # noqa: E402
import kernels  # noqa: E402

value = kernels.weighted_sum(np.arange(1000, dtype=np.float64))
st = kernels.weighted_sum.stats
path = st.cache_path
files = os.listdir(path) if os.path.isdir(path) else []
fields = {
    "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
    "rank": os.environ.get("SLURM_PROCID", "-"),
    "run": sys.argv[1] if len(sys.argv) > 1 else "-",
    "job": os.environ.get("SLURM_JOB_ID", "-"),
    "step": os.environ.get("SLURM_STEP_ID", "-"),
    "cachedir": os.environ.get("SLURM_EXT_CACHE_DIR") or "-",
    "numba_env": os.environ.get("NUMBA_CACHE_DIR") or "-",
    "numba_env_existed": pre,
    "cache_path": path,
    "dirid": "%d:%d" % (os.stat(path).st_dev, os.stat(path).st_ino) if files else "-",
    "hits": sum(st.cache_hits.values()),
    "misses": sum(st.cache_misses.values()),
    "nbi": sum(f.endswith(".nbi") for f in files),
    "nbc": sum(f.endswith(".nbc") for f in files),
    "value": value,
    "helper_scale": helper.scale.py_func(),
    "secs": "%.2f" % (time.time() - t0),
}
print("RESULT " + " ".join("%s=%s" % kv for kv in fields.items()), flush=True)
PY
    chown -R root:root "$NB" && chmod 755 "$NB" && chmod 644 "$NB"/*.py
    rm -rf -- "$(home_numba)"
    itest_cluster "base=$ITEST_BASE"
}

teardown_file() { itest_teardown_file; }

home_numba() { echo "$(getent passwd "$LAB_USER" | cut -d: -f6)/.cache/numba"; }
# run SRUN-ARGS...: as the user; sets OUT, RES, RC
run_job() {
    RC=0
    OUT=$(lab_user timeout -k 10 180 srun "$@" 2>&1) || RC=$?
    RES=$(grep '^RESULT ' <<<"$OUT" || true)
    [ "$RC" -eq 0 ] || fail "srun $*: exit $RC: $OUT"
}
rfield() { awk "$KV"' { kv(); print F["'"$1"'"] }' <<<"$RES"; }
figures() {
    echo "# $1" >&3
    awk "$KV"' { kv(); printf "#   %s rank %s run %s: value %s (helper says scale %s) hits %s misses %s, %s .nbi %s .nbc in %s, %ss\n",
        F["node"], F["rank"], F["run"], F["value"], F["helper_scale"], F["hits"], F["misses"], F["nbi"], F["nbc"], F["cache_path"], F["secs"] }' \
        <<<"$RES" | sort >&3
}
home_snapshot() { find "$(home_numba)" -printf '%p %s %T@\n' 2>/dev/null | sort; }

@test "without the plugin the cache of every node goes to one directory in the shared home" {
    run_job -N3 --ntasks-per-node=1 "$PY" "$NB/numba_job.py" off
    figures "numba without the plugin: srun -N3"
    assert_equal "$(grep -c . <<<"$RES")" 3
    # NUMBA_CACHE_DIR is not set in the tasks
    assert_equal "$(rfield numba_env | sort -u)" "-"
    h=$(home_numba)
    assert_equal "$(rfield dirid | sort -u | wc -l) $(rfield cache_path | sort -u | cut -c1-$((${#h} + 1)))" "1 $h/"
    assert_equal "$(rfield value | sort -u)" "499500.0"
}

@test "with --ext-cache=local the cache is private, node-local, reused within the step, gone after it" {
    before=$(home_snapshot)
    run_job -N3 --ntasks-per-node=2 --ext-cache=local bash -c "$PY $NB/numba_job.py first && $PY $NB/numba_job.py second"
    figures "numba with the plugin: srun -N3 --ntasks-per-node=2 --ext-cache=local, two processes per rank"
    assert_equal "$(grep -c . <<<"$RES")" 12
    # NUMBA_CACHE_DIR reached every task as SLURM_EXT_CACHE_DIR/numba and numba cached there
    assert_equal "$(awk "$KV"' { kv(); d = "'"$ITEST_BASE/$ITEST_UID/"'" F["job"] "/" F["step"]
        if (F["cachedir"] != d || F["numba_env"] != d "/numba" || index(F["cache_path"], F["numba_env"] "/") != 1) print }' <<<"$RES")" ""
    # the index and the machine code landed in the private directory
    assert_equal "$(awk "$KV"' { kv(); if (F["nbi"] < 1 || F["nbc"] < 1) print }' <<<"$RES")" ""
    # the second process of every rank loaded from the private cache (hit, no compile)
    assert_equal "$(awk "$KV"' { kv(); if (F["run"] == "second" && (F["hits"] < 1 || F["misses"] != 0)) print }' <<<"$RES")" ""
    # one cache directory per node
    assert_equal "$(rfield dirid | sort -u | wc -l) $(awk "$KV"' { kv(); print F["node"], F["dirid"] }' <<<"$RES" | sort -u | wc -l)" "3 3"
    assert_equal "$(home_snapshot)" "$before"
    local_job=$(rfield job | head -n1)
    [ -n "$local_job" ] || fail "no job id reported"
    lab_wait_settled 120 >/dev/null
    itest_gone_everywhere "$ITEST_BASE/$ITEST_UID/$local_job"
}

@test "stale binary: after a called function changes, the home cache serves the old code; the plugin compiles the new" {
    sed -i 's/return 2.0/return 1.0/' "$NB/helper.py"
    # the home cache holds the code for scale 1 (n2 shares it with every node)
    run_job -N1 -w n2 "$PY" "$NB/numba_job.py" before
    lab_wait_settled 120 >/dev/null
    sed -i 's/return 1.0/return 2.0/' "$NB/helper.py"
    run_job -N1 -w n2 "$PY" "$NB/numba_job.py" stale
    figures "numba without the plugin after helper.scale() changed to 2.0"
    # the OLD code: the value for scale 1, while the helper says 2, from a cache hit
    assert_equal "$(awk "$KV"' { kv(); print F["value"], F["helper_scale"], F["hits"], F["misses"] }' <<<"$RES")" "499500.0 2.0 1 0"
    lab_wait_settled 120 >/dev/null
    run_job -N1 -w n2 --ext-cache=local "$PY" "$NB/numba_job.py" fresh
    figures "numba with the plugin after helper.scale() changed to 2.0"
    assert_equal "$(awk "$KV"' { kv(); print F["value"], F["helper_scale"], F["hits"], F["misses"] }' <<<"$RES")" "999000.0 2.0 0 1"
    # one task in a new leaf: NUMBA_CACHE_DIR did not exist, numba made it itself and cached there
    assert_equal "$(awk "$KV"' { kv(); print F["numba_env_existed"], F["nbi"], F["nbc"] }' <<<"$RES")" "no 1 1"
    rm -rf -- "$(home_numba)"
    itest_no_drain
    assert_equal "$(grep -h 'error: ext-cache' "$LAB"/log/slurmd-n*.log 2>/dev/null || true)" ""
}
