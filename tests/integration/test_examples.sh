#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The files in examples/, used as written on a real 3-node Slurm:
#   * examples/plugstack.conf.d/ext-cache.conf, the admin's line (the same as
#     README.md's), loaded through `include .../plugstack.conf.d/*.conf` as
#     Debian's plugstack.conf does; only the plugin's path is changed to the
#     lab's copy, every argument is kept;
#   * examples/train-deepspeed-style.sbatch submitted as the user: 3 nodes x 2
#     ranks, #SBATCH --ext-cache=local, torch.distributed training whose
#     optimizer is a C++ op JIT-built by every rank (train_ds_style.py);
#   * examples/rlhf-vllm-style.sbatch checked, not run: Ray, vLLM and OpenRLHF
#     are not packaged by Debian, and no stand-in is run in their place. Its
#     syntax, shellcheck where installed, and the variables it says it relies
#     on against the plugin's built-in list (plugin/vars.c).
# Needs python3-torch, libtorch-dev, python3-dev, ninja-build, g++; a missing
# one fails the suite.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

EX=$ITEST_TOP/examples
CONF=$EX/plugstack.conf.d/ext-cache.conf
SBATCH=train-deepspeed-style.sbatch
SUITE_T0=$EPOCHREALTIME
since() {
    local since_us=${1/[.,]/} now_us=${EPOCHREALTIME/[.,]/}
    printf '%d.%d' $(((now_us - since_us) / 1000000)) $(((now_us - since_us) % 1000000 / 100000))
}

itest_begin

t_check "prerequisite: python3 on the user's PATH imports torch with cpp_extension and distributed" \
    lab_user python3 -c 'import torch, torch.utils.cpp_extension, torch.distributed as d; assert d.is_available()' ||
    { t_fail "prerequisites" "install python3-torch libtorch-dev python3-dev ninja-build g++"; itest_end; exit 1; }
t_check "prerequisite: ninja and g++ on the user's PATH" lab_user bash -c 'command -v ninja && command -v g++'
RLHF=$EX/rlhf-vllm-style.sbatch
for f in "$CONF" "$EX/$SBATCH" "$EX/train_ds_style.py" "$EX/ops/fused_sgd.cpp" "$EX/README.md" "$RLHF"; do
    t_check "examples: ${f#"$ITEST_TOP"/} exists" test -f "$f"
done

# ---- the vLLM/OpenRLHF-style sbatch: checked, not run ----------------------------
t_check "rlhf-vllm-style.sbatch: bash -n accepts it" bash -n "$RLHF"
if command -v shellcheck >/dev/null; then
    t_eq "rlhf-vllm-style.sbatch: shellcheck is silent" "" "$(shellcheck "$RLHF" 2>&1)"
fi
builtins=$(sed -n 's/^[[:space:]]*{ "\([A-Z_]*\)", "[^"]*", \(true\|false\) },$/\1/p' "$ITEST_TOP/plugin/vars.c")
t_eq "plugin/vars.c: the built-in list is found (17 names)" 17 "$(grep -c . <<<"$builtins")"
relies=$(sed -n '/relies on these variables/,/^#SBATCH/p' "$RLHF" | sed -n 's/^#   \([A-Z][A-Z_]*\) .*/\1/p')
t_eq "rlhf-vllm-style.sbatch: names the variables it relies on" \
    "DG_JIT_CACHE_DIR FLASHINFER_WORKSPACE_BASE TORCHINDUCTOR_CACHE_DIR TORCH_EXTENSIONS_DIR TRITON_CACHE_DIR VLLM_CACHE_ROOT" \
    "$(sort <<<"$relies" | paste -sd' ')"
t_eq "rlhf-vllm-style.sbatch: every one is in the plugin's built-in list" "" \
    "$(comm -23 <(sort <<<"$relies") <(sort <<<"$builtins"))"
t_eq "rlhf-vllm-style.sbatch: exports none of them itself (--ext-cache replaces them)" "" \
    "$(grep -nE "^[^#]*(export|declare -x)[[:space:]].*\b($(paste -sd'|' <<<"$relies"))=" "$RLHF")"
t_check "rlhf-vllm-style.sbatch: asks for --ext-cache=job" grep -qx '#SBATCH --ext-cache=job' "$RLHF"
t_check "examples/README.md describes rlhf-vllm-style.sbatch" grep -q 'rlhf-vllm-style.sbatch' "$EX/README.md"

# ---- the admin's line --------------------------------------------------------------
line=$(grep -Ev '^[[:space:]]*(#|$)' "$CONF")
t_eq "ext-cache.conf: exactly one directive" 1 "$(grep -c . <<<"$line")"
t_eq "ext-cache.conf: the same line README.md tells admins to add" \
    "$(grep -E '^[[:space:]]+optional .*/ext_cache\.so' "$ITEST_TOP/README.md" | sed 's/^[[:space:]]*//')" "$line"
read -r kw path args <<<"$line"
t_eq "ext-cache.conf: optional (a broken plugin must not stop every job)" optional "$kw"

mkdir -p "$LAB/etc/plugstack.conf.d"
awk -v p="$path" -v lab="$LAB_PLUGIN" '!/^[[:space:]]*(#|$)/ && $2 == p { $2 = lab } { print }' "$CONF" \
    >"$LAB/etc/plugstack.conf.d/ext-cache.conf"
t_eq "installed copy differs only in the plugin's path" "optional $LAB_PLUGIN $args" \
    "$(grep -Ev '^[[:space:]]*(#|$)' "$LAB/etc/plugstack.conf.d/ext-cache.conf")"
# Debian's own plugstack.conf (slurm-wlm-basic-plugins) is one include line;
# the lab's is the same line with the lab's directory.
t_eq "Debian's /etc/slurm/plugstack.conf reads plugstack.conf.d/*.conf" \
    "include /etc/slurm/plugstack.conf.d/*.conf" "$(grep -Ev '^[[:space:]]*(#|$)' /etc/slurm/plugstack.conf 2>&1)"
lab_set_plugstack "include $LAB/etc/plugstack.conf.d/*.conf"
lab_stop >/dev/null 2>&1
lab_start >/dev/null || { t_fail "cluster start with the example plugstack.conf.d" "$(lab_tail_logs 10)"; itest_end; exit 1; }
t_eq "ext-cache.conf: the plugin path is Slurm's PluginDir on Debian" \
    "$(lab_root scontrol show config | awk '$1 == "PluginDir" {print $3}')" "$(dirname "$path")"
t_contains "loaded through include plugstack.conf.d/*.conf: srun --help lists --ext-cache" \
    "--ext-cache" "$(lab_user srun --help 2>&1)"
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
t_eq "default=off: a job that asks for nothing gets no cache" "unset" \
    "$(lab_user srun -N1 bash -c 'echo ${SLURM_EXT_CACHE_DIR:-unset}' 2>&1)"

# ---- the user's sbatch script ---------------------------------------------------------
HOME_EXT=$(getent passwd "$LAB_USER" | cut -d: -f6)/.cache/torch_extensions
rm -rf -- "$HOME_EXT" "$LAB/work/examples"
cp -r "$EX" "$LAB/work/examples" && chmod -R a+rX,go-w "$LAB/work/examples"
# The lab's node names do not resolve (every node is 127.0.0.1): give the
# rendezvous address, as the script allows.  MAX_JOBS: 2 cores for 3 "nodes".
t0=$EPOCHREALTIME
job=$(MASTER_ADDR=127.0.0.1 MAX_JOBS=1 LAB_PASS_ENV="MASTER_ADDR MAX_JOBS" \
    lab_user bash -c "cd '$LAB/work/examples' && sbatch --parsable -o '$LAB/work/%j.out' $SBATCH" 2>&1)
state=$(lab_wait_job "${job%%;*}" 480)
job=${job%%;*}
wall=$(since "$t0")
t_eq "sbatch $SBATCH: job completed" COMPLETED "$state"
out=$(cat "$LAB/work/$job.out" 2>/dev/null)
P=$ITEST_BASE/$ITEST_UID/$job
itest_match "batch step: #SBATCH --ext-cache=local gave it its own directory" \
    "^batch step on n1: SLURM_EXT_CACHE_MODE=local SLURM_EXT_CACHE_DIR=$P/batch$" "$out"
ranks=$(grep -E '^ ?[0-9]+: rank [0-9]+/6 on n[0-9]: ' <<<"$out")
t_eq "6 ranks trained, 2 on each of n1 n2 n3" "$(printf '2 n%s\n' 1 2 3)" \
    "$(awk '{print $5}' <<<"$ranks" | tr -d : | sort | uniq -c | awk '{print $1, $2}')"
t_eq "every rank's TORCH_EXTENSIONS_DIR and op are in the step's private directory" 6 \
    "$(grep -cE ": TORCH_EXTENSIONS_DIR=$P/0/torch_extensions op=$P/0/torch_extensions/fused_sgd/fused_sgd\.so loss " <<<"$ranks")"
t_eq "torch announced the private root to every rank" 6 \
    "$(grep -cE "^ ?[0-9]+: Using $P/0/torch_extensions as PyTorch extensions root" <<<"$out")"
# which task built: torch prints "Building extension module" only in the builder
builds=$(awk '
    $2 == "rank" { split($3, a, "/"); node[a[1]] = $5; sub(":", "", node[a[1]]) }
    /: Building extension module fused_sgd/ { t = $1; sub(":", "", t); b[t] = 1 }
    END { for (t in b) c[node[t]]++; for (n in c) print n, c[n] }' <<<"$out" | sort)
t_eq "the op was built once per node" "$(printf 'n%s 1\n' 1 2 3)" "$builds"
done_line=$(grep -E 'training done: 60 steps on 6 ranks, loss [0-9.]+ -> [0-9.]+, weights identical on every rank: True' <<<"$out")
t_eq "training ran on 6 ranks, the loss fell at least tenfold, weights identical on every rank" 1 \
    "$(awk '{ for (i = 1; i <= NF; i++) if ($i == "->") { a = $(i - 1); b = $(i + 1) + 0 } } END { print (NR == 1 && b < a / 10) ? 1 : 0 }' <<<"$done_line")"
t_note "example job $job: wall ${wall}s (submit to end); per rank:"
while IFS= read -r l; do t_note "  $l"; done < <(grep -E 'Time to load fused_sgd op|training done' <<<"$out")
lab_wait_idle 30 >/dev/null
itest_gone_everywhere "after the job, its directories are gone on every node" "$P"
t_check "nothing was written under ~/.cache/torch_extensions" test ! -e "$HOME_EXT"
lab_assert_no_drain "no node drained"
t_eq "no ext-cache error in any slurmd/slurmstepd log" "" "$(grep -h 'error: ext-cache' "$LAB"/log/slurmd-n*.log 2>/dev/null)"
[ "$T_FAILED" -gt 0 ] && t_note "job output:"$'\n'"$(tail -n 40 <<<"$out")"
t_note "suite ran $(since "$SUITE_T0") s"
itest_end
