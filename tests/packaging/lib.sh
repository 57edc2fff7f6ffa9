# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers of the packaging tests (test_*.sh in this directory).
#
#   pkg_begin NAME [root]   set up: root check, work dir, log dir, EXIT cleanup
#   pkg_need PKG...         apt-get install the Debian packages that are missing
#   pkg_copy_source DEST    copy the source tree (what git tracks or would track,
#                           or, outside git, the tree minus build products) to DEST
#   pkg_run NAME LOG CMD... run CMD with output to LOG; ok/not ok; tail of LOG on failure
#   pkg_docs                the documents every installation ships (README.md NEWS HACKING.md docs/*.md)
#   pkg_version             the package version in configure.ac
#   pkg_slurm_version       Slurm's version from the installed slurm/slurm_version.h (22.05.8)
#   pkg_slurm_number        its SLURM_VERSION_NUMBER (0x160508)
#   pkg_end                 print "N passed, M failed" and exit with its status
#
# Output: "ok - ..." / "not ok - ..." lines (tests/lib/tap.sh
# tests) and "# ..." notes; the last line is "N passed, M failed". Nothing is
# ever skipped: a missing tool is installed, or the test fails.

PKG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PKG_TOP=$(cd "$PKG_DIR/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$PKG_DIR/../lib/tap.sh"

PKG_WORK=
PKG_LOGS=
PKG_CLEANUPS=()

pkg_elapsed() {
    local a=${PKG_T0/[.,]/} b=${EPOCHREALTIME/[.,]/}
    printf '%d.%01d s' $(((b - a) / 1000000)) $(((b - a) % 1000000 / 100000))
}

# pkg_begin NAME [root]: work dir, logs; with "root", refuse to run as anyone else.
pkg_begin() {
    local name=$1
    PKG_T0=$EPOCHREALTIME
    if [ "${2:-}" = root ] && [ "$(id -u)" -ne 0 ]; then
        t_fail "running as root" "$name installs packages: run it as root"
        pkg_end
    fi
    PKG_LOGS=${EXTC_TEST_LOGS:-$PKG_TOP/tests/logs}/packaging
    mkdir -p "$PKG_LOGS" || { t_fail "log directory" "cannot create $PKG_LOGS"; pkg_end; }
    PKG_WORK=$(mktemp -d "/var/tmp/extc-$name.XXXXXX") || { t_fail "work directory" "mktemp failed"; pkg_end; }
    trap pkg_cleanup EXIT
    t_note "$name: work directory $PKG_WORK, logs in $PKG_LOGS"
}

# pkg_on_exit CMD: run CMD (a string) at exit, before the work dir goes.
pkg_on_exit() { PKG_CLEANUPS+=("$1"); }

pkg_cleanup() {
    local c i
    for ((i = ${#PKG_CLEANUPS[@]} - 1; i >= 0; i--)); do
        c=${PKG_CLEANUPS[$i]}
        eval "$c" || true
    done
    PKG_CLEANUPS=()
    if [ -n "$PKG_WORK" ] && [ -d "$PKG_WORK" ] && [ "${EXTC_KEEP_WORK:-0}" != 1 ]; then
        rm -rf --one-file-system -- "$PKG_WORK"
    fi
}

pkg_end() {
    t_note "took $(pkg_elapsed)"
    trap - EXIT
    pkg_cleanup
    t_summary
    exit $?
}

# pkg_need PKG...: install the missing ones (no recommends; package scripts
# may not start daemons). A failure is a test failure, never a skip.
pkg_need() {
    local missing policy=/usr/sbin/policy-rc.d made=0 rc
    missing=$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null |
        awk '$NF == "installed" {print $1}' | sort | comm -13 - <(printf '%s\n' "$@" | sort))
    if [ -z "$missing" ]; then
        t_pass "tools present: $*"
        return 0
    fi
    t_note "installing: $missing"
    if [ "$(id -u)" -ne 0 ]; then
        t_fail "install $missing" "missing, and only root can install them (apt-get install $missing)"
        pkg_end
    fi
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made=1
    fi
    # shellcheck disable=SC2086
    {
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
                --no-install-recommends $missing
    } >"$PKG_LOGS/apt-install.log" 2>&1
    rc=$?
    [ "$made" = 1 ] && rm -f "$policy"
    if [ "$rc" -ne 0 ]; then
        t_fail "install $missing" "apt-get failed; see $PKG_LOGS/apt-install.log"$'\n'"$(tail -5 "$PKG_LOGS/apt-install.log")"
        pkg_end
    fi
    t_pass "tools installed: $missing"
}

# pkg_copy_source DEST: a clean source tree, as a checkout would give, so no
# build ever runs in (or disturbs) the working tree.
pkg_copy_source() {
    local dest=$1 f
    mkdir -p "$dest" || return 1
    if git -C "$PKG_TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (
            cd "$PKG_TOP" || exit 1
            git ls-files -z --cached --others --exclude-standard |
                while IFS= read -r -d '' f; do
                    [ -e "$f" ] || [ -L "$f" ] || continue # deleted, not yet committed
                    case $f in *~) continue ;; esac
                    printf '%s\0' "$f"
                done | tar --null -T - -cf - | tar -C "$dest" -xf -
        )
    else
        tar -C "$PKG_TOP" --exclude=./tests/logs -cf - . | tar -C "$dest" -xf - &&
            if [ -f "$dest/Makefile" ]; then make -C "$dest" distclean >/dev/null 2>&1 || true; fi
    fi
}

# pkg_run NAME LOG CMD...: run CMD (stdin /dev/null), all output to LOG.
pkg_run() {
    local name=$1 log=$2 rc t0=$SECONDS
    shift 2
    "$@" </dev/null >"$log" 2>&1
    rc=$?
    # how long a package build takes is something the admin guide states
    echo "# $name took $((SECONDS - t0)) s"
    if [ "$rc" -eq 0 ]; then
        t_pass "$name"
    else
        t_fail "$name" "rc=$rc: $*; full log: $log"$'\n'"$(tail -n 25 "$log")"
    fi
    return "$rc"
}

# pkg_check_unit_tests_ran LOG: the package build ran make check (checks are
# always on), every program passed and none was skipped.
pkg_check_unit_tests_ran() {
    t_check "the build ran the unit tests" grep -qE '^# PASS: +[1-9]' "$1"
    t_check "... and skipped none of them" grep -qE '^# SKIP: +0$' "$1"
    t_check "... and none failed" grep -qE '^# FAIL: +0$' "$1"
}

# pkg_docs: the documents every installation ships into the doc directory,
# as paths relative to it (the same as in the source): README.md, NEWS,
# HACKING.md and every docs/*.md.
pkg_docs() {
    (cd "$PKG_TOP" && printf '%s\n' README.md NEWS HACKING.md docs/*.md)
}

pkg_version() {
    sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$PKG_TOP/configure.ac"
}

pkg_slurm_number() {
    awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" {print $3}' /usr/include/slurm/slurm_version.h 2>/dev/null
}

pkg_slurm_version() {
    local v
    v=$(pkg_slurm_number)
    [ -n "$v" ] || return 1
    printf '%d.%02d.%d\n' $((v >> 16 & 255)) $((v >> 8 & 255)) $((v & 255))
}

# pkg_check_plugin NAME SO: the file is a SPANK plugin called ext_cache, built
# for this Slurm (plugin_version), exporting the entry points the plugin has.
pkg_check_plugin() {
    local name=$1 so=$2 out want
    want=$(($(pkg_slurm_number)))
    out=$(python3 - "$so" <<'PY' 2>&1
import ctypes, glob, sys
# the plugin is linked -z now: Slurm's own library must provide slurm_error & co first
for full in glob.glob("/usr/lib/*/slurm-wlm/libslurmfull.so") + glob.glob("/usr/lib64/slurm/libslurmfull.so"):
    ctypes.CDLL(full, mode=ctypes.RTLD_GLOBAL)
    break
lib = ctypes.CDLL(sys.argv[1])
print(ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "plugin_name"))).decode(),
      ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "plugin_type"))).decode(),
      ctypes.c_uint32.in_dll(lib, "plugin_version").value)
PY
)
    t_eq "$name: plugin_name, plugin_type, plugin_version (Slurm $(pkg_slurm_version))" \
        "ext_cache spank $want" "$out"
    out=$(nm -D --defined-only "$so" 2>&1 | awk 'NF == 3 {print $3}' | sort | paste -sd' ' -)
    if [[ " $out " == *" slurm_spank_init "* && " $out " == *" slurm_spank_job_epilog "* ]] &&
        ! tr ' ' '\n' <<<"$out" | grep -qEv '^(plugin_(name|type|version)|slurm_spank_[a-z_]+)$'; then
        t_pass "$name: exports the SPANK entry points and nothing else"
    else
        t_fail "$name: exports the SPANK entry points and nothing else" "exported: $out"
    fi
}
