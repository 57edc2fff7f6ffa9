#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank-ext-cache benchmark 7d, a step's end on a node pool key when the
# step added nothing (bench/run.sh runs it after section 7; it also runs
# alone: `bench/end.sh [WORK_DIR]`, as root, from a built tree). The
# put-back and root's record of a key of END_FILES (default 2000 20000
# 300000) entries, the old way (entry by entry, then the whole key
# measured) against the new (a cache directory back by one rename, root's
# look at the key's top level), END_RUNS (default 5) interleaved runs each,
# by bench/end_bench, with the key on a tmpfs and on a journaled ext4 loop
# image, each in a mount namespace of its own. The keys are made once per
# filesystem and reused by every run. Then the same with a Triton cache
# (end_bench -t), END_TRITON_RUNS (default 3) runs on tmpfs: the old way
# rewrites and moves kernel by kernel, the new one moves the directory.
# Raw data: DATA/end.txt ("FS run ..." and "FS median ..." lines, see
# bench/end_bench.c); the table: DATA/end.md.
set -u

# shellcheck source=torchlab.sh
. "$(dirname "${BASH_SOURCE[0]}")/torchlab.sh" && bench_nolab_entry "$0" "${BASH_SOURCE[0]}" "${1:-}" || exit 1
: "${END_FILES:=2000 20000 300000}" "${END_RUNS:=5}" "${END_TRITON_RUNS:=3}"
EB=${build:-$top}/bench/end_bench
[ -x "$EB" ] || { echo "bench: $EB is not built (make bench/end_bench)" >&2; exit 1; }
T=$(now_us)
say "7d. a step's end that added nothing, old way vs new, keys of $END_FILES entries ($END_RUNS runs), tmpfs and ext4"
mkdir -p "$WORK/end-tmpfs" "$WORK/end-ext4" || exit 1
: >"$DATA/end.txt"
# shellcheck disable=SC2086 # END_FILES: words
bench_in_tmpfs "$WORK/end-tmpfs" 2m "$EB" -r "$END_RUNS" "$WORK/end-tmpfs" $END_FILES | sed 's/^/tmpfs /' >>"$DATA/end.txt" ||
    { echo "bench: end_bench on tmpfs failed" >&2; exit 1; }
# Triton's cache, both ways (tmpfs only)
# shellcheck disable=SC2086
bench_in_tmpfs "$WORK/end-tmpfs" 2m "$EB" -r "$END_TRITON_RUNS" -t "$WORK/end-tmpfs" $END_FILES | sed 's/^/tmpfs-triton /' >>"$DATA/end.txt" ||
    { echo "bench: end_bench -t on tmpfs failed" >&2; exit 1; }
img=$WORK/end-ext4.img
bench_ext4_image "$img" 1000000 7d || { echo "bench: no ext4 image for end_bench" >&2; exit 1; }
# shellcheck disable=SC2086
bench_in_ext4 "$img" "$WORK/end-ext4" "$EB" -r "$END_RUNS" "$WORK/end-ext4" $END_FILES | sed 's/^/ext4 /' >>"$DATA/end.txt" ||
    { echo "bench: end_bench on ext4 failed" >&2; rm -f "$img"; exit 1; }
rm -f "$img"
# the table: per filesystem and size, old and new medians side by side, and their ratio
awk '$2 == "median" { k = $1 " " $3; if ($4 == "old") { o[k] = $7; oc[k] = $8; oh[k] = $6; n[k] = $5; order[++m] = k }
                      else { w[k] = $7; wc[k] = $8; wh[k] = $6 } }
     END {
        print "| base on | entries | runs | old end ms | new end ms | old / new | old end CPU ms | new end CPU ms | hold ms, before old / new |"
        print "|---|---|---|---|---|---|---|---|---|"
        for (i = 1; i <= m; i++) { k = order[i]; split(k, f, " ")
            printf "| %s | %s | %s | %.3f | %.3f | %.1f | %.3f | %.3f | %.3f / %.3f |\n", f[1], f[2], n[k],
                   o[k] / 1e6, w[k] / 1e6, (w[k] > 0 ? o[k] / w[k] : 0), oc[k] / 1e6, wc[k] / 1e6, oh[k] / 1e6, wh[k] / 1e6 }
     }' "$DATA/end.txt" >"$DATA/end.md"
cat "$DATA/end.md"
section_time end "$T"
