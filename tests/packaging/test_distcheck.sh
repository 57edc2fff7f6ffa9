#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The release tarball: `make distcheck` on a clean copy of the source tree
# (the tarball builds out of tree and passes `make check`; install and
# uninstall under distcheck's own prefix leave nothing behind), the tarball
# holds what a release needs, and `make install` lays the files out as the
# packages expect: the plugin without its .la, the commented plugstack.conf.d
# snippet naming the plugin directory and never overwriting an edited one,
# the manual, the docs; `make uninstall` removes them all.
# Never builds in the working tree. Prints ok/not ok lines, ends with
# "N passed, M failed". About 2-3 minutes.
set -u
. "$(dirname "$0")/lib.sh"

pkg_begin distcheck
pkg_need build-essential autoconf automake libtool pkg-config libslurm-dev libcmocka-dev \
    slurm-wlm-basic-plugins man-db

version=$(pkg_version)
src=$PKG_WORK/src
pkg_copy_source "$src" || { t_fail "copy the source tree" "failed"; pkg_end; }
t_pass "clean copy of the source tree"
# every source file a release needs, as the checkout has them
sources=$(cd "$src" && find plugin tests/unit tests/integration tests/packaging tests/run-all.sh scripts \
    examples docs etc debian -type f 2>/dev/null | sort)
others=$(cd "$src" && find . -type f ! -path './.git/*' | sed 's|^\./||' | sort | comm -23 - <(printf '%s\n' "$sources"))

pkg_run "autoreconf -fi" "$PKG_LOGS/distcheck-autoreconf.log" bash -c "cd '$src' && autoreconf -fi" || pkg_end
pkg_run "./configure" "$PKG_LOGS/distcheck-configure.log" bash -c "cd '$src' && ./configure" || pkg_end
plugindir=$(sed -n 's/^SLURM_PLUGINDIR = //p' "$src/Makefile")
t_check "configure found Slurm's plugin directory under /usr ($plugindir)" \
    test -f "$plugindir/auth_munge.so" -a "${plugindir#/usr/}" != "$plugindir"

# ---- make distcheck ---------------------------------------------------------------
sysplugin() { sha256sum "$plugindir/ext_cache.so" 2>/dev/null || echo absent; }
before=$(sysplugin)
if pkg_run "make distcheck" "$PKG_LOGS/distcheck.log" make -C "$src" distcheck; then
    t_check "distcheck: archives ready for distribution" \
        grep -q "spank-ext-cache-$version archives ready for distribution" "$PKG_LOGS/distcheck.log"
fi
t_check "distcheck ran the unit tests in the tarball's build" \
    grep -qE '^# PASS: +[1-9]' "$PKG_LOGS/distcheck.log"
t_eq "distcheck left the system's plugin directory alone" "$before" "$(sysplugin)"
t_check "distcheck installed under its own prefix" grep -qE '_inst/lib/slurm' "$PKG_LOGS/distcheck.log"
tarball=$src/spank-ext-cache-$version.tar.gz
if [ -f "$tarball" ]; then
    t_pass "spank-ext-cache-$version.tar.gz made"
    list=$(tar -tzf "$tarball" | sed "s|^spank-ext-cache-$version/||")
    missing=
    for f in configure Makefile.in $(pkg_docs) docs/ext_cache.8 etc/plugstack.conf.d/ext-cache.conf.in \
        spank-ext-cache.spec debian/control debian/rules debian/changelog debian/copyright \
        debian/source/format debian/spank-ext-cache.postrm plugin/spank/ext_cache.lds plugin/spank/dispatch.c \
        scripts/demo.sh scripts/install-deps.sh tests/run-all.sh tests/integration/lib/itest.bash \
        tests/integration/lib/cluster.sh tests/integration/test_core.bats tests/lib/tap.sh tests/packaging/lib.sh \
        tests/packaging/test_manpage.sh tests/packaging/test_deb.sh tests/packaging/test_rpm.sh \
        tests/packaging/test_distcheck.sh; do
        grep -qx "$f" <<<"$list" || missing="$missing $f"
    done
    t_eq "the tarball holds the build system, docs, packaging, scripts and every test suite" "" "$missing"
    missing=
    for f in $sources; do
        grep -qxF "$f" <<<"$list" || missing="$missing $f"
    done
    t_eq "the tarball holds every file of plugin/ tests/{unit,integration,packaging} scripts/ examples/ docs/ etc/ debian/" "" "$missing"
    missing=
    for f in $others; do
        grep -qxF "$f" <<<"$list" || missing="$missing $f"
    done
    [ -n "$missing" ] && t_note "not in the tarball (add to EXTRA_DIST if a release needs them):$missing"
    junk=$(grep -E '(^|/)(\.git|__pycache__|tests/logs)(/|$)|\.(o|lo|la|so|log|pyc)$' <<<"$list")
    t_eq "the tarball holds no build products or logs" "" "$junk"
    t_eq "the commands stay executable in the tarball" "" \
        "$(tar -tvzf "$tarball" | awk '$NF ~ /(\/test_[a-z_]*\.sh|\/run-all\.sh|\/scripts\/[a-z_-]*\.sh|\/debian\/rules)$/ && $1 !~ /x/ {print $NF}')"
else
    t_fail "spank-ext-cache-$version.tar.gz made" "not found in $src"
fi

# ---- make install layout (from the tarball; prefix /usr, sysconfdir /etc) ----------
build=$PKG_WORK/build
mkdir -p "$build" "$PKG_WORK/unpacked"
tar -C "$PKG_WORK/unpacked" -xzf "$tarball" 2>/dev/null
if pkg_run "the tarball configures out of tree with --prefix=/usr --sysconfdir=/etc" \
    "$PKG_LOGS/distcheck-install-configure.log" \
    bash -c "cd '$build' && '$PKG_WORK/unpacked/spank-ext-cache-$version/configure' --prefix=/usr --sysconfdir=/etc" &&
    pkg_run "make" "$PKG_LOGS/distcheck-install-make.log" make -C "$build" -j2; then
    dest=$PKG_WORK/dest
    pkg_run "make install DESTDIR=..." "$PKG_LOGS/distcheck-install.log" make -C "$build" install DESTDIR="$dest"
    files=$(cd "$dest" && find . -type f -o -type l | sed 's|^\.||' | sort)
    want=$({ printf '%s\n' "$plugindir/ext_cache.so" /etc/slurm/plugstack.conf.d/ext-cache.conf \
        /etc/enroot/hooks.d/50-ext-cache.sh /usr/share/man/man8/ext_cache.8
        pkg_docs | sed 's|^|/usr/share/doc/spank-ext-cache/|'; } | sort)
    t_eq "make install: the plugin (no .la), the snippet, the enroot hook, the manual, the docs; nothing else" "$want" "$files"
    t_eq "make install: the enroot hook is mode 0755 (enroot runs only executable hooks)" 755 \
        "$(stat -c %a "$dest/etc/enroot/hooks.d/50-ext-cache.sh" 2>&1)"
    conf=$dest/etc/slurm/plugstack.conf.d/ext-cache.conf
    t_eq "the installed snippet is all comments" "" "$(grep -v '^#' "$conf" 2>/dev/null | grep -v '^[[:space:]]*$')"
    t_check "the installed snippet's line names the installed plugin" \
        grep -qx "#optional $plugindir/ext_cache.so base=/var/tmp/ext-cache default=off pool=node" "$conf"
    t_check "the installed snippet names the directory it lives in" \
        grep -q "include /etc/slurm/plugstack.conf.d/\*.conf" "$conf"
    pkg_check_plugin "make install" "$dest$plugindir/ext_cache.so"
    echo "optional $plugindir/ext_cache.so base=/srv/edited" >>"$conf"
    make -C "$build" install DESTDIR="$dest" >"$PKG_LOGS/distcheck-reinstall.log" 2>&1
    t_check "make install again keeps the admin's edited snippet" grep -qx "optional $plugindir/ext_cache.so base=/srv/edited" "$conf"
    pkg_run "make uninstall" "$PKG_LOGS/distcheck-uninstall.log" make -C "$build" uninstall DESTDIR="$dest"
    t_eq "make uninstall leaves no file" "" "$(find "$dest" -type f -o -type l)"
fi

pkg_end
