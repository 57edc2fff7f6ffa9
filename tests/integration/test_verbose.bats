#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# --ext-cache-verbose (and SLURM_EXT_CACHE_VERBOSE) on a real 3-node Slurm
# with the node pool, as the unprivileged user: the user's terminal gets one
# line per node saying whether the step started cold (and why: the pool's key
# holds nothing yet) or warm (from the node pool, how many entries); without
# it, not a line. The builds are a file in TORCH_EXTENSIONS_DIR, no torch.
# Then the rest of what the guides quote for a user's or an admin's first
# hour: every refusal of the failures tables, provoked for real and compared
# with the quoted text; every command they give to run as written (README.md
# and the guides' ```sh blocks), on a one-node cluster and on this lab.

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

# failure_messages DOC HEADING [ITEM]: the messages quoted in the items (table
# rows, list items) under HEADING of DOC, or only in those holding ITEM: each
# backtick quote with ": " in it or an unrecognized option, as "QUOTE<TAB>REGEX".
# The regex matches a whole line of output: "..." and <placeholders> stand for
# any text, 4711 for a job id, n2 for a node, DIR for an absolute path; a quote
# may leave out the "srun: error: " Slurm puts in front (it starts after ": ").
failure_messages() {
    python3 - "$@" <<'PY'
import re, sys
doc, heading = sys.argv[1], sys.argv[2]
only = sys.argv[3] if len(sys.argv) > 3 else ""
text = open(doc).read()
start = text.index("\n" + heading + "\n")
end = text.find("\n## ", start + 1)
items = []
for line in text[start:end if end >= 0 else len(text)].splitlines():
    if line.startswith("|") or line.startswith("- "):
        items.append(line)
    elif line.startswith("  ") and items and items[-1].startswith("- "):
        items[-1] += " " + line.strip()
holes = {"...": ".*", "4711": "[0-9]+", "n2": "n[0-9]+", "DIR": "/.+"}
for item in items:
    if only not in item:
        continue
    for quote in re.findall(r"`([^`]+)`", item):
        if ": " not in quote and not quote.startswith("unrecognized option"):
            continue
        out = ""
        for word in re.split(r"(\.\.\.|<[a-z]+>|\b4711\b|\bn2\b|\bDIR\b)", quote):
            if word in holes:
                out += holes[word]
            elif re.fullmatch(r"<[a-z]+>", word):
                out += ".+"
            else:
                out += re.sub(r"([.\[\](){}*+?|^$\\])", r"\\\1", word)
        print(quote + "\t(^|: )" + out + "$")
PY
}

# provoke RC CMD...: CMD as the user, what it printed (both streams) in OUT;
# it must exit RC ("!0": any failure)
provoke() {
    local want=$1 rc=0
    shift
    OUT=$(lab_user timeout -k 10 120 "$@" 2>&1 </dev/null) || rc=$?
    case $want in
        '!0') [ "$rc" -ne 0 ] ;;
        *) [ "$rc" -eq "$want" ] ;;
    esac || fail "\`$*\` exited $rc, not $want: $OUT"
}

# as_documented PHRASE: every message of the failures tables (and of the admin
# guide's troubleshooting of a misspelt argument) with PHRASE in it is a line of OUT
as_documented() {
    local quote re n=0
    while IFS=$'\t' read -r quote re; do
        [[ $quote == *"$1"* ]] || continue
        n=$((n + 1))
        grep -qE -- "$re" <<<"$OUT" || fail "a guide quotes \`$quote\`, and what was printed is:"$'\n'"$OUT"
        printf '%s\n' "$quote" >>"$BATS_FILE_TMPDIR/checked"
    done <"$BATS_FILE_TMPDIR/messages"
    [ "$n" -gt 0 ] || fail "no message the guides quote says \"$1\""
}

next_job_id() { lab_root scontrol show config | awk '$1 == "NEXT_JOB_ID" {print $3}'; }

@test "every refusal the failures tables of both guides quote is what srun and slurmstepd print" {
    local user admin status before cmd
    user=$(failure_messages "$ITEST_TOP/docs/user-guide.md" "## What each failure looks like")
    admin=$(failure_messages "$ITEST_TOP/docs/admin-guide.md" "## Failures")
    [ "$(wc -l <<<"$user")" -ge 7 ] || fail "the user guide's failures table was not read: $user"
    [ "$(wc -l <<<"$admin")" -ge 2 ] || fail "the admin guide's failures table was not read: $admin"
    {
        printf '%s\n' "$user" "$admin"
        failure_messages "$ITEST_TOP/docs/admin-guide.md" "## Troubleshooting" "A misspelt argument"
    } >"$BATS_FILE_TMPDIR/messages"
    : >"$BATS_FILE_TMPDIR/checked"

    # refused by srun, nothing submitted
    before=$(next_job_id)
    provoke '!0' srun -N1 --ext-cache=lcoal true
    as_documented "invalid mode"
    provoke '!0' srun -N1 --ext-cache=local --ext-cache-seed=seeds true
    as_documented "not an absolute path"
    assert_equal "next job id $(next_job_id)" "next job id $before"

    # a base the user squatted on n2: asked for a mode, the step fails there, its
    # tasks exiting with the status the user guide names before the program runs
    status=$(grep -oE 'the tasks on that node exit with status [0-9]+' "$ITEST_TOP/docs/user-guide.md" | awk '{print $NF}')
    [ -n "$status" ] || fail "the user guide names no exit status"
    lab_node n2 setpriv --reuid="$LAB_USER" --regid="$ITEST_GID" --init-groups mkdir -p -m 777 /var/tmp/squatted
    itest_plugstack "required $LAB_PLUGIN base=/var/tmp/squatted"
    # shellcheck disable=SC2016 # expanded by the task's bash
    provoke "$status" srun -N3 --ext-cache=local bash -c 'echo "ran $SLURMD_NODENAME"'
    as_documented "failing the step"
    as_documented "slurmstepd-<node>"
    assert_equal "$(grep '^ran ' <<<"$OUT" | sort | tr '\n' ' ')" "ran n1 ran n3 "
    # the admin's default only: n2 goes on without one, with the user's own
    # variables; n1 and n3 are refused a seed the user cannot read
    lab_user mkdir -p "$HOME_W/unreadable" && chmod 0 "$HOME_W/unreadable"
    itest_plugstack "required $LAB_PLUGIN base=/var/tmp/squatted default=local"
    # shellcheck disable=SC2016 # expanded by the task's bash
    provoke 0 srun -N3 --ext-cache-seed="$HOME_W/unreadable" bash -c 'echo "ran $SLURMD_NODENAME ${SLURM_EXT_CACHE_DIR:-none}"'
    as_documented "going on without one"
    as_documented "not seeded"
    itest_match "^ran n2 none$" "$OUT"
    itest_match "^ran n1 /var/tmp/squatted/$ITEST_UID/[0-9]+/0$" "$OUT"

    # no mode at all: the job runs, and the command the table names prints nothing
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE pool=node"
    # shellcheck disable=SC2016 # Markdown's backquotes, not an expansion
    cmd=$(sed -n 's/^| the job runs, but `\([^`]*\)` prints nothing .*/\1/p' "$ITEST_TOP/docs/user-guide.md")
    assert_equal "$cmd" "printenv SLURM_EXT_CACHE_DIR"
    # shellcheck disable=SC2086 # the documented command, split into its words
    assert_equal "printed: '$(lab_user srun -N1 $cmd 2>/dev/null </dev/null)'" "printed: ''"

    # a misspelt plugstack argument: with optional, every srun says why and
    # --ext-cache is unknown; jobs run without the plugin; the slurmd log has it
    itest_plugstack "optional $LAB_PLUGIN base=$ITEST_BASE defualt=off pool=node"
    provoke '!0' srun -N1 --ext-cache=local true
    as_documented "unrecognized option"
    as_documented "<key>=<value>"
    as_documented "unknown argument"
    provoke 0 srun -N1 true
    as_documented "<key>=<value>"
    itest_poll 30 grep -q "error: ext-cache: .*defualt=off: unknown argument" "$(lab_log n1)" ||
        fail "the refused argument is not in n1's slurmd log"
    # with required, srun refuses
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE defualt=off pool=node"
    provoke '!0' srun -N1 true
    as_documented "<key>=<value>"
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE pool=node"

    # and no message of the tables went unprovoked
    assert_equal "$(sort -u "$BATS_FILE_TMPDIR/checked")" "$(cut -f1 "$BATS_FILE_TMPDIR/messages" | sort -u)"
    itest_no_drain
}

# documented_commands: the commands README.md and the two guides give to run
# as written, their ```sh blocks, one a line (indented blocks are examples,
# such as `srun --ext-cache=local python train.py`, and are not run)
documented_commands() {
    local f
    for f in README.md docs/admin-guide.md docs/user-guide.md; do
        awk '/^ *```sh$/ {on = 1; next} /^ *```$/ {on = 0} on && NF {sub(/^ +/, ""); print}' "$ITEST_TOP/$f"
    done
}

# run_documented WHERE: each documented command, as the user, exits 0 within 60 s
run_documented() {
    local cmd out
    while IFS= read -r cmd; do
        out=$(lab_user timeout -k 5 60 bash -c "$cmd" 2>&1 </dev/null) ||
            fail "on $1, \`$cmd\` exited $?: $out"
        echo "# $1: $cmd: $(tail -n 1 <<<"$out")" >&3
    done < <(documented_commands)
}

@test "the commands README and the guides give to run work as written, on a one-node cluster and on the 3-node lab" {
    local cmds args
    cmds=$(documented_commands)
    [ "$(wc -l <<<"$cmds")" -ge 7 ] || fail "too few commands read: $cmds"
    # the package's own plugstack line (etc/plugstack.conf.d), its arguments
    args=$(sed -n 's|^#optional @SLURM_PLUGINDIR@/ext_cache.so ||p' "$ITEST_TOP/etc/plugstack.conf.d/ext-cache.conf.in")
    [ -n "$args" ] || fail "no plugin line in the shipped snippet"
    lab_stop >/dev/null 2>&1
    # shellcheck disable=SC2034 # read by lib/cluster.sh's lab_start
    LAB_NNODES=1
    itest_cluster "$args"
    assert_equal "$(lab_root sinfo -h -N -o %N | sort -u | tr '\n' ' ')" "n1 "
    run_documented "one node"
    lab_stop >/dev/null 2>&1
    # shellcheck disable=SC2034 # the same
    LAB_NNODES=3
    itest_cluster "$args"
    assert_equal "$(lab_root sinfo -h -N -o %N | sort -u | tr '\n' ' ')" "n1 n2 n3 "
    run_documented "3 nodes"
    itest_no_drain
}

# quoted_log_lines FILE: the slurmd log lines FILE quotes (indented, starting
# "ext-cache: "), each as an extended regex: a path, a number, a version
# stand for any
quoted_log_lines() {
    python3 - "$1" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    m = re.match(r"^ {4,}(ext-cache: .*\S)\s*$", line)
    if not m:
        continue
    out = ""
    for word in re.split(r"(/[^\s:]+|[0-9]+(?:\.[0-9]+)*)", m.group(1)):
        if word.startswith("/"):
            out += r"/[^ :]+"
        elif re.fullmatch(r"[0-9]+(?:\.[0-9]+)*", word):
            out += r"[0-9]+([.][0-9]+)*"
        else:
            out += re.sub(r"([][\\.^$*+?(){}|])", r"\\\1", word)
    print(out + "$")
PY
}

@test "every slurmd log line the admin guide quotes is a line of a real slurmd log" {
    local quoted re job logs
    quoted=$(quoted_log_lines "$ITEST_TOP/docs/admin-guide.md")
    [ "$(wc -l <<<"$quoted")" -ge 4 ] || fail "too few quoted lines read: $quoted"
    # slurmd's start, one local step's making and removal, its job's epilog
    itest_cluster "base=$ITEST_BASE pool=node"
    run_step --
    job=$(lab_root squeue -h -t all -o %A 2>/dev/null | sort -n | tail -n 1)
    logs=("$(lab_log n1)" "$(lab_log n2)" "$(lab_log n3)")
    itest_poll 60 grep -q "ext-cache: job [0-9]*: epilog: moved the job's tree to the trash" "${logs[@]}" ||
        fail "no epilog line in the slurmd logs (job ${job:-?})"
    while IFS= read -r re; do
        grep -qE -- "$re" "${logs[@]}" || fail "no slurmd log line is what the admin guide quotes: $re"
    done <<<"$quoted"
}
