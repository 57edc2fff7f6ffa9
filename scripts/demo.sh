#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A two-minute look at spank-ext-cache on a throwaway 3-node Slurm on this machine.
# As root on Debian 12: installs what it needs, builds the plugin, starts
# munge + slurmctld + 3 slurmd (each with its own node-local /tmp and
# /var/tmp), runs a multi-node job as an unprivileged user, shows every
# node's private cache while the job runs and that it is gone afterwards,
# then stops the cluster.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)

if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/demo.sh: run as root (it installs packages and starts a private Slurm)" >&2
    exit 1
fi

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "installing dependencies (Debian packages) and building"
scripts/install-deps.sh test || exit 1
if [ ! -f .libs/ext_cache.so ]; then
    { autoreconf -fi && ./configure && make -j2; } >/tmp/ext-cache-demo-build.log 2>&1 ||
        { tail -30 /tmp/ext-cache-demo-build.log; exit 1; }
fi

. tests/lib/tap.sh
. tests/integration/lib/cluster.sh
trap 'lab_stop >/dev/null 2>&1' EXIT

say "starting a 3-node Slurm (n1 n2 n3) with the plugin"
lab_setup >/dev/null || exit 1
lab_install_plugin "$top/.libs/ext_cache.so" || exit 1
line="required $LAB_PLUGIN base=/var/tmp/ext-cache"
lab_set_plugstack "$line"
echo "plugstack.conf: $line"
lab_start >/dev/null || { lab_tail_logs; exit 1; }
lab_root sinfo

say "srun --help shows the option"
lab_user srun --help 2>&1 | grep -A2 -- '--ext-cache'

say "a job with 6 ranks on 3 nodes: every rank sees its node's private cache"
cat >"$LAB/work/demo_rank.sh" <<'RANK'
#!/bin/bash
echo "$SLURMD_NODENAME rank $SLURM_PROCID: TORCH_EXTENSIONS_DIR=$TORCH_EXTENSIONS_DIR"
# a new step directory holds only torch_kernels: like torch, make ours on first use
mkdir -p "$TORCH_EXTENSIONS_DIR"
echo "built by rank $SLURM_PROCID" >"$TORCH_EXTENSIONS_DIR/rank$SLURM_PROCID.txt"
sleep 3
RANK
chmod 755 "$LAB/work/demo_rank.sh"
lab_user srun -N3 -n6 --ext-cache=local "$LAB/work/demo_rank.sh" &
srun_pid=$!
sleep 1.5
say "meanwhile, on each node (as root, in that node's own /var/tmp)"
for n in n1 n2 n3; do
    echo "--- $n"
    lab_node "$n" find /var/tmp/ext-cache -maxdepth 5 -printf '%M %u %p\n' 2>/dev/null | sort -k3 | grep -E 'torch_extensions|/[0-9]+$|/0$'
done
wait "$srun_pid"
lab_wait_idle 30 >/dev/null

say "after the job: the job's tree is gone on every node"
for n in n1 n2 n3; do
    printf '%s: ' "$n"
    lab_node "$n" find /var/tmp/ext-cache -mindepth 1 | grep . || echo "(empty)"
done

say "a typo is refused before anything is submitted"
lab_user srun -N1 --ext-cache=lcoal true
echo "(srun exit code $?)"

# ---- begin: PyTorch JIT extension, one build per node (tests/integration/test_torch.bats, scenario 1) ----
say "PyTorch JIT extension on 3 nodes x 2 ranks: every rank calls torch.utils.cpp_extension.load()"
echo "(as DeepSpeed's op builder does; about a minute: each node compiles a small C++ op once)"
user_home=$(getent passwd "$LAB_USER" | cut -d: -f6)
rm -rf "$LAB/work/torch" "$user_home/.cache/torch_extensions"
cp -r "$top/tests/integration/torch" "$LAB/work/torch" && chmod -R a+rX "$LAB/work/torch"
torch_out=$(MAX_JOBS=1 LAB_PASS_ENV=MAX_JOBS lab_user srun -N3 --ntasks-per-node=2 --ext-cache=local \
    /usr/bin/python3 "$LAB/work/torch/extload.py" demo_op 2>&1)
echo "srun exit code $?; what each rank did:"
grep '^RESULT ' <<<"$torch_out" | awk '
    { delete F; for (i = 2; i <= NF; i++) { k = index($i, "="); F[substr($i, 1, k - 1)] = substr($i, k + 1) } }
    F["role"] == "built" { what = sprintf("BUILT the op in %5.1f s        ", F["build_s"]) }
    F["role"] == "waited" { what = sprintf("waited %5.1f s, loaded that .so", F["waited"]) }
    F["role"] == "reused" { what = "loaded the existing build      " }
    { printf "  %s rank %s: %s  %s  (result %s)\n", F["node"], F["rank"], what, F["so"], (F["ok"] == 1 ? "ok" : "WRONG") }' | sort
grep -q '^RESULT ' <<<"$torch_out" || tail -n 20 <<<"$torch_out"
# shellcheck disable=SC2088 # the text shown, not a path to expand
printf '~/.cache/torch_extensions of %s: ' "$LAB_USER"
if [ -e "$user_home/.cache/torch_extensions" ]; then echo "exists"; else echo "not created"; fi
lab_wait_idle 30 >/dev/null
printf 'after the step, the builds are gone:'
for n in n1 n2 n3; do
    printf ' %s %s' "$n" "$(lab_node "$n" find /var/tmp/ext-cache -name '*.so' 2>/dev/null | grep -q . && echo left || echo gone)"
done
echo
# ---- end: PyTorch JIT extension ----

say "done; stopping the cluster"
