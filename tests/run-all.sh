#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, from a fresh Debian 12 machine, as root (what CI runs):
#   install dependencies, build with warnings as errors, make check (the
#   tier any builder runs); then, in the background, three chroot lanes:
#   the admin guide's package and From-source recipes on a fresh minbase Debian 12
#   (tests/releases/run-recipes.sh) and Slurm 24.11 and 26.05 in Debian 13
#   and forky chroots (tests/releases/run-release.sh); meanwhile, one after
#   the other: the static checks (tests/lint.sh: shellcheck, cppcheck,
#   jscpd), every integration suite on a throwaway 3-node Slurm, the
#   packaging suites (man page, distcheck, .deb installed into the lab, RPM,
#   each with make check on) and the hardening suite (make check and make
#   check-root under sanitizers and valgrind, fuzz corpora). (Run beside
#   the lab suites, the hardening suite made them take about twice as long
#   on 2 cores: the machine is CPU-bound then, so it stays in this row.)
# Ends with each suite's seconds and one line "N passed, M failed" summing
# every suite; exits non-zero if anything failed or if no test ran.
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

step "unit tests (make check: the tier any builder runs; make check-root runs in run-hardening.sh)"
echo "# dependencies and build took $SECONDS s"
timings="$(printf '%-44s %6d' "dependencies and build" "$SECONDS")"$'\n'
t0=$SECONDS
make -j2 check >"$logdir/unit.log" 2>&1
rc=$?
cat tests/unit/*.log tests/adversarial/*.log tests/fault/*.log >"$logdir/unit-detail.log" 2>/dev/null
grep -E '^(PASS|FAIL|ERROR|# )' "$logdir/unit.log"
count_from "$logdir/unit-detail.log" cmocka
for replay in fuzz/replay_*.log; do
    [ -e "$replay" ] && count_from "$replay" plain
done
timings="$timings$(printf '%-44s %6d' "make check" $((SECONDS - t0)))"$'\n'
# no program of make check may skip
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
    local suite=$1 args=() run
    case $suite in *:*) args=("${suite#*:}") suite=${suite%:*} ;; esac
    suite_name=$(basename "$(dirname "$suite")")-$(basename "${suite%.bats}" .sh)${args[0]:+-${args[0]}}
    run=(bash "$suite")
    suite_kind=plain
    case $suite in *.bats) run=(bats --tap "$suite") suite_kind=tap ;; esac
    # the suite notes when it ended: a lane is waited for long after that
    rm -f "$logdir/$suite_name.ended"
    (
        "${run[@]}" "${args[@]}"
        rc=$?
        echo "$SECONDS" >"$logdir/$suite_name.ended"
        exit "$rc"
    ) >"$logdir/$suite_name.log" 2>&1 &
    suite_pid=$!
}

# end_suite NAME KIND PID T0: wait for it, then count its log
end_suite() {
    local name=$1 kind=$2 rc=0 ended
    wait "$3" || rc=$?
    ended=$(cat "$logdir/$name.ended" 2>/dev/null)
    ended=${ended:-$SECONDS}
    echo "# $name took $((ended - $4)) s"
    timings="$timings$(printf '%-44s %6d' "$name" $((ended - $4)))"$'\n'
    grep -E '^(not ok|[0-9]+ passed)' "$logdir/$name.log"
    count_from "$logdir/$name.log" "$kind"
    if [ "$rc" -ne 0 ]; then
        failed_suites="$failed_suites $name"
        # a suite that failed without saying which test failed counts once
        grep -q -E '^([0-9]+ passed, [0-9]+ failed|not ok )' "$logdir/$name.log" || failed=$((failed + 1))
    fi
}

# The chroot lanes start first and run beside everything else: the admin
# guide's package and From-source recipes on a fresh minbase Debian 12
# (tests/releases/run-recipes.sh), and the other Slurm releases (24.11 in
# Debian 13, 26.05 in Debian forky), each in its own chroot with its own lab
# directory and ports. None of them touches the host's devices, mounts
# outside its chroot or the host's lab; most of their time is spent in apt
# and waiting on jobs.
lanes=()
for lane in tests/releases/run-recipes.sh:bookworm tests/releases/run-release.sh:trixie \
    tests/releases/run-release.sh:forky; do
    start_suite "$lane"
    lanes+=("$suite_name $suite_kind $suite_pid $SECONDS")
done
echo "# started in the background: ${lanes[*]%% *}"

for suite in tests/lint.sh tests/integration/test_*.bats tests/packaging/test_*.sh tests/run-hardening.sh; do
    [ -f "$suite" ] || continue
    t0=$SECONDS
    start_suite "$suite"
    step "$suite_name"
    end_suite "$suite_name" "$suite_kind" "$suite_pid" "$t0"
done

for lane in "${lanes[@]}"; do
    # shellcheck disable=SC2086 # NAME KIND PID T0
    set -- $lane
    step "$1 (started in the background)"
    end_suite "$1" "$2" "$3" "$4"
done

step "summary"
echo "# seconds per suite (the chroot lanes ran beside the others):"
printf '%s' "$timings" | sed 's/^/#   /'
echo "# the whole run took $SECONDS s"
[ -n "$failed_suites" ] && echo "failing suites:$failed_suites (logs in $logdir)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ -z "$failed_suites" ] && [ "$passed" -gt 0 ]
