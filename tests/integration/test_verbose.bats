#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# --ext-cache-verbose (and SLURM_EXT_CACHE_VERBOSE) on a real 3-node Slurm
# with the node pool, as the unprivileged user: the user's terminal gets one
# line per node saying whether the step started cold (and why: the pool's key
# holds nothing yet) or warm (from the node pool, how many entries); without
# it, not a line. The builds are a file in TORCH_EXTENSIONS_DIR, no torch.

load lib/itest

POOL=$ITEST_BASE/.pool
# every task writes the same "build"; the step says whether it found one
# shellcheck disable=SC2016 # expanded by the task's bash, not here
BUILD='d=$TORCH_EXTENSIONS_DIR/vb; if [ -e "$d/vb.so" ]; then echo "found $SLURMD_NODENAME"; fi; mkdir -p "$d" && printf x >"$d/vb.so"'
LINE='ext-cache: job [0-9]+ step [0-9]+: node'

setup_file() {
    itest_setup_file
    HOME_W=$(getent passwd "$LAB_USER" | cut -d: -f6)/.extc-verbose-$(basename "$LAB")
    rm -rf -- "$HOME_W"
    lab_user mkdir -p "$HOME_W" || fail "cannot make $HOME_W"
    export HOME_W
    itest_cluster "base=$ITEST_BASE pool=node"
}

teardown_file() { itest_teardown_file; }

# run_step [ENV=VALUE...] -- SRUN-ARGS...: $BUILD on every node, as the user, 2 tasks a node. Sets OUT.
run_step() {
    local envs=(SLURM_EXT_CACHE_KEY=verbose-suite)
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    OUT=$(lab_user env "${envs[@]}" timeout -k 10 120 srun -N3 --ntasks-per-node=2 --ext-cache=local \
        "$@" bash -c "$BUILD" 2>&1) || fail "srun failed: $OUT"
    printf '%s\n' "$OUT" >>"$BATS_FILE_TMPDIR/said"
}

# documented_lines: the user guide's table of what --ext-cache-verbose prints,
# each line as an extended regex (N, S, SIZE, WHERE, KEY, WHY, IMAGE, J, WHAT
# stand for what varies; "entries" and "files" read "1 entry", "1 file")
documented_lines() {
    python3 - "$ITEST_TOP/docs/user-guide.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
table = text[text.index("Every line it can print"):text.index("## The node pool")]
holes = {"N": "[0-9]+", "S": "[0-9.]+", "SIZE": ".+", "WHERE": ".+", "KEY": "[0-9a-f]{8}[.][.][.]",
         "WHY": ".+", "IMAGE": ".+", "J": "[0-9]+", "WHAT": ".+"}
for row in table.splitlines():
    row = row.strip()
    if not row.startswith("| `"):
        continue
    first = row.split(" | ")[0]
    for line in re.findall(r"`([^`]+)`", first):
        if line.startswith("..."):
            continue
        out = ""
        for word in re.split(r"(\b[A-Z]+\b)", line):
            if word in holes:
                out += holes[word]
            else:
                word = re.sub(r"([.\[\](){}*+?|^$\\])", r"\\\1", word)
                out += word.replace("entries", "entr(y|ies)").replace("files", "files?")
        print("^" + out + "$")
PY
}

# moved_in K: on every node the ends of K steps have moved their builds into
# the pool and recorded the key's size (in the background, after srun returned)
moved_in() {
    local n
    for n in $(lab_nodes); do
        [ "$(grep -c 'node pool: moved ' "$(lab_log "$n")")" -ge "$1" ] || return 1
    done
}
pooled() {
    local n
    for n in $(lab_nodes); do
        lab_node "$n" sh -c "test -e $POOL/$ITEST_UID/*/torch_extensions/vb/vb.so" || return 1
    done
}

# per_node PATTERN: the nodes with a line matching PATTERN, each once, sorted
per_node() { grep -oE "$LINE (n[0-9]+): $1" <<<"$OUT" | awk '{print $7}' | tr -d : | sort; }

@test "a first step with --ext-cache-verbose: one line per node, cold, the key holds nothing yet" {
    run_step -- --ext-cache-verbose
    assert_equal "$(per_node "cold: the node pool's key for this environment \([0-9a-f]{8}\.\.\.\) holds nothing yet")" \
        "$(printf 'n%s\n' 1 2 3)"
    assert_equal "$(grep -cE "$LINE" <<<"$OUT")" 3
    itest_poll 30 moved_in 1 || fail "the steps' ends never moved their builds in"
    pooled || fail "the builds are not in the pool: $(lab_node n1 find "$POOL" 2>&1)"
}

@test "without the option: started warm, and not a line about it" {
    itest_poll 30 moved_in 1 || fail "the first test's builds are not in the pool"
    run_step --
    assert_equal "$(grep -c '^found n' <<<"$OUT")" 6
    assert_equal "$(grep -c 'ext-cache' <<<"$OUT")" 0
}

@test "the next step with --ext-cache-verbose (or SLURM_EXT_CACHE_VERBOSE=1): warm, from the node pool, how many" {
    itest_poll 30 moved_in 2 || fail "the builds never went back to the pool"
    run_step -- --ext-cache-verbose
    assert_equal "$(grep -c '^found n' <<<"$OUT")" 6
    assert_equal "$(per_node "warm: (took [1-9][0-9]* entr(y|ies)|seeded [1-9][0-9]* files?).* from the node pool \(key [0-9a-f]{8}\.\.\.\)")" \
        "$(printf 'n%s\n' 1 2 3)"
    assert_equal "$(grep -cE "$LINE" <<<"$OUT")" 3
    itest_poll 30 moved_in 3 || fail "the builds never went back to the pool"
    run_step SLURM_EXT_CACHE_VERBOSE=1 --
    assert_equal "$(per_node "warm: ")" "$(printf 'n%s\n' 1 2 3)"
    itest_no_drain
}

@test "seeds named: missing, copied in; seeding off; the pool off: each says so" {
    lab_user mkdir -p "$HOME_W/seed/torch_extensions/vb"
    lab_user sh -c "printf x >'$HOME_W/seed/torch_extensions/vb/vb.so'"
    run_step SLURM_EXT_CACHE_KEY=verbose-seeds -- --ext-cache-verbose --ext-cache-seed="$HOME_W/no-such-seed"
    assert_equal "$(per_node "cold: --ext-cache-seed=.*no-such-seed does not exist \(yet\)")" "$(printf 'n%s\n' 1 2 3)"
    run_step SLURM_EXT_CACHE_KEY=verbose-seeds -- --ext-cache-verbose --ext-cache-seed="$HOME_W/seed"
    assert_equal "$(per_node "warm: seeded 1 file, .* from --ext-cache-seed=")" "$(printf 'n%s\n' 1 2 3)"
    # seeding off, with the suite's key holding builds in the pool
    itest_cluster "base=$ITEST_BASE pool=node seed_max=0"
    run_step -- --ext-cache-verbose
    [ "$(per_node "cold: seeding is disabled on this node \(seed_max=0\)")" = "$(printf 'n%s\n' 1 2 3)" ] ||
        fail "not told seeding is off: $OUT"
    # the admin guide's troubleshooting greps, as written, on the real slurmd log: a seed
    # named while seeding is off is refused there
    local refusals one job
    job=$(grep -oE 'job [0-9]+ step 0: node n1: cold: seeding is disabled' <<<"$OUT" | awk '{print $2}')
    run_step SLURM_EXT_CACHE_KEY=verbose-seeds -- --ext-cache-seed="$HOME_W/seed"
    refusals=$(sed -n "s/^- \`grep '\(error: ext-cache:\)' slurmd.log\` finds every refusal.*/\1/p" \
        "$ITEST_TOP/docs/admin-guide.md")
    assert_equal "$refusals" "error: ext-cache:"
    itest_poll 30 grep -q "seeding is disabled on this cluster (seed_max=0)" "$(lab_log n1)" ||
        fail "no refusal in n1's log"
    grep "$refusals" "$(lab_log n1)" | grep -q "seeding is disabled on this cluster (seed_max=0)" ||
        fail "the admin guide's grep does not find the refusal: $(grep 'seed_max=0' "$(lab_log n1)" | tail -n 2)"
    one=$(sed -n "s/.*\`grep '\(ext-cache: job\) 4711 ' slurmd.log\` everything about one job.*/\1/p" \
        "$ITEST_TOP/docs/admin-guide.md")
    assert_equal "$one" "ext-cache: job"
    grep "$one $job " "$(lab_log n1)" | grep -q "step 0: created" || fail "the per-job grep finds nothing for job $job"
    itest_cluster "base=$ITEST_BASE pool=off"
    run_step SLURM_EXT_CACHE_KEY=verbose-seeds -- --ext-cache-verbose
    assert_equal "$(per_node "cold: no seed directory was named and the node pool is off on this node")" \
        "$(printf 'n%s\n' 1 2 3)"
    itest_cluster "base=$ITEST_BASE pool=node"
}

@test "every line the steps of this suite were told is one the user guide lists; every kind they were told, it lists" {
    local patterns line rest unlisted="" seen=""
    patterns=$(documented_lines)
    [ "$(wc -l <<<"$patterns")" -ge 14 ] || fail "the user guide's table was not read: $patterns"
    while IFS= read -r line; do
        [[ $line =~ $LINE\ n[0-9]+:\ (.*)$ ]] || continue
        rest=${BASH_REMATCH[1]}
        grep -qEf <(printf '%s\n' "$patterns") <<<"$rest" || unlisted+="$rest"$'\n'
        seen+="$rest"$'\n'
    done <"$BATS_FILE_TMPDIR/said"
    [ -z "$unlisted" ] || fail "told, and not in the user guide: $unlisted"
    # and the other way: the six rows this suite's steps produce were each told at least once
    local pattern rows=0
    while IFS= read -r pattern; do
        grep -qE "$pattern" <<<"$seen" && rows=$((rows + 1))
    done <<<"$patterns"
    [ "$rows" -ge 6 ] || fail "only $rows of the user guide's rows were told: $seen"
}
