# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# FUSE for the suites in which a job's user mounts a filesystem that never
# answers (plugins/fuse_hang.c): test_hostile.bats, test_tier_fail.bats.
# Sourced after lib/itest. FUSE is opened to users (user_allow_other in
# /etc/fuse.conf, /dev/fuse 0666) by fuse_allow_users and closed again by
# fuse_restore, which takes out exactly what was added (what was changed is
# recorded in $BATS_FILE_TMPDIR). fuse_hang's daemons write their pids to
# $LAB/work/*.pid.*; hang_cleanup kills them and detaches their mounts.

HANG=$LAB/lib/fuse_hang
# fuse_hang.c's fsname and subtype, as a node's mountinfo shows them
HANG_FS=" - fuse.extchang extc-hang "
FUSE_CONF=/etc/fuse.conf
FUSE_MARK="# added by spank-ext-cache's integration tests (lib/fuse.bash), removed at their end"

# fuse_hang_build: $HANG, from plugins/fuse_hang.c and tests/adversarial/fusesrv.c
fuse_hang_build() {
    command -v fusermount3 >/dev/null 2>&1 ||
        fail "no fusermount3 in PATH: apt-get install fuse3 (scripts/install-deps.sh)"
    gcc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -I "$ITEST_TOP/tests/adversarial" -o "$HANG" \
        "$ITEST_DIR/plugins/fuse_hang.c" "$ITEST_TOP/tests/adversarial/fusesrv.c" ||
        fail "fuse_hang.c does not build (with tests/adversarial/fusesrv.c)"
    chmod 0755 "$HANG"
}

fuse_allow_users() {
    local mode
    if ! grep -qE '^[[:space:]]*user_allow_other[[:space:]]*$' "$FUSE_CONF" 2>/dev/null; then
        [ -e "$FUSE_CONF" ] || echo 1 >"$BATS_FILE_TMPDIR/fuse_conf_created"
        printf '%s\nuser_allow_other\n' "$FUSE_MARK" >>"$FUSE_CONF" || return 1
        echo 1 >"$BATS_FILE_TMPDIR/fuse_conf_added"
    fi
    mode=$(stat -c %a /dev/fuse) || return 1
    if [ "$mode" != 666 ]; then
        echo "$mode" >"$BATS_FILE_TMPDIR/fuse_dev_mode"
        chmod 0666 /dev/fuse || return 1
    fi
}

# Take out exactly what fuse_allow_users added (other tests on this machine
# may change the file meanwhile: a snapshot put back could undo theirs).
fuse_restore() {
    local kept fuse_dev_mode
    if [ -f "$BATS_FILE_TMPDIR/fuse_conf_added" ] && [ -f "$FUSE_CONF" ]; then
        kept=$(awk -v m="$FUSE_MARK" '
            skip && $0 == "user_allow_other" { skip = 0; next }
            { skip = 0 }
            $0 == m { skip = 1; next }
            { print }' "$FUSE_CONF")
        if [ -f "$BATS_FILE_TMPDIR/fuse_conf_created" ] && [ -z "$kept" ]; then
            rm -f -- "$FUSE_CONF"
        else
            printf '%s\n' "$kept" >"$FUSE_CONF"
        fi
    fi
    rm -f "$BATS_FILE_TMPDIR/fuse_conf_added" "$BATS_FILE_TMPDIR/fuse_conf_created"
    fuse_dev_mode=$(cat "$BATS_FILE_TMPDIR/fuse_dev_mode" 2>/dev/null) || true
    [ -z "$fuse_dev_mode" ] || chmod "$fuse_dev_mode" /dev/fuse
    rm -f "$BATS_FILE_TMPDIR/fuse_dev_mode"
    return 0
}

# hang_mounts [NODE=n1]: mount points of fuse_hang's filesystems in NODE's
# namespace (read from mountinfo: nothing is asked of the filesystems themselves)
hang_mounts() {
    lab_node "${1:-n1}" cat /proc/self/mountinfo 2>/dev/null | grep -F -- "$HANG_FS" | awk '{print $5}'
}

# hang_pids: the fuse_hang daemons recorded in $LAB/work/*.pid.* that still run
hang_pids() {
    local f pid
    for f in "$LAB"/work/*.pid.*; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        [[ $pid =~ ^[0-9]+$ ]] || continue
        [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$HANG" ] && echo "$pid"
    done
    return 0
}

# hang_cleanup [NODE=n1]: kill the daemons (the kernel then fails every
# request in flight, which frees whatever waited on them), then detach what
# is still mounted in NODE's namespace, in rounds: a mount below another is
# reached once the upper one is gone. umount -c: no canonicalisation, which
# would stat the mount point.
hang_cleanup() {
    local pid m deadline round node=${1:-n1}
    for pid in $(hang_pids); do
        kill -KILL "$pid" 2>/dev/null || true
    done
    deadline=$((SECONDS + 10))
    while [ -n "$(hang_pids)" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.1
    done
    for round in 1 2 3 4; do
        [ -n "$(hang_mounts "$node")" ] || break
        for m in $(hang_mounts "$node" | tac); do
            lab_node "$node" umount -c -l "$m" 2>/dev/null || true
        done
        [ "$round" -lt 4 ] || lab_node "$node" cat /proc/self/mountinfo | grep -F -- "$HANG_FS" >&2 || true
    done
    return 0
}
