# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# jscpd, the copy/paste detector tests/lint.sh runs, installed from the npm
# registry on first use into a cache outside the source tree and reused after.
#
#   jscpd_program    print the path of jscpd JSCPD_VERSION, installing it first
#                    if it is not there yet; when it cannot be installed or
#                    run, print what is missing and return 1
#
# The version is pinned, and so is its whole dependency tree:
# tests/lib/jscpd/package-lock.json (versions and integrity hashes), which
# `npm ci` installs exactly. 4.0.5 is the newest release whose dependency
# tree runs on Debian 12's nodejs 18 (from 4.0.7 on, its SARIF reporter pulls
# node-sarif-builder 3.3+, which wants node >= 20; 4.2.5 on want commander
# 15, node >= 22.12; the 5.x line is a Rust binary shipped in per-platform
# npm packages). It needs node and npm: Debian's npm package brings both
# (apt-get install -y --no-install-recommends npm).
# EXTC_TOOLS_DIR (default /var/cache/ext-cache-tools) is where it goes, as
# EXTC_TOOLS_DIR/jscpd-VERSION.

JSCPD_VERSION=4.0.5
JSCPD_LOCK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/jscpd
# a new lock file installs into a new directory
JSCPD_DIR=${EXTC_TOOLS_DIR:-/var/cache/ext-cache-tools}/jscpd-$JSCPD_VERSION-$(cat "$JSCPD_LOCK_DIR/package.json" \
    "$JSCPD_LOCK_DIR/package-lock.json" 2>/dev/null | sha256sum | cut -c1-12)

# _jscpd_works DIR: DIR holds a jscpd that runs and is JSCPD_VERSION.
_jscpd_works() {
    [ -x "$1/node_modules/.bin/jscpd" ] &&
        [ "$("$1/node_modules/.bin/jscpd" --version 2>/dev/null </dev/null)" = "$JSCPD_VERSION" ]
}

jscpd_program() {
    local tool tmp out
    for tool in node npm; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "$tool not found on PATH, needed to install and run jscpd $JSCPD_VERSION" \
                "(Debian: apt-get install -y --no-install-recommends npm)"
            return 1
        fi
    done
    if _jscpd_works "$JSCPD_DIR"; then
        echo "$JSCPD_DIR/node_modules/.bin/jscpd"
        return 0
    fi
    if [ -e "$JSCPD_DIR" ]; then
        echo "$JSCPD_DIR is there but holds no working jscpd $JSCPD_VERSION (remove it to reinstall)"
        return 1
    fi
    # installed beside its place and renamed into it when complete, so a run
    # stopped halfway, or two runs at once, leave no half install behind
    if ! mkdir -p "$(dirname "$JSCPD_DIR")" 2>/dev/null ||
        ! tmp=$(mktemp -d "$JSCPD_DIR.part.XXXXXX" 2>/dev/null); then
        echo "cannot create $(dirname "$JSCPD_DIR") to install jscpd $JSCPD_VERSION into (set EXTC_TOOLS_DIR)"
        return 1
    fi
    chmod 755 "$tmp" # mktemp makes it 0700; the cache is for every user
    if ! cp "$JSCPD_LOCK_DIR/package.json" "$JSCPD_LOCK_DIR/package-lock.json" "$tmp/" ||
        ! out=$(cd "$tmp" && npm ci --no-audit --no-fund --no-update-notifier 2>&1 </dev/null); then
        rm -rf "$tmp"
        echo "npm ci of tests/lib/jscpd (jscpd $JSCPD_VERSION) failed (no access to the npm registry?)"
        printf '%s\n' "$out" | tail -n 20
        return 1
    fi
    if ! _jscpd_works "$tmp"; then
        rm -rf "$tmp"
        echo "jscpd $JSCPD_VERSION installed but does not run with node $(node --version 2>&1)"
        return 1
    fi
    # another run may have put it in place meanwhile: then that one is used
    mv -T "$tmp" "$JSCPD_DIR" 2>/dev/null || rm -rf "$tmp"
    if ! _jscpd_works "$JSCPD_DIR"; then
        echo "jscpd $JSCPD_VERSION could not be put in place at $JSCPD_DIR"
        return 1
    fi
    echo "$JSCPD_DIR/node_modules/.bin/jscpd"
}
