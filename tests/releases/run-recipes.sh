#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The admin guide's install recipes (docs/admin-guide.md), verbatim, on a minimal machine of a Debian
# release (tests/releases/chroot.sh: debootstrap --variant=minbase and apt's
# package lists, nothing installed), so they prove that its apt-get
# lines name every package a build and its make check need:
#   a. the "Debian / Ubuntu package" recipe as root, checks on (no nocheck in
#      DEB_BUILD_OPTIONS), down to installing the .deb it built with apt
#   b. the "From source" recipe as root, in a fresh chroot again
#   c. the same recipe's steps after its apt-get line, up to and including
#      make check, as an unprivileged user created in that chroot, in a copy
#      of the tree that user owns
# Each must exit 0 with a make check that failed, errored and skipped nothing.
# None may leave a mount in the chroot or a process running in it, or change
# the host's /dev/fuse or /etc/fuse.conf; no build may add a user to it (the
# users Debian's packages make when apt installs them are noted).
#
#   tests/releases/run-recipes.sh [bookworm|trixie|forky]   (default bookworm)
#
# Must run as root. It uses only that release's chroot directory and no
# port, so it runs beside run-release.sh of the other releases. Prints
# ok/not ok lines and ends with "N passed, M failed" (the cmocka tests of
# every make check count one by one). Logs: $EXTC_TEST_LOGS/recipes-SUITE/
# (default tests/logs).
set -u
REL_DIR=$(cd "$(dirname "$0")" && pwd)
REL_SRC=$(cd "$REL_DIR/../.." && pwd)
# shellcheck source=chroot.sh
. "$REL_DIR/chroot.sh"
# shellcheck source=../lib/tap.sh
. "$REL_DIR/../lib/tap.sh"

suite=${1:-bookworm}
rel_known "$suite" || { echo "usage: $0 [bookworm|trixie|forky]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { t_fail "running as root" "$0 builds a chroot"; t_summary; exit 1; }

logs=${EXTC_TEST_LOGS:-$REL_SRC/tests/logs}/recipes-$suite
mkdir -p "$logs" && rm -f -- "$logs"/*.log "$logs"/*.txt
root=$(rel_root "$suite")
T0=$EPOCHREALTIME
finish() {
    rel_umount "$suite"
    t_note "recipes on $suite took $(rel_since "$T0") s"
    t_summary
    exit $?
}
fail_end() { t_fail "$1" "$2"; finish; }
trap 'rel_umount "$suite"' EXIT

# The recipes run as an admin runs them, less the keyboard: debconf asks
# nothing, and apt takes yes for an answer (chroot.sh). Nothing else of this
# script's environment goes in: rel_run starts from an empty one.
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2034 # read by rel_run (chroot.sh)
REL_PASS_ENV=DEBIAN_FRONTEND
unset DEB_BUILD_OPTIONS

# ---- the admin guide's text -------------------------------------------------------------
pkg_recipe=$(rel_doc_block "$REL_SRC/docs/admin-guide.md" '^\*\*Debian / Ubuntu package\*\*')
src_recipe=$(rel_doc_block "$REL_SRC/docs/admin-guide.md" '^\*\*From source:\*\*')
t_check "docs/admin-guide.md has a Debian / Ubuntu package recipe" test -n "$pkg_recipe"
t_check "docs/admin-guide.md has a From source recipe" test -n "$src_recipe"
# Each recipe runs in parts, one after the other in the same directory, each
# verbatim, so that what the build does is told from what Debian's packages
# do when apt installs them (Slurm's make a slurm user, dbus a messagebus):
# its first line, apt-get installing the build dependencies; the build; and
# for the package recipe its last line, apt-get installing the .deb it built.
first_apt() { printf '%s\n' "$1" | awk '{print} /^apt-get / {exit}'; }
after_apt() { printf '%s\n' "$1" | awk 'f {print} /^apt-get / {f = 1}'; }
pkg_deps=$(first_apt "$pkg_recipe")
pkg_install=$(printf '%s\n' "$pkg_recipe" | grep -E '^apt-get install \.\./' | tail -n1)
pkg_build=$(after_apt "$pkg_recipe" | grep -vxF -- "$pkg_install")
src_deps=$(first_apt "$src_recipe")
src_build=$(after_apt "$src_recipe")
# the unprivileged user's part: after its apt-get line, up to and including make check
user_steps=$(printf '%s\n' "$src_build" | awk '{print} /(^|[;&| ])make check([;&| #]|$)/ {exit}')
t_eq "the admin guide's package recipe: apt-get, the build, apt-get installing the .deb, nothing else" \
    "$pkg_recipe" "$(printf '%s\n' "$pkg_deps" "$pkg_build" "$pkg_install")"
t_eq "the admin guide's From source recipe: apt-get, then the build" "$src_recipe" "$(printf '%s\n' "$src_deps" "$src_build")"
t_contains "the admin guide's package recipe ends by installing the .deb it built" "apt-get install ../" "$pkg_install"
grep -qE '(^|[;&| ])make check([;&| #]|$)' <<<"$user_steps"
t_eq "the admin guide's From source recipe runs make check after its apt-get line" 0 "$?"
if [ "$T_FAILED" -gt 0 ]; then
    fail_end "the admin guide's recipes" "cannot take them apart; see $REL_SRC/docs/admin-guide.md"
fi
printf '%s\n' "$pkg_deps" "--" "$pkg_build" "--" "$pkg_install" >"$logs/package-recipe.txt"
printf '%s\n' "$src_deps" "--" "$src_build" >"$logs/source-recipe.txt"
printf '%s\n' "$user_steps" >"$logs/user-recipe.txt"

# ---- what a recipe must leave as it was ---------------------------------------------------
# fuse_state [ROOT]: /dev/fuse's mode, owner and device, /etc/fuse.conf's
# presence, mode and content, on the host or in the chroot at ROOT
fuse_state() {
    local r=${1-}
    if [ -e "$r/dev/fuse" ]; then stat -c '/dev/fuse %A %U:%G %t:%T' "$r/dev/fuse"; else echo '/dev/fuse absent'; fi
    if [ -e "$r/etc/fuse.conf" ]; then
        echo "/etc/fuse.conf $(stat -c '%A %U:%G' "$r/etc/fuse.conf") $(sha256sum <"$r/etc/fuse.conf" | cut -d' ' -f1)"
    else
        echo '/etc/fuse.conf absent'
    fi
}
# The chroot's /dev is the host's, where the host's own root tests (make
# check-root, test_hostile), which run beside this script in run-all.sh,
# change /dev/fuse's mode for a while. So the chroot gets a /dev/fuse of its
# own: a node of the same device, mode and owner bound over the host's in the
# chroot's /dev. What a recipe does to /dev/fuse shows on that node, and
# never reaches the host's; the chroot's /etc/fuse.conf is its own anyway.
own_dev_fuse() {
    local node=$root/run/extc-dev-fuse
    [ -c /dev/fuse ] || return 0
    rm -f -- "$node" &&
        mknod -m "$(stat -c %a /dev/fuse)" "$node" c "$((0x$(stat -c %t /dev/fuse)))" "$((0x$(stat -c %T /dev/fuse)))" &&
        chown "$(stat -c %u:%g /dev/fuse)" "$node" && mount --bind -- "$node" "$root/dev/fuse"
}
# the chroot's mounts as the chroot sees them: mount point, type, source
chroot_mounts() {
    rel_run "$suite" cat /proc/self/mountinfo |
        awk '{for (i = 7; $i != "-"; i++); print $5, $(i + 1), $(i + 2)}' | sort
}
chroot_users() { cut -d: -f1,3 "$root/etc/passwd" | sort; }
# processes whose root is the chroot (a daemon a package script started)
chroot_procs() {
    local r p
    r=$(realpath -m -- "$root")
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$r" ] && echo "${p#/proc/} $(cat "$p/comm" 2>/dev/null)"
    done
}
HOST_FUSE=$(fuse_state)
t_note "host: $(paste -sd';' - <<<"$HOST_FUSE")"

# snap NAME WHEN: the chroot's mounts, users and FUSE state into the logs
snap() {
    chroot_mounts >"$logs/$1-mounts-$2.txt"
    chroot_users >"$logs/$1-users-$2.txt"
    fuse_state "$root" >"$logs/$1-fuse-$2.txt"
}
changed() { diff "$logs/$1-$2-$3.txt" "$logs/$1-$2-$4.txt" | grep '^[<>]'; }
# after NAME WHAT: what the whole recipe (snapshots "before" and "after")
# and its build (snapshots "built-before" and "built-after") left behind
after() {
    local name=$1 what=$2
    snap "$name" after
    t_eq "$suite: $what left no mount in the chroot" "" "$(changed "$name" mounts before after)"
    t_eq "$suite: $what: the build created no user in the chroot" "" \
        "$(changed "$name" users built-before built-after)"
    [ -z "$(changed "$name" users before after)" ] ||
        t_note "$suite: users that Debian's packages made as apt installed them: $(changed "$name" users before after | paste -sd' ' -)"
    t_eq "$suite: $what left no process running in the chroot" "" "$(chroot_procs)"
    t_eq "$suite: $what left /dev/fuse (the chroot's own node) and /etc/fuse.conf as they were" "" \
        "$(changed "$name" fuse before after)"
    # the host's, out of the recipe's reach: a change is another suite's doing
    [ "$(fuse_state)" = "$HOST_FUSE" ] ||
        t_note "$suite: the host's /dev/fuse or /etc/fuse.conf changed meanwhile (not through this chroot): $(fuse_state | paste -sd';' -)"
}

# make_check NAME LOG TREE: the make check in LOG passed every program and
# skipped none; TREE's cmocka tests count one by one in the totals
make_check() {
    local name=$1 log=$2 tree=$root$3 p f
    t_check "$suite: $name ran make check" grep -qE '^# TOTAL: +[1-9]' "$log"
    t_check "$suite: $name: make check failed nothing" grep -qE '^# FAIL: +0$' "$log"
    t_check "$suite: $name: ... errored nothing" grep -qE '^# ERROR: +0$' "$log"
    t_check "$suite: $name: ... skipped nothing" grep -qE '^# SKIP: +0$' "$log"
    grep -qE '^# (FAIL|ERROR|SKIP): +[1-9]' "$log" &&
        t_fail "$suite: $name: every make check summary" "$(grep -E '^(# [A-Z]+:|FAIL:|ERROR:|SKIP:)' "$log")"
    t_note "$suite: $name: $(grep -E '^# (TOTAL|PASS|FAIL|ERROR|SKIP|XFAIL)' "$log" | paste -sd' ' -)"
    find "$tree/tests" "$tree/fuzz" -name '*.log' ! -name test-suite.log ! -path '*/tests/logs/*' \
        -exec cat {} + >"$logs/$name-unit-detail.log" 2>/dev/null
    p=$(grep -h '^\[  PASSED  \] [0-9]* test' "$logs/$name-unit-detail.log" | awk '{s += $4} END {print s + 0}')
    f=$(grep -h '^\[  FAILED  \] [0-9]* test' "$logs/$name-unit-detail.log" | awk '{s += $4} END {print s + 0}')
    t_note "$suite: $name: make check's cmocka tests: $p passed, $f failed"
    [ "$p" -gt 0 ] || t_fail "$suite: $name: make check's cmocka tests ran" "no [  PASSED  ] line in $tree/tests"
    T_PASSED=$((T_PASSED + p))
    T_FAILED=$((T_FAILED + f))
}

# fresh_chroot WHAT: a new chroot from the minimal base, mounted
fresh_chroot() {
    local t1=$EPOCHREALTIME
    rel_umount "$suite"
    rel_make "$suite" >>"$logs/chroot.log" 2>&1 || fail_end "$suite: minimal chroot for $1" "$(tail -n 20 "$logs/chroot.log")"
    rel_mount "$suite" || fail_end "$suite: mount the chroot for $1" "rel_mount failed"
    own_dev_fuse || fail_end "$suite: a /dev/fuse of the chroot's own" "mknod or mount --bind failed"
    t_pass "$suite: a fresh minimal chroot for $1, no build package in it"
    t_check "$suite: ... without gcc, make or libslurm-dev" \
        rel_run "$suite" sh -c '! command -v gcc && ! command -v make && ! test -e /usr/include/slurm/spank.h'
    t_note "$suite: the chroot for $1 took $(rel_since "$t1") s"
}

# ---- a. the Debian / Ubuntu package recipe, as root ---------------------------------------------
t1=$EPOCHREALTIME
fresh_chroot "the package recipe"
rel_copy_tree "$suite" "$REL_SRC" /build/pkg/src || fail_end "copy the source tree into the chroot" "tar failed"
t_check "$suite: the recipe's environment has no nocheck in DEB_BUILD_OPTIONS" \
    rel_run "$suite" sh -c "case \" \${DEB_BUILD_OPTIONS-} \" in *nocheck*) exit 1 ;; esac"
snap package before
t2=$EPOCHREALTIME
rel_run "$suite" bash -e -c "cd /build/pkg/src && $pkg_deps" </dev/null >"$logs/package.log" 2>&1
t_eq "$suite: the admin guide's package recipe: '$pkg_deps'" 0 "$?" || t_note "$(tail -n 30 "$logs/package.log")"
t_note "$suite: its apt-get took $(rel_since "$t2") s"
snap package built-before
t2=$EPOCHREALTIME
rel_run "$suite" bash -e -c "cd /build/pkg/src && $pkg_build" </dev/null >>"$logs/package.log" 2>&1
t_eq "$suite: the admin guide's package recipe builds the .deb verbatim (dpkg-buildpackage with make check)" \
    0 "$?" || t_note "$(tail -n 30 "$logs/package.log")"
t_note "$suite: the package build took $(rel_since "$t2") s"
snap package built-after
make_check package "$logs/package.log" /build/pkg/src
deb=$(awk '{print $NF}' <<<"$pkg_install")
t_check "$suite: dpkg-buildpackage made the .deb the admin guide names (${deb##*/}, as debian/changelog says)" \
    test -f "$root/build/pkg/src/$deb" ||
    t_note "built: $(cd "$root/build/pkg" && echo *.deb)"
t2=$EPOCHREALTIME
rel_run "$suite" bash -e -c "cd /build/pkg/src && $pkg_install" </dev/null >>"$logs/package.log" 2>&1
t_eq "$suite: the admin guide's '$pkg_install' installs it with Slurm's packages" 0 "$?" ||
    t_note "$(tail -n 30 "$logs/package.log")"
t_note "$suite: the .deb's install took $(rel_since "$t2") s"
t_eq "$suite: spank-ext-cache is installed" "install ok installed" \
    "$(rel_run "$suite" dpkg-query -W -f "\${Status}" spank-ext-cache 2>&1)"
t_check "$suite: the plugin is where the admin guide says" \
    test -f "$root/usr/lib/x86_64-linux-gnu/slurm-wlm/ext_cache.so"
t_check "$suite: the documents are where the admin guide says (/usr/share/doc/spank-ext-cache)" \
    test -f "$root/usr/share/doc/spank-ext-cache/README.md" -a -f "$root/usr/share/doc/spank-ext-cache/docs/admin-guide.md"
slurm=$(awk '$2 == "SLURM_VERSION_NUMBER" {print $3}' "$root/usr/include/slurm/slurm_version.h" 2>/dev/null)
slurm=$(printf '%d.%02d.%d' $((slurm >> 16 & 255)) $((slurm >> 8 & 255)) $((slurm & 255)))
t_contains "$suite: the package depends on exactly Slurm $slurm" \
    "slurm-wlm-basic-plugins (>= $slurm)" "$(rel_run "$suite" dpkg-query -W -f "\${Depends}" spank-ext-cache 2>&1)"
after package "the admin guide's package recipe"
t_note "$suite: a. the package recipe took $(rel_since "$t1") s"

# ---- b. the From source recipe, as root ----------------------------------------------------------
t1=$EPOCHREALTIME
fresh_chroot "the From source recipe"
rel_copy_tree "$suite" "$REL_SRC" /build/source || fail_end "copy the source tree into the chroot" "tar failed"
snap source before
t2=$EPOCHREALTIME
rel_run "$suite" bash -e -c "cd /build/source && $src_deps" </dev/null >"$logs/source.log" 2>&1
t_eq "$suite: the admin guide's From source recipe: '$src_deps'" 0 "$?" || t_note "$(tail -n 30 "$logs/source.log")"
t_note "$suite: its apt-get took $(rel_since "$t2") s"
snap source built-before
t2=$EPOCHREALTIME
rel_run "$suite" bash -e -c "cd /build/source && $src_build" </dev/null >>"$logs/source.log" 2>&1
t_eq "$suite: the admin guide's From source recipe runs verbatim as root (autoreconf, configure, make, make check, make install)" \
    0 "$?" || t_note "$(tail -n 30 "$logs/source.log")"
t_note "$suite: its build, make check and make install took $(rel_since "$t2") s"
snap source built-after
make_check source "$logs/source.log" /build/source
t_check "$suite: make install put the plugin in \${libdir}/slurm (no Slurm plugins here)" \
    test -f "$root/usr/local/lib/slurm/ext_cache.so"
t_check "$suite: ... and the commented-out snippet in /etc/slurm/plugstack.conf.d" \
    grep -qE '^#.*ext_cache\.so' "$root/etc/slurm/plugstack.conf.d/ext-cache.conf"
after source "the admin guide's From source recipe"
t_note "$suite: b. the From source recipe as root took $(rel_since "$t1") s"

# ---- c. the From source recipe's build and make check, unprivileged --------------------------------
t1=$EPOCHREALTIME
user=extcbuild
rel_run "$suite" useradd --create-home --shell /bin/bash "$user" >"$logs/user.log" 2>&1 ||
    fail_end "$suite: an unprivileged user in the chroot" "$(cat "$logs/user.log")"
if ! rel_copy_tree "$suite" "$REL_SRC" /build/user || ! rel_run "$suite" chown -R "$user:" /build/user; then
    fail_end "copy the source tree into the chroot, owned by $user" "tar or chown failed"
fi
as_user() {
    rel_run "$suite" setpriv --reuid="$user" --regid="$user" --init-groups \
        env HOME="/home/$user" USER="$user" LOGNAME="$user" "$@"
}
uid=$(as_user id -u 2>&1)
t_check "$suite: the recipe runs as $user, not root (uid $uid)" test "$uid" -gt 0
snap user before
snap user built-before
as_user bash -e -c "cd /build/user && $user_steps" </dev/null >>"$logs/user.log" 2>&1
t_eq "$suite: the admin guide's From source recipe, from autoreconf to make check, passes as an unprivileged user" \
    0 "$?" || t_note "$(tail -n 30 "$logs/user.log")"
snap user built-after
make_check user "$logs/user.log" /build/user
after user "the unprivileged make check"
t_note "$suite: c. the unprivileged build and make check took $(rel_since "$t1") s"

finish
