#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package, for real: `dpkg-buildpackage -us -uc -b` on a clean copy
# of the source tree; the .deb holds the plugin in Slurm's plugin directory,
# the commented plugstack.conf.d snippet as a conffile, the manual and the
# docs, and depends on exactly the Slurm version it was built against;
# lintian finds no error. Then it is installed with apt-get on this machine,
# a job runs on the throwaway lab cluster (tests/integration) with the
# installed ext_cache.so and the snippet's own arguments, and the package is
# removed (the conffile and its warning) and purged: the machine is left as
# it was. The build runs make check (the packager's tier: no root needed,
# no mounts), and every program of it must pass, none skipped.
# Must run as root. Prints ok/not ok lines, ends with "N passed, M failed".
# About 2 minutes, plus any wait for the lab cluster another suite holds.
set -u
. "$(dirname "$0")/lib.sh"

pkg_begin deb root
pkg_need dpkg-dev debhelper fakeroot lintian build-essential autoconf automake libtool pkg-config \
    libslurm-dev libcmocka-dev slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins \
    util-linux procps python3 man-db groff-base

pkgname=spank-ext-cache
version=$(pkg_version)
slurm=$(pkg_slurm_version)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
plugin=/usr/lib/$multiarch/slurm-wlm/ext_cache.so
conf=/etc/slurm/plugstack.conf.d/ext-cache.conf
hook=/etc/enroot/hooks.d/50-ext-cache.sh
t_check "Slurm's version read from slurm/slurm_version.h ($slurm)" test -n "$slurm"

status() { dpkg-query -W -f='${Status}' "$pkgname" 2>/dev/null; }
if [ -n "$(status)" ] && [ "$(status)" != "unknown ok not-installed" ]; then
    t_fail "$pkgname is not installed before the test" \
        "it is ($(status)): this test installs and purges it; remove it first (apt-get purge $pkgname)"
    pkg_end
fi
# What the package may touch, to compare after the purge.
snapshot() {
    find /etc/slurm "/usr/lib/$multiarch/slurm-wlm" /usr/share/man/man8/ext_cache.8* /usr/share/doc/"$pkgname" \
        \( -type f -o -type l \) -printf '%p %s %m %U\n' 2>/dev/null | sort
    dpkg-query -W -f='${Package} ${Version} ${Status}\n' 2>/dev/null | grep -E 'slurm|munge|spank' | sort
}
before=$(snapshot)
# If anything below stops early, the package still goes.
pkg_on_exit "[ -z \"\$(status)\" ] || [ \"\$(status)\" = 'unknown ok not-installed' ] || dpkg --purge $pkgname >/dev/null 2>&1"

# ---- build ---------------------------------------------------------------------------
src=$PKG_WORK/build/$pkgname-$version
pkg_copy_source "$src" || { t_fail "copy the source tree" "failed"; pkg_end; }
debversion=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
t_eq "debian/changelog's version is the package's ($version-N)" "$version" "${debversion%-*}"
pkg_run "dpkg-buildpackage -us -uc -b" "$PKG_LOGS/deb-build.log" \
    env -u DEB_BUILD_OPTIONS bash -c "cd '$src' && dpkg-buildpackage -us -uc -b" || pkg_end
pkg_check_unit_tests_ran "$PKG_LOGS/deb-build.log"
deb=$PKG_WORK/build/${pkgname}_${debversion}_${arch}.deb
t_check "$(basename "$deb") made" test -f "$deb" || pkg_end
t_note "$(dpkg-deb -I "$deb" | sed -n '/^ Package:/,$p')"

# ---- what is in it ---------------------------------------------------------------------
t_eq "Package" "$pkgname" "$(dpkg-deb -f "$deb" Package)"
depends=$(dpkg-deb -f "$deb" Depends)
next=$(printf '%s' "$slurm" | awk -F. '{printf "%s.%s.%d", $1, $2, $3 + 1}')
t_contains "Depends on exactly Slurm $slurm (any Debian revision)" \
    "slurm-wlm-basic-plugins (>= $slurm), slurm-wlm-basic-plugins (<< $next~)" "$depends"
# the Depends field, evaluated by dpkg's own version comparison
satisfies() {
    local v=$1 op ver
    while read -r op ver; do
        dpkg --compare-versions "$v" "$op" "$ver" || return 1
    done < <(grep -oE 'slurm-wlm-basic-plugins \([<>=]+ [^)]+\)' <<<"$depends" | sed 's/.*(\(.*\))/\1/')
}
installed_slurm=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)
t_check "the installed Slurm ($installed_slurm) satisfies it" satisfies "$installed_slurm"
bad=
for v in "$slurm-1" "$slurm-4+deb12u9" "$slurm+dfsg-2"; do satisfies "$v" || bad="$bad $v"; done
t_eq "every Debian revision of Slurm $slurm satisfies it" "" "$bad"
bad=
for v in "$next-1" "${slurm%.*}.$((${slurm##*.} - 1))-1" 23.02.1-1 21.08.8-2 "$slurm~rc1-1"; do
    satisfies "$v" && bad="$bad $v"
done
t_eq "no other Slurm version satisfies it" "" "$bad"
t_contains "the description names the Slurm version" "Built against Slurm $slurm" "$(dpkg-deb -f "$deb" Description)"

contents=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|')
missing=
for re in "$plugin" "$conf" "$hook" /usr/share/man/man8/ext_cache\\.8\\.gz \
    "/usr/share/doc/$pkgname/copyright" "/usr/share/doc/$pkgname/changelog\\.Debian\\.gz"; do
    grep -qxE "$re" <<<"$contents" || missing="$missing $re"
done
t_eq "it holds the plugin, the snippet, the enroot hook, the manual and the docs" "" "$missing"
# every document, at its path in the source, so that their relative links hold;
# the .md files uncompressed for the same reason (debian/rules), NEWS as dh_compress leaves it
missing=
for doc in $(pkg_docs); do
    case $doc in
        *.md) grep -qxF "/usr/share/doc/$pkgname/$doc" <<<"$contents" || missing="$missing $doc" ;;
        *) grep -qxE "/usr/share/doc/$pkgname/$doc(\\.gz)?" <<<"$contents" || missing="$missing $doc" ;;
    esac
done
t_eq "it holds every document ($(pkg_docs | paste -sd' ' -)) in /usr/share/doc/$pkgname, the .md ones uncompressed" \
    "" "$missing"
t_eq "the enroot hook is root's, mode 0755 (enroot runs only executable hooks)" "-rwxr-xr-x root/root" \
    "$(dpkg-deb -c "$deb" | awk -v h=".$hook" '$NF == h {print $1, $2}')"
t_eq "no .la, no /usr/local, nothing in the aliased /lib" "" \
    "$(grep -E '\.la$|^/usr/local|^/lib' <<<"$contents")"
ctl=$PKG_WORK/control
dpkg-deb -e "$deb" "$ctl"
t_eq "the snippet and the enroot hook are conffiles, the only ones" "$hook $conf" \
    "$(sort "$ctl/conffiles" 2>/dev/null | paste -sd' ' -)"
x=$PKG_WORK/extracted
dpkg-deb -x "$deb" "$x"
t_eq "the packaged snippet is all comments (not enabled)" "" \
    "$(grep -v '^#' "$x$conf" | grep -v '^[[:space:]]*$')"
t_check "its commented line names the packaged plugin" grep -qE "^#optional $plugin base=" "$x$conf"
pkg_check_plugin "packaged ext_cache.so" "$x$plugin"
warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$x/usr/share/man/man8/ext_cache.8.gz" 2>&1 >/dev/null)
t_eq "the packaged manual renders without warnings" "" "$warn"

lintian --tag-display-limit 0 "$deb" >"$PKG_LOGS/deb-lintian.log" 2>&1
t_eq "lintian: no errors" "" "$(grep '^E:' "$PKG_LOGS/deb-lintian.log")"
[ -s "$PKG_LOGS/deb-lintian.log" ] && t_note "lintian: $(cat "$PKG_LOGS/deb-lintian.log")"

# ---- install it ------------------------------------------------------------------------
pkg_run "apt-get install $(basename "$deb") (dependencies resolved by apt)" "$PKG_LOGS/deb-install.log" \
    env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "$deb"
t_eq "installed" "install ok installed" "$(status)"
t_check "$plugin installed" test -f "$plugin"
t_eq "$hook installed, mode 0755" "755 root" "$(stat -c '%a %U' "$hook" 2>&1)"
t_check "man ext_cache finds the manual" bash -c "man -w ext_cache | grep -qx /usr/share/man/man8/ext_cache.8.gz"
t_eq "the installed snippet is not enabled" "" "$(grep -v '^#' "$conf" 2>/dev/null | grep -v '^[[:space:]]*$')"
t_check "Debian's plugstack.conf includes the snippet's directory" \
    grep -qE '^include /etc/slurm/plugstack.conf.d/\*(\.conf)?$' /etc/slurm/plugstack.conf

# ---- a job with the installed plugin, on the lab cluster -------------------------------
# The snippet's own arguments (what an admin gets by removing the '#').
read -r -a line < <(sed -n 's/^#\(optional .*ext_cache\.so.*\)$/\1/p' "$conf")
args=("${line[@]:2}")
t_contains "the snippet's arguments use a node-local base" "base=/var/tmp/ext-cache" "${args[*]}"
counts=$PKG_WORK/counts
# The lab (tests/integration/lib/cluster.sh) runs in a subshell with its own
# EXIT trap: carry the counts back (pessimistic until it finishes).
echo "$T_PASSED $((T_FAILED + 1))" >"$counts"
(
    # shellcheck source=../integration/lib/cluster.sh
    . "$PKG_TOP/tests/integration/lib/cluster.sh"
    # verbose: the plugin's own log lines are asserted below
    # shellcheck disable=SC2034 # read by lab_start
    LAB_SLURM_CONF_EXTRA=SlurmdDebug=verbose
    trap 'lab_stop >/dev/null 2>&1; echo "$T_PASSED $T_FAILED" >"$counts"' EXIT
    if ! { lab_setup && lab_install_plugin "$plugin"; }; then
        t_fail "lab set-up with the installed plugin" "lab_setup or lab_install_plugin failed"
        exit 1
    fi
    ITEST_UID=$(id -u "$LAB_USER")
    t_eq "the lab runs the installed ext_cache.so" "$(sha256sum <"$plugin")" "$(sha256sum <"$LAB_PLUGIN")"
    if ! { lab_set_plugstack "required $LAB_PLUGIN ${args[*]}" && lab_start >/dev/null; }; then
        t_fail "lab cluster with the installed plugin (${args[*]})" "see $LAB/log"
        exit 1
    fi
    t_pass "lab cluster with the installed plugin (${args[*]})"
    t_contains "srun --help shows --ext-cache" "--ext-cache=MODE" "$(lab_user srun --help 2>&1)"

    out=$(lab_user srun -N2 --ext-cache=local printenv SLURM_EXT_CACHE_DIR 2>&1)
    t_eq "srun -N2 --ext-cache=local printenv SLURM_EXT_CACHE_DIR exits 0" 0 "$?"
    t_note "$out"
    t_eq "both ranks got <base>/<uid>/<jobid>/0" 2 \
        "$(grep -cxE "/var/tmp/ext-cache/$ITEST_UID/[0-9]+/0" <<<"$out")"
    job=$(head -n1 <<<"$out" | awk -F/ '{print $(NF-1)}')
    # shellcheck disable=SC2016 # expanded by the job's shell, on the node
    out=$(lab_user srun -N2 --ext-cache=local bash -c \
        'mkdir -p "$TORCH_EXTENSIONS_DIR" && echo $SLURMD_NODENAME $SLURM_EXT_CACHE_MODE $TORCH_EXTENSIONS_DIR $(stat -c %U:%a "$SLURM_EXT_CACHE_DIR" "$TORCH_EXTENSIONS_DIR")' 2>&1)
    t_note "$out"
    # torch makes its own directory (with the user's umask) in the user's 0700 leaf;
    # the task does as torch would
    t_eq "each node: mode local, TORCH_EXTENSIONS_DIR inside the user's 0700 leaf" 2 \
        "$(grep -cE "^n[0-9] local /var/tmp/ext-cache/$ITEST_UID/[0-9]+/0/torch_extensions $LAB_USER:700 $LAB_USER:[0-7]+$" <<<"$out")"
    t_eq "... on two different nodes" 2 "$(awk '{print $1}' <<<"$out" | sort -u | grep -c .)"
    out=$(lab_user srun -N1 --ext-cache=lcoal true 2>&1)
    t_contains "a typo is refused by the installed plugin" \
        "ext-cache: --ext-cache=lcoal: invalid mode (did you mean 'local'?)" "$out"
    lab_wait_idle 30 >/dev/null 2>&1
    left=
    for n in $(lab_nodes); do
        rc=0
        lab_node "$n" test -e "/var/tmp/ext-cache/$ITEST_UID/$job" || rc=$?
        [ "$rc" -eq 1 ] || left="$left $n"
    done
    t_eq "nothing left of job $job on any node" "" "$left"
    # the two nodes that ran job $job, each with its own verbose lines
    created=0 removed=0 epilog=0
    for n in $(lab_nodes); do
        log=$(cat "$(lab_log "$n")")
        grep -qE "ext-cache: job $job step 0: created /var/tmp/ext-cache/$ITEST_UID/$job/0 \(mode local from --ext-cache\) in [0-9.]+ ms" <<<"$log" &&
            created=$((created + 1))
        grep -qE "ext-cache: job $job step 0: removed /var/tmp/ext-cache/$ITEST_UID/$job/0: removed [0-9]+, could not remove 0, mount points left alone 0 in [0-9.]+ ms" <<<"$log" &&
            removed=$((removed + 1))
        grep -qE "ext-cache: job $job: epilog: moved the job's tree to the trash in [0-9.]+ ms" <<<"$log" &&
            epilog=$((epilog + 1))
    done
    t_eq "slurmd logs: 'created <dir> (mode local from --ext-cache) in N ms' on both nodes" 2 "$created"
    t_eq "slurmd logs: 'removed <dir>: removed N, could not remove 0, ... in N ms' on both nodes" 2 "$removed"
    t_eq "slurmd logs: the job epilog's 'epilog: moved the job's tree to the trash in N ms' on both nodes" 2 "$epilog"
    # the trash is emptied in the background, after the epilog
    left=
    for n in $(lab_nodes); do
        for _ in $(seq 100); do
            [ -z "$(lab_node "$n" find /var/tmp/ext-cache/.trash -mindepth 1 -maxdepth 1 2>/dev/null)" ] && break
            sleep 0.1
        done
        [ -n "$(lab_node "$n" find /var/tmp/ext-cache/.trash -mindepth 1 -maxdepth 1 2>/dev/null)" ] && left="$left $n"
    done
    t_eq "the trash is emptied in the background on every node" "" "$left"
    lab_wait_idle 30 >/dev/null 2>&1
    t_eq "no node drained" "" "$(lab_drained_nodes 2>&1)"
    lab_stop >/dev/null 2>&1
)
read -r T_PASSED T_FAILED <"$counts"

# ---- remove (the conffile stays, with a warning if it is enabled), then purge ----------
sed -i 's/^#\(optional .*ext_cache\.so\)/\1/' "$conf"
out=$(dpkg -r "$pkgname" 2>&1)
t_eq "dpkg -r" "config-files" "$(status | awk '{print $NF}')"
t_contains "dpkg -r warns that the kept snippet still loads the removed plugin" \
    "still loads the removed ext_cache.so" "$out"
t_check "dpkg -r removed the plugin" test ! -e "$plugin"
t_check "dpkg -r kept the edited conffile" grep -q '^optional .*ext_cache\.so' "$conf"
pkg_run "dpkg --purge" "$PKG_LOGS/deb-purge.log" dpkg --purge "$pkgname"
t_check "purged" bash -c "[ -z \"\$(dpkg-query -W -f='\${Status}' $pkgname 2>/dev/null)\" ] || dpkg-query -W -f='\${Status}' $pkgname | grep -q not-installed"
t_check "the conffile is gone" test ! -e "$conf"
t_check "the enroot hook is gone" test ! -e "$hook"
t_eq "the machine is as before (Slurm's files and packages)" "$before" "$(snapshot)"

pkg_end
