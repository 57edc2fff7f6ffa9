# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Debian chroots that carry another Slurm release, for the release suites.
#
#   rel_known SUITE            is SUITE one this file can build (bookworm, trixie, forky)
#   rel_root SUITE             the chroot's directory
#   rel_make SUITE             a fresh chroot: a copy of the pristine base, made once
#                              with debootstrap --variant=minbase from the host's
#                              Debian mirror, plus apt's package lists and nothing
#                              installed, so every run starts from what an admin's
#                              new minimal machine holds (the admin guide's recipes install
#                              the rest themselves)
#   rel_mount SUITE            bind the chroot onto itself, /proc, /sys, /dev,
#                              /dev/pts, a fresh /dev/shm, and the release's kept
#                              apt archive (downloads are reused across runs)
#   rel_umount SUITE           kill what still runs inside, undo rel_mount (and any
#                              mount a suite left inside)
#   rel_apt SUITE PKG...       apt-get install inside, no recommends, no daemons
#   rel_run SUITE CMD...       run CMD inside as root with a clean environment
#   rel_run_pivot SUITE CMD... the same, but as the root of its own mount and PID
#                              namespaces (pivot_root, not chroot): the kernel
#                              refuses a user namespace to a chrooted process, and
#                              unprivileged container runtimes need one; whatever
#                              CMD leaves running dies with it
#   rel_sid_deb SUITE PKG      PKG's .deb from Debian sid, installed with its
#                              dependencies from SUITE (a private apt state for
#                              sid: SUITE's own package lists stay as they are)
#   rel_copy_tree SUITE SRC DEST  the source tree SRC into the chroot at DEST, as
#                              git has it (tracked and untracked-not-ignored files;
#                              outside a checkout, everything but tests/logs)
#   rel_doc_block DOC REGEX    the indented block that follows the line of
#                              DOC matching REGEX, unindented (a recipe of
#                              docs/admin-guide.md)
#   rel_since T0               whole seconds since T0, an $EPOCHREALTIME
#
# Facts this relies on, as found on Debian 12 hosts: debootstrap of the
# host's Debian 12 knows bookworm and trixie but not forky, whose script is
# sid's; forky's Release file may expire before this machine's clock; unshare
# -m inside a chroot needs the chroot to be a mount point of its own. No one
# is at the keyboard: apt in a chroot takes yes for an answer (the "Do you
# want to continue?" an admin answers when running the admin guide's recipes), and
# package scripts start no daemons (policy-rc.d).

REL_TOP=${EXTC_RELEASES_DIR:-/var/lib/ext-cache-releases}
# What every release's suites need inside, installed by run-release.sh after
# the admin guide's recipe has run on the bare base: the build tools, the Slurm
# daemons, munge, the packaging tools, and that release's own PyTorch with
# the headers its JIT needs. (The root tier, make check-root, runs on the
# host only: the filesystem engine calls no Slurm API.)
# shellcheck disable=SC2034 # installed by run-release.sh, after the admin guide's recipe
REL_BUILD_PKGS=(build-essential autoconf automake libtool pkg-config libslurm-dev libcmocka-dev
    util-linux procps psmisc kmod git ca-certificates)
# shellcheck disable=SC2034 # installed by run-release.sh, once the build has passed
REL_RUN_PKGS=(slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins
    python3 python3-dev python3-venv python3-torch python3-setuptools libtorch-dev pybind11-dev ninja-build g++
    dpkg-dev debhelper fakeroot lintian rpm cpio elfutils man-db groff-base bats bats-support bats-assert)

rel_known() { case ${1:-} in bookworm | trixie | forky) return 0 ;; *) return 1 ;; esac; }

rel_root() { echo "$REL_TOP/$1"; }

_rel_err() { echo "releases: $*" >&2; }

# The host's Debian mirror: the first URIs line of its deb822 sources, or the
# first deb line of sources.list.
_rel_mirror() {
    local m
    m=$(awk '$1 == "URIs:" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
    [ -n "$m" ] || m=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    echo "${m:-http://deb.debian.org/debian}"
}

_rel_install_host_tools() {
    command -v debootstrap >/dev/null 2>&1 && return 0
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends debootstrap >/dev/null ||
        { _rel_err "cannot install debootstrap"; return 1; }
}

# The completeness stamp of a base. Its name changes whenever what a base
# holds does: a base from before (one that carried REL_BUILD_PKGS) is then
# made again, never reused.
REL_BASE_STAMP=.extc-minbase-v2

# _rel_base SUITE: the pristine base, made once: debootstrap --variant=minbase
# and apt-get update, nothing installed. Package lists older than a day are
# fetched again (a testing suite's mirror drops the versions they name).
_rel_base() {
    local suite=$1 base mirror script=
    base=$REL_TOP/$suite.base
    if [ -f "$base/$REL_BASE_STAMP" ]; then
        [ -n "$(find "$base/$REL_BASE_STAMP" -mmin +1440)" ] || return 0
        _rel_update_lists "$suite" "$base" && touch "$base/$REL_BASE_STAMP"
        return
    fi
    _rel_install_host_tools || return 1
    mirror=$(_rel_mirror)
    # the host's debootstrap has no script named forky: sid's is the same shape
    [ "$suite" = forky ] && [ ! -e "/usr/share/debootstrap/scripts/forky" ] &&
        script=/usr/share/debootstrap/scripts/sid
    _rel_umount_dir "$base"
    rm -rf --one-file-system -- "$base"
    mkdir -p -- "$base" || return 1
    mkdir -p -- "$REL_TOP/$suite.archives" || return 1
    # its downloads go to the release's kept archive too
    # shellcheck disable=SC2086
    debootstrap --variant=minbase --cache-dir="$REL_TOP/$suite.archives" "$suite" "$base" "$mirror" $script ||
        { _rel_err "debootstrap $suite failed"; return 1; }
    printf 'deb %s %s main\n' "$mirror" "$suite" >"$base/etc/apt/sources.list"
    # forky's Release file can carry a Valid-Until before this machine's clock
    echo 'Acquire::Check-Valid-Until "false";' >"$base/etc/apt/apt.conf.d/90extc-valid-until"
    echo 'APT::Get::Assume-Yes "true";' >"$base/etc/apt/apt.conf.d/90extc-assume-yes"
    printf '#!/bin/sh\nexit 101\n' >"$base/usr/sbin/policy-rc.d" && chmod 0755 "$base/usr/sbin/policy-rc.d"
    _rel_update_lists "$suite" "$base" || return 1
    touch "$base/$REL_BASE_STAMP"
}

# _rel_update_lists SUITE DIR: apt-get update in the chroot at DIR
_rel_update_lists() {
    local suite=$1 base=$2 rc
    _rel_mount_dir "$base" "$REL_TOP/$suite.archives" || { _rel_umount_dir "$base"; return 1; }
    chroot "$base" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        apt-get -o DPkg::Lock::Timeout=600 update -qq
    rc=$?
    _rel_umount_dir "$base"
    [ "$rc" -eq 0 ] || { _rel_err "apt-get update in the $suite base failed"; return 1; }
    touch "$base/var/lib/apt/.extc-updated"
}

rel_make() {
    local suite=$1 root
    rel_known "$suite" || { _rel_err "unknown release suite: $suite"; return 1; }
    root=$(rel_root "$suite")
    _rel_base "$suite" || return 1
    _rel_umount_dir "$root"
    rm -rf --one-file-system -- "$root" && cp -a -- "$REL_TOP/$suite.base" "$root"
}

_rel_is_mount() { mountpoint -q -- "$1" 2>/dev/null; }

_rel_mount_dir() {
    local root=$1 archives=$2
    [ -d "$root" ] || { _rel_err "no chroot at $root"; return 1; }
    _rel_is_mount "$root" || mount --bind -- "$root" "$root" || return 1
    mount --make-private -- "$root" || return 1
    _rel_is_mount "$root/proc" || mount -t proc proc "$root/proc" || return 1
    _rel_is_mount "$root/sys" || mount --bind /sys "$root/sys" || return 1
    _rel_is_mount "$root/dev" || mount --bind /dev "$root/dev" || return 1
    # a bind of a shared mount (the host's /dev and /sys under systemd) joins
    # its peer group: what is mounted on it below would show on the host too
    mount --make-private -- "$root/sys" && mount --make-private -- "$root/dev" || return 1
    _rel_is_mount "$root/dev/pts" || mount --bind /dev/pts "$root/dev/pts" || return 1
    mkdir -p "$root/dev/shm" "$archives/partial"
    _rel_is_mount "$root/dev/shm" || mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm" || return 1
    _rel_is_mount "$root/var/cache/apt/archives" || mount --bind -- "$archives" "$root/var/cache/apt/archives" || return 1
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
    return 0
}

_rel_umount_dir() {
    _rel_is_mount "$1" || return 0
    # everything at or below the chroot, deepest first
    umount -R -- "$1" 2>/dev/null || umount -R -l -- "$1"
}

rel_mount() { _rel_mount_dir "$(rel_root "$1")" "$REL_TOP/$1.archives"; }

# Every process whose root is the chroot (a lab a killed suite left
# running, a job's task): SIGKILL, then wait (bounded) for them to go.
rel_kill_procs() {
    local root p left
    root=$(realpath -m -- "$(rel_root "$1")")
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        left=
        for p in /proc/[0-9]*; do
            [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] || continue
            left="$left ${p#/proc/}"
            kill -KILL "${p#/proc/}" 2>/dev/null
        done
        [ -z "$left" ] && return 0
        sleep 0.2
    done
    _rel_err "processes left in the $1 chroot:$left"
    return 1
}

rel_umount() {
    rel_kill_procs "$1"
    _rel_umount_dir "$(rel_root "$1")"
}

# rel_run SUITE CMD...: as root inside, cwd /, environment: PATH HOME LANG
# TERM and the variables named in REL_PASS_ENV.
# _rel_envs: the environment a command inside gets, into the array _REL_ENVS
_rel_envs() {
    local v
    _REL_ENVS=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
        LANG=C.UTF-8 TERM=dumb)
    for v in ${REL_PASS_ENV:-}; do
        [ -n "${!v+x}" ] && _REL_ENVS+=("$v=${!v}")
    done
}

rel_run() {
    local suite=$1 root
    shift
    root=$(rel_root "$suite")
    _rel_envs
    chroot "$root" /usr/bin/env -i "${_REL_ENVS[@]}" "$@"
}

rel_run_pivot() {
    local suite=$1 root
    shift
    root=$(rel_root "$suite")
    _rel_envs
    _rel_is_mount "$root" || { _rel_err "rel_run_pivot: $root is not mounted (rel_mount)"; return 1; }
    mkdir -p -- "$root/.extc-oldroot" || return 1
    # the chroot is a mount of its own (rel_mount), which pivot_root needs;
    # its /proc is made again for the new PID namespace; then the old root
    # is let go, so nothing of the host stays reachable
    # shellcheck disable=SC2016 # expanded by the inner shells
    unshare --mount --pid --fork --propagation private -- /bin/sh -c '
        root=$1; shift
        mount -t proc proc "$root/proc" && cd "$root" && pivot_root . .extc-oldroot || exit 125
        cd / && exec /usr/bin/env -i "$@"' extc-pivot "$root" "${_REL_ENVS[@]}" \
        /bin/sh -c 'umount -l /.extc-oldroot && exec "$@"' extc-pivot "$@"
}

# _rel_mirror is the host's: sid is on the same mirror
rel_sid_deb() {
    local suite=$1 pkg=$2 mirror
    mirror=$(_rel_mirror)
    # shellcheck disable=SC2016 # expanded inside
    rel_run "$suite" env MIRROR="$mirror" PKG="$pkg" bash -e -c '
        state=/var/lib/extc-sid
        mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
        echo "deb $MIRROR sid main" >"$state/sources.list"
        sid=(-o Dir::Etc::SourceList="$state/sources.list" -o Dir::Etc::SourceParts=/nonexistent
            -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state/cache"
            -o Acquire::Check-Valid-Until=false)
        apt-get "${sid[@]}" -o DPkg::Lock::Timeout=600 update -qq
        cd "$state/debs" && rm -f ./*.deb
        apt-get "${sid[@]}" download "$PKG"
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
            --no-install-recommends ./"$PKG"_*.deb'
}

rel_apt() {
    local suite=$1
    shift
    _rel_apt_in "$(rel_root "$suite")" "$@"
}

_rel_apt_in() {
    local root=$1
    shift
    # shellcheck disable=SC2016
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 bash -c '
        export DEBIAN_FRONTEND=noninteractive
        missing=$(dpkg-query -W -f="\${Package} \${Status}\n" "$@" 2>/dev/null |
            awk "\$NF == \"installed\" {print \$1}" | sort | comm -13 - <(printf "%s\n" "$@" | sort))
        [ -z "$missing" ] && exit 0
        if [ ! -e /var/lib/apt/.extc-updated ]; then
            apt-get -o DPkg::Lock::Timeout=600 update -qq || exit 1
            touch /var/lib/apt/.extc-updated
        fi
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing' extc-apt "$@"
}

rel_copy_tree() {
    local dest f
    dest=$(rel_root "$1")$3
    rm -rf --one-file-system -- "$dest" && mkdir -p -- "$dest" || return 1
    (
        cd "$2" || exit 1
        if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
            git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
                [ -e "$f" ] || [ -L "$f" ] || continue
                printf '%s\0' "$f"
            done | tar --null -T - -cf -
        else
            tar --exclude=./tests/logs -cf - .
        fi
    ) | tar -C "$dest" -xf -
}

rel_doc_block() {
    awk -v h="$2" '$0 ~ h {f = 1; next} f && /^    / {print substr($0, 5); n++; next}
        f && n && !/^$/ {exit}' "$1"
}

rel_since() {
    local a=${1/[.,]/} b=${EPOCHREALTIME/[.,]/}
    echo $(((b - a) / 1000000))
}
