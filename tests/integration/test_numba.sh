#!/bin/bash
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
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

PY=/usr/bin/python3
SUITE_T0=$EPOCHREALTIME
since() {
    local since_us=${1/[.,]/} now_us=${EPOCHREALTIME/[.,]/}
    printf '%d.%d' $(((now_us - since_us) / 1000000)) $(((now_us - since_us) % 1000000 / 100000))
}

itest_begin

t_check "prerequisite: $PY imports numba and numpy (python3-numba)" lab_user "$PY" -c 'import numba, numpy' ||
    { t_fail "prerequisites" "install python3-numba (scripts/install-deps.sh test)"; itest_end; exit 1; }

# ---- the "installed package": root-owned, read-only for the user -----------------
NB=$LAB/work/numba
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
HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
HOME_NUMBA=$HOME_DIR/.cache/numba
rm -rf -- "$HOME_NUMBA"

itest_cluster "base=$ITEST_BASE" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }

# shellcheck disable=SC2016  # an awk program: $i is awk's field
KV='function kv(  i, k) { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }'
# run SRUN-ARGS... -- CMD: as the user; sets OUT, RES, RC, SECS
run() {
    local t0=$EPOCHREALTIME
    OUT=$(lab_user timeout -k 10 180 srun "$@" 2>&1)
    RC=$?
    SECS=$(since "$t0")
    RES=$(grep '^RESULT ' <<<"$OUT")
}
rfield() { awk "$KV"' { kv(); print F["'"$1"'"] }' <<<"$RES"; }
figures() {
    t_note "$1 -- wall ${SECS} s, srun rc $RC"
    awk "$KV"' { kv(); printf "  %s rank %s run %s: value %s (helper says scale %s) hits %s misses %s, %s .nbi %s .nbc in %s, %ss\n",
        F["node"], F["rank"], F["run"], F["value"], F["helper_scale"], F["hits"], F["misses"], F["nbi"], F["nbc"], F["cache_path"], F["secs"] }' \
        <<<"$RES" | sort | while IFS= read -r l; do t_note "$l"; done
}
home_snapshot() { find "$HOME_NUMBA" -printf '%p %s %T@\n' 2>/dev/null | sort; }

# ---- 1. without the plugin: the cache goes to the shared home --------------------
run -N3 --ntasks-per-node=1 "$PY" "$NB/numba_job.py" off
figures "numba without the plugin: srun -N3"
t_eq "off: srun exits 0" 0 "$RC"
t_eq "off: 3 ranks reported" 3 "$(grep -c . <<<"$RES")"
t_eq "off: NUMBA_CACHE_DIR not set in the tasks" "-" "$(rfield numba_env | sort -u)"
t_eq "off: every node's cache is the same directory under ~/.cache/numba" "1 $HOME_NUMBA/" \
    "$(rfield dirid | sort -u | wc -l) $(rfield cache_path | sort -u | cut -c1-$((${#HOME_NUMBA} + 1)))"
t_eq "off: the right value" "499500.0" "$(rfield value | sort -u)"
OFF_FIG="cache in $(rfield cache_path | sort -u) shared by $(rfield node | sort -u | paste -sd, -)"
lab_wait_idle 30 >/dev/null

# ---- 2. with the plugin: private, node-local, reused within the step ---------------
before=$(home_snapshot)
run -N3 --ntasks-per-node=2 --ext-cache=local bash -c "$PY $NB/numba_job.py first && $PY $NB/numba_job.py second"
figures "numba with the plugin: srun -N3 --ntasks-per-node=2 --ext-cache=local, two processes per rank"
t_eq "local: srun exits 0" 0 "$RC"
t_eq "local: 6 ranks x 2 processes reported" 12 "$(grep -c . <<<"$RES")"
bad=$(awk "$KV"' { kv(); d = "'"$ITEST_BASE/$ITEST_UID/"'" F["job"] "/" F["step"]
    if (F["cachedir"] != d || F["numba_env"] != d "/numba" || index(F["cache_path"], F["numba_env"] "/") != 1) print }' <<<"$RES")
t_eq "local: NUMBA_CACHE_DIR reached every task as SLURM_EXT_CACHE_DIR/numba and numba cached there" "" "$bad"
t_eq "local: the index and the machine code landed in the private directory" "" \
    "$(awk "$KV"' { kv(); if (F["nbi"] < 1 || F["nbc"] < 1) print }' <<<"$RES")"
t_eq "local: the second process of every rank loaded from the private cache (hit, no compile)" "" \
    "$(awk "$KV"' { kv(); if (F["run"] == "second" && (F["hits"] < 1 || F["misses"] != 0)) print }' <<<"$RES")"
t_eq "local: one cache directory per node" "3 3" \
    "$(rfield dirid | sort -u | wc -l) $(awk "$KV"' { kv(); print F["node"], F["dirid"] }' <<<"$RES" | sort -u | wc -l)"
t_eq "local: the home cache was not touched" "$before" "$(home_snapshot)"
local_job=$(rfield job | head -n1)
LOCAL_FIG="cache in $(rfield cache_path | sort -u) on each of $(rfield node | sort -u | paste -sd, -); second processes: $(awk "$KV"' { kv(); if (F["run"] == "second") h += F["hits"] } END { print h + 0 }' <<<"$RES") cache hits"
lab_wait_idle 30 >/dev/null
itest_gone_everywhere "local: the private cache is gone on every node after the job" "$ITEST_BASE/$ITEST_UID/${local_job:-none}"

# ---- 3. stale binary: a called function changes, the cached caller does not --------
sed -i 's/return 1.0/return 2.0/' "$NB/helper.py"
run -N1 -w n2 "$PY" "$NB/numba_job.py" stale
figures "numba without the plugin after helper.scale() changed to 2.0"
t_eq "stale, without the plugin: the home cache served the OLD code (value for scale 1, helper says 2, cache hit)" \
    "499500.0 2.0 1 0" "$(awk "$KV"' { kv(); print F["value"], F["helper_scale"], F["hits"], F["misses"] }' <<<"$RES")"
STALE_FIG="without plugin: $(rfield value) (stale; helper says $(rfield helper_scale))"
lab_wait_idle 30 >/dev/null
run -N1 -w n2 --ext-cache=local "$PY" "$NB/numba_job.py" fresh
figures "numba with the plugin after helper.scale() changed to 2.0"
t_eq "stale, with the plugin: compiled afresh against the new helper" \
    "999000.0 2.0 0 1" "$(awk "$KV"' { kv(); print F["value"], F["helper_scale"], F["hits"], F["misses"] }' <<<"$RES")"
t_eq "one task in a new leaf: NUMBA_CACHE_DIR did not exist, numba made it itself and cached there" \
    "no 1 1" "$(awk "$KV"' { kv(); print F["numba_env_existed"], F["nbi"], F["nbc"] }' <<<"$RES")"
STALE_FIG="$STALE_FIG; with plugin: $(rfield value)"
rm -rf -- "$HOME_NUMBA"
lab_assert_no_drain "no node drained after the numba cases"
t_eq "no ext-cache error in any slurmd/slurmstepd log" "" "$(grep -h 'error: ext-cache' "$LAB"/log/slurmd-n*.log 2>/dev/null)"

t_note "==== numba figures ===="
t_note "without plugin: $OFF_FIG"
t_note "with plugin:    $LOCAL_FIG"
t_note "stale code:     $STALE_FIG"
t_note "suite ran $(since "$SUITE_T0") s"
itest_end
