#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Static checks of the source tree, no build and no root needed:
#   1. shellcheck on every shell script (named *.sh, *.bats or *.bash, or starting with a sh/bash
#      shebang: test suites, scripts/, bench/, examples/, debian/ maintainer scripts);
#   2. cppcheck on plugin/, once per Slurm API the sources tell apart
#      (SLURM_VERSION_NUMBER below and from 26.05), zero findings; a finding
#      that is wrong is suppressed where it stands, with the reason beside it
#      (// cppcheck-suppress ID);
#   3. duplicates over the whole tree: fewer than LINT_MAX_DUP_PAIRS pairs of
#      places sharing six or more lines;
#   4. sizes: every plugin/ source file under 400 lines, every function in
#      them under 80 (from its opening to its closing brace).
# A missing tool is a failure, never a skip (scripts/install-deps.sh test
# installs them). Prints ok/not ok lines, ends with "N passed, M failed",
# exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib/tap.sh

# The ceiling the tree is held under; lower it as repeats are taken out.
LINT_MAX_DUP_PAIRS=${LINT_MAX_DUP_PAIRS:-39}

# have TOOL: record a failure naming TOOL if it is not installed.
have() {
    command -v "$1" >/dev/null 2>&1 && return 0
    t_fail "$1 is installed" "not found on PATH (scripts/install-deps.sh test)"
    return 1
}

# The tree's files: what git tracks or would track, else everything but the
# outputs of autotools and of a build (a release tarball has no .git).
tree_files() {
    if git rev-parse --git-dir >/dev/null 2>&1; then
        git ls-files -co --exclude-standard
    else
        find . -type f ! -path './autom4te.cache/*' ! -path './build-aux/*' \
            ! -path './.libs/*' ! -path '*/.deps/*' ! -name configure ! -name libtool \
            ! -name config.status ! -name config.log ! -name Makefile.in ! -name aclocal.m4 \
            ! -path './tests/logs/*' | sed 's|^\./||'
    fi
}

# Every shell script: by name, or by a shebang naming sh, bash, dash or ksh.
shell_scripts() {
    local f
    tree_files | sort | while IFS= read -r f; do
        [ -f "$f" ] || continue
        case $f in
            *.sh | *.bats | *.bash) echo "$f" ;;
            *) head -n 1 "$f" 2>/dev/null | grep -qE '^#! *(/usr)?/bin/(env +)?(ba|da|k)?sh( |$)' && echo "$f" ;;
        esac
    done
}

# ---- 1. shellcheck --------------------------------------------------------------------------
# SC1091 (not following a sourced file) is left out: the scripts find their
# libraries at run time from $0, which shellcheck cannot resolve; every one
# of those libraries is in the list and checked as a file of its own.
if have shellcheck; then
    scripts=$(shell_scripts)
    findings=0
    for f in $scripts; do
        out=$(shellcheck -f gcc -e SC1091 "$f" 2>&1)
        n=$(grep -c . <<<"$out")
        if [ "$n" -eq 0 ]; then
            t_pass "shellcheck: $f"
        else
            findings=$((findings + n))
            t_fail "shellcheck: $f" "$n finding(s)"$'\n'"$out"
        fi
    done
    t_note "shellcheck $(shellcheck --version | sed -n 's/^version: //p'): $(wc -w <<<"$scripts") scripts, $findings finding(s)"
fi

# ---- 2. cppcheck ----------------------------------------------------------------------------
# Slurm's headers are not read (the plugin's use of them is the compiler's
# business, and reading them makes the result depend on the release
# installed); the version macros are defined instead, once for each branch
# of the #if SLURM_VERSION_NUMBER tests in plugin/. --library=posix tells
# cppcheck what open, close, readdir... do (it reads no system header).
# readdirCalled is left out everywhere: its advice, readdir_r, is deprecated
# by POSIX and glibc, and readdir on a stream no other thread uses is safe.
if have cppcheck; then
    for rel in 22.05 26.05; do
        major=${rel%.*} minor=${rel#*.}
        out=$(cppcheck -q --std=c11 --library=posix --enable=warning,style,performance,portability \
            --suppress=readdirCalled --inline-suppr --error-exitcode=1 -I plugin \
            '-DSLURM_VERSION_NUM(a,b,c)=(((a)<<16)+((b)<<8)+(c))' \
            "-DSLURM_VERSION_NUMBER=$(( (10#$major << 16) + (10#$minor << 8) ))" \
            --template='{file}:{line}: {id} ({severity}) {message}' plugin/*.c 2>&1)
        rc=$?
        n=$(grep -c . <<<"$out")
        if [ "$rc" -eq 0 ] && [ "$n" -eq 0 ]; then
            t_pass "cppcheck $(cppcheck --version | sed 's/^Cppcheck //'): plugin/ as built against Slurm $rel"
        else
            t_fail "cppcheck: plugin/ as built against Slurm $rel" "$n finding(s), exit $rc"$'\n'"$out"
        fi
    done
fi

# ---- 3. duplicates ----------------------------------------------------------------------------
if have duplicates; then
    out=$(duplicates --seconds 300 --most 200)
    head=$(head -n 1 <<<"$out")
    case $head in
        "no duplicates"*) pairs=0 ;;
        *) pairs=$(sed -n 's/^\([0-9][0-9]*\) pairs\{0,1\} of places.*/\1/p' <<<"$head") ;;
    esac
    if grep -q '^incomplete:' <<<"$out" || [ -z "$pairs" ]; then
        t_fail "duplicates: the whole tree was read" "$(grep '^incomplete:' <<<"$out")"$'\n'"$head"
    elif [ "$pairs" -lt "$LINT_MAX_DUP_PAIRS" ]; then
        t_pass "duplicates: $pairs pairs, under $LINT_MAX_DUP_PAIRS"
    else
        t_fail "duplicates: $pairs pairs, not under $LINT_MAX_DUP_PAIRS" "$out"
    fi
fi

# ---- 4. sizes ----------------------------------------------------------------------------------
long_files=$(wc -l plugin/*.c plugin/*.h | awk '$2 != "total" && $1 >= 400 {print $2 ": " $1 " lines"}')
t_eq "plugin/: every source file under 400 lines" "" "$long_files"
# a function body opens with "{" alone at the start of a line and closes with "}" there
long_functions=$(awk 'FNR == 1 {start = 0} /^\{$/ {start = FNR}
    /^\}/ && start {if (FNR - start + 1 >= 80) print FILENAME ":" start ": " FNR - start + 1 " lines"; start = 0}' plugin/*.c)
t_eq "plugin/: every function under 80 lines" "" "$long_functions"

t_summary
