#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# Smoke test of the integration-test harness (lib/cluster.sh): starts a real
# 3-node Slurm cluster on this machine with an empty plugstack and checks
# that it behaves like one: srun/sbatch/salloc as the unprivileged user, one
# private /tmp and /var/tmp per node, restart cycles, and a teardown that
# stops exactly the lab's processes (decoy processes that merely look like
# Slurm must survive). Must run as root. The cases run in order: later ones
# restart what earlier ones started.

# Each @test runs in a process of its own: a variable one sets is never
# meant for another (they pass values through files), so shellcheck's
# warning about changes lost in a subshell does not apply.
# shellcheck disable=SC2030,SC2031
bats_load_library bats-support
bats_load_library bats-assert
# shellcheck source=lib/cluster.sh
. "$BATS_TEST_DIRNAME/lib/cluster.sh"

# ---------------------------------------------------------------------------
# Decoys: processes that look like lab processes but are not; teardown must
# leave every one of them alive. Their pids and directory live in
# $BATS_FILE_TMPDIR/decoys (first line the directory).
decoy_dir() { head -n1 "$BATS_FILE_TMPDIR/decoys" 2>/dev/null; }
decoy_pids() { tail -n +2 "$BATS_FILE_TMPDIR/decoys" 2>/dev/null; }
start_decoys() {
    local dir pids=() p deadline
    dir=$(mktemp -d /var/tmp/extc-decoy.XXXXXX) || return 1
    echo "$dir" >"$BATS_FILE_TMPDIR/decoys"
    cp /bin/sleep "$dir/slurmstepd" && cp /bin/sleep "$dir/slurmd" &&
        cp /bin/sleep "$dir/srun" && cp /bin/sleep "$dir/munged" || return 1
    chmod 0755 "$dir"
    mkdir -p "$dir/nodes/n1/tmp"
    # comm "slurmstepd"/"slurmd"/"munged" in the host namespace, as root
    "$dir/slurmstepd" 900 </dev/null >/dev/null 2>&1 &
    pids+=($!)
    "$dir/slurmd" 900 </dev/null >/dev/null 2>&1 &
    pids+=($!)
    "$dir/munged" 900 </dev/null >/dev/null 2>&1 &
    pids+=($!)
    # an srun of another cluster
    env SLURM_CONF=/etc/slurm/slurm.conf "$dir/srun" 900 </dev/null >/dev/null 2>&1 &
    pids+=($!)
    # a process of the test user outside the cluster
    setpriv --reuid="$LAB_USER" --regid="$(id -g "$LAB_USER")" --init-groups sleep 900 \
        </dev/null >/dev/null 2>&1 &
    pids+=($!)
    # a "slurmstepd" in a private mount namespace with a node-like /tmp
    # shellcheck disable=SC2016  # expanded by the inner shell
    unshare -m --propagation private -- bash -c \
        'mount --bind "$1/nodes/n1/tmp" /tmp && exec "$1/slurmstepd" 900' decoy "$dir" \
        </dev/null >/dev/null 2>&1 &
    pids+=($!)
    for p in "${pids[@]}"; do
        disown "$p" 2>/dev/null
        echo "$p" >>"$BATS_FILE_TMPDIR/decoys"
    done
    # the teardown must meet each decoy as what it looks like: wait until
    # unshare, setpriv, env and the forking shells have exec'd it
    deadline=$(_lab_deadline 10)
    until decoys_execd; do
        _lab_past "$deadline" && { echo "decoys not started in 10 s"; return 1; }
        sleep 0.05
    done
}
# decoys_execd: every decoy runs its final program (the comm the teardown sees)
decoys_execd() {
    local p comm
    for p in $(decoy_pids); do
        comm=$(cat "/proc/$p/comm" 2>/dev/null) || return 1
        case $comm in
            slurmstepd | slurmd | munged | srun | sleep) ;;
            *) return 1 ;;
        esac
    done
}
decoys_alive() {
    local p dead=''
    for p in $(decoy_pids); do
        _lab_alive "$p" || dead="$dead $p"
    done
    [ -z "$dead" ] && return 0
    echo "dead decoys:$dead"
    return 1
}
stop_decoys() {
    local p dir
    dir=$(decoy_dir)
    for p in $(decoy_pids); do kill -KILL "$p" 2>/dev/null; done
    [ -n "$dir" ] && rm -rf --one-file-system -- "$dir"
    rm -f "$BATS_FILE_TMPDIR/decoys"
}

# ---------------------------------------------------------------------------
# Independent view of the lab's processes (not using the library's namespace
# recognition): the recorded daemon pids, and everything in the mount
# namespaces of the recorded slurmds (seen so far: $BATS_FILE_TMPDIR/lab_ns).
lab_ns() { cat "$BATS_FILE_TMPDIR/lab_ns" 2>/dev/null; }
remember_node_ns() {
    local f p ns live=" " keep=()
    # forget namespaces that have died (their inode numbers get reused)
    for f in /proc/[0-9]*/ns/mnt; do
        live="$live$(readlink "$f" 2>/dev/null || true) "
    done
    for ns in $(lab_ns); do
        [[ $live == *" $ns "* ]] && keep+=("$ns")
    done
    for f in "$LAB"/run/lab-slurmd-*.pid; do
        p=$(cat "$f" 2>/dev/null) || continue
        ns=$(readlink "/proc/$p/ns/mnt" 2>/dev/null) || continue
        [[ " ${keep[*]-} " == *" $ns "* ]] || keep+=("$ns")
    done
    printf '%s\n' ${keep[@]+"${keep[@]}"} >"$BATS_FILE_TMPDIR/lab_ns"
}
independent_lab_pids() {
    local f p ns known
    known=" $(lab_ns | tr '\n' ' ') "
    for f in "$LAB"/run/lab-*.pid; do
        p=$(cat "$f" 2>/dev/null) && _lab_alive "$p" && echo "$p"
    done
    # (namespace inode numbers are reused once a namespace dies, e.g. by
    # another lab on this machine: so also check what is mounted on /tmp)
    for f in /proc/[0-9]*/ns/mnt; do
        ns=$(readlink "$f" 2>/dev/null) || continue
        p=${f#/proc/}
        p=${p%%/*}
        [[ $known == *" $ns "* ]] && _lab_alive "$p" &&
            [[ $(findmnt -n -N "$p" -o SOURCE /tmp 2>/dev/null) == *"[$LAB/nodes/"* ]] && echo "$p"
    done | sort -u
}
descendants() { # PID and all its descendants
    local c
    echo "$1"
    for c in $(pgrep -P "$1"); do descendants "$c"; done
}
signal_log_lines() { wc -l <"$LAB/log/lab-signals.log" 2>/dev/null || echo 0; }
# audit_signals FROM_LINE ALLOWED_PIDS: every signal logged after line
# FROM_LINE went to one of ALLOWED_PIDS.
audit_signals() {
    local from=$1 allowed bad='' _t _sig pid rest n=0
    allowed=" $(echo "$2" | tr '\n' ' ') "
    while read -r _t _sig pid rest; do
        [ -n "${pid:-}" ] || continue
        n=$((n + 1))
        [[ $allowed == *" $pid "* ]] || bad="$bad"$'\n'"$_t $_sig $pid $rest"
    done < <(tail -n +"$((from + 1))" "$LAB/log/lab-signals.log" 2>/dev/null)
    [ -z "$bad" ] || fail "signal sent to a process not known as the lab's:$bad"
    echo "# $n signals, all to lab processes" >&3
}
# no lab process left: pgrep, ignoring zombies (orphans are reaped by init a
# moment later) and our decoys
check_no_lab_procs() {
    local p st left='' decoys
    decoys=" $(decoy_pids | tr '\n' ' ') "
    for p in $(pgrep -f -- "$LAB"); do
        [[ $decoys == *" $p "* ]] && continue
        st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) || continue
        [ "$st" == Z ] && continue
        left="$left"$'\n'"$(ps -o pid=,stat=,args= -p "$p")"
    done
    for p in $(independent_lab_pids); do
        left="$left"$'\n'"(in a lab namespace) $(ps -o pid=,stat=,args= -p "$p")"
    done
    [ -z "$left" ] || fail "lab processes still running:$left"
}
# seen RUNNER... PATH: run `test -e PATH` through RUNNER (lab_node nX, lab_user
# srun ...) and print seen/unseen, so that a failing runner cannot pass for
# "file not there".
seen() {
    local path=${*: -1}
    # shellcheck disable=SC2016  # expanded by the inner shell
    "${@:1:$#-1}" sh -c 'if test -e "$1"; then echo seen; else echo unseen; fi' sh "$path" 2>&1
}
no_drain() {
    local d
    lab_wait_idle 30 >/dev/null 2>&1 || true
    d=$(lab_drained_nodes 2>&1) || fail "cannot query node states: $d"
    [ -z "$d" ] || fail "drained/down: $(tr '\n' ' ' <<<"$d")"
}
# poll SECONDS CMD...: CMD every 0.05 s until it succeeds, or rc 1 after SECONDS
poll() {
    local deadline
    deadline=$(_lab_deadline "$1")
    shift
    until "$@"; do
        _lab_past "$deadline" && return 1
        sleep 0.05
    done
}
lab_has_user_sleep() { lab_node n3 pgrep -u "$LAB_USER" -x sleep >/dev/null; }

setup_file() {
    [ "$(id -u)" -eq 0 ] || fail "test_harness must run as root (it starts Slurm daemons in mount namespaces): uid $(id -u)"
    [ "$LAB_NNODES" = 3 ] || fail "this test needs EXTC_LAB_NNODES=3 (is $LAB_NNODES)"
    echo "# lab: $LAB, user: $LAB_USER, ports: $LAB_CTLD_PORT, $LAB_SLURMD_PORT.." >&3
    lab_setup || fail "lab_setup failed"
    export _LAB_LOCK_FD _LAB_LOCK_PATH
    [ ! -s "$LAB_PLUGSTACK" ] || fail "plugstack.conf is not empty after lab_setup: $(cat "$LAB_PLUGSTACK")"
    start_decoys || fail "cannot start decoy processes"
    lab_start || fail "the cluster did not come up: $(lab_tail_logs 2>&1 | tail -n 40)"
    remember_node_ns
}

# the stand-ins the lab_wait_settled case starts go, whatever it found
teardown() {
    local p
    [ -e "$BATS_FILE_TMPDIR/stand-ins" ] || return 0
    while read -r p; do kill "$p" 2>/dev/null || true; done <"$BATS_FILE_TMPDIR/stand-ins"
    rm -f "$BATS_FILE_TMPDIR/stand-ins" "$LAB/work/extc-finisher" "$LAB/work/extc-epilog"
}

teardown_file() {
    lab_stop >/dev/null 2>&1
    stop_decoys
}

@test "srun -N3 reaches every node, as the unprivileged user" {
    local out
    out=$(lab_user srun -Q -N3 printenv SLURMD_NODENAME 2>&1)
    assert_equal "$(sort <<<"$out" | paste -sd' ')" "n1 n2 n3"
    # shellcheck disable=SC2016  # expanded by the job's shell
    out=$(lab_user srun -Q -N1 bash -c 'echo "$(id -un) $(id -u) $HOME"' 2>&1)
    assert_equal "$out" "$LAB_USER $(id -u "$LAB_USER") $(_lab_user_home)"
}

@test "lab_user: a clean environment but LAB_PASS_ENV, its command's rc, only srun's queueing notices dropped" {
    local out rc=0
    # shellcheck disable=SC2016  # expanded by the inner shell
    out=$(LEAKY_VAR=1 lab_user bash -c 'echo "${LEAKY_VAR-unset} $SLURM_CONF $PWD"' 2>&1)
    assert_equal "$out" "unset $LAB_CONF $LAB/work"
    out=$(SLURM_EXT_CACHE=probe-value LAB_PASS_ENV="SLURM_EXT_CACHE" lab_user srun -Q -N1 printenv SLURM_EXT_CACHE 2>&1)
    assert_equal "$out" "probe-value"
    lab_user bash -c 'exit 7' || rc=$?
    assert_equal "rc $rc" "rc 7"
    rc=0
    out=$(lab_user bash -c 'echo "srun: job 12 queued and waiting for resources" >&2
        echo "srun: job 12 has been allocated resources" >&2
        echo "srun: error: kept" >&2; echo "ext-cache: kept too" >&2; echo out; exit 3' 2>&1) || rc=$?
    assert_equal "rc $rc" "rc 3"
    assert_equal "$(sort <<<"$out" | paste -sd'|')" "ext-cache: kept too|out|srun: error: kept"
}

@test "lab_set_plugstack writes one line per argument, none without; lab_install_plugin copies into \$LAB/lib" {
    lab_set_plugstack "optional /nonexistent/a.so" "optional /nonexistent/b.so x=1"
    assert_equal "$(paste -sd'|' "$LAB_PLUGSTACK")" "optional /nonexistent/a.so|optional /nonexistent/b.so x=1"
    lab_set_plugstack
    [ ! -s "$LAB_PLUGSTACK" ] || fail "lab_set_plugstack with no argument left: $(cat "$LAB_PLUGSTACK")"
    lab_install_plugin /bin/true copy-probe.so
    cmp -s /bin/true "$LAB/lib/copy-probe.so" || fail "$LAB/lib/copy-probe.so is not a copy of /bin/true"
    rm -f "$LAB/lib/copy-probe.so"
}

@test "every node has its own /tmp and /var/tmp, in its lab directory, unseen by the others and the host" {
    local probe out d n
    probe=lab-probe-$$-$RANDOM
    out=$(lab_user srun -Q -N1 -w n1 bash -c "echo hello >/tmp/$probe && echo hello >/var/tmp/$probe && echo ok" 2>&1)
    assert_equal "$out" "ok"
    for d in /tmp /var/tmp; do
        assert_equal "n1 $d: $(seen lab_node n1 "$d/$probe")" "n1 $d: seen"
        for n in n2 n3; do
            assert_equal "$n $d: $(seen lab_node "$n" "$d/$probe")" "$n $d: unseen"
        done
        [ ! -e "$d/$probe" ] || fail "the host sees n1's $d/$probe"
    done
    assert_equal "$(stat -c %U "$LAB/nodes/n1/tmp/$probe" 2>&1) $(cat "$LAB/nodes/n1/vartmp/$probe" 2>&1)" "$LAB_USER hello"
    assert_equal "job on n2: $(seen lab_user srun -Q -N1 -w n2 "/tmp/$probe")" "job on n2: unseen"
    out=$(lab_node n2 findmnt -n -o SOURCE /tmp 2>&1)
    [[ $out == *"/nodes/n2/tmp"* ]] || fail "n2's /tmp is not its node directory: $out"
    echo "$probe" >"$BATS_FILE_TMPDIR/probe"
}

@test "sbatch and salloc run as the user on the nodes asked for; no node drained" {
    local jobid out
    cat >"$LAB/work/smoke.sbatch" <<'SBATCH'
#!/bin/bash
echo "batch-user=$(id -un)"
echo "batch-nodes=$(srun printenv SLURMD_NODENAME | sort | paste -sd' ')"
SBATCH
    chmod 0755 "$LAB/work/smoke.sbatch"
    jobid=$(lab_user sbatch --parsable -N2 -o smoke-%j.out smoke.sbatch 2>&1)
    [[ $jobid =~ ^[0-9]+$ ]] || fail "sbatch: $jobid"
    assert_equal "$(lab_wait_job "$jobid" 60)" COMPLETED
    out=$(cat "$LAB/work/smoke-$jobid.out" 2>&1)
    [[ $out == *"batch-user=$LAB_USER"* ]] || fail "the batch script did not run as $LAB_USER: $out"
    [[ $out =~ batch-nodes=n[1-3]\ n[1-3] ]] || fail "srun inside the batch job did not run on 2 nodes: $out"
    out=$(lab_user salloc -Q -N2 srun -Q hostname 2>/dev/null)
    assert_equal "$(paste -sd' ' <<<"$out")" "$(uname -n) $(uname -n)"
    no_drain
    echo "$jobid" >"$BATS_FILE_TMPDIR/jobid"
}

@test "lab_wait_settled waits for a process named as the plugin's detached work in a node, not outside the lab" {
    local rc=0 out
    # programs whose names (comm) are the step's and the epilog's detached
    # ends', in n2's and n3's mount namespaces and in the host's
    cp /bin/sleep "$LAB/work/extc-finisher"
    cp /bin/sleep "$LAB/work/extc-epilog"
    "$LAB/work/extc-finisher" 60 </dev/null >/dev/null 2>&1 &
    echo $! >"$BATS_FILE_TMPDIR/stand-ins"
    nsenter -t "$(_lab_slurmd_pid n2)" -m "$LAB/work/extc-finisher" 60 </dev/null >/dev/null 2>&1 &
    node_pid=$!
    echo "$node_pid" >>"$BATS_FILE_TMPDIR/stand-ins"
    nsenter -t "$(_lab_slurmd_pid n3)" -m "$LAB/work/extc-epilog" 60 </dev/null >/dev/null 2>&1 &
    epilog_pid=$!
    echo "$epilog_pid" >>"$BATS_FILE_TMPDIR/stand-ins"
    # shellcheck disable=SC2016  # evaluated by poll, each time
    poll 10 eval '[ "$(readlink /proc/$node_pid/ns/mnt)" = "$(readlink /proc/$(_lab_slurmd_pid n2)/ns/mnt)" ] &&
        [ "$(cat /proc/$node_pid/comm)" = extc-finisher ] &&
        [ "$(readlink /proc/$epilog_pid/ns/mnt)" = "$(readlink /proc/$(_lab_slurmd_pid n3)/ns/mnt)" ] &&
        [ "$(cat /proc/$epilog_pid/comm)" = extc-epilog ]' || fail "the stand-ins never ran in n2's and n3's namespaces"
    out=$(lab_wait_settled 1 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "lab_wait_settled returned with detached work running on n2 and n3: $out"
    # the nodes' are named, the host's is not
    assert_equal "$(grep -E 'extc-(finisher|epilog)$' <<<"$out" | sort -n | paste -sd'|')" \
        "$(printf '%s\n' "$node_pid extc-finisher" "$epilog_pid extc-epilog" | sort -n | paste -sd'|')"
    kill "$node_pid"
    wait "$node_pid" || true
    # the epilog's stand-in alone still holds it
    rc=0
    out=$(lab_wait_settled 1 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "lab_wait_settled returned with the epilog's detached work running on n3: $out"
    kill "$epilog_pid"
    wait "$epilog_pid" || true
    lab_wait_settled 10 || fail "lab_wait_settled failed with nothing running on the nodes"
}

@test "lab_restart_slurmd: n2 gets a new slurmd, keeps its node-local /tmp, runs jobs" {
    local pid_before pid_after out probe
    probe=$(cat "$BATS_FILE_TMPDIR/probe") || fail "the /tmp case did not record its probe"
    pid_before=$(_lab_slurmd_pid n2)
    lab_restart_slurmd n2
    remember_node_ns
    pid_after=$(_lab_slurmd_pid n2)
    [ -n "$pid_after" ] && [ "$pid_after" != "$pid_before" ] && ! _lab_alive "$pid_before" ||
        fail "n2 has no new slurmd ($pid_before -> $pid_after)"
    out=$(lab_node n2 findmnt -n -o SOURCE /tmp 2>&1)
    [[ $out == *"/nodes/n2/tmp"* ]] || fail "restarted n2's /tmp is not its node directory: $out"
    assert_equal "$(seen lab_node n2 "/tmp/$probe")" unseen
    assert_equal "$(lab_user srun -Q -N1 -w n2 printenv SLURMD_NODENAME 2>&1)" n2
}

@test "a full stop and start: only lab processes signalled, none left; /tmp and job ids carry on" {
    local sig0 allowed last_job jobid probe out
    probe=$(cat "$BATS_FILE_TMPDIR/probe") || fail "the /tmp case did not record its probe"
    last_job=$(cat "$BATS_FILE_TMPDIR/jobid") || fail "the sbatch case did not record its job"
    sig0=$(signal_log_lines)
    allowed=$(independent_lab_pids)
    lab_stop
    audit_signals "$sig0" "$allowed"
    check_no_lab_procs
    lab_start || fail "the cluster did not come up again: $(lab_tail_logs 2>&1 | tail -n 40)"
    remember_node_ns
    out=$(lab_user srun -Q -N3 printenv SLURMD_NODENAME 2>&1)
    assert_equal "$(sort <<<"$out" | paste -sd' ')" "n1 n2 n3"
    assert_equal "n1's /tmp/$probe: $(seen lab_node n1 "/tmp/$probe")" "n1's /tmp/$probe: seen"
    jobid=$(lab_user sbatch --parsable -N1 -o smoke-%j.out smoke.sbatch 2>&1)
    assert_equal "$(lab_wait_job "$jobid" 60)" COMPLETED
    [[ $jobid =~ ^[0-9]+$ ]] && [ "$jobid" -gt "$last_job" ] || fail "job ids do not keep increasing across restarts ($last_job -> $jobid)"
    no_drain
}

@test "teardown with a slurmstepd whose slurmd was SIGKILLed; the srun client ends; decoys survive" {
    local srun_pid out sig0 allowed
    # (slurmstepd ignores SIGTERM and outlives slurmd; lab_stop must find it by
    # its namespace. srun, not sbatch: allocation is immediate; the srun client
    # left running must be ended by lab_stop as well)
    lab_user srun -Q -N1 -w n3 sleep 600 </dev/null >/dev/null 2>&1 &
    srun_pid=$!
    disown "$srun_pid"
    poll 30 lab_has_user_sleep || fail "the long job never ran on n3"
    remember_node_ns
    lab_kill_slurmd n3
    out=$(lab_procs | awk '$3 == "n3" {print $4}' | sort -u | paste -sd' ')
    [[ $out == *slurmstepd* ]] || fail "n3's slurmstepd did not outlive its slurmd: $out"
    lab_node n3 test -d /tmp || fail "lab_node n3 does not work without slurmd"
    sig0=$(signal_log_lines)
    allowed=$(independent_lab_pids; descendants "$srun_pid") # + the srun client
    lab_stop
    ! _lab_alive "$srun_pid" || fail "the job's srun client $srun_pid is still there"
    audit_signals "$sig0" "$allowed"
    check_no_lab_procs
    out=$(decoys_alive) || fail "decoy processes did not survive every lab_stop: $out"
}
