#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Charliecloud (ch-run 0.31) and rootless Podman (4.3.1), Debian 12's, run by
# the user inside a step on a real 3-node Slurm: neither has a system-wide
# way to get a bind or variables in, so the user adds flags, reading the
# step's <leaf>/container/env (NAME=<leaf>/container/<subdir> lines, never
# the host's <leaf>/<subdir>). With them a file written under
# $TORCH_EXTENSIONS_DIR inside lands in that node's own step directory, at
# the path the container saw, and goes with the step; without them it does
# not (measured here too). The image is busybox-static's, built from
# Debian's archive: a directory for ch-run, `podman import` of its tar into
# node-local storage for Podman.

load lib/itest

setup_file() {
    itest_setup_file
    local t img=$LAB/work/ctr/bb a out
    for t in ch-run podman runc newuidmap newgidmap /bin/busybox; do
        command -v "$t" >/dev/null || fail "$t is missing: scripts/install-deps.sh test installs it"
    done
    # rootless Podman maps the user's subordinate ids (newuidmap); Debian's
    # useradd gives every new user a range
    if ! grep -q "^$LAB_USER:" /etc/subuid || ! grep -q "^$LAB_USER:" /etc/subgid; then
        fail "$LAB_USER has no range in /etc/subuid or /etc/subgid (usermod --add-subuids/--add-subgids)"
    fi
    # the image: busybox and its applets, the mount points ch-run needs
    # (/dev /proc /sys), /tmp and /var/tmp as every distribution image has them
    mkdir -p "$img"/{bin,dev,etc,home,mnt,proc,sys,tmp,var/tmp} || fail "cannot make $img"
    cp /bin/busybox "$img/bin/busybox" || fail "cannot copy busybox"
    for a in $("$img/bin/busybox" --list); do
        [ -e "$img/bin/$a" ] || ln -s busybox "$img/bin/$a"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\n' >"$img/etc/passwd"
    printf 'root:x:0:\n' >"$img/etc/group"
    chmod 1777 "$img/tmp" "$img/var/tmp"
    tar -C "$img" -cf "$LAB/work/ctr/bb.tar" . || fail "cannot tar $img"
    chmod -R a+rX "$LAB/work/ctr"
    # Podman as a Slurm task runs it: no XDG_RUNTIME_DIR, nothing in the
    # user's home config. Node-local storage (graph under /var/tmp, state
    # under /tmp); runc, as Debian 12's crun 1.8.1 refuses this host's hybrid
    # cgroups ("cgroups in hybrid mode not supported"); vfs needs nothing of
    # the kernel or of fuse-overlayfs.
    cat >"$LAB/work/ctr/env.sh" <<ENV
img=$img
pm_img=localhost/extc-busybox:1
pm() {
    local u
    u=\$(id -u)
    podman --root "/var/tmp/extc-podman-\$u/graph" --runroot "/tmp/extc-podman-\$u/run" \\
        --tmpdir "/tmp/extc-podman-\$u/tmp" --storage-driver vfs --runtime runc "\$@"
}
# pm_stop: end the pause process rootless Podman leaves behind (it keeps the
# user and mount namespaces of the step that started it); prints its pid
pm_stop() {
    local p
    p=\$(cat "/tmp/extc-podman-\$(id -u)/tmp/pause.pid" 2>/dev/null) || p=none
    pm system migrate >/dev/null 2>&1
    echo "PAUSE \$SLURMD_NODENAME \$p"
}
ENV
    # ctr_task.sh CASE: one task, on its node: busybox in a container as CASE
    # says, then what the node's step directory holds. Lines:
    #   ENV  node ok|<what is wrong with <leaf>/container/env>
    #   IN   node TORCH_EXTENSIONS_DIR SLURM_EXT_CACHE_DIR written|unwritable|novar inode  (inside)
    #   WHY  node <mkdir's error>                                                    (inside)
    #   RC   node <the runtime's exit status>
    #   ERR  node <the runtime's stderr, one line each>
    #   OUT  node leaf <leaf>/container/torch_extensions/probe inode <leaf>/torch_extensions/probe
    cat >"$LAB/work/ctr/task.sh" <<'TASK'
#!/bin/bash
. "$(dirname "$0")/env.sh"
case=$1 d=${SLURM_EXT_CACHE_DIR:-} node=$SLURMD_NODENAME
[ -n "$d" ] || { echo "NOENV $node"; exit 0; }
f=$d/container/env want=$(printf '%s\n' "SLURM_EXT_CACHE_DIR=$d" "SLURM_EXT_CACHE_MODE=$SLURM_EXT_CACHE_MODE" \
    "TORCH_EXTENSIONS_DIR=$d/container/torch_extensions" | sort)
if [ ! -f "$f" ]; then
    echo "ENV $node missing"
elif [ "$(grep -E '^(SLURM_EXT_CACHE_DIR|SLURM_EXT_CACHE_MODE|TORCH_EXTENSIONS_DIR)=' "$f" | sort)" != "$want" ]; then
    echo "ENV $node bad: $(paste -sd' ' "$f")"
else
    echo "ENV $node ok"
fi
inner='t=${TORCH_EXTENSIONS_DIR:-unset} err=
if [ "$t" = unset ]; then r=novar
elif err=$(mkdir -p "$t" 2>&1) && err=$(echo "$1" 2>&1 >"$t/probe"); then r=written; else r=unwritable; fi
echo "IN $1 $t ${SLURM_EXT_CACHE_DIR:-unset} $r $(stat -c %i "$t" 2>/dev/null || echo none)"
[ -z "$err" ] || echo "WHY $1 $err"'
errs=$(mktemp)
case $case in
    ch-bind-vartmp) ch-run -b /var/tmp --set-env="$f" "$img" -- sh -c "$inner" sh "$node" ;;
    ch-bind-tmp) ch-run -b /tmp --set-env="$f" "$img" -- sh -c "$inner" sh "$node" ;;
    ch-bind-leaf) ch-run -b "$d:$d" --set-env="$f" "$img" -- sh -c "$inner" sh "$node" ;;
    ch-none) ch-run "$img" -- sh -c "$inner" sh "$node" ;;
    pm-flags) pm run --rm --network none -v "$d:$d" --env-file "$f" "$pm_img" sh -c "$inner" sh "$node" ;;
    pm-none) pm run --rm --network none "$pm_img" sh -c "$inner" sh "$node" ;;
    pm-bind-only) pm run --rm --network none -v "$d:$d" "$pm_img" sh -c "$inner" sh "$node" ;;
    pm-env-host) pm run --rm --network none --env-host "$pm_img" sh -c "$inner" sh "$node" ;;
    *) echo "no such case: $case" >&2; false ;;
esac 2>"$errs"
echo "RC $node $?"
grep -v 'is not a shared mount' "$errs" | sed "s|^|ERR $node |"
rm -f "$errs"
case $case in pm-*) pm_stop ;; esac
echo "OUT $node $d $(cat "$d/container/torch_extensions/probe" 2>/dev/null || echo none)" \
    "$(stat -c %i "$d/container/torch_extensions" 2>/dev/null || echo none)" \
    "$(cat "$d/torch_extensions/probe" 2>/dev/null || echo none)"
TASK
    chmod 755 "$LAB/work/ctr/task.sh"
    itest_cluster "base=/var/tmp/ext-cache"
    itest_save base /var/tmp/ext-cache
    # the Podman image, once into every node's own storage, as the user
    # shellcheck disable=SC2016  # expanded by the task's shell
    out=$(lab_user srun -N3 -n3 bash -c '. "$1" && pm import "$2" "$pm_img" >/dev/null &&
        pm_stop >/dev/null && echo "IMPORTED $SLURMD_NODENAME"' sh "$LAB/work/ctr/env.sh" "$LAB/work/ctr/bb.tar" 2>&1)
    [ "$(grep -c '^IMPORTED n[0-9]$' <<<"$out")" = 3 ] || fail "podman import on every node: $out"
}

teardown_file() { itest_teardown_file; }

# use_base BASE: the cluster runs with base=BASE (restarted only on a change);
# sets BASE
use_base() {
    BASE=$1
    if [ "$(itest_load base)" != "$BASE" ]; then
        itest_cluster "base=$BASE"
        itest_save base "$BASE"
    fi
}

# run_case CASE: srun -N3 -n3 --ext-cache=local of ctr/task.sh CASE as the
# user; sets OUT (its output), JOB and LEAF (the step's leaf, the same path
# on every node)
run_case() {
    OUT=$(lab_user srun -N3 -n3 --ext-cache=local "$LAB/work/ctr/task.sh" "$1" 2>&1) || fail "srun exited $?: $OUT"
    LEAF=$(awk '$1 == "OUT" {print $3; exit}' <<<"$OUT")
    JOB=$(awk -F/ '{print $(NF-1)}' <<<"$LEAF")
    [[ $LEAF == "$BASE/$ITEST_UID/$JOB/0" ]] || fail "no leaf under $BASE in: $OUT"
    assert_equal "$(grep -c "^ENV n[0-9] ok$" <<<"$OUT") env files" "3 env files"
}

# per_node: one line per node of OUT, "node IN-fields | RC | OUT-fields", the
# leaf written as LEAF and the inode inside compared with the one outside
per_node() {
    awk -v leaf="$LEAF" '
        { for (i = 3; i <= NF; i++) gsub(leaf, "LEAF", $i) }
        $1 == "IN" { inside[$2] = $3 " " $4 " " $5; ino[$2] = $6 }
        $1 == "RC" { rc[$2] = $3 }
        $1 == "OUT" { outside[$2] = $4 " " ($5 == "none" ? "none" : ($5 == ino[$2] ? "same-dir" : "other-dir")) " " $6 }
        END { for (n in rc) print n " " (n in inside ? inside[n] : "no-IN") " | rc " rc[n] " | " outside[n] }' <<<"$OUT" | sort
}

# landed: on every node the container saw LEAF/container/torch_extensions
# (the host path), wrote its probe there, and the node's own step directory
# holds it (same directory, the node's own name), the host tree untouched;
# after the step it is gone from every node
landed() {
    assert_equal "$(per_node)" "$(for n in n1 n2 n3; do
        echo "$n LEAF/container/torch_extensions LEAF written | rc 0 | $n same-dir none"
    done)"
    lab_wait_settled 120 >/dev/null
    itest_gone_everywhere "$BASE/$ITEST_UID/$JOB"
}

# pause_gone: the task ended the pause process Podman left (gone, or a
# zombie nobody reaps)
pause_gone() {
    local p st
    assert_equal "$(grep -c '^PAUSE n[0-9] [0-9][0-9]*$' <<<"$OUT") pause pids" "3 pause pids"
    while read -r p; do
        # the state follows the command name, which holds a space: "(podman pause)"
        st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || continue
        st=${st%% *}
        [ "$st" = Z ] || fail "Podman's pause process $p is still running (state $st)"
    done < <(awk '$1 == "PAUSE" {print $3}' <<<"$OUT")
}

@test "ch-run, base /var/tmp: -b /var/tmp --set-env=<leaf>/container/env lands in each node's own <leaf>/container, gone with the step" {
    use_base /var/tmp/ext-cache
    run_case ch-bind-vartmp
    landed
}

@test "ch-run, base /var/tmp: without flags the build fails read-only; -b <leaf>:<leaf> is refused (no such target in the image)" {
    use_base /var/tmp/ext-cache
    run_case ch-none
    assert_equal "$(per_node)" "$(for n in n1 n2 n3; do
        echo "$n LEAF/torch_extensions LEAF unwritable | rc 0 | none none none"
    done)"
    assert_equal "$(grep -c "^WHY n[0-9] mkdir: can't create directory '/var/tmp/ext-cache/': Read-only file system$" <<<"$OUT")" 3
    run_case ch-bind-leaf
    assert_equal "$(per_node)" "$(for n in n1 n2 n3; do echo "$n no-IN | rc 1 | none none none"; done)"
    assert_equal "$(grep -c "^ERR n[0-9] ch-run\[[0-9]*\]: error: can't mkdir: $LAB/work/ctr/bb/var/tmp/ext-cache: Read-only file system" <<<"$OUT")" 3
}

@test "podman, base /var/tmp: -v <leaf>:<leaf> --env-file <leaf>/container/env lands in each node's own <leaf>/container, gone with the step" {
    use_base /var/tmp/ext-cache
    run_case pm-flags
    pause_gone
    landed
}

@test "podman, base /var/tmp: without --env-file the variables are unset; --env-host makes the path in the container's own filesystem" {
    use_base /var/tmp/ext-cache
    run_case pm-none
    pause_gone
    assert_equal "$(per_node)" "$(for n in n1 n2 n3; do echo "$n unset unset novar | rc 0 | none none none"; done)"
    run_case pm-bind-only
    pause_gone
    assert_equal "$(per_node)" "$(for n in n1 n2 n3; do echo "$n unset unset novar | rc 0 | none none none"; done)"
    run_case pm-env-host
    pause_gone
    # written, but nowhere the node sees it
    assert_equal "$(per_node)" "$(for n in n1 n2 n3; do
        echo "$n LEAF/torch_extensions LEAF written | rc 0 | none none none"
    done)"
}

@test "ch-run, base /tmp: -b <leaf>:<leaf> --set-env=<leaf>/container/env lands in each node's own <leaf>/container, gone with the step" {
    use_base /tmp/ext-cache
    run_case ch-bind-leaf
    landed
}

@test "ch-run, base /tmp, TMPDIR elsewhere: -b <leaf>:<leaf> is refused, -b /tmp lands" {
    use_base /tmp/ext-cache
    LAB_PASS_ENV=TMPDIR TMPDIR=/var/tmp run_case ch-bind-leaf
    assert_equal "$(per_node)" "$(for n in n1 n2 n3; do echo "$n no-IN | rc 1 | none none none"; done)"
    itest_match "^ERR n[0-9] ch-run\[[0-9]*\]: error: can't mkdir: $LAB/work/ctr/bb/tmp/ext-cache/$ITEST_UID under existing bind-mount $LAB/work/ctr/bb/tmp " "$OUT"
    LAB_PASS_ENV=TMPDIR TMPDIR=/var/tmp run_case ch-bind-tmp
    landed
}

@test "ch-run, base /tmp: without flags the container writes into the host's <leaf>/torch_extensions" {
    use_base /tmp/ext-cache
    run_case ch-none
    assert_equal "$(per_node)" "$(for n in n1 n2 n3; do echo "$n LEAF/torch_extensions LEAF written | rc 0 | none none $n"; done)"
}

@test "podman, base /tmp: -v <leaf>:<leaf> --env-file <leaf>/container/env lands in each node's own <leaf>/container, gone with the step" {
    use_base /tmp/ext-cache
    run_case pm-flags
    pause_gone
    landed
}
