#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Smoke test of the integration-test harness (lib/cluster.sh, ../lib/tap.sh):
# starts a real 3-node Slurm cluster on this machine with an empty plugstack
# and checks that it behaves like one: srun/sbatch/salloc as the unprivileged
# user, one private /tmp and /var/tmp per node, restart cycles, and a teardown
# that stops exactly the lab's processes (decoy processes that merely look
# like Slurm must survive).  Must run as root.  Prints TAP-like lines and
# ends with "N passed, M failed"; exit status non-zero on any failure.
# shellcheck source-path=SCRIPTDIR
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/tap.sh
. "$HERE/../lib/tap.sh"
# shellcheck source=lib/cluster.sh
. "$HERE/lib/cluster.sh"

T0=$EPOCHREALTIME
elapsed() { # elapsed SINCE -> seconds with 2 decimals
    local since_us=${1/[.,]/} now_us=${EPOCHREALTIME/[.,]/}
    printf '%d.%02d' $(((now_us - since_us) / 1000000)) $(((now_us - since_us) % 1000000 / 10000))
}

if [ "$(id -u)" -ne 0 ]; then
    echo "test_harness.sh: must be run as root (it starts Slurm daemons in mount namespaces)" >&2
    t_fail "running as root" "uid is $(id -u), not 0"
    t_summary
    exit 1
fi

if [ "$LAB_NNODES" != 3 ]; then
    t_fail "3-node lab" "this test needs EXTC_LAB_NNODES=3 (is $LAB_NNODES)"
    t_summary
    exit 1
fi

# ---------------------------------------------------------------------------
# Decoys: processes that look like lab processes but are not; teardown must
# leave every one of them alive.
DECOY_DIR=
DECOY_PIDS=()
start_decoys() {
    DECOY_DIR=$(mktemp -d /var/tmp/extc-decoy.XXXXXX) || return 1
    cp /bin/sleep "$DECOY_DIR/slurmstepd" && cp /bin/sleep "$DECOY_DIR/slurmd" &&
        cp /bin/sleep "$DECOY_DIR/srun" && cp /bin/sleep "$DECOY_DIR/munged" || return 1
    chmod 0755 "$DECOY_DIR"
    mkdir -p "$DECOY_DIR/nodes/n1/tmp"
    # comm "slurmstepd"/"slurmd"/"munged" in the host namespace, as root
    "$DECOY_DIR/slurmstepd" 900 </dev/null >/dev/null 2>&1 &
    DECOY_PIDS+=($!)
    "$DECOY_DIR/slurmd" 900 </dev/null >/dev/null 2>&1 &
    DECOY_PIDS+=($!)
    "$DECOY_DIR/munged" 900 </dev/null >/dev/null 2>&1 &
    DECOY_PIDS+=($!)
    # an srun of another cluster
    env SLURM_CONF=/etc/slurm/slurm.conf "$DECOY_DIR/srun" 900 </dev/null >/dev/null 2>&1 &
    DECOY_PIDS+=($!)
    # a process of the test user outside the cluster
    setpriv --reuid="$LAB_USER" --regid="$(id -g "$LAB_USER")" --init-groups sleep 900 \
        </dev/null >/dev/null 2>&1 &
    DECOY_PIDS+=($!)
    # a "slurmstepd" in a private mount namespace with a node-like /tmp
    # shellcheck disable=SC2016  # expanded by the inner shell
    unshare -m --propagation private -- bash -c \
        'mount --bind "$1/nodes/n1/tmp" /tmp && exec "$1/slurmstepd" 900' decoy "$DECOY_DIR" \
        </dev/null >/dev/null 2>&1 &
    DECOY_PIDS+=($!)
    local p
    for p in "${DECOY_PIDS[@]}"; do disown "$p" 2>/dev/null; done
    # the teardown must meet each decoy as what it looks like: wait until
    # unshare, setpriv, env and the forking shells have exec'd it
    local deadline
    deadline=$(_lab_deadline 10)
    until decoys_execd; do
        _lab_past "$deadline" && { echo "decoys not started in 10 s"; return 1; }
        sleep 0.05
    done
    return 0
}
# decoys_execd: every decoy runs its final program (the comm the teardown sees)
decoys_execd() {
    local p comm
    for p in "${DECOY_PIDS[@]}"; do
        comm=$(cat "/proc/$p/comm" 2>/dev/null) || return 1
        case $comm in
            slurmstepd | slurmd | munged | srun | sleep) ;;
            *) return 1 ;;
        esac
    done
}
decoys_alive() {
    local p dead=''
    for p in "${DECOY_PIDS[@]}"; do
        _lab_alive "$p" || dead="$dead $p"
    done
    [ -z "$dead" ] && return 0
    echo "dead decoys:$dead"
    return 1
}
stop_decoys() {
    local p
    for p in "${DECOY_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    DECOY_PIDS=()
    [ -n "$DECOY_DIR" ] && rm -rf --one-file-system -- "$DECOY_DIR"
    DECOY_DIR=
}

cleanup() {
    lab_stop >/dev/null 2>&1
    stop_decoys
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------
# Independent view of the lab's processes (not using the library's namespace
# recognition): the recorded daemon pids, and everything in the mount
# namespaces of the recorded slurmds.
LAB_NS=() # mount namespaces of lab nodes seen so far ("mnt:[N]")
remember_node_ns() {
    local f p ns live=" " keep=()
    # forget namespaces that have died (their inode numbers get reused)
    for f in /proc/[0-9]*/ns/mnt; do
        live="$live$(readlink "$f" 2>/dev/null) "
    done
    for ns in ${LAB_NS[@]+"${LAB_NS[@]}"}; do
        [[ $live == *" $ns "* ]] && keep+=("$ns")
    done
    LAB_NS=(${keep[@]+"${keep[@]}"})
    for f in "$LAB"/run/lab-slurmd-*.pid; do
        p=$(cat "$f" 2>/dev/null) || continue
        ns=$(readlink "/proc/$p/ns/mnt" 2>/dev/null) || continue
        [[ " ${LAB_NS[*]-} " == *" $ns "* ]] || LAB_NS+=("$ns")
    done
}
independent_lab_pids() {
    local f p ns
    for f in "$LAB"/run/lab-*.pid; do
        p=$(cat "$f" 2>/dev/null) && _lab_alive "$p" && echo "$p"
    done
    # (namespace inode numbers are reused once a namespace dies, e.g. by
    # another lab on this machine: so also check what is mounted on /tmp)
    for f in /proc/[0-9]*/ns/mnt; do
        ns=$(readlink "$f" 2>/dev/null) || continue
        p=${f#/proc/}
        p=${p%%/*}
        [[ " ${LAB_NS[*]-} " == *" $ns "* ]] && _lab_alive "$p" &&
            [[ $(findmnt -n -N "$p" -o SOURCE /tmp 2>/dev/null) == *"[$LAB/nodes/"* ]] && echo "$p"
    done | sort -u
}
descendants() { # PID and all its descendants
    local c
    echo "$1"
    for c in $(pgrep -P "$1"); do descendants "$c"; done
}
signal_log_lines() { wc -l <"$LAB/log/lab-signals.log" 2>/dev/null || echo 0; }
# audit_signals NAME FROM_LINE ALLOWED_PIDS: every signal logged after line
# FROM_LINE went to one of ALLOWED_PIDS.
audit_signals() {
    local name=$1 from=$2 allowed bad='' _t _sig pid rest n=0
    allowed=" $(echo "$3" | tr '\n' ' ') "
    while read -r _t _sig pid rest; do
        [ -n "${pid:-}" ] || continue
        n=$((n + 1))
        [[ $allowed == *" $pid "* ]] || bad="$bad"$'\n'"$_t $_sig $pid $rest"
    done < <(tail -n +"$((from + 1))" "$LAB/log/lab-signals.log" 2>/dev/null)
    if [ -z "$bad" ]; then
        t_pass "$name ($n signals, all to lab processes)"
    else
        t_fail "$name" "signal sent to a process not known as the lab's:$bad"
    fi
}
# no lab process left: pgrep, ignoring zombies (orphans are reaped by init a
# moment later) and our decoys
check_no_lab_procs() {
    local name=$1 p st left='' decoys=" ${DECOY_PIDS[*]-} "
    for p in $(pgrep -f -- "$LAB"); do
        [[ $decoys == *" $p "* ]] && continue
        st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) || continue
        [ "$st" == Z ] && continue
        left="$left"$'\n'"$(ps -o pid=,stat=,args= -p "$p")"
    done
    for p in $(independent_lab_pids); do
        left="$left"$'\n'"(in a lab namespace) $(ps -o pid=,stat=,args= -p "$p")"
    done
    if [ -z "$left" ]; then
        t_pass "$name"
    else
        t_fail "$name" "lab processes still running:$left"
    fi
}

# ---------------------------------------------------------------------------
t_note "lab: $LAB, user: $LAB_USER, ports: $LAB_CTLD_PORT, $LAB_SLURMD_PORT.."
if ! lab_setup; then
    t_fail "lab_setup" "see messages above"
    t_summary
    exit 1
fi
t_pass "lab_setup"
t_check "plugstack.conf is empty" test ! -s "$LAB_PLUGSTACK"
start_decoys || t_fail "decoys started" "cannot start decoy processes"

t=$EPOCHREALTIME
if ! lab_start; then
    t_fail "lab_start" "cluster did not come up (see logs above)"
    t_summary
    exit 1
fi
t_pass "lab_start ($(elapsed "$t") s)"
remember_node_ns

# --- srun on all nodes --------------------------------------------------------
out=$(lab_user srun -Q -N3 printenv SLURMD_NODENAME 2>&1)
t_eq "srun -N3 printenv SLURMD_NODENAME" "n1 n2 n3" "$(sort <<<"$out" | paste -sd' ')"

# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
out=$(lab_user srun -Q -N1 bash -c 'echo "$(id -un) $(id -u) $HOME"' 2>&1)
t_eq "job runs as $LAB_USER" "$LAB_USER $(id -u "$LAB_USER") $(_lab_user_home)" "$out"

# --- lab_user's environment ----------------------------------------------------
# shellcheck disable=SC2016  # expanded by the job's or inner shell, not here
out=$(LEAKY_VAR=1 lab_user bash -c 'echo "${LEAKY_VAR-unset} $SLURM_CONF $PWD"' 2>&1)
t_eq "lab_user env is clean, SLURM_CONF set, cwd work dir" "unset $LAB_CONF $LAB/work" "$out"
out=$(SLURM_EXT_CACHE=probe-value LAB_PASS_ENV="SLURM_EXT_CACHE" \
    lab_user srun -Q -N1 printenv SLURM_EXT_CACHE 2>&1)
t_eq "LAB_PASS_ENV reaches the job" "probe-value" "$out"
lab_user bash -c 'exit 7'
t_eq "lab_user returns the command's rc" 7 "$?"
out=$(lab_user bash -c 'echo "srun: job 12 queued and waiting for resources" >&2
    echo "srun: job 12 has been allocated resources" >&2
    echo "srun: error: kept" >&2; echo "ext-cache: kept too" >&2; echo out; exit 3' 2>&1)
t_eq "lab_user keeps the rc when it drops srun's queueing notices" 3 "$?"
t_eq "lab_user drops exactly srun's two queueing notices" \
    "ext-cache: kept too|out|srun: error: kept" "$(sort <<<"$out" | paste -sd'|')"

# --- plugstack / plugin files ---------------------------------------------------
lab_set_plugstack "optional /nonexistent/a.so" "optional /nonexistent/b.so x=1"
t_eq "lab_set_plugstack writes one line per argument" \
    "optional /nonexistent/a.so|optional /nonexistent/b.so x=1" "$(paste -sd'|' "$LAB_PLUGSTACK")"
lab_set_plugstack
t_check "lab_set_plugstack with no argument empties it" test ! -s "$LAB_PLUGSTACK"
lab_install_plugin /bin/true copy-probe.so
t_check "lab_install_plugin copies into \$LAB/lib" cmp -s /bin/true "$LAB/lib/copy-probe.so"
rm -f "$LAB/lib/copy-probe.so"

# --- node-local /tmp and /var/tmp --------------------------------------------
# seen RUNNER... PATH: run `test -e PATH` through RUNNER (lab_node nX, lab_user
# srun ...) and print seen/unseen, so that a failing runner cannot pass for
# "file not there".
seen() {
    local path=${*: -1}
    # shellcheck disable=SC2016  # expanded by the inner shell
    "${@:1:$#-1}" sh -c 'if test -e "$1"; then echo seen; else echo unseen; fi' sh "$path" 2>&1
}
probe=lab-probe-$$-$RANDOM
out=$(lab_user srun -Q -N1 -w n1 bash -c "echo hello >/tmp/$probe && echo hello >/var/tmp/$probe && echo ok" 2>&1)
t_eq "job on n1 writes /tmp and /var/tmp" "ok" "$out"
for d in /tmp /var/tmp; do
    t_eq "n1's namespace sees $d/$probe" seen "$(seen lab_node n1 "$d/$probe")"
    for n in n2 n3; do
        t_eq "$n's namespace does not see n1's $d/$probe" unseen "$(seen lab_node "$n" "$d/$probe")"
    done
    t_check "host does not see n1's $d/$probe" test ! -e "$d/$probe"
done
t_eq "n1's /tmp file is in its lab dir, owned by $LAB_USER" "$LAB_USER hello" \
    "$(stat -c %U "$LAB/nodes/n1/tmp/$probe" 2>&1) $(cat "$LAB/nodes/n1/vartmp/$probe" 2>&1)"
t_eq "job on n2 does not see n1's /tmp file" unseen "$(seen lab_user srun -Q -N1 -w n2 "/tmp/$probe")"
out=$(lab_node n2 findmnt -n -o SOURCE /tmp 2>&1)
t_contains "n2's /tmp is its node dir" "/nodes/n2/tmp" "$out"

# --- sbatch ---------------------------------------------------------------------
cat >"$LAB/work/smoke.sbatch" <<'EOF'
#!/bin/bash
echo "batch-user=$(id -un)"
echo "batch-nodes=$(srun printenv SLURMD_NODENAME | sort | paste -sd' ')"
EOF
chmod 0755 "$LAB/work/smoke.sbatch"
t=$EPOCHREALTIME
jobid=$(lab_user sbatch --parsable -N2 -o smoke-%j.out smoke.sbatch 2>&1)
if [[ $jobid =~ ^[0-9]+$ ]]; then
    t_pass "sbatch submits (job $jobid)"
    state=$(lab_wait_job "$jobid" 60)
    t_eq "sbatch job completes ($(elapsed "$t") s)" COMPLETED "$state"
    out=$(cat "$LAB/work/smoke-$jobid.out" 2>&1)
    t_contains "batch script ran as $LAB_USER" "batch-user=$LAB_USER" "$out"
    [[ $out =~ batch-nodes=n[1-3]\ n[1-3] ]]
    t_eq "srun inside the batch job ran on 2 nodes" 0 "$?"
else
    t_fail "sbatch submits" "$jobid"
fi

# --- salloc ---------------------------------------------------------------------
out=$(lab_user salloc -Q -N2 srun -Q hostname 2>/dev/null)
t_eq "salloc -N2 srun hostname" "$(uname -n) $(uname -n)" "$(paste -sd' ' <<<"$out")"

lab_assert_no_drain "no node drained"

# --- restart one slurmd -----------------------------------------------------------
t=$EPOCHREALTIME
pid_before=$(_lab_slurmd_pid n2)
lab_restart_slurmd n2
t_eq "lab_restart_slurmd n2 ($(elapsed "$t") s)" 0 "$?"
remember_node_ns
pid_after=$(_lab_slurmd_pid n2)
[ -n "$pid_after" ] && [ "$pid_after" != "$pid_before" ] && ! _lab_alive "$pid_before"
t_eq "n2 has a new slurmd ($pid_before -> $pid_after)" 0 "$?"
out=$(lab_node n2 findmnt -n -o SOURCE /tmp 2>&1)
t_contains "restarted n2 has its node-local /tmp" "/nodes/n2/tmp" "$out"
t_eq "restarted n2 still does not see n1's /tmp file" unseen "$(seen lab_node n2 "/tmp/$probe")"
out=$(lab_user srun -Q -N1 -w n2 printenv SLURMD_NODENAME 2>&1)
t_eq "job on restarted n2" "n2" "$out"

# --- full restart cycle ---------------------------------------------------------------
t=$EPOCHREALTIME
sig0=$(signal_log_lines)
allowed=$(independent_lab_pids)
lab_stop
t_eq "lab_stop rc ($(elapsed "$t") s)" 0 "$?"
audit_signals "lab_stop signals only lab processes" "$sig0" "$allowed"
check_no_lab_procs "no lab process after lab_stop"
last_job=$jobid

t=$EPOCHREALTIME
if lab_start; then
    t_pass "lab_start again ($(elapsed "$t") s)"
else
    t_fail "lab_start again" "cluster did not come up (see logs above)"
fi
remember_node_ns
out=$(lab_user srun -Q -N3 printenv SLURMD_NODENAME 2>&1)
t_eq "srun -N3 after restart" "n1 n2 n3" "$(sort <<<"$out" | paste -sd' ')"
t_eq "n1's /tmp survives lab_stop/lab_start" seen "$(seen lab_node n1 "/tmp/$probe")"
jobid=$(lab_user sbatch --parsable -N1 -o smoke-%j.out smoke.sbatch 2>&1)
state=$(lab_wait_job "$jobid" 60)
t_eq "sbatch after restart completes" COMPLETED "$state"
[[ $jobid =~ ^[0-9]+$ && $last_job =~ ^[0-9]+$ ]] && [ "$jobid" -gt "$last_job" ]
t_eq "job ids keep increasing across restarts ($last_job -> $jobid)" 0 "$?"
lab_assert_no_drain "no node drained after restart"

# --- teardown with a stepd whose slurmd was SIGKILLed ------------------------------
# (slurmstepd ignores SIGTERM and outlives slurmd; lab_stop must find it by
# its namespace.)
# (srun, not sbatch: allocation is immediate; the srun client left running
# must be ended by lab_stop as well)
lab_user srun -Q -N1 -w n3 sleep 600 </dev/null >/dev/null 2>&1 &
srun_pid=$!
disown "$srun_pid"
deadline=$(_lab_deadline 30)
until lab_node n3 pgrep -u "$LAB_USER" -x sleep >/dev/null || _lab_past "$deadline"; do sleep 0.05; done
lab_node n3 pgrep -u "$LAB_USER" -x sleep >/dev/null
t_eq "long job running on n3" 0 "$?"
remember_node_ns
lab_kill_slurmd n3
t_eq "lab_kill_slurmd n3" 0 "$?"
out=$(lab_procs | awk '$3 == "n3" {print $4}' | sort -u | paste -sd' ')
t_contains "n3's slurmstepd outlives its slurmd" "slurmstepd" "$out"
t_check "lab_node n3 works without slurmd" lab_node n3 test -d /tmp

t=$EPOCHREALTIME
sig0=$(signal_log_lines)
allowed=$(independent_lab_pids; descendants "$srun_pid") # + the srun client
lab_stop
t_eq "final lab_stop rc ($(elapsed "$t") s)" 0 "$?"
_lab_alive "$srun_pid"
t_eq "the job's srun client has ended" 1 "$?"
audit_signals "final lab_stop signals only lab processes" "$sig0" "$allowed"
check_no_lab_procs "no lab process after final lab_stop"
out=$(decoys_alive)
t_eq "decoy processes survived every lab_stop" "" "$out"

t_note "total $(elapsed "$T0") s"
t_summary
