# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# For the warm start benchmarks (bench/warm.sh, bench/compile.sh), after
# tests/integration/lib/cluster.sh's lab_setup:
#   bench_torch_lab WHAT TOP   restart the lab with the plugin loaded and
#                          slurmd verbose (the plugin logs its seeds), and give
#                          it a copy of TOP/tests/integration/torch in
#                          $LAB/work/torch; on failure says so, naming WHAT,
#                          and returns 1
bench_torch_lab() {
    lab_stop >/dev/null 2>&1
    # shellcheck disable=SC2034 # read by lab_start
    LAB_SLURM_CONF_EXTRA="SlurmdDebug=verbose"
    if ! { lab_set_plugstack "required $LAB_PLUGIN base=/var/tmp/ext-cache" && lab_start >/dev/null; }; then
        lab_tail_logs >&2
        echo "bench: $1: cluster start failed" >&2
        return 1
    fi
    rm -rf "$LAB/work/torch" && cp -r "$2/tests/integration/torch" "$LAB/work/torch" &&
        chmod -R a+rX,go-w "$LAB/work/torch"
}
