#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Static checks of the source tree, no build needed, and no root but to
# install jscpd into its default cache the first time (EXTC_TOOLS_DIR moves it):
#   1. shellcheck on every shell script (named *.sh, *.bats or *.bash, or starting with a sh/bash
#      shebang: test suites, scripts/, bench/, examples/, debian/ maintainer scripts);
#   2. cppcheck on plugin/, once per Slurm API the sources tell apart
#      (SLURM_VERSION_NUMBER below and from 26.05), zero findings; a finding
#      that is wrong is suppressed where it stands, with the reason beside it
#      (// cppcheck-suppress ID);
#   3. repeated code: jscpd (installed from npm on first use, see
#      tests/lib/jscpd.sh) over the C, shell and python files of the tree
#      finds at most LINT_MAX_DUP_CLONES clones, places sharing six or more
#      lines (and 40 or more tokens);
#   4. seams (tests/lib/seams.py, python3 on the sources): plugin/'s layers
#      depend downwards only, only the SPANK glue includes Slurm's headers,
#      each header declares only its own file's functions, no two files
#      include or call each other, and each exported name says its file (each
#      gate is explained below);
#   5. sizes and namesakes, warnings only: a plugin/ source file of 400 lines
#      or more, a plugin/ .c file under 50, a function in them of 80 lines or
#      more (from its opening to its closing brace), and a static name
#      defined in two or more plugin/ .c files are printed as "# warning:"
#      lines; the checks themselves pass.
# A missing tool is a failure, never a skip (scripts/install-deps.sh test
# installs shellcheck, cppcheck and python3; jscpd needs node and npm,
# Debian's npm package). Prints ok/not ok lines, ends with "N passed, M failed",
# exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib/tap.sh
. tests/lib/jscpd.sh

# The ceiling the tree is held under, in jscpd clones (section 3); lower it
# as repeats are taken out.
LINT_MAX_DUP_CLONES=${LINT_MAX_DUP_CLONES:-38}

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
            --template='{file}:{line}: {id} ({severity}) {message}' plugin/*/*.c 2>&1)
        rc=$?
        n=$(grep -c . <<<"$out")
        if [ "$rc" -eq 0 ] && [ "$n" -eq 0 ]; then
            t_pass "cppcheck $(cppcheck --version | sed 's/^Cppcheck //'): plugin/ as built against Slurm $rel"
        else
            t_fail "cppcheck: plugin/ as built against Slurm $rel" "$n finding(s), exit $rc"$'\n'"$out"
        fi
    done
fi

# ---- 3. repeated code (jscpd) ---------------------------------------------------------------
# The files tree_files lists, in the languages that matter here: C (*.c and
# *.h, read as one language so a header and a source can share a clone),
# shell (*.sh, *.bats, *.bash and the scripts known by a sh/bash shebang,
# read as bash) and python (*.py, or a python shebang). Left out: what
# autotools and a build generate, fuzz/corpus/ (fuzzer inputs), tests/logs/.
# They are copied to a scratch directory (a script known by its shebang gets
# the extension that tells jscpd its language) and jscpd counts the clones:
# places sharing 6 lines or more (--min-lines 6) that are also 40 tokens or
# more (--min-tokens 40: six lines of under 7 tokens, where this tree has
# 9.5 a line, blank ones included; jscpd's default of 50 misses repeats of
# six or seven short lines, such as a call with its arguments over two lines
# in a block of its own, and lower values add common idioms, such as a read
# loop retrying on EINTR). Whitespace and line breaks are not tokens
# (jscpd's mild mode). No file is too long to be read (--max-lines and
# --max-size; by default jscpd leaves out files over 1000 lines), and jscpd
# must have read every file listed, else the check fails.
dup_sources() {
    local f
    tree_files | sort | grep -vE '^(fuzz/corpus|tests/logs|autom4te\.cache|build-aux|debian/\.debhelper|debian/spank-ext-cache)/' |
        grep -vE '(^|/)(configure|config\.status|config\.h|libtool|aclocal\.m4|Makefile(\.in)?)$' |
        while IFS= read -r f; do
            [ -f "$f" ] || continue
            case $f in
                *.c | *.h | *.py | *.sh | *.bats | *.bash) echo "$f" ;;
                *) case $(head -n 1 "$f" 2>/dev/null) in
                    '#!'*python*) echo "$f.py" ;;
                    '#!'*) head -n 1 "$f" | grep -qE '^#! *(/usr)?/bin/(env +)?(ba|da|k)?sh( |$)' && echo "$f.sh" ;;
                esac ;;
            esac
        done
}
if ! jscpd=$(jscpd_program); then
    t_fail "jscpd $JSCPD_VERSION is installed" "$jscpd"
else
    dup_tmp=$(mktemp -d)
    n_sources=0
    while IFS= read -r f; do
        src=$f
        [ -f "$src" ] || src=${f%.*} # a script known by its shebang
        mkdir -p "$dup_tmp/src/$(dirname "$f")" && cp "$src" "$dup_tmp/src/$f"
        n_sources=$((n_sources + 1)) # one not copied fails the check below
    done < <(dup_sources)
    out=$(cd "$dup_tmp/src" && "$jscpd" --silent --min-lines 6 --min-tokens 40 \
        --max-lines 1000000 --max-size 100mb --format c,bash,python \
        --formats-exts 'c:c,h;bash:sh,bats,bash;python:py' \
        --reporters json --output "$dup_tmp/report" . 2>&1 </dev/null)
    rc=$?
    # "COUNT SOURCES LISTED", then each clone as "FILE:FIRST-LAST FILE:FIRST-LAST"
    # (a script known by its shebang under its own name again). The report
    # holds the statistics and one list, of the clones.
    # shellcheck disable=SC2016 # ${...} here is JavaScript's, not the shell's
    report=$(node -e '
        const r = require(process.argv[1]), fs = require("fs");
        const list = Object.values(r).find(Array.isArray) || [];
        console.log(r.statistics.total.clones, r.statistics.total.sources, list.length);
        const name = (n) => fs.existsSync(n) ? n : n.replace(/\.(sh|py)$/, "");
        const at = (x) => `${name(x.name)}:${x.start}-${x.end}`;
        for (const c of list) console.log(at(c.firstFile), at(c.secondFile));
        ' "$dup_tmp/report/jscpd-report.json" 2>&1)
    read -r clones read_sources listed _ <<<"${report%%$'\n'*}"
    rm -rf "$dup_tmp"
    if [ "$rc" -ne 0 ] || ! [[ $clones =~ ^[0-9]+$ ]] || [ "$clones" != "$listed" ]; then
        t_fail "jscpd $JSCPD_VERSION: ran over the tree" "exit $rc"$'\n'"$out"$'\n'"$report"
    elif [ "$read_sources" != "$n_sources" ]; then
        t_fail "jscpd $JSCPD_VERSION: read every file" "read $read_sources of the $n_sources files"
    elif [ "$clones" -le "$LINT_MAX_DUP_CLONES" ]; then
        t_pass "jscpd $JSCPD_VERSION: $clones clones in $n_sources files, at most $LINT_MAX_DUP_CLONES"
    else
        t_fail "jscpd $JSCPD_VERSION: $clones clones in $n_sources files, more than $LINT_MAX_DUP_CLONES" \
            "each clone's two places:"$'\n'"${report#*$'\n'}"
    fi
fi

# ---- 4. seams (failures) ----------------------------------------------------------------------
# plugin/ is in folders by layer, lowest first: base/ (settings and small
# Slurm-free pieces), proc/ (process plumbing), container/ (the cache in
# containers), fs/ (the tree and removal engine), warm/ (warm start),
# pool/ (the node pool), spank/ (the SPANK glue). tests/lib/seams.py reads
# the sources (comments and strings blanked, no compiler, no build) and
# prints each finding; any finding fails its gate. Why each exists:
#   layers   a file includes headers of its own layer or a lower one only,
#            so a layer builds, reads and is tested without those above it
#            and the engine never reaches into the SPANK glue;
#   slurm    only spank/ includes <slurm/...>: the engine (libextc, what the
#            unit tests link) needs no Slurm, and what a Slurm release
#            changes is in one folder;
#   headers  each header declares only functions its own .c defines (a
#            static inline in a header is the header's), so including x.h
#            means depending on x.c and nothing else;
#   includes no cycle among plugin/'s files, x.c or x.h including y.h
#            meaning x depends on y. With "headers", a call from x.c into
#            y.c needs y.h, so x depends on y: no include cycle means no
#            two files call each other, nor any longer ring of them;
#   calls    the same said of the calls themselves (each body's calls
#            mapped to the file defining the callee): it also catches a call
#            through a prototype written by hand instead of an include;
#   names    each function a .c file exports is extc_<x> or extc_<x>_...,
#            <x> the file's stem or the stem without its layer's "<layer>_"
#            (fs/fs_tree.c: extc_fs_tree_* or extc_tree_*), so a call names
#            the file it goes to and a name found in a backtrace or a grep
#            leads to one file; slurm_spank_* and plugin_* are the entry
#            points, in spank/dispatch.c only; at most three files may export
#            other extc_ names (NAME_FREE_FILES in seams.py, each with its
#            reason: today text.c and log.c, whose names are on almost every
#            line and read as the language's own).
seam_gates="layers:each layer includes only its own and lower layers' headers
slurm:only plugin/spank/ includes Slurm's headers
headers:each header declares only its own .c file's functions
includes:no include cycle among plugin/'s files
calls:no two plugin/ files call each other (no call cycle)
names:each exported name says its file"
if have python3; then
    while IFS=: read -r gate says; do
        out=$(python3 tests/lib/seams.py "$gate" 2>&1)
        rc=$?
        if [ "$rc" -eq 0 ]; then
            t_pass "seams: $says"
        else
            t_fail "seams: $says" "$(grep -vc '^  ' <<<"$out") finding(s), exit $rc"$'\n'"$out"
        fi
    done <<<"$seam_gates"
fi

# ---- 5. sizes and namesakes (warnings) --------------------------------------------------------
# What goes over is printed as "# warning: ..." lines and fails nothing.
# A .c file under 50 lines was usually cut off to break a cycle or to keep
# another under the 400-line warning, not drawn around a concern of its own:
# its few lines belong with their caller or their callee.
# A function body opens with "{" alone at the start of a line and closes with "}" there
long_files=$(wc -l plugin/*/*.c plugin/*/*.h | awk '$2 != "total" && $1 >= 400 {print "warning: " $2 ": " $1 " lines, 400 or more"}
    $2 ~ /\.c$/ && $1 < 50 {print "warning: " $2 ": " $1 " lines, under 50"}')
long_functions=$(awk 'FNR == 1 {start = 0} /^\{$/ {start = FNR}
    /^\}/ && start {if (FNR - start + 1 >= 80) print "warning: " FILENAME ":" start ": function of " FNR - start + 1 " lines, 80 or more"; start = 0}' plugin/*/*.c)
size_warnings=$(printf '%s\n%s\n' "$long_files" "$long_functions" | grep -v '^$')
n_size_warnings=$(grep -c . <<<"$size_warnings")
t_pass "sizes: plugin/ files of 400 lines or more or .c files under 50, functions of 80 or more: $n_size_warnings warning(s)"
[ "$n_size_warnings" -eq 0 ] || t_note "$size_warnings"
# A static function or file-scope variable of one name in two .c files
# (seams.py namesakes) ties the two together to anyone following names
# through the tree, and most often marks a helper written twice: one copy
# belongs in a lower layer, or one of them wants a name of its own.
if have python3; then
    out=$(python3 tests/lib/seams.py namesakes 2>&1)
    rc=$?
    if [ "$rc" -le 1 ]; then
        n_namesakes=$(grep -c . <<<"$out")
        t_pass "namesakes: static names defined in two or more plugin/ .c files: $n_namesakes warning(s)"
        [ "$n_namesakes" -eq 0 ] || t_note "$(awk '{print "warning: " $0}' <<<"$out")"
    else
        t_fail "namesakes: plugin/ read by seams.py" "exit $rc"$'\n'"$out"
    fi
fi

t_summary
