#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One other Slurm release, for real: in a Debian chroot of that release
# (tests/releases/chroot.sh), with its own Slurm, munge, gcc and PyTorch:
#   1. on the bare minimal chroot (debootstrap --variant=minbase, nothing
#      installed): the admin guide's "From source" recipe, verbatim, installs what its
#      apt-get line names (libslurm-dev: headers only, no Slurm plugins),
#      configures with a warning, builds, passes make check and installs into
#      ${libdir}/slurm; so its apt-get line is proven complete
#   2. then REL_BUILD_PKGS and the Slurm daemons: a build with warnings as
#      errors, then the
#      integration suites on that release's own 3-node lab cluster, each
#      slurmd in a private mount namespace
#   3. the packages: the .deb built there, depending on exactly that Slurm,
#      installed with apt and running a job; the RPM built against its headers
#
#   tests/releases/run-release.sh trixie|forky [SUITE...]
#
# SUITEs are names of tests/integration/test_*.bats or tests/packaging/test_*.sh
# (a bats name may end in :REGEX, to run only the @tests whose names match)
# (default: REL_SUITES below). Must run as root. Prints ok/not ok lines and
# ends with "N passed, M failed" counting every test of every suite run (a
# skipped bats @test is a failure). The admin guide's other recipes, on Debian 12 as
# well: tests/releases/run-recipes.sh.
# Logs: $EXTC_TEST_LOGS/release-SUITE/ (default tests/logs).
set -u
REL_DIR=$(cd "$(dirname "$0")" && pwd)
REL_SRC=$(cd "$REL_DIR/../.." && pwd)
# shellcheck source=chroot.sh
. "$REL_DIR/chroot.sh"
# shellcheck source=../lib/tap.sh
. "$REL_DIR/../lib/tap.sh"

# Which suites run on every release, and why the others do not: see
# docs/compatibility.md for the table.
REL_SUITES="integration/test_core integration/test_lifecycle integration/test_warm
    integration/test_torch integration/test_inductor integration/test_init_failure integration/test_pool
    integration/test_stall integration/test_pool_abuse:^case.85 integration/test_container_key
    integration/test_tier:^(a.2-node|a.job.on.n3|a.generation.with|a.tier.open|a.step.whose)
    packaging/test_deb packaging/test_rpm"

suite=${1:-}
shift
case $suite in trixie | forky) ;; *) echo "usage: $0 trixie|forky [SUITE...]" >&2; exit 2 ;; esac
# Apptainer for real: Debian has it from sid only (1.4.5, which needs forky's
# glibc), so on forky alone; its suite runs pivoted (rel_run_pivot), as an
# unprivileged Apptainer needs a user namespace
[ "$suite" = forky ] && REL_SUITES="$REL_SUITES containers/test_apptainer"
[ "$#" -gt 0 ] && REL_SUITES="$*"
[ "$(id -u)" -eq 0 ] || { t_fail "running as root" "$0 builds chroots and starts Slurm"; t_summary; exit 1; }

logs=${EXTC_TEST_LOGS:-$REL_SRC/tests/logs}/release-$suite
mkdir -p "$logs"
root=$(rel_root "$suite")
T0=$EPOCHREALTIME

fail_end() { t_fail "$1" "$2"; finish; }
finish() {
    rel_umount "$suite"
    t_note "release $suite took $(rel_since "$T0") s"
    t_summary
    exit $?
}
trap 'rel_umount "$suite"' EXIT

# ---- the chroot ----------------------------------------------------------------------
t1=$EPOCHREALTIME
rel_make "$suite" >"$logs/debootstrap.out" 2>&1 || fail_end "debootstrap $suite" "$(tail -n 20 "$logs/debootstrap.out")"
rel_mount "$suite" || fail_end "mount the $suite chroot" "rel_mount failed"
t_pass "$suite minimal chroot, nothing installed ($(rel_since "$t1") s)"

# copy_source DEST: this source tree into the chroot at DEST
copy_source() { rel_copy_tree "$suite" "$REL_SRC" "$1"; }

# ---- 1. the bare chroot: the admin guide's recipe, verbatim ------------------------------
recipe_phase() {
    local recipe rc t1=$EPOCHREALTIME
    t_check "$suite: the recipe starts without gcc, make or libslurm-dev" \
        rel_run "$suite" sh -c '! command -v gcc && ! command -v make && ! test -e /usr/include/slurm/spank.h'
    recipe=$(rel_doc_block "$REL_SRC/docs/admin-guide.md" '^\*\*From source:\*\*')
    t_check "docs/admin-guide.md has a From source recipe" test -n "$recipe"
    copy_source /build/recipe || fail_end "copy the source tree into the chroot" "tar failed"
    # as an admin runs it, less the keyboard: debconf asks nothing, apt takes
    # yes for an answer (chroot.sh); nothing else of this environment goes in
    DEBIAN_FRONTEND=noninteractive REL_PASS_ENV=DEBIAN_FRONTEND \
        rel_run "$suite" bash -e -c "cd /build/recipe && $recipe" </dev/null >"$logs/recipe.log" 2>&1
    rc=$?
    t_eq "$suite: the admin guide's From source recipe runs verbatim on a minimal chroot (apt-get, autoreconf, configure, make, make check, make install)" \
        0 "$rc" || t_note "$(tail -n 30 "$logs/recipe.log")"
    t_check "$suite: its apt-get line brought Slurm's headers only (libslurm-dev, none of Slurm's plugins)" \
        rel_run "$suite" sh -c '! ls /usr/lib/*/slurm-wlm/auth_munge.so /usr/lib/*/slurm-wlm/select_cons_tres.so'
    t_contains "$suite: configure warns that Slurm's plugin directory was not found" \
        "WARNING: Slurm's plugin directory was not found" "$(cat "$logs/recipe.log")"
    t_check "$suite: make install put the plugin in \${libdir}/slurm" test -f "$root/usr/local/lib/slurm/ext_cache.so"
    t_check "$suite: the recipe's make check passed every program" grep -qE '^# FAIL: +0$' "$logs/recipe.log"
    t_check "$suite: ... errored none" grep -qE '^# ERROR: +0$' "$logs/recipe.log"
    t_check "$suite: ... and skipped none" grep -qE '^# SKIP: +0$' "$logs/recipe.log"
    t_note "$(grep -E '^# (TOTAL|PASS|FAIL|ERROR|SKIP|XFAIL)' "$logs/recipe.log" | paste -sd' ' -)"
    # the cmocka tests of that make check count one by one in the totals
    cat "$root"/build/recipe/tests/{unit,adversarial,fault}/*.log >"$logs/unit-detail.log" 2>/dev/null
    p=$(grep -h '^\[  PASSED  \] [0-9]* test' "$logs/unit-detail.log" | awk '{s += $4} END {print s + 0}')
    f=$(grep -h '^\[  FAILED  \] [0-9]* test' "$logs/unit-detail.log" | awk '{s += $4} END {print s + 0}')
    t_note "$suite: make check's cmocka tests: $p passed, $f failed"
    T_PASSED=$((T_PASSED + p))
    T_FAILED=$((T_FAILED + f))
    rel_run "$suite" sh -c 'cd /build/recipe && make uninstall' >/dev/null 2>&1
    t_note "$suite: the admin guide's recipe took $(rel_since "$t1") s"
}
# (EXTC_REL_RECIPE=0 leaves it out while working on the later phases; CI never sets it)
# make check touches no host state (no mounts, no users, no /dev/fuse): the
# recipes of two releases run at the same time
if [ "${EXTC_REL_RECIPE:-1}" = 0 ]; then
    t_note "$suite: the admin guide's recipe left out (EXTC_REL_RECIPE=0)"
else
    recipe_phase
fi

# ---- 2. the build packages, the daemons and the integration suites ---------------------------
t1=$EPOCHREALTIME
rel_apt "$suite" "${REL_BUILD_PKGS[@]}" >"$logs/apt-build.log" 2>&1 ||
    fail_end "$suite: build packages installed" "$(tail -n 20 "$logs/apt-build.log")"
t_pass "$suite: the build packages installed, after the recipe ($(rel_since "$t1") s)"
slurm=$(awk '$2 == "SLURM_VERSION_NUMBER" {print $3}' "$root/usr/include/slurm/slurm_version.h")
slurm=$(printf '%d.%02d.%d' $((slurm >> 16 & 255)) $((slurm >> 8 & 255)) $((slurm & 255)))
t_note "$suite: Slurm $slurm headers, $(rel_run "$suite" gcc --version | head -n1)"
t1=$EPOCHREALTIME
rel_apt "$suite" "${REL_RUN_PKGS[@]}" >"$logs/apt-run.log" 2>&1 ||
    fail_end "$suite: Slurm, munge and PyTorch installed" "$(tail -n 20 "$logs/apt-run.log")"
t_pass "$suite: Slurm daemons, munge, PyTorch and the packaging tools installed ($(rel_since "$t1") s)"
t_note "$suite: $(rel_run "$suite" slurmd -V), torch $(rel_run "$suite" python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
copy_source /build/src || fail_end "copy the source tree into the chroot" "tar failed"
rel_run "$suite" bash -c 'cd /build/src && autoreconf -fi && ./configure --enable-werror && make -j2 &&
    make -j2 check TESTS=' </dev/null >"$logs/build.log" 2>&1
t_eq "$suite: the plugin and the test programs build with -Werror against Slurm $slurm" 0 "$?" ||
    fail_end "$suite: build" "$(tail -n 30 "$logs/build.log")"

# Each release's lab has its own directory and ports, so it can never be
# mistaken for the host's lab (the lab finds its processes by these).
# (EXTC_REL_LAB, EXTC_LAB_CTLD_PORT and EXTC_LAB_SLURMD_PORT, when set,
# choose others: a second run beside this one needs all three.)
case $suite in
    trixie) port=16917 ;;
    forky) port=17017 ;;
esac
port=${EXTC_LAB_CTLD_PORT:-$port}
export EXTC_LAB=${EXTC_REL_LAB:-/var/lib/$suite-ext-cache-lab} EXTC_LAB_CTLD_PORT=$port
export EXTC_LAB_SLURMD_PORT=${EXTC_LAB_SLURMD_PORT:-$((port + 1))}
# (the packages are built with their make check, as a packager builds them)
# shellcheck disable=SC2034 # read by rel_run (chroot.sh)
REL_PASS_ENV="EXTC_LAB EXTC_LAB_CTLD_PORT EXTC_LAB_SLURMD_PORT CI"
# Apptainer from sid and the test image's busybox, for the containers suites
if [[ " $REL_SUITES " == *" containers/"* ]]; then
    t1=$EPOCHREALTIME
    { rel_sid_deb "$suite" apptainer && rel_apt "$suite" busybox-static; } >"$logs/apt-apptainer.log" 2>&1
    t_eq "$suite: Apptainer from Debian sid and busybox-static installed ($(rel_since "$t1") s)" 0 "$?" ||
        t_note "$(tail -n 20 "$logs/apt-apptainer.log")"
fi
for s in $REL_SUITES; do
    t1=$EPOCHREALTIME
    # SUITE:REGEX runs the @tests of a bats suite whose names match REGEX
    filter=()
    case $s in *:*) filter=(-f "${s#*:}") s=${s%%:*} ;; esac
    name=${s//\//-}
    run=rel_run
    [[ $s == containers/* ]] && run=rel_run_pivot
    if [ -f "$REL_SRC/tests/$s.bats" ]; then
        # a bats file: its TAP lines, one per @test, are the counts; a
        # skipped @test ("ok N name # skip") is a failure, as in run-all.sh
        "$run" "$suite" env EXTC_TEST_LOGS=/build/logs bats --tap "${filter[@]}" "/build/src/tests/$s.bats" </dev/null >"$logs/$name.log" 2>&1
        rc=$?
        p=$(grep -E '^ok [0-9]+ ' "$logs/$name.log" | grep -cvE ' # skip( |$)')
        f=$(($(grep -cE '^not ok [0-9]+ ' "$logs/$name.log") + $(grep -cE '^ok [0-9]+ .* # skip( |$)' "$logs/$name.log")))
        summary=
        grep -qE '^1\.\.[0-9]+' "$logs/$name.log" && summary="$p passed, $f failed"
        grep -E '^not ok' "$logs/$name.log" | sed -E "s/^not ok [0-9]+ /not ok - $suite $name: /"
        grep -E '^ok [0-9]+ .* # skip( |$)' "$logs/$name.log" | sed -E "s/^ok [0-9]+ /not ok - $suite $name: skipped: /"
    else
        rel_run "$suite" env EXTC_TEST_LOGS=/build/logs bash "/build/src/tests/$s.sh" </dev/null >"$logs/$name.log" 2>&1
        rc=$?
        summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/$name.log" | tail -n1)
        p=$(awk '{print $1}' <<<"$summary")
        f=$(awk '{print $3}' <<<"$summary")
        grep -E '^not ok' "$logs/$name.log" | sed "s/^not ok - /not ok - $suite $name: /"
    fi
    # the suite's own tests count, one by one, in the totals
    T_PASSED=$((T_PASSED + ${p:-0}))
    T_FAILED=$((T_FAILED + ${f:-0}))
    if [ -z "$summary" ] || { [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; }; then
        t_fail "$suite $name" "exited $rc without its summary line; see $logs/$name.log"$'\n'"$(tail -n 15 "$logs/$name.log")"
    else
        t_note "$suite $name: $summary ($(rel_since "$t1") s)"
    fi
done
cp -r "$root/build/logs/." "$logs/" 2>/dev/null
finish
