# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lab: a throwaway multi-node Slurm cluster on this one machine, for the
# integration tests of spank-ext-cache.  Source this file (bash >= 4.4), then:
#
#   lab_setup                    wipe and recreate $LAB, test user, munge key, configs
#   lab_install_plugin SO [NAME] copy a plugin into $LAB/lib (default name ext_cache.so)
#   lab_set_plugstack [LINE...]  write $LAB/etc/plugstack.conf (no args: empty file)
#   lab_start / lab_stop         start / stop munged, slurmctld and one slurmd per node
#   lab_user CMD...              run CMD as $LAB_USER (cwd $LAB/work, SLURM_CONF set)
#   lab_node nX CMD...           run CMD as root inside node nX's mount namespace
#   lab_wait_settled [TIMEOUT]   lab_wait_idle, and the plugin's detached work done
#   ... see the function headers below for the rest.
#
# Each node's slurmd runs in its own mount namespace in which $LAB/nodes/nX/tmp
# and $LAB/nodes/nX/vartmp are bind-mounted over /tmp and /var/tmp, so each
# node has a private node-local /tmp and /var/tmp.  Everything the cluster needs
# therefore lives in $LAB, which must not be under /tmp or /var/tmp.
#
# Requirements: root; Debian packages slurmctld slurmd slurm-client munge (the
# caller installs them, this file never runs apt-get); util-linux (unshare,
# nsenter, setpriv, flock, mount), procps, coreutils.  Safe under `set -u`
# (also works under `set -euo pipefail`).  Functions return non-zero on
# failure rather than exiting, with a "lab: ..." message on stderr.
#
# One shell at a time per lab: the first lab_* call takes an exclusive lock
# ($LAB.lock, held until the shell exits); another shell's lab_setup/lab_start
# waits for it, and its lab_stop refuses to touch a lab it does not hold.  To
# run two labs side by side use a different EXTC_LAB *and* different ports.
#
# Pids: $LAB/run/lab-{munged,slurmctld,slurmd-nX}.pid; every signal the lab
# sends is logged in $LAB/log/lab-signals.log.  Logs: $LAB/log/ (*.log from
# the daemons, *.out their stdout/stderr).  The first sbatch job after
# lab_start starts about 3 s after slurmctld did (its first scheduling pass);
# later ones within about 1 s.  srun/salloc allocations are immediate.
#
# Knobs (read when this file is sourced):
#   EXTC_LAB               lab directory            (default /var/lib/ext-cache-lab)
#   EXTC_LAB_USER          unprivileged test user   (default extcuser)
#   EXTC_LAB_NNODES        number of nodes n1..nN   (default 3)
#   EXTC_LAB_CTLD_PORT     slurmctld port           (default 16817)
#   EXTC_LAB_SLURMD_PORT   first slurmd port, node i gets +i-1 (default 16818)
#   EXTC_LAB_START_TIMEOUT seconds lab_start waits for idle nodes (default 30)
#   EXTC_LAB_LOCK_WAIT     seconds to wait for another shell's lab to finish (default 600)
# Read at call time:
#   LAB_SLURM_CONF_EXTRA   raw lines appended to slurm.conf by lab_start
#                          (later lines override earlier ones in slurm.conf)
#   LAB_PASS_ENV           names of variables lab_user passes to the user's command
#   LAB_DAEMON_PASS_ENV    names of variables passed to munged/slurmctld/slurmd
#                          (daemons otherwise get only PATH)
#   LAB_KEEP_STATE=1       lab_start keeps slurmctld state and slurmd spool
#                          (default: wiped on every start, so each start is a
#                          fresh cluster; job ids keep increasing across starts)
#   EXTC_LAB_CGROUP=1      the cluster runs as sites run it: proctrack/cgroup and
#                          task/cgroup, with the cgroup.conf _lab_write_cgroup_conf
#                          writes (default 0: proctrack/linuxproc, task/none, no
#                          cgroup is ever made).  Slurm names its cgroups
#                          slurm_nX per node (Debian builds it for several
#                          slurmd per host), so several nodes work, but two
#                          cgroup labs on one host would share those names:
#                          lab_start refuses while another one has processes
#                          in them, and lab_stop removes the empty ones.

LAB=${EXTC_LAB:-/var/lib/ext-cache-lab}
LAB_USER=${EXTC_LAB_USER:-extcuser}
LAB_NNODES=${EXTC_LAB_NNODES:-3}
LAB_CTLD_PORT=${EXTC_LAB_CTLD_PORT:-16817}
LAB_SLURMD_PORT=${EXTC_LAB_SLURMD_PORT:-16818}
LAB_START_TIMEOUT=${EXTC_LAB_START_TIMEOUT:-30}
LAB_LOCK_WAIT=${EXTC_LAB_LOCK_WAIT:-600}
LAB_SLURM_CONF_EXTRA=${LAB_SLURM_CONF_EXTRA:-}
LAB_PASS_ENV=${LAB_PASS_ENV:-}
LAB_DAEMON_PASS_ENV=${LAB_DAEMON_PASS_ENV:-}
LAB_KEEP_STATE=${LAB_KEEP_STATE:-0}
LAB_CONF=$LAB/etc/slurm.conf
LAB_PLUGSTACK=$LAB/etc/plugstack.conf
LAB_PLUGIN=$LAB/lib/ext_cache.so
LAB_USER_PATH=/usr/local/bin:/usr/bin:/bin
_LAB_DAEMON_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
_LAB_LOCK_FD=${_LAB_LOCK_FD:-}

# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------

# lab_setup: stop any cluster of this lab, wipe $LAB and recreate it: dirs,
# test user, munge key, slurm.conf, empty plugstack.conf.
lab_setup() {
    _lab_vars
    _lab_require_root lab_setup || return 1
    _lab_check_path || return 1
    _lab_lock || return 1
    lab_stop || { _lab_err "lab_setup: could not stop the previous cluster"; return 1; }
    if [ -e "$LAB" ]; then
        rm -rf --one-file-system -- "$LAB" || { _lab_err "lab_setup: cannot wipe $LAB"; return 1; }
    fi
    _lab_mkdirs || return 1
    if ! id -u "$LAB_USER" >/dev/null 2>&1; then
        useradd -m -d "/home/$LAB_USER" -s /bin/bash "$LAB_USER" ||
            { _lab_err "lab_setup: useradd $LAB_USER failed"; return 1; }
    fi
    local home
    home=$(_lab_user_home) || return 1
    if [ ! -d "$home" ]; then
        mkdir -p "$home" && chown "$LAB_USER:" "$home" && chmod 0755 "$home" || return 1
    fi
    (umask 077 && head -c 1024 /dev/urandom >"$LAB/munge/munge.key") ||
        { _lab_err "lab_setup: cannot write munge key"; return 1; }
    chmod 0400 "$LAB/munge/munge.key"
    lab_set_plugstack "" || return 1
    _lab_write_conf || return 1
    return 0
}

# lab_install_plugin SRC [NAME]: copy a plugin .so to $LAB/lib/NAME
# (default ext_cache.so, i.e. $LAB_PLUGIN).  Nothing inside the cluster may
# refer to the repo (it may be under /tmp, which every node hides).
lab_install_plugin() {
    _lab_vars
    local src=${1:-} name=${2:-ext_cache.so}
    if [ -z "$src" ] || [ ! -f "$src" ]; then
        _lab_err "lab_install_plugin: no such file: ${src:-(none)}"
        return 1
    fi
    [ -d "$LAB/lib" ] || { _lab_err "lab_install_plugin: run lab_setup first"; return 1; }
    case $name in */* | '') _lab_err "lab_install_plugin: bad name: $name"; return 1 ;; esac
    # copy then rename, so a step starting meanwhile never dlopen()s half a file
    cp -- "$src" "$LAB/lib/.$name.new" && chmod 0755 "$LAB/lib/.$name.new" &&
        mv -f -- "$LAB/lib/.$name.new" "$LAB/lib/$name"
}

# lab_set_plugstack [LINE...]: write $LAB/etc/plugstack.conf, one argument per
# line (arguments may themselves contain newlines); no argument or only empty
# ones gives an empty file.  Written atomically.  Remember: slurmd runs the
# spank job_prolog/job_epilog only if such a plugin was listed when it
# started (lab_restart_slurmd or lab_stop+lab_start after changing this).
lab_set_plugstack() {
    _lab_vars
    [ -d "$LAB/etc" ] || { _lab_err "lab_set_plugstack: run lab_setup first"; return 1; }
    local line tmp=$LAB/etc/.plugstack.conf.new
    : >"$tmp" || return 1
    for line in "$@"; do
        [ -n "$line" ] && printf '%s\n' "$line" >>"$tmp"
    done
    chmod 0644 "$tmp" && mv -f -- "$tmp" "$LAB_PLUGSTACK"
}

# lab_start: start munged, slurmctld and one slurmd per node (each in its own
# mount namespace), wait until every node is idle.  Stops a running cluster of
# this lab first.  On failure prints the logs' tails, stops everything, returns 1.
lab_start() {
    _lab_vars
    _lab_require_root lab_start || return 1
    _lab_check_path || return 1
    if [ ! -f "$LAB/munge/munge.key" ] || [ ! -d "$LAB/etc" ]; then
        _lab_err "lab_start: $LAB is not set up; call lab_setup first"
        return 1
    fi
    _lab_check_tools || return 1
    _lab_lock || return 1
    lab_stop || { _lab_err "lab_start: could not stop the previous cluster"; return 1; }

    local n port
    for port in "$LAB_CTLD_PORT" $(_lab_node_ports); do
        if _lab_listening "$port"; then
            _lab_err "lab_start: TCP port $port is already in use (another cluster?);" \
                "set EXTC_LAB_CTLD_PORT / EXTC_LAB_SLURMD_PORT"
            return 1
        fi
    done

    if _lab_cgroup && [ -n "$(_lab_cgroup_busy)" ]; then
        _lab_err "lab_start: another cgroup lab runs nodes of the same names; its cgroups:" \
            "$(_lab_cgroup_busy | tr '\n' ' ')"
        return 1
    fi
    if [ "$LAB_KEEP_STATE" != 1 ]; then
        rm -rf --one-file-system -- "$LAB/state" "$LAB/spool" || return 1
    fi
    _lab_mkdirs || return 1
    [ -f "$LAB_PLUGSTACK" ] || lab_set_plugstack "" || return 1
    _lab_write_conf || return 1

    local stamp f
    stamp="==== lab_start $(date '+%F %T') ===="
    for f in munged.log slurmctld.log $(for n in $(_lab_nodes); do echo "slurmd-$n.log"; done); do
        echo "$stamp" >>"$LAB/log/$f"
    done

    # munged
    rm -f -- "$LAB/munge/munge.sock" "$LAB/munge/munge.sock.lock"
    _lab_spawn "$LAB/run/lab-munged.pid" "$LAB/log/munged.out" \
        munged -F --key-file="$LAB/munge/munge.key" --socket="$LAB/munge/munge.sock" \
        --pid-file="$LAB/run/munged.pid" --seed-file="$LAB/munge/munge.seed" \
        --log-file="$LAB/log/munged.log" || { _lab_start_fail "cannot spawn munged"; return 1; }
    local pid deadline
    pid=$(cat "$LAB/run/lab-munged.pid")
    deadline=$(_lab_deadline 10)
    until munge -n -S "$LAB/munge/munge.sock" >/dev/null 2>&1; do
        _lab_alive "$pid" || { _lab_start_fail "munged exited"; return 1; }
        _lab_past "$deadline" && { _lab_start_fail "munged not answering after 10 s"; return 1; }
        sleep 0.02
    done

    # slurmctld
    _lab_spawn "$LAB/run/lab-slurmctld.pid" "$LAB/log/slurmctld.out" \
        slurmctld -D -f "$LAB_CONF" || { _lab_start_fail "cannot spawn slurmctld"; return 1; }
    pid=$(cat "$LAB/run/lab-slurmctld.pid")
    deadline=$(_lab_deadline 15)
    until _lab_listening "$LAB_CTLD_PORT"; do
        _lab_alive "$pid" || { _lab_start_fail "slurmctld exited"; return 1; }
        _lab_past "$deadline" && { _lab_start_fail "slurmctld not listening after 15 s"; return 1; }
        sleep 0.02
    done

    # one slurmd per node, each in a fresh mount namespace
    for n in $(_lab_nodes); do
        _lab_spawn_slurmd "$n" || { _lab_start_fail "cannot spawn slurmd $n"; return 1; }
    done

    deadline=$(_lab_deadline "$LAB_START_TIMEOUT")
    local want got states
    want=$(_lab_nodes | sed 's/$/ idle/' | sort -u)
    while :; do
        for n in $(_lab_nodes); do
            pid=$(cat "$LAB/run/lab-slurmd-$n.pid" 2>/dev/null)
            _lab_alive "$pid" || { _lab_start_fail "slurmd $n exited"; return 1; }
        done
        _lab_alive "$(cat "$LAB/run/lab-slurmctld.pid")" || { _lab_start_fail "slurmctld exited"; return 1; }
        states=$(_lab_sl sinfo -h -N -o '%N %T' 2>/dev/null)
        got=$(sort -u <<<"$states")
        [ "$got" == "$want" ] && break
        if _lab_past "$deadline"; then
            _lab_start_fail "nodes not idle after ${LAB_START_TIMEOUT}s; sinfo: $(tr '\n' ' ' <<<"$states")"
            return 1
        fi
        sleep 0.1
    done
    return 0
}

# lab_stop: cancel all jobs (bounded wait so epilogs can run), then stop
# exactly this lab's processes: slurmds, slurmctld, anything left inside the
# nodes' mount namespaces (slurmstepd ignores SIGTERM: SIGKILL), leftover
# srun/salloc/sbatch clients of this lab, munged.  Idempotent; for EXIT traps.
# Refuses (rc 1) if another shell holds this lab.
lab_stop() {
    _lab_vars
    [ "$(id -u)" -eq 0 ] || { _lab_err "lab_stop: must be root"; return 1; }
    _lab_lock nowait || return 1
    local procs ctld
    procs=$(_lab_procs)
    if [ -z "$procs" ]; then
        _lab_rm_pidfiles
        ! _lab_cgroup || _lab_cgroup_clean
        return
    fi

    ctld=$(awk '$2 == "slurmctld" && !f {print $1; f = 1}' <<<"$procs")
    if [ -n "$ctld" ] && _lab_listening "$LAB_CTLD_PORT"; then
        local next jobs deadline
        next=$(_lab_sl scontrol show config 2>/dev/null | awk '$1 == "NEXT_JOB_ID" {print $3}')
        [[ $next =~ ^[0-9]+$ ]] && echo "$next" >"$LAB/run/next_job_id" 2>/dev/null
        jobs=$(_lab_sl squeue -h -o '%A' 2>/dev/null)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086  # a list of job ids, split into words on purpose
            _lab_sl scancel $jobs >/dev/null 2>&1
            # wait (bounded) for the jobs to end and their epilogs to run;
            # jobs on a node whose slurmd is gone can never finish: skip them
            local dead='' n
            for n in $(_lab_nodes); do
                awk -v n="$n" '$2 == "slurmd" && $3 == n {f=1} END {exit !f}' <<<"$procs" ||
                    dead="$dead $n"
            done
            deadline=$(_lab_deadline 10)
            while [ -n "$(_lab_jobs_on_live_nodes "$dead")" ] && ! _lab_past "$deadline"; do
                sleep 0.1
            done
        fi
    fi

    # 1. the Slurm daemons, gracefully
    _lab_stop_kinds 'slurmd|slurmctld' 5 || true
    # 2. whatever is still inside the nodes' namespaces (stepds, tasks,
    #    prolog/epilog, lab_node commands) and leftover lab clients
    _lab_stop_kinds 'ns|slurmd|slurmctld|client' 0 || true
    # 3. munged last
    _lab_stop_kinds 'munged' 3 || true

    procs=$(_lab_procs)
    if [ -n "$procs" ]; then
        _lab_err "lab_stop: processes survived:"$'\n'"$procs"
        return 1
    fi
    _lab_rm_pidfiles
    ! _lab_cgroup || _lab_cgroup_clean
}

# lab_restart_slurmd nX: stop node nX's slurmd (SIGTERM, then SIGKILL after
# 10 s) and start it again in a fresh mount namespace with the same node dirs.
# Steps still running keep their old namespace (same backing dirs).  Waits
# until the new slurmd has started and registered.
lab_restart_slurmd() {
    _lab_vars
    local n=${1:-}
    _lab_is_node "$n" || { _lab_err "lab_restart_slurmd: no such node: ${n:-(none)}"; return 1; }
    _lab_lock || return 1
    _lab_stop_slurmd "$n" TERM || return 1
    _lab_start_slurmd_wait "$n"
}

# lab_kill_slurmd nX: SIGKILL node nX's slurmd (no restart).  Its steps keep
# running; lab_node nX still works while any of them lives.
lab_kill_slurmd() {
    _lab_vars
    local n=${1:-}
    _lab_is_node "$n" || { _lab_err "lab_kill_slurmd: no such node: ${n:-(none)}"; return 1; }
    _lab_lock || return 1
    _lab_stop_slurmd "$n" KILL
}

# lab_start_slurmd nX: start node nX's slurmd again after lab_kill_slurmd.
lab_start_slurmd() {
    _lab_vars
    local n=${1:-}
    _lab_is_node "$n" || { _lab_err "lab_start_slurmd: no such node: ${n:-(none)}"; return 1; }
    _lab_lock || return 1
    if [ -n "$(_lab_slurmd_pid "$n")" ]; then
        _lab_err "lab_start_slurmd: slurmd $n is running"
        return 1
    fi
    _lab_start_slurmd_wait "$n"
}

# lab_user CMD...: run CMD as $LAB_USER in $LAB/work with a clean environment
# (HOME USER LOGNAME SHELL PATH SLURM_CONF, plus the variables named in
# LAB_PASS_ENV that are set).  stdin/stdout/stderr pass through; returns CMD's rc.
lab_user() {
    _lab_vars
    [ "$#" -gt 0 ] || { _lab_err "lab_user: no command"; return 2; }
    local home gid v
    local -a envs=()
    home=$(_lab_user_home) || return 2
    gid=$(id -g "$LAB_USER") || return 2
    for v in $LAB_PASS_ENV; do
        [[ $v =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { _lab_err "lab_user: bad name in LAB_PASS_ENV: $v"; return 2; }
        [ -n "${!v+x}" ] && envs+=("$v=${!v}")
    done
    # On a loaded machine a job can wait for a node still running the previous
    # job's epilog, and srun/salloc then say so on stderr. Those two notices are
    # scheduling, not the command's output, and tests count output lines; drop
    # exactly them (every other line, errors included, passes through).
    (
        cd "$LAB/work" || exit 2
        _lab_drop_lock_fd
        exec env -i HOME="$home" USER="$LAB_USER" LOGNAME="$LAB_USER" SHELL=/bin/bash \
            PATH="$LAB_USER_PATH" SLURM_CONF="$LAB_CONF" ${envs[@]+"${envs[@]}"} \
            setpriv --reuid="$LAB_USER" --regid="$gid" --init-groups -- "$@" \
            2> >(grep --line-buffered -v -E \
                '^(srun|salloc): job [0-9]+ (queued and waiting for resources|has been allocated resources)$' >&2)
    )
}

# lab_root CMD...: run CMD as root on the host with SLURM_CONF set
# (e.g. lab_root scontrol show node n1).
lab_root() {
    _lab_vars
    SLURM_CONF=$LAB_CONF "$@"
}

# lab_node nX CMD...: run CMD as root inside node nX's mount namespace (cwd /),
# e.g. `lab_node n2 ls -la /tmp`.  Returns CMD's rc, or 125 (with a message)
# when node nX has no namespace (no process of it alive).
lab_node() {
    _lab_vars
    local n=${1:-} pid
    _lab_is_node "$n" || { _lab_err "lab_node: no such node: ${n:-(none)}"; return 125; }
    shift
    [ "$#" -gt 0 ] || { _lab_err "lab_node: no command"; return 125; }
    pid=$(_lab_slurmd_pid "$n")
    [ -n "$pid" ] || pid=$(_lab_procs | awk -v n="$n" '$3 == n && !f {print $1; f = 1}')
    if [ -z "$pid" ]; then
        _lab_err "lab_node: node $n has no live process, so no namespace"
        return 125
    fi
    # -r -w: entering a mount namespace resets root and cwd to the
    # namespace's own; a lab inside a chroot (tests/releases) needs the node's
    (cd / && _lab_drop_lock_fd && exec nsenter -t "$pid" -m -r -w -- "$@")
}

# lab_wait_idle [TIMEOUT=30]: wait until squeue is empty and no node is
# allocated/mixed/completing/draining (i.e. epilogs have finished).
lab_wait_idle() {
    _lab_vars
    local timeout=${1:-30} deadline jobs states rc
    deadline=$(_lab_deadline "$timeout")
    while :; do
        jobs=$(_lab_sl squeue -h -o '%A %T %N' 2>&1)
        rc=$?
        if [ "$rc" -eq 0 ] && [ -z "$jobs" ]; then
            states=$(_lab_sl sinfo -h -N -o '%N %T' 2>&1)
            rc=$?
            if [ "$rc" -eq 0 ] && ! grep -Eqi 'alloc|mix|comp|drng|draining|plnd|reboot' <<<"$states"; then
                return 0
            fi
        fi
        if _lab_past "$deadline"; then
            _lab_err "lab_wait_idle: not idle after ${timeout}s"$'\n'"squeue: $jobs"$'\n'"sinfo: ${states:-}"
            return 1
        fi
        sleep 0.1
    done
}

# lab_wait_settled [TIMEOUT=60]: lab_wait_idle, then wait until no node runs
# the plugin's detached work (processes named extc-finisher or extc-epilog in
# a node's mount namespace): a step's publish and move into the node pool, and
# the epilog's, may go on after the hook that started them has returned, so an
# idle cluster has not always finished them.  Within TIMEOUT in all.
lab_wait_settled() {
    _lab_vars
    local timeout=${1:-60} deadline left
    deadline=$(_lab_deadline "$timeout")
    lab_wait_idle "$timeout" || return 1
    while left=$(_lab_detached_work) && [ -n "$left" ]; do
        if _lab_past "$deadline"; then
            _lab_err "lab_wait_settled: detached work still running after ${timeout}s:"$'\n'"$left"
            return 1
        fi
        sleep 0.1
    done
}

# _lab_detached_work: "PID COMM" of each extc-finisher or extc-epilog in a
# mount namespace of this lab's nodes (not another lab's, beside it; a node
# whose slurmd is gone still counts: _lab_node_of_pid reads the mounts).
# One pgrep per name: procps-ng 4 refuses a pattern longer than a process
# name can be (15 characters) with -x, so 'extc-finisher|extc-epilog' would
# match nothing at all, and the wait would never wait.
_lab_detached_work() {
    local p
    _lab_identity
    for p in $(pgrep -x extc-finisher; pgrep -x extc-epilog); do
        _lab_node_of_pid "$p" >/dev/null && echo "$p $(cat "/proc/$p/comm" 2>/dev/null)"
    done
    return 0
}

# lab_drained_nodes: print the nodes that are drained/draining/down/failed
# (one per line, empty if none).  rc != 0 if the controller cannot be asked.
lab_drained_nodes() {
    _lab_vars
    local out
    out=$(_lab_sl sinfo -h -N -o '%N %T') || return 1
    awk 'tolower($2) ~ /drain|drng|down|fail|inval/ {print $1}' <<<"$out" | sort -u
}

# lab_resume NODE...: return drained/down nodes to service.
lab_resume() {
    _lab_vars
    local n
    for n in "$@"; do
        _lab_sl scontrol update nodename="$n" state=resume || return 1
    done
}

# lab_job_state JOBID: print the job's state (COMPLETED, RUNNING, ...; UNKNOWN
# if the controller no longer knows the job).
lab_job_state() {
    _lab_vars
    local out s
    out=$(_lab_sl scontrol -o show job "${1:-}" 2>/dev/null)
    s=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^JobState=/) {sub(/^JobState=/, "", $i); print $i; exit}}' <<<"$out")
    echo "${s:-UNKNOWN}"
}

# lab_wait_job JOBID [TIMEOUT=60]: poll until the job has ended; print its
# final state.  rc 0 if COMPLETED, 1 other final state, 2 timeout.
lab_wait_job() {
    _lab_vars
    local id=${1:-} timeout=${2:-60} deadline s
    deadline=$(_lab_deadline "$timeout")
    while :; do
        s=$(lab_job_state "$id")
        case $s in
            COMPLETED) echo "$s"; return 0 ;;
            PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | REQUEUED | RESIZING | SIGNALING | STAGE_OUT | \
                REQUEUE_HOLD | REQUEUE_FED | RESV_DEL_HOLD | STOPPED | SPECIAL_EXIT) ;;
            UNKNOWN) [ -n "$id" ] || { echo "$s"; return 1; } ;;
            *) echo "$s"; return 1 ;;
        esac
        if _lab_past "$deadline"; then
            echo "$s"
            return 2
        fi
        sleep 0.1
    done
}

# lab_procs: list this lab's live processes, one per line: "PID KIND NODE COMM"
# with KIND munged|slurmctld|slurmd|ns|client and NODE nX or "-".
lab_procs() {
    _lab_vars
    _lab_procs
}

# lab_log nX: path of node nX's slurmd log.  lab_ctld_log: slurmctld's.
lab_log() { _lab_vars; echo "$LAB/log/slurmd-${1:-n1}.log"; }
lab_ctld_log() { _lab_vars; echo "$LAB/log/slurmctld.log"; }

# lab_tail_logs [LINES=20]: print the tail of every daemon log (for diagnosis).
lab_tail_logs() {
    _lab_vars
    local lines=${1:-20} f
    for f in "$LAB"/log/*; do
        [ -s "$f" ] || continue
        echo "----- $f (last $lines lines) -----"
        tail -n "$lines" -- "$f"
    done
}

# lab_nodes: print the node names (n1 .. nN).
lab_nodes() { _lab_nodes; }

# ---------------------------------------------------------------------------
# Internal helpers
# ---------------------------------------------------------------------------

# shellcheck disable=SC2034  # LAB_PLUGIN/LAB_PLUGSTACK are for callers
_lab_vars() {
    LAB_CONF=$LAB/etc/slurm.conf
    LAB_PLUGSTACK=$LAB/etc/plugstack.conf
    LAB_PLUGIN=$LAB/lib/ext_cache.so
}

_lab_err() { printf 'lab: %s\n' "$*" >&2; }

_lab_require_root() {
    [ "$(id -u)" -eq 0 ] && return 0
    _lab_err "$1: must be run as root"
    return 1
}

_lab_check_path() {
    local real
    case $LAB in
        /*) ;;
        *) _lab_err "EXTC_LAB must be an absolute path: $LAB"; return 1 ;;
    esac
    case $LAB in
        *ext-cache-lab) ;;
        *) _lab_err "refusing to use $LAB: the lab dir's name must end in ext-cache-lab"; return 1 ;;
    esac
    if [[ $LAB =~ [[:space:]\\] ]]; then
        _lab_err "refusing to use $LAB: whitespace or backslash in path"
        return 1
    fi
    real=$(realpath -m -- "$LAB") || return 1
    case "$LAB/ $real/" in
        /tmp/* | /var/tmp/* | *" /tmp/"* | *" /var/tmp/"*)
            _lab_err "refusing to use $LAB: under /tmp or /var/tmp, which every node hides"
            return 1
            ;;
    esac
    return 0
}

_lab_check_tools() {
    local t missing=
    for t in munged munge slurmctld slurmd slurmstepd sinfo squeue scontrol scancel srun \
        unshare nsenter setpriv flock mount; do
        command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
    done
    if [ -n "$missing" ]; then
        _lab_err "missing programs:$missing (install: slurmctld slurmd slurm-client munge util-linux mount)"
        return 1
    fi
}

# _lab_lock [nowait]: hold an exclusive lock on $LAB.lock for the rest of
# this shell's life, so two test runs never share one lab.  Without "nowait"
# it waits up to EXTC_LAB_LOCK_WAIT seconds.
_lab_lock() {
    local mode=${1:-wait} dir holder
    # already held by this shell (or inherited by this subshell)?
    if [ -n "$_LAB_LOCK_FD" ] && [ "${_LAB_LOCK_PATH:-}" == "$LAB.lock" ] &&
        [ "$(readlink "/proc/$BASHPID/fd/$_LAB_LOCK_FD" 2>/dev/null)" == "$(realpath -m -- "$LAB.lock")" ]; then
        return 0
    fi
    dir=$(dirname -- "$LAB")
    mkdir -p -- "$dir" || return 1
    exec {_LAB_LOCK_FD}>>"$LAB.lock" || { _lab_err "cannot open $LAB.lock"; return 1; }
    if ! flock -n "$_LAB_LOCK_FD"; then
        holder=$(cat "$LAB.lock" 2>/dev/null)
        if [ "$mode" == nowait ]; then
            _lab_err "lab $LAB is in use by another shell (pid ${holder:-?};" \
                "open in: $(_lab_lock_users)); not touching it"
            exec {_LAB_LOCK_FD}>&-
            _LAB_LOCK_FD=
            return 1
        fi
        _lab_err "waiting up to ${LAB_LOCK_WAIT}s for lab $LAB (locked by pid ${holder:-?};" \
            "open in: $(_lab_lock_users))"
        if ! flock -w "$LAB_LOCK_WAIT" "$_LAB_LOCK_FD"; then
            _lab_err "lab $LAB still in use; giving up"
            exec {_LAB_LOCK_FD}>&-
            _LAB_LOCK_FD=
            return 1
        fi
    fi
    echo "$BASHPID" >"$LAB.lock"
    _LAB_LOCK_PATH=$LAB.lock
    return 0
}

# in a subshell about to exec a command: do not pass the lab lock on to it
# (a command left running in the background would keep the lab locked)
_lab_drop_lock_fd() {
    if [ -n "$_LAB_LOCK_FD" ]; then
        exec {_LAB_LOCK_FD}>&-
    fi
    return 0
}

# processes that have $LAB.lock open, as "PID(COMM)"
_lab_lock_users() {
    local f real p out=''
    real=$(realpath -m -- "$LAB.lock")
    for f in /proc/[0-9]*/fd/*; do
        [ "$(readlink "$f" 2>/dev/null)" == "$real" ] || continue
        p=${f#/proc/}
        p=${p%%/*}
        [ "$p" == "$BASHPID" ] && continue
        out="$out $p($(cat "/proc/$p/comm" 2>/dev/null))"
    done
    echo "${out# }"
}

_lab_nodes() {
    local i
    for ((i = 1; i <= LAB_NNODES; i++)); do echo "n$i"; done
}

_lab_is_node() {
    [[ ${1:-} =~ ^n[0-9]+$ ]] && [ "${1#n}" -ge 1 ] && [ "${1#n}" -le "$LAB_NNODES" ]
}

_lab_node_port() { echo $((LAB_SLURMD_PORT + ${1#n} - 1)); }

_lab_node_ports() {
    local n
    for n in $(_lab_nodes); do _lab_node_port "$n"; done
}

_lab_user_home() {
    local h
    h=$(getent passwd "$LAB_USER" | cut -d: -f6)
    [ -n "$h" ] || { _lab_err "no such user: $LAB_USER"; return 1; }
    echo "$h"
}

_lab_mkdirs() {
    local n
    mkdir -p -- "$LAB" && chmod 0755 "$LAB" || return 1
    mkdir -p -- "$LAB"/{etc,lib,log,run,munge,spool} "$LAB/state" || return 1
    chmod 0755 "$LAB"/{etc,lib,log,run,munge,spool} && chmod 0700 "$LAB/state" || return 1
    mkdir -p -- "$LAB/work" && chmod 1777 "$LAB/work" || return 1
    for n in $(_lab_nodes); do
        mkdir -p -- "$LAB/spool/$n" "$LAB/nodes/$n/tmp" "$LAB/nodes/$n/vartmp" || return 1
        chmod 0755 "$LAB/nodes" "$LAB/nodes/$n" && chmod 1777 "$LAB/nodes/$n/tmp" "$LAB/nodes/$n/vartmp" || return 1
    done
}

_lab_write_conf() {
    local n host first='' tmp=$LAB/etc/.slurm.conf.new
    local proctrack=proctrack/linuxproc task=task/none
    host=$(uname -n)
    if _lab_cgroup; then
        proctrack=proctrack/cgroup
        task=task/cgroup
    fi
    [ -s "$LAB/run/next_job_id" ] && first=$(cat "$LAB/run/next_job_id")
    {
        cat <<EOF
# generated by tests/integration/lib/cluster.sh -- do not edit
ClusterName=extclab
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$LAB_CTLD_PORT
SlurmdPort=$LAB_SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$LAB/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$LAB/state
SlurmdSpoolDir=$LAB/spool/%n
SlurmctldPidFile=$LAB/run/slurmctld.pid
SlurmdPidFile=$LAB/run/slurmd-%n.pid
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmdLogFile=$LAB/log/slurmd-%n.log
ProctrackType=$proctrack
TaskPlugin=$task
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
KillWait=5
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
PlugStackConfig=$LAB_PLUGSTACK
EOF
        [[ $first =~ ^[0-9]+$ ]] && echo "FirstJobId=$first"
        for n in $(_lab_nodes); do
            echo "NodeName=$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$(_lab_node_port "$n")" \
                "CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
        if [ -n "$LAB_SLURM_CONF_EXTRA" ]; then
            echo "# LAB_SLURM_CONF_EXTRA"
            printf '%s\n' "$LAB_SLURM_CONF_EXTRA"
        fi
    } >"$tmp" && chmod 0644 "$tmp" && mv -f -- "$tmp" "$LAB_CONF" || return 1
    _lab_write_cgroup_conf
}

# slurmd 24.11 and later will not start without a cgroup filesystem unless
# cgroup.conf (next to slurm.conf) disables cgroups; 22.05 does not know the
# value "disabled" and, with proctrack/linuxproc and task/none, needs no file.
_lab_write_cgroup_conf() {
    local v major minor
    _lab_cgroup && { _lab_write_cgroup_conf_sites; return; }
    v=$(slurmd -V 2>/dev/null | awk '{print $2}')
    major=${v%%.*}
    minor=${v#*.}
    minor=${minor%%.*}
    rm -f -- "$LAB/etc/cgroup.conf"
    [[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] || return 0
    [ $((10#$major * 100 + 10#$minor)) -ge 2411 ] || return 0
    printf '# generated by tests/integration/lib/cluster.sh\nCgroupPlugin=disabled\n' >"$LAB/etc/cgroup.conf" &&
        chmod 0644 "$LAB/etc/cgroup.conf"
}

# EXTC_LAB_CGROUP=1: is this a cgroup lab?
_lab_cgroup() { [ "${EXTC_LAB_CGROUP:-0}" == 1 ]; }

# cgroup.conf as sites write it, on every release: the plugin found from the
# mounts (cgroup/v1 on a v1 or hybrid host such as Debian 12's test machines,
# cgroup/v2 on a v2-only one), cores and memory confined where the host has
# the controllers. No systemd runs on the test machines: IgnoreSystemd lets
# a cgroup/v2 slurmd make its slurmstepd scope itself (cgroup/v1 ignores it).
_lab_write_cgroup_conf_sites() {
    local f=$LAB/etc/.cgroup.conf.new
    {
        echo '# generated by tests/integration/lib/cluster.sh (EXTC_LAB_CGROUP=1)'
        echo 'CgroupPlugin=autodetect'
        echo 'IgnoreSystemd=yes'
        _lab_cgroup_has cpuset && echo 'ConstrainCores=yes'
        _lab_cgroup_has memory && echo 'ConstrainRAMSpace=yes'
    } >"$f" && chmod 0644 "$f" && mv -f -- "$f" "$LAB/etc/cgroup.conf"
}

# _lab_cgroup_has CONTROLLER: the host has it, on a v1 hierarchy or in the
# v2 root's controllers.
_lab_cgroup_has() {
    local m
    for m in $(_lab_cgroup_mounts); do
        [ -d "$m" ] || continue
        case $(stat -f -c %T "$m" 2>/dev/null) in
            cgroup2fs) grep -qw -- "$1" "$m/cgroup.controllers" 2>/dev/null && return 0 ;;
            *) [ -e "$m/$1.stat" ] || [ -e "$m/$1.cpus" ] || [ "${m##*/}" == "$1" ] && return 0 ;;
        esac
    done
    return 1
}

# The mount points of the host's cgroup hierarchies, v1 and v2, one a line
# (a mount point with a space or backslash, escaped in mountinfo, is skipped).
_lab_cgroup_mounts() {
    awk '{for (i = 7; i <= NF; i++) if ($i == "-") break}
         ($(i + 1) == "cgroup" || $(i + 1) == "cgroup2") && $5 !~ /\\/ {print $5}' /proc/self/mountinfo
}

# The cgroups Slurm makes for this lab's nodes, where they are: cgroup/v1's
# slurm_nX on each hierarchy, cgroup/v2's nX_slurmstepd.scope.
_lab_cgroup_dirs() {
    local m n d
    for m in $(_lab_cgroup_mounts); do
        for n in $(_lab_nodes); do
            for d in "$m/slurm_$n" "$m/system.slice/${n}_slurmstepd.scope"; do
                [ -d "$d" ] && echo "$d"
            done
        done
    done
    return 0
}

# _lab_cgroup_busy: print the cgroups of this lab's nodes that hold a process.
_lab_cgroup_busy() {
    local d f
    for d in $(_lab_cgroup_dirs); do
        while IFS= read -r f; do
            [ -s "$f" ] && echo "${f%/cgroup.procs}"
        done < <(find "$d" -name cgroup.procs 2>/dev/null)
    done
    return 0
}

# _lab_cgroup_clean: remove the empty cgroups Slurm left for this lab's nodes
# (rmdir, deepest first: one that still holds a process stays, and is named).
_lab_cgroup_clean() {
    local d left
    for d in $(_lab_cgroup_dirs); do
        find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    left=$(_lab_cgroup_busy)
    [ -z "$left" ] && return 0
    _lab_err "cgroups still hold processes:"$'\n'"$left"
    return 1
}

# Client command as root with this lab's config; bounded so a dead
# controller cannot hang the caller for long.
_lab_sl() { SLURM_CONF=$LAB_CONF timeout 20 "$@"; }

_lab_now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    echo $((t / 1000))
}
_lab_deadline() { echo $(($(_lab_now_ms) + ${1:-30} * 1000)); }
_lab_past() { [ "$(_lab_now_ms)" -ge "$1" ]; }

# _lab_alive PID: the process exists and is not a zombie.
_lab_alive() {
    local pid=${1:-} st
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    { read -r st <"/proc/$pid/stat"; } 2>/dev/null || return 1
    st=${st##*) }
    st=${st%% *}
    [ "$st" != Z ] && [ "$st" != X ]
}

_lab_cmdline() {
    local -a a=()
    { mapfile -d '' -t a <"/proc/$1/cmdline"; } 2>/dev/null || return 1
    echo "${a[*]-}"
}

# _lab_listening PORT: something listens on TCP PORT (v4 or v6).
_lab_listening() {
    local hex
    hex=$(printf '%04X' "$1")
    # (one grep: bash's byte-wise `read` on /proc/net/tcp is very slow)
    grep -qsE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:[0-9A-F]+ 0A " /proc/net/tcp /proc/net/tcp6
}

# _lab_spawn PIDFILE OUTFILE CMD...: start CMD in the background with a
# minimal environment, stdin from /dev/null, output appended to OUTFILE and no
# other inherited fds.  It stays this shell's child (so it is reaped at once
# when it dies) but is disowned (no job messages, `wait` ignores it).
_lab_spawn() {
    local pidfile=$1 out=$2 v
    shift 2
    local -a envs=("PATH=$_LAB_DAEMON_PATH")
    for v in $LAB_DAEMON_PASS_ENV; do
        [[ $v =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && [ -n "${!v+x}" ] && envs+=("$v=${!v}")
    done
    (
        _lab_close_fds
        exec env -i "${envs[@]}" "$@"
    ) </dev/null >>"$out" 2>&1 &
    local pid=$!
    disown "$pid" 2>/dev/null || true
    echo "$pid" >"$pidfile"
}

_lab_close_fds() {
    local f n
    for f in /proc/"$BASHPID"/fd/*; do
        n=${f##*/}
        [[ $n =~ ^[0-9]+$ ]] && [ "$n" -gt 2 ] && eval "exec $n>&-" 2>/dev/null
    done
    return 0
}

_lab_spawn_slurmd() {
    local n=$1
    # Inside the new namespace: node-local /tmp and /var/tmp, then slurmd.
    # unshare without --fork execs, so the recorded pid is slurmd's.
    # shellcheck disable=SC2016  # expanded by the shell inside the namespace
    _lab_spawn "$LAB/run/lab-slurmd-$n.pid" "$LAB/log/slurmd-$n.out" \
        unshare -m --propagation private -- bash -c '
            set -e
            mount --bind "$1/tmp" /tmp
            mount --bind "$1/vartmp" /var/tmp
            cd /
            exec slurmd -D -N "$2" -f "$3"' lab-node-"$n" "$LAB/nodes/$n" "$n" "$LAB_CONF"
}

# pid of node nX's slurmd (recorded pid, verified), else any slurmd of this
# lab with -N nX; empty if none.
_lab_slurmd_pid() {
    local n=$1 pid
    pid=$(cat "$LAB/run/lab-slurmd-$n.pid" 2>/dev/null)
    if _lab_alive "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" == slurmd ] &&
        [[ " $(_lab_cmdline "$pid") " == *" -N $n "*"$LAB_CONF"* ]]; then
        echo "$pid"
        return 0
    fi
    _lab_procs | awk -v n="$n" '$2 == "slurmd" && $3 == n && !f {print $1; f = 1}'
}

# _LAB_REAL and _LAB_DEV, $LAB's real path and device, which _lab_node_of_pid
# compares mount roots with.
_lab_identity() {
    _LAB_REAL=$(realpath -m -- "$LAB")
    _LAB_DEV=$(stat -c '%Hd:%Ld' -- "$LAB" 2>/dev/null) || _LAB_DEV=none
}

# Which lab node's namespace is PID in?  Node nX's namespace is recognised by
# its mount table: $LAB/nodes/nX/tmp bind-mounted on /tmp.
# (mountinfo shows the mount's root relative to its filesystem: the whole
# path when $LAB is on /, a suffix of it when $LAB is on another filesystem,
# in which case the filesystem's device must be $LAB's.)
_lab_node_of_pid() {
    local pid=$1 _id _par dev root mp _rest n
    while read -r _id _par dev root mp _rest; do
        [ "$mp" == /tmp ] || continue
        [[ $root == */nodes/n*/tmp ]] || continue
        n=${root%/tmp}
        n=${n##*/}
        _lab_is_node "$n" || continue
        # inside a chroot (tests/releases) the root is the chroot's path plus $LAB
        if [ "$root" == "$_LAB_REAL/nodes/$n/tmp" ] ||
            { [ "$dev" == "$_LAB_DEV" ] && [[ $_LAB_REAL/nodes/$n/tmp == *"$root" ]]; } ||
            { [ "$dev" == "$_LAB_DEV" ] && [[ $root == *"$_LAB_REAL/nodes/$n/tmp" ]]; }; then
            echo "$n"
            return 0
        fi
    done 2>/dev/null <"/proc/$pid/mountinfo"
    return 1
}

# _lab_procs: every live process of this lab, "PID KIND NODE COMM":
#   munged/slurmctld/slurmd  daemons whose command line names this lab's files
#   ns      any other process inside a lab node's mount namespace
#   client  srun/salloc/sbatch/scontrol/... whose environment has this SLURM_CONF
# Only live processes (zombies are already dead; init reaps them).
_lab_procs() {
    local self_ns path ns pid comm cmd node kind
    local -A nsnode=()
    _lab_identity
    self_ns=$(readlink /proc/$BASHPID/ns/mnt)
    while read -r path ns; do
        pid=${path#/proc/}
        pid=${pid%%/*}
        [[ $pid =~ ^[0-9]+$ ]] || continue
        [ -n "$ns" ] || continue
        [ "$pid" == "$BASHPID" ] || [ "$pid" == "$$" ] && continue
        { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || continue
        node=-
        kind=
        if [ "$ns" != "$self_ns" ]; then
            if [ -z "${nsnode[$ns]+x}" ]; then
                nsnode[$ns]=$(_lab_node_of_pid "$pid") || nsnode[$ns]=
            fi
            if [ -n "${nsnode[$ns]}" ]; then
                node=${nsnode[$ns]}
                kind=ns
                if [ "$comm" == slurmd ]; then
                    cmd=$(_lab_cmdline "$pid")
                    [[ " $cmd " == *" -N $node "* ]] && kind=slurmd
                fi
            fi
        fi
        if [ -z "$kind" ]; then
            case $comm in
                munged)
                    cmd=$(_lab_cmdline "$pid") || continue
                    [[ $cmd == *"--key-file=$LAB/munge/munge.key"* ]] && kind=munged
                    ;;
                slurmctld)
                    cmd=$(_lab_cmdline "$pid") || continue
                    [[ " $cmd " == *" $LAB_CONF "* ]] && kind=slurmctld
                    ;;
                slurmd)
                    cmd=$(_lab_cmdline "$pid") || continue
                    if [[ " $cmd " == *" $LAB_CONF "* ]]; then
                        kind=slurmd
                        [[ $cmd =~ -N\ (n[0-9]+) ]] && node=${BASH_REMATCH[1]}
                    fi
                    ;;
                srun | salloc | sbatch | scancel | squeue | sinfo | scontrol | sattach | sbcast | sstat)
                    grep -qzxF "SLURM_CONF=$LAB_CONF" "/proc/$pid/environ" 2>/dev/null && kind=client
                    ;;
            esac
        fi
        [ -n "$kind" ] || continue
        _lab_alive "$pid" || continue
        echo "$pid $kind $node $comm"
    done < <(find /proc/[0-9]*/ns/mnt -maxdepth 0 -printf '%p %l\n' 2>/dev/null)
}

# _lab_jobs_on_live_nodes "DEAD NODES": print the ids of jobs in squeue that
# have no node among DEAD NODES.
_lab_jobs_on_live_nodes() {
    local dead=" $1 " id nl hosts h ok
    while read -r id nl; do
        [ -n "$id" ] || continue
        ok=1
        if [ -n "${1// /}" ] && [ -n "$nl" ] && [ "$nl" != "(null)" ]; then
            hosts=$(_lab_sl scontrol show hostnames "$nl" 2>/dev/null)
            for h in $hosts; do
                [[ $dead == *" $h "* ]] && ok=
            done
        fi
        [ -n "$ok" ] && echo "$id"
    done < <(_lab_sl squeue -h -o '%A %N' 2>/dev/null)
}

# _lab_signal SIG PID WHY: send a signal, logged to $LAB/log/lab-signals.log.
_lab_signal() {
    local sig=$1 pid=$2 why=${3:-} comm
    comm=$(cat "/proc/$pid/comm" 2>/dev/null)
    [ -d "$LAB/log" ] && echo "$(date '+%T.%N') $sig $pid ${comm:-?} $why" >>"$LAB/log/lab-signals.log"
    kill -s "$sig" "$pid" 2>/dev/null
}

# _lab_wait_gone TIMEOUT_S PID...: wait until none of the PIDs is alive.
_lab_wait_gone() {
    local deadline p any
    deadline=$(_lab_deadline "$1")
    shift
    while :; do
        any=
        for p in "$@"; do
            _lab_alive "$p" && { any=1; break; }
        done
        [ -z "$any" ] && return 0
        _lab_past "$deadline" && return 1
        sleep 0.02
    done
}

# _lab_stop_kinds 'k1|k2' GRACE: SIGTERM this lab's processes of those kinds
# (SIGKILL at once if GRACE is 0), wait GRACE s, SIGKILL survivors, wait 3 s.
_lab_stop_kinds() {
    local kinds=$1 grace=$2 line pid kind node comm
    local -a pids=()
    while read -r pid kind node comm; do
        [ -n "$pid" ] || continue
        [[ "|$kinds|" == *"|$kind|"* ]] || continue
        pids+=("$pid")
        if [ "$grace" -gt 0 ]; then
            _lab_signal TERM "$pid" "lab_stop $kind $node"
        else
            _lab_signal KILL "$pid" "lab_stop $kind $node"
        fi
    done <<<"$(_lab_procs)"
    [ "${#pids[@]}" -gt 0 ] || return 0
    if [ "$grace" -gt 0 ] && ! _lab_wait_gone "$grace" "${pids[@]}"; then
        for pid in "${pids[@]}"; do
            _lab_alive "$pid" && _lab_signal KILL "$pid" "lab_stop (ignored TERM)"
        done
    fi
    _lab_wait_gone 3 "${pids[@]}"
}

_lab_rm_pidfiles() {
    rm -f -- "$LAB"/run/lab-*.pid 2>/dev/null
    return 0
}

# _lab_stop_slurmd nX TERM|KILL
_lab_stop_slurmd() {
    local n=$1 sig=$2 pid port
    pid=$(_lab_slurmd_pid "$n")
    if [ -n "$pid" ]; then
        _lab_signal "$sig" "$pid" "stop slurmd $n"
        if ! _lab_wait_gone 10 "$pid"; then
            _lab_signal KILL "$pid" "stop slurmd $n (ignored $sig)"
            _lab_wait_gone 3 "$pid" || { _lab_err "slurmd $n (pid $pid) does not die"; return 1; }
        fi
    fi
    rm -f -- "$LAB/run/lab-slurmd-$n.pid"
    port=$(_lab_node_port "$n")
    local deadline
    deadline=$(_lab_deadline 5)
    while _lab_listening "$port"; do
        _lab_past "$deadline" && { _lab_err "port $port still in use after slurmd $n stopped"; return 1; }
        sleep 0.02
    done
    return 0
}

# start node nX's slurmd and wait until it has started and registered.
_lab_start_slurmd_wait() {
    local n=$1 pid deadline log st marker
    log=$LAB/log/slurmd-$n.log
    marker="==== lab slurmd $n start $(date '+%F %T.%N') ===="
    echo "$marker" >>"$log"
    _lab_spawn_slurmd "$n" || return 1
    pid=$(cat "$LAB/run/lab-slurmd-$n.pid")
    deadline=$(_lab_deadline "$LAB_START_TIMEOUT")
    while :; do
        if ! _lab_alive "$pid"; then
            _lab_err "slurmd $n exited"
            tail -n 20 "$log" "$LAB/log/slurmd-$n.out" >&2
            return 1
        fi
        # "slurmd started on ..." is logged once slurmd is ready for work
        if sed -n "\\|^$marker\$|,\$p" "$log" | grep -q 'slurmd started on' &&
            _lab_listening "$(_lab_node_port "$n")"; then
            st=$(_lab_sl sinfo -h -N -n "$n" -o '%T' 2>/dev/null | head -n1)
            case $st in
                '' | *'*' | down* | unk* | *not_responding*) ;;
                *) return 0 ;;
            esac
        fi
        if _lab_past "$deadline"; then
            _lab_err "slurmd $n not ready after ${LAB_START_TIMEOUT}s (state: ${st:-?})"
            tail -n 20 "$log" >&2
            return 1
        fi
        sleep 0.05
    done
}

_lab_start_fail() {
    _lab_err "lab_start failed: $1"
    lab_tail_logs 15 >&2
    lab_stop >&2 || true
}
