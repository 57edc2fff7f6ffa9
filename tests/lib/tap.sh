# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Tiny TAP-like assertion helpers for the integration tests.
#
#   t_pass NAME                  record a pass
#   t_fail NAME MSG              record a failure (MSG may span several lines)
#   t_check NAME CMD...          pass if CMD exits 0 (its output is shown on failure)
#   t_eq NAME EXPECTED ACTUAL    pass if the two strings are equal
#   t_contains NAME NEEDLE HAY   pass if HAY contains NEEDLE (plain substring)
#   t_note MSG                   print a "# MSG" diagnostic line
#   t_summary                    print "N passed, M failed"; non-zero if M>0 or N==0
#
# Output: "ok - NAME" or "not ok - NAME: <first line of MSG>", further lines of
# MSG as "#   ..." diagnostics.  There are no skips: a check that cannot run
# must be recorded as a failure.  Safe under `set -u`; every function returns
# 0 for a pass and 1 for a failure, so do not combine with `set -e`.

T_PASSED=${T_PASSED:-0}
T_FAILED=${T_FAILED:-0}

t_note() {
    local line
    while IFS= read -r line; do
        printf '# %s\n' "$line"
    done <<<"$*"
}

t_pass() {
    T_PASSED=$((T_PASSED + 1))
    printf 'ok - %s\n' "${1:-unnamed}"
    return 0
}

t_fail() {
    local name=${1:-unnamed} msg=${2:-failed} first rest line
    T_FAILED=$((T_FAILED + 1))
    first=${msg%%$'\n'*}
    printf 'not ok - %s: %s\n' "$name" "$first"
    if [[ $msg == *$'\n'* ]]; then
        rest=${msg#*$'\n'}
        while IFS= read -r line; do
            printf '#   %s\n' "$line"
        done <<<"$rest"
    fi
    return 1
}

# t_check NAME CMD...: run CMD (stdin from /dev/null), pass if it exits 0.
t_check() {
    local name=${1:-unnamed} out rc
    shift || true
    if [ "$#" -eq 0 ]; then
        t_fail "$name" "t_check: no command given"
        return 1
    fi
    out=$("$@" 2>&1 </dev/null)
    rc=$?
    if [ "$rc" -eq 0 ]; then
        t_pass "$name"
    else
        t_fail "$name" "command failed (rc=$rc): $*"$'\n'"$(_t_trim_output "$out")"
    fi
}

t_eq() {
    local name=${1:-unnamed} exp=${2-} act=${3-}
    if [ "$#" -lt 3 ]; then
        t_fail "$name" "t_eq: needs NAME EXPECTED ACTUAL"
        return 1
    fi
    if [ "$exp" == "$act" ]; then
        t_pass "$name"
    else
        t_fail "$name" "expected [$(_t_oneline "$exp")] got [$(_t_oneline "$act")]"
    fi
}

t_contains() {
    local name=${1:-unnamed} needle=${2-} hay=${3-}
    if [ "$#" -lt 3 ]; then
        t_fail "$name" "t_contains: needs NAME NEEDLE HAYSTACK"
        return 1
    fi
    if [[ $hay == *"$needle"* ]]; then
        t_pass "$name"
    else
        t_fail "$name" "[$(_t_oneline "$needle")] not found in:"$'\n'"$(_t_trim_output "$hay")"
    fi
}

t_summary() {
    printf '%d passed, %d failed\n' "$T_PASSED" "$T_FAILED"
    if [ "$T_FAILED" -gt 0 ] || [ "$T_PASSED" -eq 0 ]; then
        return 1
    fi
    return 0
}

# --- internal -----------------------------------------------------------
_t_oneline() {
    local s=$1
    s=${s//$'\n'/\\n}
    [ "${#s}" -gt 300 ] && s="${s:0:300}..."
    printf '%s' "$s"
}

# Keep failure output readable: at most the last 40 lines.
_t_trim_output() {
    local s=$1 n
    [ -z "$s" ] && { printf '(no output)'; return; }
    n=$(printf '%s\n' "$s" | wc -l)
    if [ "$n" -gt 40 ]; then
        printf '(... %d lines cut ...)\n' "$((n - 40))"
        printf '%s\n' "$s" | tail -n 40
    else
        printf '%s' "$s"
    fi
}
