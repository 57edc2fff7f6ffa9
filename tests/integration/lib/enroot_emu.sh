#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What enroot's runtime does with a hook's output, emulated inside a task
# (enroot is not in Debian), for tests/integration/test_enroot.bats. Read
# in NVIDIA/enroot at commit 8ea147d337da60cb1c557140f3a85cdf0d620968:
# src/runtime.sh (runtime::_start, runtime::_do_hooks), src/common.sh
# (common::envfmt), bin/enroot-mount.c (the fstab lines), bin/common.h
# (the uid map, load_environment_fd) and bin/enroot-switchroot.c.
#
#   enroot_emu.sh LIB plain|remap [NONCE]
#
# 1. The hook runs as enroot runs it: LIB/hooks.d/50-ext-cache.sh executed
#    with the task's environment plus ENROOT_ROOTFS, ENROOT_PID,
#    ENROOT_MOUNTS and ENROOT_ENVIRON naming fresh files; the fstab file
#    already holds a line of the user's (a bind of a data directory at
#    /data), the environment file what the image and the user configured.
#    remap: inside a user namespace mapping uid 0 onto the user, as
#    --container-remap-root does ("0 EUID 1"); plain: as the user.
# 2. In a new user and mount namespace: a tmpfs rootfs holding busybox, each
#    fstab line bound at its target inside it (made first, as x-create does;
#    read-only, nosuid, nodev as asked, with the source's locked flags kept
#    as enroot-mount does in a user namespace), the environment file
#    filtered as envfmt does and loaded into an empty environment as
#    enroot-switchroot does, then chroot (remap: as uid 0; plain: as the
#    user's own uid in a nested namespace) and a busybox shell that writes
#    NONCE into $TORCH_EXTENSIONS_DIR/probe.NODE.
# Prints tagged lines (HOOKRC, HOOKERR, FSTAB, ENVIRON, IN, WROTE, USERDATA,
# HOST) for the suite to assert on; the temporary files go with it.
set -u

if [ "${1-}" = inner ]; then
	# ---- 2. as root of a new user namespace, in a new mount namespace ----
	t=$2 mode=$3 uid=$4 gid=$5 busybox=$6 nonce=$7 node=$8
	root=$t/rootfs
	mount -t tmpfs -o mode=0755 tmpfs "$root" || exit 20
	mkdir -p "$root/bin" "$root/proc"
	cp "$busybox" "$root/bin/busybox" || exit 21
	for a in sh cat echo id ls mkdir stat test touch; do ln -s busybox "$root/bin/$a"; done
	while read -r src dst _type opts _rest; do
		case $src in '' | '#'*) continue ;; esac
		case ,$opts, in
		*,x-create=dir,*) mkdir -p "$root$dst" ;;
		*,x-create=file,*) mkdir -p "$(dirname "$root$dst")" && touch "$root$dst" ;;
		esac
		flags=
		for o in ${opts//,/ }; do
			case $o in ro | rw | nosuid | nodev | noexec) flags=$flags,$o ;; esac
		done
		# what a user namespace cannot drop from the source's mount
		for o in $(findmnt -n -o VFS-OPTIONS -T "$src" | tr ',' ' '); do
			case $o in ro | nosuid | nodev | noexec | noatime | nodiratime | relatime) flags=$flags,$o ;; esac
		done
		if ! { mount --bind "$src" "$root$dst" && mount -o "remount,bind$flags" "$root$dst" &&
			{ [[ ,$opts, != *,private,* ]] || mount --make-private "$root$dst"; }; }; then
			[[ ,$opts, == *,nofail,* ]] || { echo "EMU cannot mount $src at $dst ($opts)"; exit 22; }
		fi
		echo "MOUNTED $dst $(findmnt -n -o VFS-OPTIONS "$root$dst")"
	done <"$t/fstab"
	envs=()
	while IFS= read -r line; do
		line=${line#"${line%%[![:space:]]*}"}
		[[ $line =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || continue
		[[ $line == ENROOT_* ]] && continue
		if [[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=[\"\'](.*)[\"\'][[:space:]]*$ ]]; then
			line=${BASH_REMATCH[1]}=${BASH_REMATCH[2]}
		fi
		envs+=("$line")
	done <"$t/environment"
	# shellcheck disable=SC2016  # expanded by the container's shell
	script='echo "IN uid=$(id -u) SLURM_EXT_CACHE_DIR=$SLURM_EXT_CACHE_DIR TORCH_EXTENSIONS_DIR=$TORCH_EXTENSIONS_DIR MODE=${SLURM_EXT_CACHE_MODE-unset} HOME=$HOME MYVAR=${MYVAR-unset}"
		mkdir -p "$TORCH_EXTENSIONS_DIR" && echo "$1" >"$TORCH_EXTENSIONS_DIR/probe.$2" &&
			echo "WROTE $(stat -c %i "$TORCH_EXTENSIONS_DIR/probe.$2") $TORCH_EXTENSIONS_DIR/probe.$2"
		echo "USERDATA $(cat /data/hello 2>&1)"'
	if [ "$mode" = remap ]; then
		# coreutils' chroot is in /usr/sbin, outside a user's PATH
		exec env -i "${envs[@]}" "$(PATH=$PATH:/usr/sbin:/sbin command -v chroot)" "$root" /bin/sh -c "$script" sh "$nonce" "$node"
	fi
	exec env -i "${envs[@]}" "$(command -v unshare)" --user --map-user="$uid" --map-group="$gid" \
		--root="$root" /bin/sh -c "$script" sh "$nonce" "$node"
fi

# ---- 1. the hook, in the task, as the user ----
lib=$1 mode=$2 nonce=${3:-none}
node=${SLURMD_NODENAME:-unknown}
t=$(mktemp -d /tmp/enroot-emu.XXXXXX) || exit 10
trap 'rm -rf "$t"' EXIT
mkdir "$t/rootfs" "$t/data"
echo "hello from $node" >"$t/data/hello"
printf '%s /data none x-create=dir,bind,ro,nosuid,nodev,private\n' "$t/data" >"$t/fstab"
printf 'PATH=/bin\nHOME=/home/emu\n' >"$t/environment"
before=$(cat "$t/fstab" "$t/environment" | cksum)
hookenv=(ENROOT_ROOTFS="$t/rootfs" ENROOT_PID=$$ ENROOT_MOUNTS="$t/fstab" ENROOT_ENVIRON="$t/environment")
rc=0
if [ "$mode" = remap ]; then
	env "${hookenv[@]}" ENROOT_REMAP_ROOT=y unshare --user --map-root-user "$lib/hooks.d/50-ext-cache.sh" 2>"$t/err" || rc=$?
else
	env "${hookenv[@]}" "$lib/hooks.d/50-ext-cache.sh" 2>"$t/err" || rc=$?
fi
echo "HOOKRC $rc"
sed 's/^/HOOKERR /' "$t/err"
[ "$(cat "$t/fstab" "$t/environment" | cksum)" = "$before" ] && echo "UNCHANGED"
sed 's/^/FSTAB /' "$t/fstab"
sed 's/^/ENVIRON /' "$t/environment"
# how many of the task's variables hold exactly $SLURM_EXT_CACHE_DIR/NAME
if [ -n "${SLURM_EXT_CACHE_DIR-}" ]; then
	echo "TASKVARS $(env | grep -c "^[A-Za-z_][A-Za-z0-9_]*=$SLURM_EXT_CACHE_DIR/[^/]*$")"
fi
unshare --user --map-root-user --mount "$0" inner "$t" "$mode" "$(id -u)" "$(id -g)" "$lib/busybox" "$nonce" "$node"
echo "EMURC $?"
if [ -n "${SLURM_EXT_CACHE_DIR-}" ]; then
	p=$SLURM_EXT_CACHE_DIR/container/torch_extensions
	echo "HOST $node $SLURM_EXT_CACHE_DIR $(stat -c %i "$p/probe.$node" 2>&1) $(cat "$p/probe.$node" 2>&1) $(find "$p" -mindepth 1 -maxdepth 1 -printf "%f\n" 2>&1 | sort | paste -sd, -) $(stat -c '%U:%a' "$SLURM_EXT_CACHE_DIR/container")"
fi
