#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Slurm's own job_container/tmpfs (a private /tmp per job) with the plugin:
# a base under /var/tmp is untouched by it, and a base under /tmp ends up
# inside the job's private /tmp, made in the job's mount namespace.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

itest_begin
printf 'AutoBasePath=true\nBasePath=/var/tmp/slurm-jc\n' >"$LAB/etc/job_container.conf"
# shellcheck disable=SC2034 # read by lab_start (lib/cluster.sh)
LAB_SLURM_CONF_EXTRA=$'SlurmdDebug=verbose\nPrologFlags=Contain\nJobContainerType=job_container/tmpfs'

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
sleep 1
ls "$TORCH_EXTENSIONS_DIR" | paste -sd, - | sed "s/^/FILES $SLURMD_NODENAME /"
JC
chmod 755 "$LAB/work/jc.sh"

# run_jc NAME ARGS...: srun as the user. Debian's Slurm 22.05 fails its own
# tmpfs namespace setup on these machines about every other job, with or
# without this plugin (its bind mount of the namespace file gets EINVAL;
# srun then says the nodes are "not ready"): such an attempt is retried.
run_jc() {
    local name=$1 try out
    shift
    for try in $(seq 12); do
        out=$(lab_user srun "$@" "$LAB/work/jc.sh" 2>&1)
        grep -q 'still not ready\|container_g_join' <<<"$out" || break
        t_note "$name: Slurm's job container setup failed (attempt $try), retrying"
        lab_wait_idle 30 >/dev/null
        lab_resume n1 n2 n3 >/dev/null 2>&1
    done
    printf '%s\n' "$out"
}

# ---- base under /var/tmp: the job's private /tmp changes nothing ---------------
itest_cluster "base=/var/tmp/ext-cache" || { t_fail "cluster start" "see logs"; itest_end; exit 1; }
out=$(run_jc "base=/var/tmp" -N1 -n2 --ext-cache=local)
t_eq "job_container, base=/var/tmp: 2 ranks ran with a writable cache holding torch_kernels" 2 \
    "$(grep -c "^JC n[0-9] /var/tmp/ext-cache/$ITEST_UID/[0-9]*/0 $LAB_USER:700 writable $LAB_USER:700 $LAB_USER:700$" <<<"$out")"
itest_match "job_container is active: every task's /tmp is the job's own ($LAB_USER:700)" \
    "^JC n[0-9] .* $LAB_USER:700$" "$out"
lab_assert_no_drain "no drain: job_container with base=/var/tmp"

# ---- base under /tmp: made inside the job's view of /tmp ------------------------
itest_cluster "base=/tmp/ext-cache" || { t_fail "cluster restart" "see logs"; itest_end; exit 1; }
out=$(run_jc "base=/tmp" -N1 -n2 --ext-cache=local)
t_eq "job_container, base=/tmp: every rank finds its directory, torch_kernels in it, in the job's /tmp" 2 \
    "$(grep -c "^JC n[0-9] /tmp/ext-cache/$ITEST_UID/[0-9]*/0 $LAB_USER:700 writable $LAB_USER:700 $LAB_USER:700$" <<<"$out")"
t_eq "job_container, base=/tmp: both ranks of the node see one directory with both files" 2 \
    "$(grep -cE '^FILES n[0-9] built\.0,built\.1$' <<<"$out")"
job=$(grep -o "/tmp/ext-cache/$ITEST_UID/[0-9]*" <<<"$out" | head -1 | awk -F/ '{print $NF}')
lab_wait_idle 30 >/dev/null
node=$(awk '/^JC/ {print $2; exit}' <<<"$out")
for n in ${node:-n1}; do
    t_check "job_container, base=/tmp: nothing of job $job is left in $n's own /tmp" \
        itest_absent "$n" "/tmp/ext-cache/$ITEST_UID/$job"
    t_check "job_container, base=/tmp: the job's private /tmp is gone from $n" \
        itest_absent "$n" "/var/tmp/slurm-jc/$n/$job"
done
lab_assert_no_drain "no drain: job_container with base=/tmp"

itest_end
