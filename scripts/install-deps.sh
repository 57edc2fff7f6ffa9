#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install, from Debian 12's repositories, what building and testing spank-ext-cache needs.
#   scripts/install-deps.sh build    compiler, autotools, Slurm headers, cmocka
#   scripts/install-deps.sh test     build + Slurm daemons, munge, PyTorch, numba, clang, valgrind,
#                                    the root tier's filesystems, FUSE and bindfs (a site tier root
#                                    cannot read, test_tier_fail), Charliecloud's ch-run
#                                    and rootless Podman (with runc and uidmap) for
#                                    test_container_user, busybox-static for the container
#                                    suites' images, and the linters of
#                                    tests/lint.sh (shellcheck, cppcheck, python3; npm, for jscpd)
# Idempotent; as root. Package scripts are kept from starting system daemons
# (the tests start their own Slurm and munge).
set -eu

what=${1:-test}
build_pkgs=(build-essential autoconf automake libtool pkg-config libslurm-dev libcmocka-dev)
test_pkgs=("${build_pkgs[@]}" slurmctld slurmd slurm-client munge util-linux procps psmisc
    python3 python3-dev python3-torch python3-setuptools libtorch-dev pybind11-dev python3-numba ninja-build g++
    clang libclang-rt-14-dev valgrind e2fsprogs xfsprogs btrfs-progs fuse3 bindfs
    charliecloud-runtime runc podman uidmap
    python3-venv groff-base man-db shellcheck cppcheck bats bats-support bats-assert busybox-static)

case $what in
    build) pkgs=("${build_pkgs[@]}") ;;
    test)
        pkgs=("${test_pkgs[@]}")
        # tests/lint.sh installs jscpd from the npm registry: Debian's npm
        # brings node and npm, unless a node with its npm is there already
        # (another distribution of nodejs ships npm inside and conflicts with it)
        command -v npm >/dev/null 2>&1 || pkgs+=(npm)
        ;;
    *) echo "usage: $0 build|test" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
    echo "$0: must run as root (apt-get)" >&2
    exit 1
fi

mapfile -t missing < <(dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null |
    awk '$NF == "installed" {print $1}' | sort | comm -13 - <(printf '%s\n' "${pkgs[@]}" | sort))
if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-deps: all ${#pkgs[@]} packages present"
    exit 0
fi
echo "install-deps: installing: ${missing[*]}"

policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    made_policy=1
fi
trap '[ "$made_policy" = 1 ] && rm -f "$policy"' EXIT

export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
