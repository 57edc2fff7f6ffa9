#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Slurm's own job_container/tmpfs (a private /tmp per job) with the plugin:
# a base under /var/tmp is untouched by it, and a base under /tmp ends up
# inside the job's private /tmp, made in the job's mount namespace.

load lib/itest

setup_file() {
    itest_setup_file
    printf 'AutoBasePath=true\nBasePath=/var/tmp/slurm-jc\n' >"$LAB/etc/job_container.conf"
    export LAB_SLURM_CONF_EXTRA=$'SlurmdDebug=verbose\nPrologFlags=Contain\nJobContainerType=job_container/tmpfs'
    cat >"$LAB/work/jc.sh" <<'JC'
#!/bin/bash
# node dir owner:mode, writable?, torch_kernels owner:mode, and whether /tmp
# is the job's own (not the node's)
d=${SLURM_EXT_CACHE_DIR:-none}
k=$(stat -c '%U:%a' "$d/torch_kernels" 2>/dev/null || echo missing)
# the leaf starts without it: make it as torch's cpp_extension does
mkdir -p "$TORCH_EXTENSIONS_DIR" 2>/dev/null && touch "$TORCH_EXTENSIONS_DIR/built.$SLURM_PROCID" 2>/dev/null &&
    w=writable || w=unwritable
echo "JC $SLURMD_NODENAME $d $(stat -c '%U:%a' "$d" 2>/dev/null || echo missing) $w $k $(stat -c '%U:%a' /tmp)"
# both ranks' files are listed: wait (bounded) for the sibling's
for _ in $(seq 100); do
    [ "$(ls "$TORCH_EXTENSIONS_DIR" | wc -l)" -ge "$SLURM_NTASKS" ] && break
    sleep 0.05
done
ls "$TORCH_EXTENSIONS_DIR" | paste -sd, - | sed "s/^/FILES $SLURMD_NODENAME /"
JC
    chmod 755 "$LAB/work/jc.sh"
}

teardown_file() { itest_teardown_file; }

# run_jc ARGS...: srun as the user. Debian's Slurm 22.05 fails its own
# tmpfs namespace setup on these machines about every other job, with or
# without this plugin (its bind mount of the namespace file gets EINVAL;
# srun then says the nodes are "not ready"): such an attempt is retried.
run_jc() {
    local try out
    for try in $(seq 12); do
        out=$(lab_user srun "$@" "$LAB/work/jc.sh" 2>&1) || true
        grep -q 'still not ready\|container_g_join' <<<"$out" || break
        echo "# Slurm's job container setup failed (attempt $try), retrying" >&3
        lab_wait_idle 30 >/dev/null
        lab_resume n1 n2 n3 >/dev/null 2>&1
    done
    printf '%s\n' "$out"
}

@test "base under /var/tmp: the job's private /tmp changes nothing" {
    itest_cluster "base=/var/tmp/ext-cache"
    out=$(run_jc -N1 -n2 --ext-cache=local)
    # 2 ranks ran with a writable cache holding torch_kernels
    assert_equal "$(grep -c "^JC n[0-9] /var/tmp/ext-cache/$ITEST_UID/[0-9]*/0 $LAB_USER:700 writable $LAB_USER:700 $LAB_USER:700$" <<<"$out")" 2
    # job_container is active: every task's /tmp is the job's own
    itest_match "^JC n[0-9] .* $LAB_USER:700$" "$out"
    itest_no_drain
}

@test "base under /tmp: made inside the job's view of /tmp, gone with it" {
    itest_cluster "base=/tmp/ext-cache"
    out=$(run_jc -N1 -n2 --ext-cache=local)
    # every rank finds its directory, torch_kernels in it, in the job's /tmp
    assert_equal "$(grep -c "^JC n[0-9] /tmp/ext-cache/$ITEST_UID/[0-9]*/0 $LAB_USER:700 writable $LAB_USER:700 $LAB_USER:700$" <<<"$out")" 2
    # both ranks of the node see one directory with both files
    assert_equal "$(grep -cE '^FILES n[0-9] built\.0,built\.1$' <<<"$out")" 2
    job=$(grep -o "/tmp/ext-cache/$ITEST_UID/[0-9]*" <<<"$out" | head -1 | awk -F/ '{print $NF}')
    node=$(awk '/^JC/ {print $2; exit}' <<<"$out")
    [ -n "$job" ] && [ -n "$node" ] || fail "no job id or node in: $out"
    lab_wait_idle 30 >/dev/null
    itest_absent "$node" "/tmp/ext-cache/$ITEST_UID/$job" || fail "job $job is left in $node's own /tmp"
    itest_absent "$node" "/var/tmp/slurm-jc/$node/$job" || fail "the job's private /tmp is left on $node"
    itest_no_drain
}
