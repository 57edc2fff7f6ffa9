#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make check: the enroot hook (enroot/50-ext-cache.sh) against enroot's
# contract, as enroot runs it: the two files it may append to, named by
# ENROOT_MOUNTS and ENROOT_ENVIRON, and the step's directory. Any uid, no
# mount, no other user, no enroot (the lab's test_enroot.bats mounts what it
# writes). Each case runs under /bin/sh and under bash --posix (RHEL's
# /bin/sh). Prints cmocka's summary lines, which tests/run-all.sh counts.
# shellcheck disable=SC2317  # the cases are called through run_case

LC_ALL=C
export LC_ALL
top=${srcdir:-$(dirname "$0")/../..}
hook=$top/enroot/50-ext-cache.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/test_enroot_hook.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
me=$(id -u)
passed=0
failed=0
failed_names=""

# the environment enroot gives a hook, reduced to what the hook reads
hookenv() {
	env -i PATH="$PATH" HOME=/nonexistent ENROOT_ROOTFS="$work/rootfs" ENROOT_PID=1 \
		ENROOT_MOUNTS="$work/fstab" ENROOT_ENVIRON="$work/environment" "$@"
}

# fresh: the files as earlier hooks and the user's configuration left them
fresh() {
	rm -rf "$work/step" "$work/fstab" "$work/environment" "$work/err"
	mkdir -m 0700 "$work/step"
	printf '/home/u /home/u none x-create=dir,bind,rw,nosuid\n' >"$work/fstab"
	printf 'PATH=/usr/bin:/bin\nHOME=/home/u\n' >"$work/environment"
	before=$(cat "$work/fstab" "$work/environment" | cksum)
}

# in_shell sh|bash CMD...: CMD's environment, then the hook under that shell
in_shell() {
	sh_=$1
	shift
	case $sh_ in
	bash) "$@" bash --posix "$hook" ;;
	*) "$@" sh "$hook" ;;
	esac
}

# run_hook sh|bash VAR=VALUE...: the hook as enroot runs it; sets rc, err
run_hook() {
	sh_=$1
	shift
	rc=0
	in_shell "$sh_" hookenv "$@" 2>"$work/err" || rc=$?
	err=$(cat "$work/err")
}

fail_() {
	printf '%s\n' "$*"
	ok=no
}

untouched() {
	[ "$(cat "$work/fstab" "$work/environment" | cksum)" = "$before" ] ||
		fail_ "the files changed: $(cat "$work/fstab" "$work/environment")"
}

# refused_with TEXT: rc 0, nothing written, one ext-cache: line holding TEXT
refused_with() {
	[ "$rc" = 0 ] || fail_ "exit status $rc"
	untouched
	[ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail_ "not one line on stderr: $err"
	case $err in
	"ext-cache: enroot hook: SLURM_EXT_CACHE_DIR"*"$1"*"; the container gets no step cache") ;;
	*) fail_ "stderr is not 'ext-cache: ... $1 ...': $err" ;;
	esac
	[ ! -e "$work/step/container" ] || [ -L "$work/step/container" ] || fail_ "container/ was made"
}

case_unset() {
	fresh
	run_hook "$1" TORCH_EXTENSIONS_DIR="$work/step/torch_extensions"
	[ "$rc" = 0 ] || fail_ "exit status $rc"
	untouched
	[ -z "$err" ] || fail_ "stderr: $err"
}

case_empty() {
	fresh
	run_hook "$1" SLURM_EXT_CACHE_DIR=
	refused_with "=: not an absolute path"
}

case_relative() {
	fresh
	run_hook "$1" SLURM_EXT_CACHE_DIR=step
	refused_with "=step: not an absolute path"
}

case_missing() {
	fresh
	run_hook "$1" SLURM_EXT_CACHE_DIR="$work/gone"
	refused_with "$work/gone: is not an existing directory"
}

case_symlink() {
	fresh
	ln -s "$work/step" "$work/link"
	run_hook "$1" SLURM_EXT_CACHE_DIR="$work/link" TORCH_EXTENSIONS_DIR="$work/link/torch_extensions"
	refused_with "$work/link: is a symbolic link"
	rm -f "$work/link"
}

case_file() {
	fresh
	: >"$work/plain"
	run_hook "$1" SLURM_EXT_CACHE_DIR="$work/plain"
	refused_with "$work/plain: is not an existing directory"
}

# Another uid's directory: without root no file can belong to another uid,
# so `id` says this process is another uid (the hook's owner test compares
# the directory's owner with `id -u`); the lab's suite runs the real one.
case_other_owner() {
	fresh
	mkdir -p "$work/shim"
	cat >"$work/shim/id" <<'EOF'
#!/bin/sh
if [ "$1" = -u ]; then echo 4242; else exec /usr/bin/id "$@"; fi
EOF
	chmod 755 "$work/shim/id"
	rc=0
	in_shell "$1" env -i PATH="$work/shim:$PATH" ENROOT_MOUNTS="$work/fstab" \
		ENROOT_ENVIRON="$work/environment" SLURM_EXT_CACHE_DIR="$work/step" 2>"$work/err" || rc=$?
	err=$(cat "$work/err")
	refused_with "$work/step: owned by uid $me, not by this user (uid 4242)"
}

# bad_char NAME VALUE-SUFFIX ESCAPED: a real directory whose name holds it
bad_char() {
	fresh
	mkdir -p "$work/step/a$2b"
	run_hook "$3" SLURM_EXT_CACHE_DIR="$work/step/a$2b" TORCH_EXTENSIONS_DIR="$work/step/a$2b/torch_extensions"
	refused_with "$work/step/a${1}b: holds a blank"
	[ ! -e "$work/step/a$2b/container" ] || fail_ "container/ was made"
}
case_space() { bad_char '\040' ' ' "$1"; }
case_tab() { bad_char '\011' '	' "$1"; }
case_newline() { bad_char '\012' '
' "$1"; }
case_backslash() { bad_char '\134' "\\" "$1"; }
case_hash() { bad_char '#' '#' "$1"; }

case_dotdot() {
	fresh
	mkdir -p "$work/step/x"
	run_hook "$1" SLURM_EXT_CACHE_DIR="$work/step/x/.."
	refused_with "has a . or .. component"
}

case_container_symlink() {
	fresh
	mkdir "$work/elsewhere"
	ln -s "$work/elsewhere" "$work/step/container"
	run_hook "$1" SLURM_EXT_CACHE_DIR="$work/step" TORCH_EXTENSIONS_DIR="$work/step/torch_extensions"
	refused_with "$work/step: container/ in it is a symbolic link"
	[ -z "$(ls -A "$work/elsewhere")" ] || fail_ "something was made through the link"
	rm -rf "$work/elsewhere"
}

case_not_enroot() {
	fresh
	rc=0
	in_shell "$1" env -i PATH="$PATH" SLURM_EXT_CACHE_DIR="$work/step" 2>"$work/err" || rc=$?
	err=$(cat "$work/err")
	refused_with "not run by enroot"
}

# the good case's expected files, after the earlier hooks' lines
expect_good() {
	s=$work/step
	want_fstab="/home/u /home/u none x-create=dir,bind,rw,nosuid
$s $s none x-create=dir,bind,rw,nosuid,nodev,private,nofail"
	want_environ="PATH=/usr/bin:/bin
HOME=/home/u
SLURM_EXT_CACHE_DIR=$s
SLURM_EXT_CACHE_MODE=local
MY_JIT_CACHE=$s/container/my.jit-1
PYTORCH_KERNEL_CACHE_PATH=$s/container/torch_kernels
TORCH_EXTENSIONS_DIR=$s/container/torch_extensions
TRITON_CACHE_DIR=$s/container/triton"
}

run_good() {
	s=$work/step
	run_hook "$1" SLURM_EXT_CACHE_DIR="$s" SLURM_EXT_CACHE_MODE=local \
		TORCH_EXTENSIONS_DIR="$s/torch_extensions" TRITON_CACHE_DIR="$s/triton" \
		PYTORCH_KERNEL_CACHE_PATH="$s/torch_kernels" MY_JIT_CACHE="$s/my.jit-1" \
		HF_HOME="$work/hf" DEEPER="$s/torch_extensions/x" SIBLING="${s}x/triton" \
		PARENT="$s/../step/triton" DOT="$s/." SELF="$s/" CONTAINERED="$s/container/y" \
		SPACED="$s/a b" ENROOT_CACHE_PATH="$s/enroot"
}

case_good() {
	fresh
	mkdir -m 0700 "$work/step/torch_kernels"
	run_good "$1"
	expect_good
	[ "$rc" = 0 ] || fail_ "exit status $rc"
	[ -z "$err" ] || fail_ "stderr: $err"
	[ "$(cat "$work/fstab")" = "$want_fstab" ] || fail_ "fstab:
$(cat "$work/fstab")
wanted:
$want_fstab"
	[ "$(cat "$work/environment")" = "$want_environ" ] || fail_ "environment:
$(cat "$work/environment")
wanted:
$want_environ"
	if [ ! -d "$work/step/container" ] || [ -L "$work/step/container" ]; then
		fail_ "container/ was not made"
	fi
	# shellcheck disable=SC2012  # a mode, from a name we made
	[ "$(ls -ld "$work/step/container" | cut -c1-10)" = drwx------ ] || fail_ "container/ is not 0700"
	# the directory the plugin made for the tool that does not make its own
	[ -d "$work/step/container/torch_kernels" ] || fail_ "container/torch_kernels was not made"
	[ ! -e "$work/step/container/torch_extensions" ] || fail_ "container/torch_extensions was made"
}

# twice (enroot runs a hook once per start; a second start of the same step
# finds container/ made): the same block again, no error
case_twice() {
	fresh
	mkdir -m 0700 "$work/step/torch_kernels"
	run_good "$1"
	first_f=$(cat "$work/fstab")
	first_e=$(cat "$work/environment")
	run_good "$1"
	expect_good
	[ "$rc" = 0 ] || fail_ "exit status $rc"
	[ -z "$err" ] || fail_ "stderr: $err"
	[ "$(cat "$work/fstab")" = "$first_f
$(printf '%s\n' "$want_fstab" | tail -n 1)" ] || fail_ "fstab after two runs: $(cat "$work/fstab")"
	[ "$(cat "$work/environment")" = "$first_e
$(printf '%s\n' "$want_environ" | tail -n 6)" ] || fail_ "environment after two runs: $(cat "$work/environment")"
}

# a mode value the plugin never writes is not passed on; the rest is
case_odd_mode() {
	fresh
	run_hook "$1" SLURM_EXT_CACHE_DIR="$work/step" SLURM_EXT_CACHE_MODE='"x y"' \
		TORCH_EXTENSIONS_DIR="$work/step/torch_extensions"
	[ "$rc" = 0 ] || fail_ "exit status $rc"
	[ "$(tail -n 2 "$work/environment")" = "SLURM_EXT_CACHE_DIR=$work/step
TORCH_EXTENSIONS_DIR=$work/step/container/torch_extensions" ] || fail_ "environment: $(cat "$work/environment")"
}

case_executable() {
	[ -x "$hook" ] || fail_ "$hook is not executable (enroot runs only executable hooks)"
	[ "$(head -n 1 "$hook")" = '#!/bin/sh' ] || fail_ "first line: $(head -n 1 "$hook")"
}

run_case() {
	printf '[ RUN      ] %s\n' "$1${2:+/$2}"
	ok=yes
	"$@"
	if [ "$ok" = yes ]; then
		passed=$((passed + 1))
		printf '[       OK ] %s\n' "$1${2:+/$2}"
	else
		failed=$((failed + 1))
		failed_names="$failed_names $1${2:+/$2}"
		printf '[  FAILED  ] %s\n' "$1${2:+/$2}"
	fi
}

CASES="case_unset case_empty case_relative case_missing case_symlink case_file case_other_owner
case_space case_tab case_newline case_backslash case_hash case_dotdot case_container_symlink
case_not_enroot case_good case_twice case_odd_mode"
total=1
for c in $CASES; do total=$((total + 2)); done
printf '[==========] Running %d test(s).\n' "$total"
run_case case_executable
for c in $CASES; do
	run_case "$c" sh
	run_case "$c" bash
done
printf '[==========] %d test(s) run.\n' "$((passed + failed))"
printf '[  PASSED  ] %d test(s).\n' "$passed"
if [ "$failed" -gt 0 ]; then
	printf '[  FAILED  ] %d test(s), listed below:\n' "$failed"
	for n in $failed_names; do printf '[  FAILED  ] %s\n' "$n"; done
	exit 1
fi
exit 0
