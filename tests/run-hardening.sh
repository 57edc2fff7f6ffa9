#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Hardening suite of the filesystem engine, from a fresh Debian 12 machine, as root:
#
#   1. the unit, adversarial (tests/adversarial), fault-injection (tests/fault)
#      and fuzz-replay (fuzz/) suites built with -fsanitize=address,undefined
#      (configure --enable-sanitizers: the test programs and the copy of the
#      engine they link, never the plugin) and run by both tiers, `make check`
#      and `make check-root`, every fault at every call number
#      (EXTC_FAULT_ERRS=all); this is the one run of the root tier in
#      tests/run-all.sh that is not under valgrind;
#   2. the same programs of a normal build run under
#      valgrind --leak-check=full --track-fds=yes --error-exitcode=1, each
#      required to end with no error and no descriptor but 0, 1 and 2 open
#      (races and depths scaled down by EXTC_ADV_SCALE, valgrind is ~30x slower);
#   3. the fuzz corpora replayed by the sanitizer build (part of 1) and, with
#      --fuzz SECONDS, each libFuzzer target (clang) run for SECONDS on its corpus.
#
#   tests/run-hardening.sh [--fuzz SECONDS] [--huge] [--keep]
#     --fuzz SECONDS   also run every libFuzzer target for SECONDS (new inputs go to a
#                      scratch copy of the corpus; a finding fails the run)
#     --huge           also 10^6 levels and 10^6 entries (EXTC_ADV_HUGE=1, on tmpfs)
#     --keep           keep the build directories ($EXTC_HARDENING_DIR, default
#                      /var/tmp/extc-hardening) for a look afterwards
#
# Prints "ok - ..." / "not ok - ..." per step and ends with "N passed, M failed";
# exits non-zero if anything failed. Nothing is skipped: a missing tool is
# installed with apt-get, or the run fails saying which.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
work=${EXTC_HARDENING_DIR:-/var/tmp/extc-hardening}
logdir=${EXTC_TEST_LOGS:-$top/tests/logs}/hardening
fuzz_seconds=0
huge=0
keep=0
while [ $# -gt 0 ]; do
    case $1 in
        --fuzz) fuzz_seconds=${2:?--fuzz needs a number of seconds}; shift 2 ;;
        --huge) huge=1; shift ;;
        --keep) keep=1; shift ;;
        *) echo "usage: $0 [--fuzz SECONDS] [--huge] [--keep]" >&2; exit 2 ;;
    esac
done

passed=0
failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit $?
}
started=$(date +%s)
elapsed() { echo "$(( $(date +%s) - started ))s"; }

if [ "$(id -u)" -ne 0 ]; then
    notok "must run as root (mounts, chattr, sysctls, a second uid, apt-get)"
    finish
fi
mkdir -p "$logdir"

# ---- tools: installed, never skipped ----------------------------------------------------------
pkgs=(build-essential autoconf automake libtool pkg-config libslurm-dev libcmocka-dev
      clang libclang-rt-14-dev valgrind e2fsprogs xfsprogs btrfs-progs util-linux coreutils)
mapfile -t missing < <(dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null |
    awk '$NF == "installed" {print $1}' | sort | comm -13 - <(printf '%s\n' "${pkgs[@]}" | sort))
if [ "${#missing[@]}" -gt 0 ]; then
    echo "# installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get -o DPkg::Lock::Timeout=600 update -qq &&
           apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"; } \
           >"$logdir/apt.log" 2>&1; then
        notok "installing ${missing[*]} (see $logdir/apt.log)"
        finish
    fi
fi
for tool in gcc clang-14 valgrind mkfs.ext4 mkfs.xfs mkfs.btrfs mount chattr; do
    command -v "$tool" >/dev/null || { notok "$tool is still missing after apt-get"; finish; }
done
ok "tools present (gcc, clang-14, valgrind, mkfs.ext4/xfs/btrfs)"

# ---- sources: a private copy per build (the checkout itself may be configured in-tree) -------
copy_sources() {
    local dst=$1
    rm -rf "$dst"
    mkdir -p "$dst"
    if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
        # tracked and new source files; not the test binaries of an in-tree build
        git -C "$top" ls-files -co --exclude-standard -z |
            grep -zvE '~$|^tests/(adversarial|fault)/test_[a-z_]+$|^fuzz/replay_[a-z]+$' |
            tar -C "$top" --null -T - -cf - | tar -C "$dst" -xf -
    else
        tar -C "$top" --exclude='*.o' --exclude='*.lo' --exclude='*.la' --exclude=.libs \
            --exclude=.deps --exclude=Makefile --exclude=config.status --exclude=config.log \
            --exclude=libtool --exclude='*.log' --exclude='*.trs' --exclude=tests/logs -cf - . |
            tar -C "$dst" -xf -
    fi
}

# TRS results of a `make check` or `make check-root`, one line each; then the
# .trs files go, so that the next tier's run reports only its own programs.
report_trs() {
    local dir=$1 label=$2 trs name res
    for trs in "$dir"/tests/unit/*.trs "$dir"/tests/adversarial/*.trs "$dir"/tests/fault/*.trs \
               "$dir"/fuzz/*.trs; do
        [ -f "$trs" ] || continue
        name=${trs#"$dir"/}
        name=${name%.trs}
        res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
        if [ "$res" = PASS ]; then
            ok "$label: $name"
        else
            notok "$label: $name ($res; log: ${trs%.trs}.log)"
        fi
        rm -f "$trs"
    done
}

# make check-root's programs (Makefile.am's ROOT_TESTS)
root_programs="tests/unit/test_cgroup_escape tests/unit/test_fs_remove tests/unit/test_warm tests/unit/test_pool_measure
               tests/unit/test_fs_tree tests/unit/test_lifecycle tests/adversarial/test_adv_race tests/adversarial/test_adv_scale
               tests/adversarial/test_adv_root tests/adversarial/test_adv_user tests/fault/test_fault"
adv_programs="tests/adversarial/test_adv_race tests/adversarial/test_adv_scale
              tests/adversarial/test_adv_root tests/fault/test_fault"
unit_programs="tests/unit/test_config tests/unit/test_mode tests/unit/test_layout
               tests/unit/test_envvars tests/unit/test_fs_remove tests/unit/test_fs_remove:root
               tests/unit/test_cgroup_escape tests/unit/test_cgroup_escape:root
               tests/unit/test_fs_tree tests/unit/test_lifecycle"
fuzz_programs="fuzz/replay_config fuzz/replay_mode fuzz/replay_layout fuzz/replay_warm"

# ---- 1. sanitizers --------------------------------------------------------------------------------
echo "# [$(elapsed)] sanitizer build (-fsanitize=address,undefined)"
san=$work/san
copy_sources "$san"
if ( cd "$san" && autoreconf -fi && ./configure --enable-werror --enable-sanitizers &&
     make -j2 ) >"$logdir/san-build.log" 2>&1; then
    if grep -q -- '-fsanitize=address,undefined' "$san/Makefile" &&
       nm "$san/.libs/libextc_san.a" 2>/dev/null | grep -q __asan_report; then
        ok "sanitizer build (the engine the tests link is instrumented)"
    else
        notok "sanitizer build: libextc_san.a is not instrumented (see $logdir/san-build.log)"
    fi
    # the plugin `make install` would install is the plain one, even here
    san_calls=$(nm -u "$san/.libs/ext_cache.so" 2>/dev/null | grep -c '__[a-z]*san_')
    if [ -f "$san/.libs/ext_cache.so" ] && [ "$san_calls" -eq 0 ]; then
        ok "sanitizer build: ext_cache.so is not instrumented"
    else
        notok "sanitizer build: ext_cache.so calls $san_calls sanitizer function(s) or is missing"
    fi
    export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    ( cd "$san" && make -j2 check ) >"$logdir/san-check.log" 2>&1
    report_trs "$san" "asan+ubsan"
    # the root tier through the same harness (its .trs files are its own programs')
    ( cd "$san" && EXTC_FAULT_ERRS=all EXTC_ADV_BIG_STACK=1 EXTC_ADV_HUGE=$huge \
          make -j2 check-root ) >"$logdir/san-check-root.log" 2>&1 ||
        grep -E '^make check-root: ' "$logdir/san-check-root.log" | sed 's/^/# /'
    for prog in $root_programs; do
        [ -f "$san/$prog.trs" ] || notok "asan+ubsan: $prog did not run (see $logdir/san-check-root.log)"
    done
    report_trs "$san" "asan+ubsan (root tier)"
    grep -l -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
        "$san"/tests/*/*.log "$san"/fuzz/*.log 2>/dev/null | sed 's/^/# sanitizer report in /'
    unset ASAN_OPTIONS UBSAN_OPTIONS
else
    notok "sanitizer build failed (see $logdir/san-build.log)"
fi

# ---- 2. valgrind ----------------------------------------------------------------------------------
echo "# [$(elapsed)] normal build under valgrind --leak-check=full --track-fds=yes"
plain=$work/plain
copy_sources "$plain"
if ( cd "$plain" && autoreconf -fi && ./configure --enable-werror && make -j2 &&
     make -j2 check TESTS= ) >"$logdir/plain-build.log" 2>&1; then
    ok "normal build"
    # a program of both tiers (Makefile.am's TIERED_TESTS) runs once per tier
    for run in $unit_programs $adv_programs $fuzz_programs; do
        prog=${run%:*} tier=any
        case $run in *:root) tier=root ;; esac
        name=$(basename "$prog")${run#"$prog"}
        name=${name/:/-}
        log=$logdir/valgrind-$name.log
        (
            cd "$plain" || exit 1
            # only 0, 1 and 2 open: whatever else is open at exit is the program's
            for fd in /proc/"$BASHPID"/fd/*; do
                fd=${fd##*/}
                [ "$fd" -gt 2 ] && eval "exec $fd>&-"
            done
            EXTC_TEST_TIER=$tier EXTC_ADV_SCALE=${EXTC_VALGRIND_SCALE:-5} exec valgrind --leak-check=full \
                --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
                --track-fds=yes --error-exitcode=1 --child-silent-after-fork=yes \
                --log-file="$log.vg" "./$prog"
        ) >"$log" 2>&1
        rc=$?
        # descriptors open at exit beyond 0, 1, 2 and valgrind's own log (listed as inherited)
        leaked=$(grep -E '== Open (file descriptor|AF_[A-Z0-9]+ socket) [0-9]+' "$log.vg" |
            grep -v -F "$log.vg" | grep -cvE '(descriptor|socket) [012]:')
        errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log.vg" | tail -1)
        if [ "$rc" -eq 0 ] && [ "$leaked" -eq 0 ] && [ "${errors:-0}" -eq 0 ]; then
            ok "valgrind: $prog${run#"$prog"} (no error, no leak, no descriptor left open)"
        elif [ "${errors:-0}" -eq 0 ] && [ "$leaked" -eq 0 ]; then
            notok "valgrind: $prog (clean under valgrind, but the tests failed: exit $rc; $log)"
        else
            notok "valgrind: $prog (exit $rc, ${errors:-?} valgrind errors, $leaked descriptor(s) left open; $log.vg)"
        fi
    done
else
    notok "normal build failed (see $logdir/plain-build.log)"
fi

# ---- 3. libFuzzer (optional) ---------------------------------------------------------------------
if [ "$fuzz_seconds" -gt 0 ]; then
    echo "# [$(elapsed)] libFuzzer, $fuzz_seconds s per target"
    fz=$work/fuzz
    mkdir -p "$fz"
    for t in config mode layout warm; do
        case $t in layout) maxlen=512 ;; *) maxlen=8192 ;; esac
        if ! clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -D_GNU_SOURCE -I"$top/plugin" -I"$top/fuzz" -o "$fz/fuzz_$t" \
                "$top/fuzz/fuzz_$t.c" "$top/fuzz/fuzz_common.c" "$top/plugin/base/config.c" \
                "$top/plugin/base/config_vars.c" "$top/plugin/base/mode.c" \
                "$top/plugin/base/layout.c" "$top/plugin/base/text.c" \
                "$top/plugin/base/seed_path.c" "$top/plugin/base/vars.c" "$top/plugin/base/fdio.c" \
                >"$logdir/fuzz-$t-build.log" 2>&1; then
            notok "libFuzzer build of fuzz_$t (see $logdir/fuzz-$t-build.log)"
            continue
        fi
        rm -rf "$fz/corpus_$t"
        cp -r "$top/fuzz/corpus/$t" "$fz/corpus_$t"
        ( cd "$fz" && timeout $((fuzz_seconds + 120)) "./fuzz_$t" -max_total_time="$fuzz_seconds" \
              -max_len=$maxlen -print_final_stats=1 -artifact_prefix="$fz/crash-$t-" \
              "corpus_$t" ) >"$logdir/fuzz-$t.log" 2>&1
        rc=$?
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logdir/fuzz-$t.log")
        if [ "$rc" -eq 0 ]; then
            ok "libFuzzer fuzz_$t: ${execs:-?} executions in $fuzz_seconds s, no finding"
        else
            notok "libFuzzer fuzz_$t: finding or crash (exit $rc; $logdir/fuzz-$t.log, $fz/crash-$t-*)"
        fi
    done
fi

[ "$keep" -eq 1 ] || rm -rf "$san" "$plain" "$work/fuzz"
echo "# [$(elapsed)] done; logs in $logdir"
finish
