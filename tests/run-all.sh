#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, from a fresh Debian 12 machine, as root:
#   install dependencies, build with warnings as errors, run the cmocka unit
#   tests, every integration suite on a throwaway 3-node Slurm, the packaging
#   suites (man page, distcheck, .deb installed into the lab, RPM) and the
#   hardening suite (sanitizers, valgrind, adversarial and fault injection,
#   fuzz corpora); first, the static checks (tests/lint.sh: shellcheck,
#   cppcheck, duplicates).
# Ends with one line "N passed, M failed" summing every suite; exits non-zero
# if anything failed or if no test ran.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
logdir=${EXTC_TEST_LOGS:-$top/tests/logs}
mkdir -p "$logdir"

if [ "$(id -u)" -ne 0 ]; then
    echo "tests/run-all.sh: must run as root (it installs packages and starts Slurm)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

passed=0
failed=0
failed_suites=""

# count_from LOG KIND: add a suite's own counts to the totals.
count_from() {
    local log=$1 kind=$2 p f
    case $kind in
        cmocka)
            p=$(grep -h '^\[  PASSED  \] [0-9]* test' "$log" | awk '{s += $4} END {print s + 0}')
            f=$(grep -h '^\[  FAILED  \] [0-9]* test' "$log" | awk '{s += $4} END {print s + 0}')
            ;;
        tap)
            # bats --tap: one "ok N name" or "not ok N name" per @test; a
            # skipped @test ("ok N name # skip") is a failure here, as in make check
            p=$(grep -E '^ok [0-9]+ ' "$log" | grep -cvE ' # skip( |$)')
            f=$(($(grep -cE '^not ok [0-9]+ ' "$log") + $(grep -cE '^ok [0-9]+ .* # skip( |$)' "$log")))
            ;;
        plain)
            p=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1 | awk '{print $1}')
            f=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1 | awk '{print $3}')
            ;;
    esac
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
}

step() { printf '\n=== %s\n' "$*"; }

step "dependencies"
scripts/install-deps.sh test || { echo "0 passed, 1 failed"; exit 1; }

step "build (warnings are errors)"
# the benchmark programs too: make bench is not part of the run, but must build
if ! { autoreconf -fi && ./configure --enable-werror && make -j2 &&
    make -j2 bench/rm_bench bench/warm_bench; } >"$logdir/build.log" 2>&1; then
    tail -40 "$logdir/build.log"
    echo "build failed; see $logdir/build.log"
    echo "0 passed, 1 failed"
    exit 1
fi

step "unit tests (make check)"
echo "# dependencies and build took $SECONDS s"
make -j2 check >"$logdir/unit.log" 2>&1
rc=$?
cat tests/unit/*.log tests/adversarial/*.log tests/fault/*.log >"$logdir/unit-detail.log" 2>/dev/null
grep -E '^(PASS|FAIL|ERROR|# )' "$logdir/unit.log"
count_from "$logdir/unit-detail.log" cmocka
for replay in fuzz/replay_*.log; do
    [ -e "$replay" ] && count_from "$replay" plain
done
# a program skips (exit 77) only when not root; here that is a failure
if grep -qE '^# SKIP: +[1-9]' "$logdir/unit.log"; then
    echo "make check skipped programs: $(grep -E '^SKIP:' "$logdir/unit.log" | paste -sd' ' -)"
    failed=$((failed + 1))
    failed_suites="$failed_suites unit-skipped"
fi
if [ "$rc" -ne 0 ]; then
    failed_suites="$failed_suites unit"
    grep -B2 -A8 -E '\[  (FAILED|ERROR)|FAILED  \]' "$logdir/unit-detail.log" | head -60
    # a crash counts even if no cmocka line said so
    [ "$(grep -c '^FAIL\|^ERROR' "$logdir/unit.log")" -gt 0 ] && failed=$((failed + 1))
fi

# every other suite prints ok/not ok lines: the integration suites are bats
# files (TAP), the others close with "N passed, M failed"

# start_suite SUITE[:ARG]: run it in the background into its log; sets
# suite_name, suite_kind and suite_pid
start_suite() {
    local suite=$1 args=() run envs=()
    case $suite in *:*) args=("${suite#*:}") suite=${suite%:*} ;; esac
    suite_name=$(basename "$(dirname "$suite")")-$(basename "${suite%.bats}" .sh)${args[0]:+-${args[0]}}
    run=(bash "$suite")
    suite_kind=plain
    case $suite in *.bats) run=(bats --tap "$suite") suite_kind=tap ;; esac
    # make check ran above and runs again inside test_distcheck's build:
    # the packages are built without a third and fourth run
    case $suite_name in packaging-test_deb | packaging-test_rpm) envs=(EXTC_PKG_NOCHECK=1) ;; esac
    env "${envs[@]}" "${run[@]}" "${args[@]}" >"$logdir/$suite_name.log" 2>&1 &
    suite_pid=$!
}

# end_suite NAME KIND PID T0: wait for it, then count its log
end_suite() {
    local name=$1 kind=$2 rc=0
    wait "$3" || rc=$?
    echo "# $name took $((SECONDS - $4)) s"
    grep -E '^(not ok|[0-9]+ passed)' "$logdir/$name.log"
    count_from "$logdir/$name.log" "$kind"
    if [ "$rc" -ne 0 ]; then
        failed_suites="$failed_suites $name"
        # a suite that failed without saying which test failed counts once
        grep -q -E '^([0-9]+ passed, [0-9]+ failed|not ok )' "$logdir/$name.log" || failed=$((failed + 1))
    fi
}

for suite in tests/lint.sh tests/integration/test_*.bats tests/integration/test_*.sh tests/packaging/test_*.sh \
    releases tests/run-hardening.sh; do
    if [ "$suite" = releases ]; then
        # the other Slurm releases (24.11 in Debian 13, 26.05 in Debian
        # forky), each in a chroot with its own lab and ports, run at the
        # same time: most of their time is spent waiting on jobs, and the
        # one phase that touches the host's devices (the recipe's make
        # check) takes a lock in run-release.sh
        step "releases-run-release-trixie and releases-run-release-forky, side by side"
        t0=$SECONDS
        start_suite tests/releases/run-release.sh:trixie
        trixie=("$suite_name" "$suite_kind" "$suite_pid")
        start_suite tests/releases/run-release.sh:forky
        end_suite "${trixie[@]}" "$t0"
        end_suite "$suite_name" "$suite_kind" "$suite_pid" "$t0"
        continue
    fi
    [ -f "$suite" ] || continue
    t0=$SECONDS
    start_suite "$suite"
    step "$suite_name"
    end_suite "$suite_name" "$suite_kind" "$suite_pid" "$t0"
done

step "summary"
echo "# the whole run took $SECONDS s"
[ -n "$failed_suites" ] && echo "failing suites:$failed_suites (logs in $logdir)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ -z "$failed_suites" ] && [ "$passed" -gt 0 ]
