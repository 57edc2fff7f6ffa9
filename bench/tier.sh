#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank-ext-cache benchmark 7e, the site tier's copies (bench/run.sh runs it
# after 7d; it also runs alone: `bench/tier.sh [WORK_DIR]`, as root, from a
# built tree). A Triton-shaped key of TIER_KERNELS (default 20) kernel
# directories of TIER_FILES (default 1000) files, and a torch extension's
# build with a TIER_SO_MB (default 30) MB op.so, each published once to a
# tier; then TIER_RUNS (default 5) interleaved runs of: the tier's fetch of
# that generation into an empty key directory, `cp -a` of the same
# generation directory, and a publish of the key as a new generation, by
# bench/tier_bench, with the keys and the tier on a tmpfs and on a journaled
# ext4 loop image, each in a mount namespace of its own.
# Raw data: DATA/tier.txt ("FS run ..." and "FS median ..." lines, see
# bench/tier_bench.c); the table: DATA/tier.md.
set -u

# shellcheck source=torchlab.sh
. "$(dirname "${BASH_SOURCE[0]}")/torchlab.sh" && bench_nolab_entry "$0" "${BASH_SOURCE[0]}" "${1:-}" || exit 1
: "${TIER_RUNS:=5}" "${TIER_KERNELS:=20}" "${TIER_FILES:=1000}" "${TIER_SO_MB:=30}"
TB=${build:-$top}/bench/tier_bench
[ -x "$TB" ] || { echo "bench: $TB is not built (make bench/tier_bench)" >&2; exit 1; }
T=$(now_us)
say "7e. the site tier: fetch vs cp -a of one generation, and publish ($TIER_RUNS runs), tmpfs and ext4"
tb_args=(-r "$TIER_RUNS" -k "$TIER_KERNELS" -f "$TIER_FILES" -m "$TIER_SO_MB")
mkdir -p "$WORK/tier-tmpfs" "$WORK/tier-ext4" || exit 1
: >"$DATA/tier.txt"
bench_in_tmpfs "$WORK/tier-tmpfs" 1m "$TB" "${tb_args[@]}" "$WORK/tier-tmpfs" | sed 's/^/tmpfs /' >>"$DATA/tier.txt" ||
    { echo "bench: tier_bench on tmpfs failed" >&2; exit 1; }
img=$WORK/tier-ext4.img
bench_ext4_image "$img" 500000 7e || { echo "bench: no ext4 image for tier_bench" >&2; exit 1; }
bench_in_ext4 "$img" "$WORK/tier-ext4" "$TB" "${tb_args[@]}" "$WORK/tier-ext4" | sed 's/^/ext4 /' >>"$DATA/tier.txt" ||
    { echo "bench: tier_bench on ext4 failed" >&2; rm -f "$img"; exit 1; }
rm -f "$img"
# the table: per filesystem and key, the medians side by side and fetch / cp -a
awk '$2 == "median" {
        printf "| %s | %s | %d | %.1f | %d | %.1f | %.1f | %.1f | %.2f |\n", $1, $3, $9, $10 / 1048576, $4,
               $5 / 1e6, $6 / 1e6, $7 / 1e6, $8 }
     BEGIN {
        print "| base on | key | files | MB | runs | fetch ms | cp -a ms | publish ms | fetch / cp -a |"
        print "|---|---|---|---|---|---|---|---|---|" }' "$DATA/tier.txt" >"$DATA/tier.md"
cat "$DATA/tier.md"
section_time tier "$T"
