#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The enroot hook (enroot/50-ext-cache.sh) on a real Slurm, for pyxis and
# enroot containers. enroot and pyxis are not in Debian: in each task the
# hook runs as enroot runs it, and lib/enroot_emu.sh does with its output
# what enroot's runtime does (binds each fstab line into a busybox rootfs,
# loads the environment file into an empty environment, chroots), as the
# user and, for --container-remap-root, as uid 0 of a user namespace. What
# this proves: the files enroot reads get lines it can use, and a container
# so made writes its builds in its own node's step directory under
# container/, at the host's path, gone with the step. What it cannot prove:
# enroot itself (docs: "Containers").

load lib/itest

setup_file() {
    itest_setup_file
    mkdir -p "$LAB/lib/hooks.d"
    install -m 0755 "$ITEST_TOP/enroot/50-ext-cache.sh" "$LAB/lib/hooks.d/50-ext-cache.sh" ||
        fail "cannot install the hook into $LAB/lib/hooks.d"
    install -m 0755 "$(command -v busybox)" "$LAB/lib/busybox" || fail "busybox is missing (Debian: busybox-static)"
    file -L "$LAB/lib/busybox" | grep -q 'statically linked' || fail "$(command -v busybox) is not static (Debian: busybox-static)"
    install -m 0755 "$ITEST_DIR/lib/enroot_emu.sh" "$LAB/work/enroot_emu.sh"
    # run_emu.sh MODE...: the emulation once per MODE, each line tagged "MODE NODE"
    cat >"$LAB/work/run_emu.sh" <<'RUN'
#!/bin/bash
lib=$1
shift
for m in "$@"; do
    "$(dirname "$0")/enroot_emu.sh" "$lib" "$m" "$m-$SLURMD_NODENAME-$RANDOM$RANDOM" 2>&1 | sed "s/^/$m $SLURMD_NODENAME /"
done
RUN
    chmod 755 "$LAB/work/run_emu.sh"
    # pyxis' options, for the suites that read them in slurmstepd
    gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -o "$LAB/lib/pyxis_stub.so" \
        "$ITEST_DIR/plugins/pyxis_stub.c" || fail "pyxis_stub.so does not build against this release's spank.h"
    itest_cluster "base=$ITEST_BASE"
}

teardown_file() { itest_teardown_file; }

setup() { itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE"; }

# tagged TEXT MODE NODE TAG: the lines of one emulation, tag removed
tagged() { sed -n "s/^$2 $3 $4 \{0,1\}//p" <<<"$1"; }

# check_emu OUTPUT BASE MODE...: on every node, for every MODE, the hook wrote
# what enroot needs and the container wrote into the node's own step dir
check_emu() {
    local out=$1 base=$2 m n dir fstab environ k ino uid
    shift 2
    dir=$(awk '$3 == "HOST" {print $5; exit}' <<<"$out")
    [[ $dir == "$base/$ITEST_UID/"[0-9]*/0 ]] || fail "no step directory <base>/<uid>/<job>/0 in:"$'\n'"$out"
    for m in "$@"; do
        for n in $(lab_nodes); do
            assert_equal "$m $n hook: $(tagged "$out" "$m" "$n" HOOKRC) [$(tagged "$out" "$m" "$n" HOOKERR)]" "$m $n hook: 0 []"
            # the user's own line first, kept; then exactly one bind at the same path
            fstab=$(tagged "$out" "$m" "$n" FSTAB)
            itest_match "^/tmp/enroot-emu\.[^ ]+/data /data none x-create=dir,bind,ro,nosuid,nodev,private$" "$(head -n 1 <<<"$fstab")"
            assert_equal "$m $n fstab: $(tail -n +2 <<<"$fstab")" \
                "$m $n fstab: $dir $dir none x-create=dir,bind,rw,nosuid,nodev,private,nofail"
            # the lines before kept; the two plugin variables; every cache variable, and only
            # those, moved under container/
            environ=$(tagged "$out" "$m" "$n" ENVIRON)
            k=$(tagged "$out" "$m" "$n" TASKVARS)
            [ "$k" -ge 10 ] || fail "$m $n: only '$k' cache variables in the task"
            assert_equal "$m $n environ: $(head -n 4 <<<"$environ" | paste -sd' ' -)" \
                "$m $n environ: PATH=/bin HOME=/home/emu SLURM_EXT_CACHE_DIR=$dir SLURM_EXT_CACHE_MODE=local"
            assert_equal "$m $n environ: $(tail -n +5 <<<"$environ" | grep -cE "^[A-Z_]+=$dir/container/[a-z_]+$") of $(($(wc -l <<<"$environ") - 4)) lines" \
                "$m $n environ: $k of $k lines"
            itest_match "^$dir (.*,)?rw,nosuid,nodev(,|$)" "$(tagged "$out" "$m" "$n" MOUNTED)"
            # inside: the host's path, under container/; written; the user's data readable
            uid=$ITEST_UID
            [ "$m" = remap ] && uid=0
            assert_equal "$m $n $(tagged "$out" "$m" "$n" IN)" \
                "$m $n uid=$uid SLURM_EXT_CACHE_DIR=$dir TORCH_EXTENSIONS_DIR=$dir/container/torch_extensions MODE=local HOME=/home/emu MYVAR=unset"
            assert_equal "$m $n $(tagged "$out" "$m" "$n" USERDATA) $(tagged "$out" "$m" "$n" EMURC)" "$m $n hello from $n 0"
            # the same file on the host, in this node's own step dir, holding only this node's probe
            ino=$(tagged "$out" "$m" "$n" WROTE)
            [ -n "$ino" ] || fail "$m $n: the container wrote nothing:"$'\n'"$out"
            assert_equal "$m $n $(tagged "$out" "$m" "$n" HOST | awk '{print $1, $2, $3}')" "$m $n $n $dir ${ino%% *}"
        done
    done
    # the probes were written with a nonce per mode and node: compare the whole line
    for m in "$@"; do
        for n in $(lab_nodes); do
            itest_match "^$n $dir [0-9]+ $m-$n-[0-9]+ probe\.$n $LAB_USER:700$" "$(tagged "$out" "$m" "$n" HOST)"
        done
    done
    lab_wait_settled 120 >/dev/null
    itest_gone_everywhere "$dir"
    itest_no_drain
}

@test "base under /var/tmp, 3 nodes, as the user and with --container-remap-root: each container writes into its node's step dir, at the host's path" {
    local out
    out=$(lab_user srun -N3 -n3 --ext-cache=local "$LAB/work/run_emu.sh" "$LAB/lib" plain remap 2>&1) ||
        fail "srun exited $?: $out"
    check_emu "$out" "$ITEST_BASE" plain remap
}

@test "base under /tmp, 3 nodes, as the user and with --container-remap-root: the same" {
    local out
    itest_plugstack "required $LAB_PLUGIN base=/tmp/ext-cache"
    out=$(lab_user srun -N3 -n3 --ext-cache=local "$LAB/work/run_emu.sh" "$LAB/lib" plain remap 2>&1) ||
        fail "srun exited $?: $out"
    check_emu "$out" /tmp/ext-cache plain remap
}

@test "a step without --ext-cache: the hook writes nothing and says nothing; the container starts" {
    local out m
    out=$(lab_user srun -N1 -n1 -w n2 "$LAB/work/run_emu.sh" "$LAB/lib" plain remap 2>&1) ||
        fail "srun exited $?: $out"
    for m in plain remap; do
        assert_equal "$m $(tagged "$out" "$m" n2 HOOKRC) [$(tagged "$out" "$m" n2 HOOKERR)] $(grep -c "^$m n2 UNCHANGED$" <<<"$out")" \
            "$m 0 [] 1"
        assert_equal "$m $(tagged "$out" "$m" n2 FSTAB | wc -l) $(tagged "$out" "$m" n2 ENVIRON | paste -sd' ' -)" \
            "$m 1 PATH=/bin HOME=/home/emu"
        assert_equal "$m $(tagged "$out" "$m" n2 USERDATA) $(tagged "$out" "$m" n2 EMURC)" "$m hello from n2 0"
    done
}

@test "a directory that is not the user's (the root-owned base): one ext-cache: line, nothing written, the container starts" {
    local out m want
    # shellcheck disable=SC2016  # expanded by the task's shell
    out=$(lab_user srun -N1 -n1 -w n1 --ext-cache=local \
        bash -c 'SLURM_EXT_CACHE_DIR=$0 exec "$1" "$2" plain remap' "$ITEST_BASE" "$LAB/work/run_emu.sh" "$LAB/lib" 2>&1) ||
        fail "srun exited $?: $out"
    for m in plain remap; do
        # in remap's user namespace root's files belong to the overflow uid, and the hook is uid 0
        want="owned by uid 0, not by this user (uid $ITEST_UID)"
        [ "$m" = remap ] && want="owned by uid $(cat /proc/sys/kernel/overflowuid), not by this user (uid 0)"
        assert_equal "$m $(tagged "$out" "$m" n1 HOOKRC) $(grep -c "^$m n1 UNCHANGED$" <<<"$out")" "$m 0 1"
        assert_equal "$m $(tagged "$out" "$m" n1 HOOKERR)" \
            "$m ext-cache: enroot hook: SLURM_EXT_CACHE_DIR=$ITEST_BASE: $want; the container gets no step cache"
        assert_equal "$m $(tagged "$out" "$m" n1 EMURC)" "$m 0"
    done
    itest_absent n1 "$ITEST_BASE/container" || fail "$ITEST_BASE/container was made"
}

@test "pyxis' options beside the plugin: a stand-in named pyxis registers --container-image and --container-name" {
    local out
    itest_plugstack "optional $LAB/lib/pyxis_stub.so" "required $LAB_PLUGIN base=$ITEST_BASE"
    out=$(lab_user srun --help 2>&1)
    itest_match '--container-image=' "$out"
    itest_match '--container-name=' "$out"
    itest_match '--ext-cache=' "$out"
    out=$(lab_user srun -N1 -n1 --container-image=docker://example/img:1 --container-name=c1 --ext-cache=local \
        printenv SLURM_EXT_CACHE_DIR 2>&1) || fail "srun with pyxis' options exited $?: $out"
    itest_match "^$ITEST_BASE/$ITEST_UID/[0-9]+/0$" "$out"
}
