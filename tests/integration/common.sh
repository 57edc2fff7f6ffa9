# shellcheck shell=bash source-path=SCRIPTDIR
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared set-up for the integration suites: the lab cluster with ext_cache.so
# loaded, and small helpers to run jobs as the test user and look at nodes.
#
# Every suite: source this, call `itest_begin`, run its cases, `itest_end`.

ITEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ITEST_TOP=$(cd "$ITEST_DIR/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$ITEST_DIR/../lib/tap.sh"
# shellcheck source=lib/cluster.sh
. "$ITEST_DIR/lib/cluster.sh"

# The plugin under test: the build tree's, unless EXTC_PLUGIN names another.
ITEST_PLUGIN=${EXTC_PLUGIN:-$ITEST_TOP/.libs/ext_cache.so}
# Node-local base: /var/tmp is private to every lab node.
# shellcheck disable=SC2034  # read by the suites that source this file
ITEST_BASE=/var/tmp/ext-cache

itest_begin() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "integration tests must run as root (they start Slurm and create a user)" >&2
        t_fail "running as root" "uid $(id -u)"
        t_summary
        exit 1
    fi
    if [ ! -f "$ITEST_PLUGIN" ]; then
        t_fail "plugin built" "$ITEST_PLUGIN is missing: build first (make)"
        t_summary
        exit 1
    fi
    trap 'lab_stop >/dev/null 2>&1' EXIT
    LAB_SLURM_CONF_EXTRA=${LAB_SLURM_CONF_EXTRA:-SlurmdDebug=verbose}
    lab_setup || { t_fail "lab setup" "lab_setup failed"; t_summary; exit 1; }
    lab_install_plugin "$ITEST_PLUGIN" || { t_fail "lab setup" "cannot install plugin"; t_summary; exit 1; }
    # shellcheck disable=SC2034  # read by the suites that source this file
    ITEST_UID=$(id -u "$LAB_USER")
    # shellcheck disable=SC2034  # read by the suites that source this file
    ITEST_GID=$(id -g "$LAB_USER")
}

# itest_cluster ARGS...: (re)start the cluster with the plugin loaded with ARGS.
# The spank epilog runs only if the plugin was there when slurmd started, so
# every configuration change restarts the daemons.
itest_cluster() {
    lab_stop >/dev/null 2>&1
    lab_set_plugstack "required $LAB_PLUGIN $*" || return 1
    lab_start >/dev/null || { lab_tail_logs >&2; return 1; }
}

# itest_plugstack LINE: change plugstack.conf without restarting (steps re-read it).
itest_plugstack() {
    lab_wait_idle 30 >/dev/null 2>&1
    lab_set_plugstack "$@"
}

# itest_node_has NODE PATH: does PATH exist inside node NODE's mount namespace?
itest_node_has() {
    lab_node "$1" test -e "$2"
}

# itest_absent NODE PATH: PATH does not exist inside node NODE's mount namespace.
# (lab_node's own failures, 125 or nsenter's, do not count as absent)
itest_absent() {
    lab_node "$1" test -e "$2"
    [ "$?" -eq 1 ]
}

# itest_gone_everywhere NAME PATH: PATH exists on no node.
itest_gone_everywhere() {
    local name=$1 path=$2 n left=""
    for n in $(lab_nodes); do
        if ! itest_absent "$n" "$path"; then
            left="$left $n"
        fi
    done
    if [ -z "$left" ]; then
        t_pass "$name"
    else
        t_fail "$name" "$path still exists on:$left"
    fi
}

# itest_sbatch OUTVAR SCRIPT [SBATCH ARGS...]: submit SCRIPT (a file in $LAB/work)
# as the user, wait for the job to end, set OUTVAR to the job id.
itest_sbatch() {
    local __var=$1 script=$2 out id state
    shift 2
    out=$(lab_user sbatch --parsable -o "$LAB/work/%j.out" "$@" "$script" 2>&1) || {
        t_fail "sbatch $script" "$out"
        return 1
    }
    id=${out%%;*}
    state=$(lab_wait_job "$id" 120)
    printf -v "$__var" '%s' "$id"
    if [ "$state" != COMPLETED ]; then
        t_fail "job $id ($script) completed" "state $state; output: $(cat "$LAB/work/$id.out" 2>/dev/null)"
        return 1
    fi
}

# itest_poll SECONDS CMD...: run CMD every 0.1 s until it succeeds (rc 0), or
# give up after SECONDS (rc 1): how a suite waits for a condition, never a
# fixed sleep standing in for one.
itest_poll() {
    local deadline
    deadline=$(_lab_deadline "$1")
    shift
    until "$@"; do
        _lab_past "$deadline" && return 1
        sleep 0.1
    done
}

itest_end() {
    lab_stop >/dev/null 2>&1
    trap - EXIT
    t_summary
}

# itest_match NAME REGEX TEXT: some line of TEXT matches the extended REGEX.
itest_match() {
    if grep -qE -- "$2" <<<"$3"; then
        t_pass "$1"
    else
        t_fail "$1" "no line matches /$2/ in:"$'\n'"$3"
    fi
}
