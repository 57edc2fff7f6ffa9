#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The private cache inside Apptainer containers, with no action of the user's:
# a real Apptainer (Debian's non-setuid build) run by the tasks of
# `srun --ext-cache=local` on the lab cluster, under each flag that hides the
# host's /tmp or environment. Apptainer needs a user namespace, which the
# kernel refuses to a chrooted process: tests/releases/run-release.sh runs
# this file on forky only, pivoted (rel_run_pivot), never on the host.
#
# Inside, TORCH_EXTENSIONS_DIR must be <leaf>/container/torch_extensions, a
# build written there must land in that node's own step directory, and the
# directory must go with the step.

load ../integration/lib/itest

APPTAINER_CONF=/etc/apptainer/apptainer.conf

setup_file() {
    local v
    itest_setup_file
    v=$(apptainer --version 2>&1) || fail "apptainer is not installed: $v"
    # the test image: busybox from Debian's archive and its applets, no registry
    IMG=$LAB/work/img
    rm -rf "$IMG"
    mkdir -p "$IMG"/{bin,etc,tmp,var/tmp,proc,sys,dev,home,root,data} || fail "mkdir $IMG"
    cp /bin/busybox "$IMG/bin/busybox" || fail "busybox-static is not installed"
    for v in $("$IMG/bin/busybox" --list); do
        [ -e "$IMG/bin/$v" ] || ln -s busybox "$IMG/bin/$v"
    done
    touch "$IMG/etc/passwd" "$IMG/etc/group"
    chmod -R a+rX "$IMG"
    # a directory of the user's own, bound with -B beside the step's
    mkdir -p "$LAB/work/userdata" && echo marker >"$LAB/work/userdata/marker" && chmod -R a+rX "$LAB/work/userdata"
    cp -p "$APPTAINER_CONF" "$LAB/work/apptainer.conf.orig" || fail "no $APPTAINER_CONF"
    # in_ctr.sh FLAG...: in a task, runs the image with FLAGs and prints
    # R NODE LEAF INSIDE_TORCH INSIDE_TRITON INSIDE_DIR INSIDE_MODE SEEN_ON_HOST BUILDS_IN_LEAF
    cat >"$LAB/work/in_ctr.sh" <<'TASK'
#!/bin/sh
node=$SLURMD_NODENAME
leaf=$SLURM_EXT_CACHE_DIR
inside=$(apptainer exec "$@" "$EXTC_IMG" /bin/sh -c '
    mkdir -p "$TORCH_EXTENSIONS_DIR" && echo built >"$TORCH_EXTENSIONS_DIR/built.$1" &&
    [ -d /data ] && [ -f /data/marker ] && echo "USERBIND" >&2
    echo "$TORCH_EXTENSIONS_DIR $TRITON_CACHE_DIR $SLURM_EXT_CACHE_DIR $SLURM_EXT_CACHE_MODE"' sh "$node")
rc=$?
seen=no
[ -f "$leaf/container/torch_extensions/built.$node" ] && seen=yes
n=$(ls "$leaf/container/torch_extensions" 2>/dev/null | wc -l)
echo "R $node $leaf ${inside:-NOTHING rc=$rc} $seen $n"
TASK
    chmod 755 "$LAB/work/in_ctr.sh"
    export IMG
    itest_cluster "base=/tmp/ext-cache"
}

teardown_file() {
    [ -f "$LAB/work/apptainer.conf.orig" ] && cp -p "$LAB/work/apptainer.conf.orig" "$APPTAINER_CONF"
    itest_teardown_file
}

# no line of Apptainer's that says SINGULARITY_* and APPTAINER_* disagree
no_disagreement() {
    if grep -E 'different values|WARNING.*(SINGULARITY|APPTAINER)' <<<"$1"; then
        fail "Apptainer warned about its variables:"$'\n'"$1"
    fi
}

# run_in BASE [VAR=VALUE...] -- FLAG...: two tasks on two nodes, each runs
# the image with FLAGs; the job's environment gets the VAR=VALUEs. Sets
# $out (all of it) and $jobid.
run_in() {
    local base=$1 rc
    local -a envs=()
    shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    itest_plugstack "required $LAB_PLUGIN base=$base"
    out=$(lab_user env EXTC_IMG="$IMG" "${envs[@]}" srun -N2 -n2 --ext-cache=local \
        "$LAB/work/in_ctr.sh" "$@" 2>&1)
    rc=$?
    [ "$rc" -eq 0 ] || fail "srun exited $rc: $out"
    jobid=$(awk '$1 == "R" {print $3}' <<<"$out" | head -n1 | awk -F/ '{print $(NF-1)}')
    no_disagreement "$out"
}

# check_in BASE FLAG...: the cache reached the container on both nodes, and went with the step
check_in() {
    local base=$1 bad
    shift
    run_in "$base" -- "$@"
    assert_equal "$(grep -c '^R ' <<<"$out") lines on $(awk '$1 == "R" {print $2}' <<<"$out" | sort -u | wc -l) nodes" \
        "2 lines on 2 nodes"
    bad=$(awk -v b="$base/$ITEST_UID/" '$1 == "R" && (index($3, b) != 1 ||
        $4 != $3 "/container/torch_extensions" || $5 != $3 "/container/triton" ||
        $6 != $3 || $7 != "local" || $8 != "yes" || $9 != 1)' <<<"$out")
    [ -z "$bad" ] || fail "apptainer $*, base $base: the container missed the step's cache:"$'\n'"$out"
    lab_wait_settled 120 >/dev/null
    itest_gone_everywhere "$base/$ITEST_UID/$jobid"
}

@test "Apptainer's defaults: the cache variables point into the leaf's container/ sub-tree, base /tmp and /var/tmp" {
    check_in /tmp/ext-cache
    check_in /var/tmp/ext-cache
}

@test "apptainer --contain (no host /tmp, /var/tmp): the step's directory is bound" {
    check_in /tmp/ext-cache --contain
    check_in /var/tmp/ext-cache --contain
}

@test "apptainer --containall (no host environment either)" {
    check_in /tmp/ext-cache --containall
    check_in /var/tmp/ext-cache --containall
}

@test "apptainer --cleanenv: the cache variables and SLURM_EXT_CACHE_* come through APPTAINERENV_" {
    check_in /tmp/ext-cache --cleanenv
    check_in /var/tmp/ext-cache --cleanenv
}

@test "apptainer --compat" {
    check_in /tmp/ext-cache --compat
    check_in /var/tmp/ext-cache --compat
}

@test "apptainer --no-mount tmp" {
    check_in /tmp/ext-cache --no-mount tmp
    check_in /var/tmp/ext-cache --no-mount tmp
}

@test "the admin's 'mount tmp = no' in apptainer.conf" {
    sed -i 's/^mount tmp = yes/mount tmp = no/' "$APPTAINER_CONF"
    grep -q '^mount tmp = no' "$APPTAINER_CONF" || fail "cannot set 'mount tmp = no' in $APPTAINER_CONF"
    check_in /tmp/ext-cache
    check_in /var/tmp/ext-cache
    cp -p "$LAB/work/apptainer.conf.orig" "$APPTAINER_CONF"
}

@test "the user's own -B works beside the step's bind, and with the job's SINGULARITY_BIND" {
    check_in /tmp/ext-cache --contain -B "$LAB/work/userdata:/data"
    assert_equal "$(grep -c '^USERBIND$' <<<"$out")" 2
    run_in /var/tmp/ext-cache "SINGULARITY_BIND=$LAB/work/userdata:/data" -- --contain
    assert_equal "$(grep -c '^USERBIND$' <<<"$out")" 2
    assert_equal "$(awk '$1 == "R" && $8 == "yes"' <<<"$out" | wc -l)" 2
}

@test "a job that set APPTAINERENV_TORCH_EXTENSIONS_DIR keeps its value; the other variables still move" {
    run_in /tmp/ext-cache APPTAINERENV_TORCH_EXTENSIONS_DIR=/tmp/mine -- --containall
    assert_equal "$(awk '$1 == "R" && $4 == "/tmp/mine" && $5 == $3 "/container/triton"' <<<"$out" | wc -l)" 2
}

@test "the first task writes <leaf>/container/env for runtimes that read a file" {
    local got
    itest_plugstack "required $LAB_PLUGIN base=/tmp/ext-cache"
    # shellcheck disable=SC2016 # expanded by the task's shell
    got=$(lab_user srun -N2 -n4 --ext-cache=local sh -c 'cat "$SLURM_EXT_CACHE_DIR/container/env" | sed "s|$SLURM_EXT_CACHE_DIR|LEAF|g" | sort | md5sum; echo' 2>&1)
    assert_equal "$(grep -c . <<<"$got") lines, $(sort -u <<<"$got" | grep -c .) distinct" "4 lines, 1 distinct"
    # shellcheck disable=SC2016 # expanded by the task's shell
    got=$(lab_user srun -N1 -n1 --ext-cache=local sh -c 'sed "s|$SLURM_EXT_CACHE_DIR|LEAF|g" "$SLURM_EXT_CACHE_DIR/container/env"' 2>&1)
    itest_match '^TORCH_EXTENSIONS_DIR=LEAF/container/torch_extensions$' "$got"
    itest_match '^SLURM_EXT_CACHE_DIR=LEAF$' "$got"
    itest_match '^SLURM_EXT_CACHE_MODE=local$' "$got"
}
