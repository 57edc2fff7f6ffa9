#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The files in examples/, used as written on a real 3-node Slurm:
#   * examples/plugstack.conf.d/ext-cache.conf, the admin's line (the same as
#     README.md's quick start and docs/admin-guide.md's), loaded through `include .../plugstack.conf.d/*.conf` as
#     Debian's plugstack.conf does; only the plugin's path is changed to the
#     lab's copy, every argument is kept;
#   * examples/train-deepspeed-style.sbatch submitted as the user: 3 nodes x 2
#     ranks, #SBATCH --ext-cache=local, torch.distributed training whose
#     optimizer is a C++ op JIT-built by every rank (train_ds_style.py);
#   * examples/rlhf-vllm-style.sbatch checked, not run: Ray, vLLM and OpenRLHF
#     are not packaged by Debian, and no stand-in is run in their place. Its
#     syntax, shellcheck, and the variables it says it relies on against the
#     plugin's built-in list (plugin/base/vars.c).
# Needs python3-torch, libtorch-dev, python3-dev, ninja-build, g++; a missing
# one fails the suite.

load lib/itest

EX=$ITEST_TOP/examples
CONF=$EX/plugstack.conf.d/ext-cache.conf
RLHF=$EX/rlhf-vllm-style.sbatch
SBATCH=train-deepspeed-style.sbatch

setup_file() {
    itest_setup_file
    lab_user python3 -c 'import torch, torch.utils.cpp_extension, torch.distributed as d; assert d.is_available()' ||
        fail "python3 on the user's PATH does not import torch with cpp_extension and distributed (install python3-torch libtorch-dev python3-dev)"
    lab_user bash -c 'command -v ninja && command -v g++' >/dev/null || fail "ninja and g++ are not on the user's PATH"
    local f
    for f in "$CONF" "$EX/$SBATCH" "$EX/train_ds_style.py" "$EX/ops/fused_sgd.cpp" "$EX/README.md" "$RLHF"; do
        [ -f "$f" ] || fail "examples: ${f#"$ITEST_TOP"/} is missing"
    done
    # the admin's line, installed as Debian's plugstack.conf includes it; only the path changes
    mkdir -p "$LAB/etc/plugstack.conf.d"
    read -r _ path _ <<<"$(grep -Ev '^[[:space:]]*(#|$)' "$CONF")"
    awk -v p="$path" -v lab="$LAB_PLUGIN" '!/^[[:space:]]*(#|$)/ && $2 == p { $2 = lab } { print }' "$CONF" \
        >"$LAB/etc/plugstack.conf.d/ext-cache.conf"
    lab_set_plugstack "include $LAB/etc/plugstack.conf.d/*.conf"
    lab_stop >/dev/null 2>&1
    lab_start >/dev/null || fail "cluster start with the example plugstack.conf.d: $(lab_tail_logs 10 2>&1)"
}

teardown_file() { itest_teardown_file; }

@test "rlhf-vllm-style.sbatch (checked, not run): syntax, shellcheck, and the variables it relies on are built in" {
    bash -n "$RLHF"
    assert_equal "$(shellcheck "$RLHF" 2>&1)" ""
    builtins=$(sed -n 's/^[[:space:]]*{ "\([A-Z_]*\)", "[^"]*", \(true\|false\), \(true\|false\) },$/\1/p' "$ITEST_TOP/plugin/base/vars.c")
    # plugin/base/vars.c: the built-in list is found
    assert_equal "$(grep -c . <<<"$builtins")" 17
    relies=$(sed -n '/relies on these variables/,/^#SBATCH/p' "$RLHF" | sed -n 's/^#   \([A-Z][A-Z_]*\) .*/\1/p')
    assert_equal "$(sort <<<"$relies" | paste -sd' ')" \
        "DG_JIT_CACHE_DIR FLASHINFER_WORKSPACE_BASE TORCHINDUCTOR_CACHE_DIR TORCH_EXTENSIONS_DIR TRITON_CACHE_DIR VLLM_CACHE_ROOT"
    # every one is in the plugin's built-in list
    assert_equal "$(comm -23 <(sort <<<"$relies") <(sort <<<"$builtins"))" ""
    # it exports none of them itself (--ext-cache replaces them)
    assert_equal "$(grep -nE "^[^#]*(export|declare -x)[[:space:]].*\b($(paste -sd'|' <<<"$relies"))=" "$RLHF" || true)" ""
    grep -qx '#SBATCH --ext-cache=job' "$RLHF" || fail "it does not ask for --ext-cache=job"
    grep -q 'rlhf-vllm-style.sbatch' "$EX/README.md" || fail "examples/README.md does not describe it"
}

@test "the admin's line: README's and the admin guide's, optional, loaded through plugstack.conf.d/*.conf from Debian's PluginDir, default off" {
    line=$(grep -Ev '^[[:space:]]*(#|$)' "$CONF")
    assert_equal "$(grep -c . <<<"$line")" 1
    assert_equal "$line" "$(grep -E '^[[:space:]]+optional .*/ext_cache\.so' "$ITEST_TOP/README.md" | sed 's/^[[:space:]]*//')"
    assert_equal "$line" "$(grep -E '^[[:space:]]+optional .*/ext_cache\.so' "$ITEST_TOP/docs/admin-guide.md" | sed 's/^[[:space:]]*//')"
    read -r kw path args <<<"$line"
    # optional: a broken plugin must not stop every job
    assert_equal "$kw" optional
    assert_equal "$(grep -Ev '^[[:space:]]*(#|$)' "$LAB/etc/plugstack.conf.d/ext-cache.conf")" "optional $LAB_PLUGIN $args"
    # Debian's own plugstack.conf (slurm-wlm-basic-plugins) is one include line
    assert_equal "$(grep -Ev '^[[:space:]]*(#|$)' /etc/slurm/plugstack.conf 2>&1)" "include /etc/slurm/plugstack.conf.d/*.conf"
    assert_equal "$(dirname "$path")" "$(lab_root scontrol show config | awk '$1 == "PluginDir" {print $3}')"
    [[ $(lab_user srun --help 2>&1) == *--ext-cache* ]] || fail "srun --help does not list --ext-cache"
    # shellcheck disable=SC2016  # expanded by the job's shell
    assert_equal "$(lab_user srun -N1 bash -c 'echo ${SLURM_EXT_CACHE_DIR:-unset}' 2>&1)" unset
}

@test "train-deepspeed-style.sbatch: 6 ranks on 3 nodes train with the op built once per node in the step's directory" {
    home_ext=$(getent passwd "$LAB_USER" | cut -d: -f6)/.cache/torch_extensions
    rm -rf -- "$home_ext" "$LAB/work/examples"
    cp -r "$EX" "$LAB/work/examples" && chmod -R a+rX,go-w "$LAB/work/examples"
    # The lab's node names do not resolve (every node is 127.0.0.1): give the
    # rendezvous address, as the script allows. MAX_JOBS: 2 cores for 3 "nodes".
    job=$(MASTER_ADDR=127.0.0.1 MAX_JOBS=1 LAB_PASS_ENV="MASTER_ADDR MAX_JOBS" \
        lab_user bash -c "cd '$LAB/work/examples' && sbatch --parsable -o '$LAB/work/%j.out' $SBATCH" 2>&1)
    job=${job%%;*}
    state=$(lab_wait_job "$job" 480)
    out=$(cat "$LAB/work/$job.out" 2>/dev/null || true)
    [ "$state" = COMPLETED ] || fail "job $job: $state; output: $(tail -n 40 <<<"$out")"
    P=$ITEST_BASE/$ITEST_UID/$job
    # the batch step: #SBATCH --ext-cache=local gave it its own directory
    itest_match "^batch step on n1: SLURM_EXT_CACHE_MODE=local SLURM_EXT_CACHE_DIR=$P/batch$" "$out"
    ranks=$(grep -E '^ ?[0-9]+: rank [0-9]+/6 on n[0-9]: ' <<<"$out" || true)
    assert_equal "$(awk '{print $5}' <<<"$ranks" | tr -d : | sort | uniq -c | awk '{print $1, $2}')" "$(printf '2 n%s\n' 1 2 3)"
    # every rank's TORCH_EXTENSIONS_DIR and op are in the step's private directory
    assert_equal "$(grep -cE ": TORCH_EXTENSIONS_DIR=$P/0/torch_extensions op=$P/0/torch_extensions/fused_sgd/fused_sgd\.so loss " <<<"$ranks")" 6
    assert_equal "$(grep -cE "^ ?[0-9]+: Using $P/0/torch_extensions as PyTorch extensions root" <<<"$out")" 6
    # which task built: torch prints "Building extension module" only in the builder
    builds=$(awk '
        $2 == "rank" { split($3, a, "/"); node[a[1]] = $5; sub(":", "", node[a[1]]) }
        /: Building extension module fused_sgd/ { t = $1; sub(":", "", t); b[t] = 1 }
        END { for (t in b) c[node[t]]++; for (n in c) print n, c[n] }' <<<"$out" | sort)
    assert_equal "$builds" "$(printf 'n%s 1\n' 1 2 3)"
    done_line=$(grep -E 'training done: 60 steps on 6 ranks, loss [0-9.]+ -> [0-9.]+, weights identical on every rank: True' <<<"$out" || true)
    # the loss fell at least tenfold
    assert_equal "$(awk '{ for (i = 1; i <= NF; i++) if ($i == "->") { a = $(i - 1); b = $(i + 1) + 0 } } END { print (NR == 1 && b < a / 10) ? 1 : 0 }' <<<"$done_line")" 1
    grep -E 'Time to load fused_sgd op|training done' <<<"$out" | sed 's/^/# /' >&3 || true
    lab_wait_settled 120 >/dev/null
    itest_gone_everywhere "$P"
    [ ! -e "$home_ext" ] || fail "something was written under ~/.cache/torch_extensions"
    itest_no_drain
    assert_equal "$(grep -h 'error: ext-cache' "$LAB"/log/slurmd-n*.log 2>/dev/null || true)" ""
}
