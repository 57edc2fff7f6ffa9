#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# The node pool (pool=node) on a real 3-node Slurm, as the unprivileged
# user, with this release's own Debian torch (the op built is extc_light.cpp:
# torch's own load(), lock and ninja, on a source that compiles in seconds):
# a step's completed builds move
# into <base>/.pool/<uid>/<key> at its end (a job-mode job's at its
# epilog), and the next step of the same environment on that node starts
# from them (torch's "ninja: no work to do"); another key or another
# environment (a venv) starts cold; pool_max holds after many jobs, and a
# key a running step holds is not evicted; two
# concurrent jobs of one user on a node; a full disk during the move; the
# pool's levels and modes; bad arguments refused with the key named.

load lib/itest
load lib/torchop

POOL=$ITEST_BASE/.pool

setup_file() {
    itest_setup_file
    torchop_setup
    # a second environment with the same torch: a venv over the system's packages
    rm -rf "$LAB/work/venv"
    "$PY" -m venv --without-pip --system-site-packages "$LAB/work/venv" || fail "python3 -m venv failed"
    chmod -R a+rX "$LAB/work/venv"
    HOME_DIR=$(getent passwd "$LAB_USER" | cut -d: -f6)
    W=$HOME_DIR/.extc-pool-$(basename "$LAB")
    rm -rf -- "$W"
    lab_user mkdir -p "$W/log" || fail "cannot make $W"
    export W
    itest_cluster "base=$ITEST_BASE pool=node"
}

teardown_file() { itest_teardown_file; }

run_ext() { torchop_run "$@"; }
ranks() { torchop_ranks; }
keys_on() { lab_node "$1" find "$POOL/$ITEST_UID" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort; }
n1_pool_empty() { [ -z "$(keys_on n1)" ]; }

@test "job 1 builds on every node; its builds move into the node's pool at step end" {
    run_ext extc_p job1.log -- -N3 --ntasks-per-node=1 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "$(printf 'n%s built 2 1\n' 1 2 3)"
    lab_wait_settled 120 >/dev/null
    for n in $(lab_nodes); do
        key=$(keys_on "$n")
        [ "$(wc -l <<<"$key")" -eq 1 ] && [ -n "$key" ] || fail "$n: not one key in the pool: [$key]"
        lab_node "$n" test -s "$POOL/$ITEST_UID/$key/torch_extensions/extc_p/extc_p.so" ||
            fail "$n: the build is not in key $key"
        assert_equal "$(lab_node "$n" find "$POOL" \( -name lock -o -name '.ext-cache-stage.*' \) -print)" ""
    done
    itest_save key "$(keys_on n1)"
    itest_no_drain
}

@test "pool levels: .pool and <uid> root 0711, the key the user's 0700, its record root 0600" {
    key=$(itest_load key)
    for n in $(lab_nodes); do
        assert_equal "$(lab_node "$n" stat -c '%U:%a' "$POOL" "$POOL/$ITEST_UID" "$POOL/$ITEST_UID/$key" \
            "$POOL/$ITEST_UID/$key.use" | paste -sd' ' -)" "root:711 root:711 $LAB_USER:700 root:600"
        # another user can neither list the user's level nor enter the key
        run lab_node "$n" setpriv --reuid=nobody --regid=nogroup --clear-groups ls "$POOL/$ITEST_UID"
        [ "$status" -ne 0 ] || fail "$n: nobody listed $POOL/$ITEST_UID: $output"
        run lab_node "$n" setpriv --reuid=nobody --regid=nogroup --clear-groups ls "$POOL/$ITEST_UID/$key"
        [ "$status" -ne 0 ] || fail "$n: nobody listed the key: $output"
        itest_match '^bytes=[1-9][0-9]*$' "$(lab_node "$n" cat "$POOL/$ITEST_UID/$key.use")"
    done
}

# so_inode NODE: the inode of the pooled build on NODE (empty while a step has it)
so_inode() { lab_node "$1" stat -c %i "$POOL/$ITEST_UID/$(itest_load key)/torch_extensions/extc_p/extc_p.so" 2>/dev/null; }

@test "job 2 of the same environment starts warm on every node: ninja has nothing to do" {
    local n was=()
    itest_load key >/dev/null
    for n in 1 2 3; do was[n]=$(so_inode "n$n"); done
    run_ext extc_p job2.log -- -N3 --ntasks-per-node=1 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "$(printf 'n%s reused 0 1\n' 1 2 3)"
    assert_equal "$(grep -c 'ninja: no work to do' <<<"$OUT")" 3
    [ ! -s "$W/log/job2.log" ] || fail "the compiler ran: $(cat "$W/log/job2.log")"
    itest_match "node pool: seeded .* from key $(itest_load key): took [1-9][0-9]* entr(y|ies) by rename" \
        "$(cat "$LAB"/log/slurmd-n*.log)"
    # the step took the key's builds by rename and its end moved them back:
    # the very same file, never copied, never deleted
    for n in 1 2 3; do
        itest_poll 120 so_inode "n$n" >/dev/null ||
            fail "n$n: the build never went back to the pool; n$n logged:"$'\n'"$(grep 'node pool' "$(lab_log "n$n")")"
        assert_equal "n$n $(so_inode "n$n")" "n$n ${was[n]}"
    done
}

@test "another key (SLURM_EXT_CACHE_KEY) starts cold, and gets a key of its own" {
    run_ext extc_p other.log SLURM_EXT_CACHE_KEY=other -- -N1 -w n1 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "n1 built 2 1"
    lab_wait_settled 120 >/dev/null
    assert_equal "$(keys_on n1 | wc -l)" 2
}

@test "a step that changes nothing puts its key's cache directory back whole; root keeps its record" {
    local k rec
    # shellcheck disable=SC2016 # expanded by the job's shell
    lab_user env SLURM_EXT_CACHE_KEY=whole-back srun -N1 -w n1 --ext-cache=local bash -c \
        'for d in $(seq 20); do mkdir -p "$TORCHINDUCTOR_CACHE_DIR/d$d" && (cd "$TORCHINDUCTOR_CACHE_DIR/d$d" && seq 100 | xargs touch); done' ||
        fail "filling the key failed"
    lab_wait_settled 120 >/dev/null
    k=$(grep -a 'node pool: moved [0-9]* entries into key' "$(lab_log n1)" | tail -n 1 | sed 's/.* into key \([0-9a-f]*\).*/\1/')
    [ -n "$k" ] || fail "no move logged: $(grep -a 'node pool' "$(lab_log n1)" | tail -n 3)"
    rec=$(lab_node n1 cat "$POOL/$ITEST_UID/$k.use")
    lab_user env SLURM_EXT_CACHE_KEY=whole-back srun -N1 -w n1 --ext-cache=local true || fail "srun true failed"
    lab_wait_settled 120 >/dev/null
    # every directory it moved went whole (Inductor's, and any other the step's tree had)
    grep -a "node pool: moved .* into key $k" "$(lab_log n1)" | tail -n 1 |
        grep -qE "moved ([1-9][0-9]*) entr(y|ies) into key $k \(\1 of them a whole cache directory" ||
        fail "not back whole: $(grep -a "into key $k" "$(lab_log n1)" | tail -n 1)"
    # root's numbers of before the take, kept: what the key holds did not change
    assert_equal "$(lab_node n1 cat "$POOL/$ITEST_UID/$k.use")" "$rec"
    assert_equal "$(lab_node n1 find "$POOL/$ITEST_UID/$k/torchinductor" -type f | wc -l)" 2000
}

@test "another environment (a venv) never gets the system's builds; the same venv gets its own" {
    venv=(VIRTUAL_ENV="$LAB/work/venv" PATH="$LAB/work/venv/bin:$LAB_USER_PATH")
    run_ext extc_p venv1.log "${venv[@]}" -- -N1 -w n2 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "n2 built 2 1"
    lab_wait_settled 120 >/dev/null
    run_ext extc_p venv2.log "${venv[@]}" -- -N1 -w n2 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "n2 reused 0 1"
    # and the system environment still finds its own
    run_ext extc_p sys3.log -- -N1 -w n2 --ext-cache=local
    assert_equal "$(ranks)" "n2 reused 0 1"
}

@test "an installation changed in place (a package added to site-packages) changes the derived key" {
    venv=(VIRTUAL_ENV="$LAB/work/venv" PATH="$LAB/work/venv/bin:$LAB_USER_PATH")
    site=$(find "$LAB/work/venv/lib" -maxdepth 2 -name site-packages | head -n1)
    [ -n "$site" ] || fail "the venv has no site-packages"
    lab_wait_settled 120 >/dev/null
    before=$(keys_on n3 | wc -l)
    # a package installed: a name more in site-packages
    mkdir -p "$site/extc_upgrade-1.0.dist-info" && chmod a+rx "$site/extc_upgrade-1.0.dist-info"
    run_ext extc_p upg.log "${venv[@]}" -- -N1 -w n3 --ext-cache=local
    assert_equal "$(ranks)" "n3 built 2 1"
    lab_wait_settled 120 >/dev/null
    assert_equal "$(keys_on n3 | wc -l)" "$((before + 1))"
}

@test "one venv copied to each node (other inodes, the same names and times) is one key on every node; a package installed is another" {
    local n site new1 keys=() had=() copies=()
    lab_wait_settled 120 >/dev/null
    for n in 1 2 3; do
        rm -rf "$LAB/work/venv-copy-$n" && cp -a "$LAB/work/venv" "$LAB/work/venv-copy-$n" ||
            fail "cannot copy the venv for n$n"
    done
    mkdir -p "$LAB/work/venv-nodes"
    # each node sees its own copy at the one path, as with a venv on each node's own disk
    for n in 1 2 3; do
        lab_node "n$n" mount --bind "$LAB/work/venv-copy-$n" "$LAB/work/venv-nodes" || fail "cannot bind n$n's copy"
        had[n]=$(keys_on "n$n" | tr '\n' ' ')
    done
    assert_equal "$(for n in 1 2 3; do lab_node "n$n" stat -c %i "$LAB/work/venv-nodes/bin"; done | sort -u | wc -l)" 3
    copies=(VIRTUAL_ENV="$LAB/work/venv-nodes" PATH="$LAB/work/venv-nodes/bin:$LAB_USER_PATH")
    run_ext extc_p copies.log "${copies[@]}" -- -N3 --ntasks-per-node=1 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    lab_wait_settled 120 >/dev/null
    for n in 1 2 3; do
        keys[n]=$(keys_on "n$n" | grep -vxF -f <(tr ' ' '\n' <<<"${had[n]}" | grep .) || true)
        [ "$(wc -l <<<"${keys[n]}")" -eq 1 ] && [ -n "${keys[n]}" ] || fail "n$n: not one new key: '${keys[n]}'"
    done
    assert_equal "${keys[2]}" "${keys[1]}"
    assert_equal "${keys[3]}" "${keys[1]}"
    # a package installed in n1's copy only: another key on n1
    site=$(find "$LAB/work/venv-copy-1/lib" -maxdepth 2 -name site-packages | head -n1)
    mkdir "$site/extc_other-2.0.dist-info" && chmod a+rx "$site/extc_other-2.0.dist-info"
    run_ext extc_p copies2.log "${copies[@]}" -- -N1 -w n1 --ext-cache=local
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "n1 built 2 1"
    lab_wait_settled 120 >/dev/null
    new1=$(keys_on n1 | grep -vxF -e "${keys[1]}" -f <(tr ' ' '\n' <<<"${had[1]}" | grep .) || true)
    [ -n "$new1" ] && [ "$new1" != "${keys[1]}" ] || fail "n1: no other key after the install: '$new1'"
    for n in 1 2 3; do lab_node "n$n" umount "$LAB/work/venv-nodes" || fail "cannot unbind n$n's copy"; done
}

# The nodes a case gave a stand-in GPU (a tmpfs over /proc/driver in the
# node's mount namespace): uncovered after the case, whether it passed or not.
GPU_STANDIN_ON=()
teardown() {
    local n
    for n in "${GPU_STANDIN_ON[@]}"; do lab_node "$n" umount /proc/driver || true; done
}

# gpu_standin NODE BUS MODEL: NVIDIA's /proc file of a GPU of MODEL at BUS on
# NODE, as its driver writes it (this machine has no GPU: a stand-in the key
# reads the same way); the first call on a node mounts the tmpfs it lives in
gpu_standin() {
    local dir=/proc/driver/nvidia/gpus/$2
    if ! lab_node "$1" mountpoint -q /proc/driver; then
        lab_node "$1" mount -t tmpfs -o size=64k,mode=0755 tmpfs /proc/driver ||
            fail "$1: cannot mount a tmpfs over /proc/driver"
        GPU_STANDIN_ON+=("$1")
    fi
    lab_node "$1" bash -c "mkdir -p '$dir' && printf 'Model: \t\t %s\nIRQ:   \t\t 42\nBus Location: \t %s\n' '$3' '$2' >'$dir/information'" ||
        fail "$1: cannot write the stand-in GPU $2"
}

# gpu_step: one step of one environment on n1 and n2; sets KEY[n] to the key
# each node's step held, from its verbose line in the node's log
gpu_step() {
    local n lines=()
    for n in 1 2; do lines[n]=$(wc -l <"$(lab_log "n$n")"); done
    lab_user env CFLAGS=-DEXTC_GPU_CASE srun -N2 -w n1,n2 --ntasks-per-node=1 --ext-cache=local true ||
        fail "the step on n1 and n2 failed"
    for n in 1 2; do
        KEY[n]=$(tail -n +"$((lines[n] + 1))" "$(lab_log "n$n")" |
            sed -n 's/.*node pool: key \([0-9a-f]\{32\}\) (derived from the environment).*/\1/p' | tail -n 1)
        [ -n "${KEY[n]}" ] || fail "n$n logged no key: $(grep -a 'node pool' "$(lab_log "n$n")" | tail -n 3)"
    done
}

@test "GPU architectures join the key: a stand-in GPU on n1 only gives n1 and n2 two keys; the same model on both (2 GPUs and 1) gives one" {
    local KEY=() first
    lab_wait_settled 120 >/dev/null
    gpu_standin n1 0000:01:00.0 "NVIDIA A100-SXM4-80GB"
    gpu_standin n1 0000:02:00.0 "NVIDIA A100-SXM4-80GB"
    gpu_step
    [ "${KEY[1]}" != "${KEY[2]}" ] || fail "n1 (a GPU) and n2 (none) share key ${KEY[1]}"
    first=${KEY[1]}
    lab_wait_settled 120 >/dev/null
    gpu_standin n2 0000:41:00.0 "NVIDIA A100-SXM4-80GB"
    gpu_step
    assert_equal "${KEY[1]}" "$first"
    assert_equal "${KEY[2]}" "${KEY[1]}"
    lab_wait_settled 120 >/dev/null
}

@test "torch.compile: the next job hits Inductor's FX graph cache from the pool on every node (torch 2.0 and later)" {
    ver=$(lab_user "$PY" -c 'import torch; print(torch.__version__)')
    has=$(lab_user "$PY" -c 'import torch; print(int(hasattr(torch, "compile")))')
    if [ "${ver%%.*}" -lt 2 ]; then
        # torch before 2.0 (Debian 12's 1.13) has no torch.compile, hence no Inductor cache
        assert_equal "$has" 0
        echo "# torch $ver has no torch.compile: this case runs on the releases whose torch has it" >&3
        return 0
    fi
    assert_equal "$has" 1
    ind=(SLURM_EXT_CACHE_KEY="inductor-$ver" TORCHINDUCTOR_AUTOGRAD_CACHE=1)
    # how many steps have moved builds into the pool on node $1, from its log
    moves() { grep -c 'ext-cache: job [0-9]* step [0-9]*: node pool: moved [1-9]' "$(lab_log "$1")" || true; }
    # node $1 has logged more moves than $2
    moved_since() { [ "$(moves "$1")" -gt "$2" ]; }
    local n moved_before=()
    for n in 1 2 3; do moved_before[n]=$(moves "n$n"); done
    for job in 1 2; do
        lab_user mkdir -p "$W/bar-pool$job"
        rc=0
        out=$(lab_user env "${ind[@]}" timeout -k 10 900 srun -N3 --ntasks-per-node=1 --ext-cache=local \
            "$PY" "$LAB/work/torch/inductor.py" "$W/bar-pool$job" 3 2>&1) || rc=$?
        [ "$rc" -eq 0 ] || fail "job $job failed ($rc): $out"
        res=$(grep '^RESULT ' <<<"$out" || true)
        got=$(awk "$KV"' { kv(); print F["node"], F["ok"], (F["fx_hit"] > 0 ? "hit" : "-"), (F["fx_miss"] > 0 ? "miss" : "-") }' <<<"$res" | sort)
        if [ "$job" = 1 ]; then
            assert_equal "$got" "$(printf 'n%s 1 - miss\n' 1 2 3)"
            # the step's end moves the entries in after the step, in its
            # detached work: job 2 starts once every node has done so
            for n in 1 2 3; do
                itest_poll 120 moved_since "n$n" "${moved_before[n]}" ||
                    fail "n$n: job 1's builds never went into the pool; n$n logged:"$'\n'"$(grep 'node pool' "$(lab_log "n$n")")"
            done
        else
            assert_equal "$got" "$(printf 'n%s 1 hit -\n' 1 2 3)"
        fi
        lab_wait_settled 120 >/dev/null
    done
    assert_equal "$(lab_node n1 find "$POOL/$ITEST_UID" -path '*/torchinductor/locks' -print)" ""
}

# no_job_note_on NODE: no job-mode note (<jobid>.job) is left in the user's pool level
no_job_note_on() {
    [ -z "$(lab_node "$1" find "$POOL/$ITEST_UID" -maxdepth 1 -name '*.job')" ]
}

@test "job mode: the epilog moves the job's builds in; the next job-mode job starts warm" {
    run_ext extc_j jobm1.log SLURM_EXT_CACHE_KEY=jobmode -- -N1 -w n3 --ext-cache=job
    [ "$RC" -eq 0 ] || fail "srun failed ($RC): $OUT"
    assert_equal "$(ranks)" "n3 built 2 1"
    lab_wait_settled 120 >/dev/null
    itest_poll 30 bash -c "grep -q 'epilog: node pool: moved [1-9]' $(lab_log n3)" ||
        fail "no epilog move logged on n3: $(grep 'node pool' "$(lab_log n3)" | tail -n 5)"
    run_ext extc_j jobm2.log SLURM_EXT_CACHE_KEY=jobmode -- -N1 -w n3 --ext-cache=job
    assert_equal "$(ranks)" "n3 reused 0 1"
    # srun returns before the second job's epilog, which takes its note away:
    # wait for that epilog (bounded), as for the first job's move above
    lab_wait_settled 120 >/dev/null
    itest_poll 30 no_job_note_on n3 || true
    assert_equal "$(lab_node n3 find "$POOL/$ITEST_UID" -maxdepth 1 -name '*.job')" ""
}

@test "two concurrent jobs of one user on a node: both complete, the pool keeps one whole copy of each entry" {
    cat >"$LAB/work/conc.sh" <<'SH'
#!/bin/bash
# a shared entry and one of its own, then wait (bounded) until the sibling job runs too
mkdir -p "$TRITON_CACHE_DIR/shared" "$TRITON_CACHE_DIR/own.$SLURM_JOB_ID"
head -c 65536 /dev/urandom >"$TRITON_CACHE_DIR/shared/blob"
head -c 65536 /dev/urandom >"$TRITON_CACHE_DIR/own.$SLURM_JOB_ID/blob"
touch "$1/$SLURM_JOB_ID"
for _ in $(seq 300); do [ "$(ls "$1" | wc -l)" -ge 2 ] && break; sleep 0.1; done
echo "DONE $SLURM_JOB_ID $(ls "$1" | wc -l)"
SH
    chmod 755 "$LAB/work/conc.sh"
    meet=$W/meet
    lab_user mkdir -p "$meet"
    lab_user env SLURM_EXT_CACHE_KEY=conc srun -N1 -w n1 --ext-cache=local "$LAB/work/conc.sh" "$meet" >"$W/c1.out" 2>&1 &
    a=$!
    lab_user env SLURM_EXT_CACHE_KEY=conc srun -N1 -w n1 --ext-cache=local "$LAB/work/conc.sh" "$meet" >"$W/c2.out" 2>&1 &
    b=$!
    wait "$a" || fail "job 1: $(cat "$W/c1.out")"
    wait "$b" || fail "job 2: $(cat "$W/c2.out")"
    assert_equal "$(cat "$W/c1.out" "$W/c2.out" | grep -c '^DONE [0-9]* 2$')" 2
    lab_wait_settled 120 >/dev/null
    found=$(lab_node n1 find "$POOL/$ITEST_UID" -path '*/triton/*' -name blob -printf '%s %P\n' | sort)
    assert_equal "$(grep -c '/triton/shared/blob$' <<<"$found")" 1
    assert_equal "$(grep -c '/triton/own\.[0-9]*/blob$' <<<"$found")" 2
    assert_equal "$(awk '$1 != 65536' <<<"$found")" ""
    assert_equal "$(lab_node n1 find "$POOL" -name '.ext-cache-stage.*' -print)" ""
}

@test "pool_max holds after many jobs: the least recently used keys go after the epilogs" {
    itest_cluster "base=$ITEST_BASE pool=node pool_max=256K pool_total_max=1M"
    cat >"$LAB/work/fill.sh" <<'SH'
#!/bin/bash
mkdir -p "$TRITON_CACHE_DIR/e" && head -c 102400 /dev/urandom >"$TRITON_CACHE_DIR/e/blob"
SH
    chmod 755 "$LAB/work/fill.sh"
    for i in $(seq 8); do
        lab_user env SLURM_EXT_CACHE_KEY="many$i" srun -N1 -w n2 --ext-cache=local "$LAB/work/fill.sh" ||
            fail "job $i failed"
    done
    lab_wait_settled 120 >/dev/null
    used() { lab_node n2 du -sb "$POOL/$ITEST_UID" | awk '{print $1}'; }
    # shellcheck disable=SC2016 # evaluated by itest_poll, each time
    itest_poll 30 eval '[ "$(used)" -le 262144 ]' || fail "the user's pool on n2 holds $(used) bytes"
    # the most recent key stayed, the oldest went
    itest_match "^[0-9a-f]{32}\$" "$(keys_on n2)"
    itest_match "node pool: .*evicted [1-9][0-9]* \([0-9]+ unused past pool_ttl, [1-9][0-9]* over pool_max" \
        "$(cat "$(lab_log n2)")"
    itest_no_drain
}

@test "a key a running step holds is never evicted; once the step has ended it can go" {
    itest_cluster "base=$ITEST_BASE pool=node"
    # shellcheck disable=SC2016 # expanded by the job's shell
    fill='mkdir -p "$TRITON_CACHE_DIR/k" && echo x >"$TRITON_CACHE_DIR/k/f"'
    declare -A key
    for k in held idle; do
        before=$(keys_on n1)
        lab_user env SLURM_EXT_CACHE_KEY="$k" srun -N1 -w n1 --ext-cache=local bash -c "$fill" ||
            fail "the job of key $k failed"
        lab_wait_settled 120 >/dev/null
        key[$k]=$(comm -13 <(echo "$before") <(keys_on n1))
        [ -n "${key[$k]}" ] || fail "no key directory for SLURM_EXT_CACHE_KEY=$k on n1"
    done
    rm -f "$W/held.started" "$W/held.release"
    # a step of key "held" runs on n1 until released
    lab_user env SLURM_EXT_CACHE_KEY=held srun -N1 -w n1 --ext-cache=local bash -c \
        "touch $W/held.started; for _ in \$(seq 600); do [ -e $W/held.release ] && break; sleep 0.1; done" \
        >"$W/held.out" 2>&1 3>&- &
    held_pid=$!
    itest_poll 30 test -e "$W/held.started" || fail "the holding step did not start: $(cat "$W/held.out")"
    # both keys unused for 30 days by their records; another job's epilog starts the evictor
    lab_node n1 touch -d '30 days ago' "$POOL/$ITEST_UID/${key[held]}.use" "$POOL/$ITEST_UID/${key[idle]}.use"
    logged=$(wc -l <"$(lab_log n1)")
    lab_user env SLURM_EXT_CACHE_KEY=evictor srun -N1 -w n1 --ext-cache=local true || fail "the evicting job failed"
    # the evictor logs its pass when it has ended
    pass_logged() { tail -n +"$((logged + 1))" "$(lab_log n1)" | grep -qE 'node pool: [0-9]+ keys? of [0-9]+ users?, '; }
    itest_poll 30 pass_logged || fail "no eviction pass was logged on n1"
    itest_match "node pool: [0-9]+ keys? of [0-9]+ users?, 1 in use; evicted [1-9]" "$(tail -n +"$((logged + 1))" "$(lab_log n1)")"
    # the running step took the key's builds (by rename): the key itself stays
    lab_node n1 test -d "$POOL/$ITEST_UID/${key[held]}" || fail "the held key was evicted"
    itest_absent n1 "$POOL/$ITEST_UID/${key[idle]}" || fail "the idle key was not evicted"
    touch "$W/held.release"
    wait "$held_pid" || fail "the holding step failed: $(cat "$W/held.out")"
    lab_wait_settled 120 >/dev/null
    # its end moved them back
    itest_poll 30 lab_node n1 test -d "$POOL/$ITEST_UID/${key[held]}/triton/k" ||
        fail "the held key's builds did not come back"
    # no longer held: the same age now lets it go
    lab_node n1 touch -d '30 days ago' "$POOL/$ITEST_UID/${key[held]}.use"
    lab_user env SLURM_EXT_CACHE_KEY=evictor srun -N1 -w n1 --ext-cache=local true || fail "the evicting job failed"
    itest_poll 30 itest_absent n1 "$POOL/$ITEST_UID/${key[held]}" || fail "the released key was not evicted"
    itest_no_drain
}

@test "a full disk during the move into the pool: the step ends normally, the pool stays consistent" {
    # the daemons' node namespaces are made at start: the small disk is mounted in them after
    itest_cluster "base=/var/tmp/small/ext-cache pool=node"
    for n in $(lab_nodes); do
        lab_node "$n" mkdir -p /var/tmp/small
        lab_node "$n" mount -t tmpfs -o size=1M,mode=0755 tmpfs /var/tmp/small
    done
    cat >"$LAB/work/full.sh" <<'SH'
#!/bin/bash
mkdir -p "$TRITON_CACHE_DIR/k" && echo x >"$TRITON_CACHE_DIR/k/f"
# fill the disk to the last block: the pool's levels and manifest cannot be written
head -c 2M /dev/zero >"$SLURM_EXT_CACHE_DIR/fill" 2>/dev/null
echo "FULL $(df --output=avail /var/tmp/small | tail -n1)"
SH
    chmod 755 "$LAB/work/full.sh"
    rc=0
    out=$(lab_user srun -N1 -w n1 --ext-cache=local "$LAB/work/full.sh" 2>&1) || rc=$?
    assert_equal "$rc" 0
    itest_match '^FULL +0$' "$out"
    lab_wait_settled 120 >/dev/null
    # nothing half: no stage, no draft manifest; the job's directory is gone
    assert_equal "$(lab_node n1 find /var/tmp/small/ext-cache/.pool \( -name '.ext-cache-stage.*' -o -name '.ext-cache-manifest.*' \) -print)" ""
    itest_absent n1 "/var/tmp/small/ext-cache/$ITEST_UID" || fail "the job's tree is left"
    # and the next job of that key works and is pooled
    # shellcheck disable=SC2016 # expanded by the job's shell
    out=$(lab_user srun -N1 -w n1 --ext-cache=local bash -c 'mkdir -p "$TRITON_CACHE_DIR/k2" && echo y >"$TRITON_CACHE_DIR/k2/f" && echo OK') ||
        fail "the next job failed: $out"
    lab_wait_settled 120 >/dev/null
    itest_match '/triton/k2/f$' "$(lab_node n1 find /var/tmp/small/ext-cache/.pool -name f)"
    itest_no_drain
    for n in $(lab_nodes); do lab_node "$n" umount /var/tmp/small; done
}

@test "what a user plants in their own key (links out, another user's directory) cannot hurt root: at worst a cold start" {
    itest_cluster "base=$ITEST_BASE pool=node"
    before=$(keys_on n1)
    # shellcheck disable=SC2016 # expanded by the job's shell
    lab_user env SLURM_EXT_CACHE_KEY=planted srun -N1 -w n1 --ext-cache=local bash -c \
        'mkdir -p "$TRITON_CACHE_DIR/k" && echo x >"$TRITON_CACHE_DIR/k/f"' || fail "the first job failed"
    lab_wait_settled 120 >/dev/null
    key=$(comm -13 <(echo "$before") <(keys_on n1))
    [ -n "$key" ] || fail "no key directory for SLURM_EXT_CACHE_KEY=planted on n1"
    victim=$LAB/work/victim
    mkdir -p "$victim" && echo keep >"$victim/file" && chmod 755 "$victim"
    # the user's own doing, in the user's own key: links out of it
    lab_node n1 setpriv --reuid="$ITEST_UID" --regid="$ITEST_GID" --clear-groups \
        bash -c "ln -s $victim '$POOL/$ITEST_UID/$key/torchinductor' && ln -s $victim/file '$POOL/$ITEST_UID/$key/triton/link'" ||
        fail "planting the links failed"
    # another user's directory in it (as a second user could move one of theirs in)
    lab_node n1 mkdir "$POOL/$ITEST_UID/$key/triton/foreign"
    lab_node n1 bash -c "echo theirs >'$POOL/$ITEST_UID/$key/triton/foreign/f' && chown -R 65534:65534 '$POOL/$ITEST_UID/$key/triton/foreign'"
    rc=0
    # shellcheck disable=SC2016 # expanded by the job's shell
    out=$(lab_user env SLURM_EXT_CACHE_KEY=planted srun -N1 -w n1 --ext-cache=local bash -c \
        'ls -l "$SLURM_EXT_CACHE_DIR" "$TRITON_CACHE_DIR"; mkdir -p "$TORCHINDUCTOR_CACHE_DIR/x" 2>&1; echo DONE') || rc=$?
    assert_equal "$rc" 0
    itest_match '^DONE$' "$out"
    # evict it: unused for 30 days (its record's mtime is its last use), then another job's epilog
    lab_wait_settled 120 >/dev/null
    lab_node n1 touch -d '30 days ago' "$POOL/$ITEST_UID/$key.use"
    lab_user env SLURM_EXT_CACHE_KEY=evictor srun -N1 -w n1 --ext-cache=local true || fail "the evicting job failed"
    lab_wait_settled 120 >/dev/null
    itest_poll 30 itest_absent n1 "$POOL/$ITEST_UID/$key" || fail "key $key was not evicted"
    assert_equal "$(cat "$victim/file")" keep
    assert_equal "$(stat -c '%U %a' "$victim")" "root 755"
    # the other user's directory is never removed by root on the user's behalf: kept for the admin
    kept_foreign() { lab_node n1 find "$ITEST_BASE/.trash" -user 65534 -name f | grep -q .; }
    itest_poll 30 kept_foreign || fail "the other user's file is not kept in n1's trash"
    itest_no_drain
}

@test "bad pool arguments are refused with the key and value named" {
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE pool=maybe"
    run lab_user srun -N1 --ext-cache=local true
    [ "$status" -ne 0 ] || fail "srun ran with pool=maybe"
    assert_output --partial "pool=maybe: expected off or node"
    for bad in "pool_max=0:expected a size of at least 1" "pool_max=12Q:expected a size" \
        "pool_ttl=0:expected a number of days from 1 to 3650" "pool_total_max=lots:expected a size"; do
        itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE pool=node ${bad%%:*}"
        run lab_user srun -N1 --ext-cache=local true
        [ "$status" -ne 0 ] || fail "srun ran with ${bad%%:*}"
        assert_output --partial "${bad%%:*}: ${bad#*:}"
    done
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE pool=node pool_max=2G pool_total_max=1G"
    run lab_user srun -N1 --ext-cache=local true
    [ "$status" -ne 0 ] || fail "srun ran with pool_max above pool_total_max"
    assert_output --partial "pool_max=2147483648 bytes: larger than pool_total_max=1073741824 bytes"
    itest_plugstack "required $LAB_PLUGIN base=$ITEST_BASE pool=node"
}

@test "pool=off after pool=node: slurmd's start and each epilog empty the pool; steps neither take nor pool" {
    itest_cluster "base=$ITEST_BASE pool=node"
    # shellcheck disable=SC2016 # expanded by the step
    lab_user env SLURM_EXT_CACHE_KEY=off-later srun -N1 -w n1 --ext-cache=local \
        bash -c 'mkdir -p "$TRITON_CACHE_DIR" && touch "$TRITON_CACHE_DIR/kept-before"' ||
        fail "the step failed"
    lab_wait_settled 120 >/dev/null
    [ -n "$(keys_on n1)" ] || fail "nothing pooled on n1"
    # the admin turns the pool off: slurmd's start empties what it held
    itest_cluster "base=$ITEST_BASE pool=off"
    itest_poll 60 n1_pool_empty || fail "the pool is not emptied on n1: $(keys_on n1)"
    grep -qE "node pool: off on this node \(pool=off\): emptying what it held" "$(lab_log n1)" ||
        fail "no line says the pool is emptied: $(grep 'node pool' "$(lab_log n1)" | tail -n 4)"
    # a step now neither takes nor pools
    # shellcheck disable=SC2016 # expanded by the step
    out=$(lab_user env SLURM_EXT_CACHE_KEY=off-later srun -N1 -w n1 --ext-cache=local --ext-cache-verbose \
        bash -c 'ls "$TRITON_CACHE_DIR" 2>/dev/null | wc -l; mkdir -p "$TRITON_CACHE_DIR" && touch "$TRITON_CACHE_DIR/made-off"' 2>&1) ||
        fail "the step failed: $out"
    [[ $out == *"cold: no seed directory was named and the node pool is off on this node"* ]] || fail "not told: $out"
    lab_wait_settled 120 >/dev/null
    assert_equal "$(keys_on n1)" ""
    itest_cluster "base=$ITEST_BASE pool=node"
    itest_no_drain
}
