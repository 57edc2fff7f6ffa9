#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# spank-ext-cache: enroot hook giving a container (enroot start, or pyxis'
# srun --container-image) the step's private cache directory.
#
# The step's directory, $SLURM_EXT_CACHE_DIR, lives on the host; a container
# does not see it. This hook binds it at the same path inside the container
# and points the cache variables at a sub-tree of it, container/, so that
# what a container builds never mixes with what the host's tasks build (the
# plugin's node pool keeps the two apart by this sub-tree).
#
# The contract with enroot, read in NVIDIA/enroot at commit
# 8ea147d337da60cb1c557140f3a85cdf0d620968:
# - src/runtime.sh (runtime::_start, runtime::_do_hooks): every executable
#   *.sh of $ENROOT_SYSCONF_PATH/hooks.d (default /etc/enroot/hooks.d) and of
#   the user's $ENROOT_CONFIG_PATH/hooks.d runs at container start, after
#   the rootfs is mounted and before the switch into it, inside enroot's user
#   and mount namespaces: as the user, or as uid 0 mapped onto the user with
#   --container-remap-root / ENROOT_REMAP_ROOT (bin/common.h maps the one
#   uid, "0 EUID 1" or "EUID EUID 1"), so a directory the user owns looks
#   owned by `id -u` either way. Its environment is enroot's own (pyxis
#   passes the job's) plus ENROOT_ROOTFS, ENROOT_PID, ENROOT_ENVIRON and
#   ENROOT_MOUNTS. A hook that exits non-zero aborts the start.
# - ENROOT_MOUNTS names a file that starts empty for the hooks; enroot-mount
#   (bin/enroot-mount.c) then mounts its lines, read with getmntent(3):
#   "SRC DST TYPE OPTIONS", fields split on blanks, "\NNN" octal escapes
#   decoded, lines starting with '#' skipped; x-create=dir makes DST in the
#   rootfs, nofail turns a failed mount into a warning. Later mounts, the
#   user's --container-mounts among them, are made after the hooks'.
# - ENROOT_ENVIRON names the environment file: src/common.sh (common::envfmt)
#   drops lines that are not NAME=value, ENROOT_* names, and one pair of
#   quotes around a value; bin/enroot-switchroot.c with bin/common.h
#   (load_environment_fd) clears the environment and sets each line's value,
#   up to the newline, unquoted, a later line winning. pyxis copies the
#   container's environment over the job's (pyxis_slurmstepd.c), so these
#   values are what the task sees.
# - conf/hooks/10-home.sh and conf/hooks/extra/50-slurm-pmi.sh append to
#   both files the same way.
#
# Exit status: always 0. enroot aborts the container start on a hook's
# failure, and a cache is an optimisation: a directory this hook cannot use
# leaves the container as it was without the plugin (the variables keep
# their host values, which the container does not have, and the tools make
# their directories inside it), never a failed step. The reason goes to
# stderr, one line starting "ext-cache:" (pyxis shows enroot's output only
# when the start fails; a plain `enroot start` shows it).

# byte-wise patterns and messages whatever the user's locale
LC_ALL=C
export LC_ALL

# esc VALUE: VALUE for a message, printable ASCII kept, any other byte (and
# blank and backslash) as \NNN octal, at most 256 bytes shown
esc() {
	printf '%s' "$1" | od -An -v -to1 -N 256 | awk '
		{ for (i = 1; i <= NF; i++) {
			n = (substr($i, 1, 1) * 64) + (substr($i, 2, 1) * 8) + substr($i, 3, 1)
			if (n > 32 && n < 127 && n != 92)
				printf "%c", n
			else
				printf "\\%s", $i
		} }'
	[ "${#1}" -le 256 ] || printf '...'
}

# refuse WHY: say why nothing is written, and leave
refuse() {
	printf 'ext-cache: enroot hook: SLURM_EXT_CACHE_DIR=%s: %s; the container gets no step cache\n' \
		"$(esc "$dir")" "$1" >&2
	exit 0
}

# A step without --ext-cache (or a plain enroot start outside any step)
# is none of our business: untouched and silent.
[ -n "${SLURM_EXT_CACHE_DIR+set}" ] || exit 0
dir=$SLURM_EXT_CACHE_DIR

if [ -z "${ENROOT_MOUNTS-}" ] || [ -z "${ENROOT_ENVIRON-}" ]; then
	refuse "not run by enroot (ENROOT_MOUNTS or ENROOT_ENVIRON is unset)"
fi
case $dir in
/*) ;;
*) refuse "not an absolute path" ;;
esac
# blanks and newlines would split the fstab line or the NAME=value line,
# a backslash starts getmntent's escapes, a '#' a comment, and no other
# control character belongs in the plugin's paths
case $dir in
*[[:space:][:cntrl:]\\#]*) refuse "holds a blank, control character, backslash or '#', which an fstab line cannot carry" ;;
esac
case $dir/ in
*/./* | */../*) refuse "has a . or .. component" ;;
esac
[ ! -L "$dir" ] || refuse "is a symbolic link"
[ -d "$dir" ] || refuse "is not an existing directory"
# shellcheck disable=SC2012  # ls -n is the POSIX way to a numeric owner; the path has no blank
owner=$(ls -ldn "$dir" | awk '{ print $3 }')
me=$(id -u)
[ "$owner" = "$me" ] || refuse "owned by uid $owner, not by this user (uid $me)"

# The container's sub-tree: made here, as the user, never through a link
# (the step directory is the user's own, 0700, so nobody else can swap it).
sub=$dir/container
[ ! -L "$sub" ] || refuse "container/ in it is a symbolic link"
if [ ! -d "$sub" ]; then
	mkdir -m 0700 "$sub" 2>/dev/null || [ -d "$sub" ] || refuse "cannot make container/ in it"
fi
[ ! -L "$sub" ] || refuse "container/ in it is a symbolic link"

# The variables the plugin exported: value exactly $dir/NAME, NAME one
# component of the plugin's own subdirectory characters (config_vars.c);
# whatever lies elsewhere is not ours to move. Sorted, so that the file
# reads the same on every node.
vars=$(awk 'BEGIN {
	d = ENVIRON["SLURM_EXT_CACHE_DIR"] "/"
	for (k in ENVIRON) {
		if (k !~ /^[A-Za-z_][A-Za-z0-9_]*$/ || k ~ /^ENROOT_/)
			continue
		v = ENVIRON[k]
		if (length(v) <= length(d) || substr(v, 1, length(d)) != d)
			continue
		c = substr(v, length(d) + 1)
		if (c !~ /^[A-Za-z0-9._-]+$/ || c == "." || c == "..")
			continue
		print k " " c
	}
}' | sort)

environ="SLURM_EXT_CACHE_DIR=$dir
"
mode=${SLURM_EXT_CACHE_MODE-}
# the plugin's mode names are plain words; anything else is not passed on
case $mode in
'' | *[!A-Za-z0-9_-]*) ;;
*) environ="${environ}SLURM_EXT_CACHE_MODE=$mode
" ;;
esac
while read -r name comp; do
	[ -n "$name" ] || continue
	# a directory the plugin made for a tool that will not make it itself
	# (PYTORCH_KERNEL_CACHE_PATH) gets its container twin
	if [ -d "$dir/$comp" ] && [ ! -L "$dir/$comp" ] && [ ! -e "$sub/$comp" ]; then
		mkdir -m 0700 "$sub/$comp" 2>/dev/null ||
			printf 'ext-cache: enroot hook: cannot make %s\n' "$(esc "$sub/$comp")" >&2
	fi
	environ="$environ$name=$sub/$comp
"
done <<EOF
$vars
EOF

# The environment first, the bind second: if the second append fails, the
# variables name container/ paths the container does not have (a cold cache
# inside it), never the host's builds.
printf '%s' "$environ" >>"$ENROOT_ENVIRON" ||
	refuse "cannot append to ENROOT_ENVIRON"
# same path inside; read-write (the builds), nosuid and nodev (a cache holds
# neither), exec kept (the builds are shared objects to load), private
# (nothing the container mounts there reaches the host), nofail (see above)
printf '%s %s none x-create=dir,bind,rw,nosuid,nodev,private,nofail\n' "$dir" "$dir" >>"$ENROOT_MOUNTS" ||
	refuse "cannot append to ENROOT_MOUNTS"
exit 0
