# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared set-up of the integration suites, which are bats-core files
# (tests/integration/test_*.bats) using bats-support and bats-assert, the
# Debian packages of the harness pyxis uses. Every file:
#
#   load lib/itest
#   setup_file()    { itest_setup_file; itest_cluster ARGS...; }
#   teardown_file() { itest_teardown_file; }
#   @test "..." { ...assert_equal / assert_output / itest_* ... }
#
# The cluster (lib/cluster.sh) is set up once per file; a @test that needs
# other plugin arguments restarts it with itest_cluster. What one @test
# leaves for a later one goes in files under $LAB/work or $BATS_FILE_TMPDIR
# (each @test runs in a process of its own). Nothing is ever skipped: a test
# that cannot get root, Slurm or the plugin fails.
#
# Run one file: bats tests/integration/test_core.bats; one case: add
# -f 'REGEX'. tests/run-all.sh counts the TAP lines of every file.

bats_load_library bats-support
bats_load_library bats-assert

ITEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ITEST_TOP=$(cd "$ITEST_DIR/../.." && pwd)
# shellcheck source=cluster.sh
. "$ITEST_DIR/lib/cluster.sh"

# The plugin under test: the build tree's, unless EXTC_PLUGIN names another.
ITEST_PLUGIN=${EXTC_PLUGIN:-$ITEST_TOP/.libs/ext_cache.so}
# Node-local base: /var/tmp is private to every lab node.
# shellcheck disable=SC2034  # read by the suites
ITEST_BASE=/var/tmp/ext-cache

# itest_setup_file: root, the built plugin, a fresh lab with the plugin
# installed; exports what every @test reads (the lab's lock is inherited).
itest_setup_file() {
    [ "$(id -u)" -eq 0 ] || fail "integration tests must run as root (they start Slurm and create a user); uid $(id -u)"
    [ -f "$ITEST_PLUGIN" ] || fail "$ITEST_PLUGIN is missing: build first (make)"
    LAB_SLURM_CONF_EXTRA=${LAB_SLURM_CONF_EXTRA:-SlurmdDebug=verbose}
    lab_setup || fail "lab_setup failed"
    lab_install_plugin "$ITEST_PLUGIN" || fail "cannot install $ITEST_PLUGIN into the lab"
    ITEST_UID=$(id -u "$LAB_USER")
    ITEST_GID=$(id -g "$LAB_USER")
    export ITEST_UID ITEST_GID LAB_SLURM_CONF_EXTRA _LAB_LOCK_FD _LAB_LOCK_PATH
}

itest_teardown_file() {
    lab_stop >/dev/null 2>&1
    true
}

# itest_cluster ARGS...: (re)start the cluster with the plugin loaded with
# ARGS. The spank epilog runs only if the plugin was there when slurmd
# started, so every configuration change restarts the daemons.
itest_cluster() {
    lab_stop >/dev/null 2>&1
    lab_set_plugstack "required $LAB_PLUGIN $*" || fail "cannot write plugstack.conf"
    lab_start >/dev/null || fail "the cluster did not start: $(lab_tail_logs 2>&1 | tail -n 40)"
}

# itest_plugstack LINE: change plugstack.conf without restarting (steps re-read it).
itest_plugstack() {
    lab_wait_idle 30 >/dev/null 2>&1
    lab_set_plugstack "$@"
}

# itest_absent NODE PATH: PATH does not exist inside node NODE's mount
# namespace (lab_node's own failures, 125 or nsenter's, do not count as absent).
itest_absent() {
    local rc=0
    lab_node "$1" test -e "$2" || rc=$?
    [ "$rc" -eq 1 ]
}

# itest_gone_everywhere PATH: PATH exists on no node (fails naming the nodes).
itest_gone_everywhere() {
    local n left=""
    for n in $(lab_nodes); do
        itest_absent "$n" "$1" || left="$left $n"
    done
    [ -z "$left" ] || fail "$1 still exists on:$left"
}

# itest_match REGEX TEXT: some line of TEXT matches the extended REGEX.
itest_match() {
    grep -qE -- "$1" <<<"$2" || fail "no line matches /$1/ in:"$'\n'"$2"
}

# itest_no_drain: no node is drained or down (after the jobs ended).
itest_no_drain() {
    local d
    lab_wait_idle 30 >/dev/null 2>&1
    d=$(lab_drained_nodes 2>&1) || fail "cannot query node states: $d"
    [ -z "$d" ] || fail "drained/down: $(tr '\n' ' ' <<<"$d")"$'\n'"$(_lab_sl sinfo -R 2>&1)"
}

# itest_sbatch VAR SCRIPT [SBATCH ARGS...]: submit SCRIPT (a file in
# $LAB/work) as the user, wait for the job to end, set VAR to the job id;
# fails unless the job COMPLETED.
itest_sbatch() {
    local __var=$1 script=$2 out id state
    shift 2
    out=$(lab_user sbatch --parsable -o "$LAB/work/%j.out" "$@" "$script" 2>&1) ||
        fail "sbatch $script: $out"
    id=${out%%;*}
    state=$(lab_wait_job "$id" 120)
    printf -v "$__var" '%s' "$id"
    [ "$state" = COMPLETED ] ||
        fail "job $id ($script): state $state; output: $(cat "$LAB/work/$id.out" 2>/dev/null)"
}

# itest_poll SECONDS CMD...: run CMD every 0.1 s until it succeeds, or give
# up after SECONDS (rc 1): how a suite waits for a condition, never a fixed
# sleep standing in for one.
itest_poll() {
    local deadline
    deadline=$(_lab_deadline "$1")
    shift
    until "$@"; do
        _lab_past "$deadline" && return 1
        sleep 0.1
    done
}

# itest_save NAME VALUE / itest_load NAME: what one @test leaves for a later one.
itest_save() { printf '%s' "$2" >"$BATS_FILE_TMPDIR/$1"; }
itest_load() {
    [ -f "$BATS_FILE_TMPDIR/$1" ] || fail "an earlier test did not record $1 (did it fail?)"
    cat "$BATS_FILE_TMPDIR/$1"
}
