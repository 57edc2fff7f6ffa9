#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Turn bench/run.sh's raw data into bench/RESULTS.md (markdown on stdout).

  report.py DATA_DIR
  report.py --warm-only DATA_DIR     only the warm start table (bench/warm.sh alone)
  report.py --compile-only DATA_DIR  only the torch.compile table (bench/compile.sh alone)
  report.py --pool-only DATA_DIR     only the node pool table (bench/pool.sh alone)
  report.py --launch-only DATA_DIR   only the launch overhead (bench/run.sh --only launch)
"""
import datetime
import math
import os
import re
import statistics
import sys

WARM_ONLY = sys.argv[1] == "--warm-only"
COMPILE_ONLY = sys.argv[1] == "--compile-only"
POOL_ONLY = sys.argv[1] == "--pool-only"
LAUNCH_ONLY = sys.argv[1] == "--launch-only"
DATA = sys.argv[-1]


def path(name):
    return os.path.join(DATA, name)


def read_rows(name):
    """The rows of a whitespace-separated table with a header line."""
    with open(path(name)) as fh:
        next(fh)
        return [line.split() for line in fh if line.strip()]


def median(v):
    return statistics.median(v) if v else float("nan")


def median_ci(v):
    """Distribution-free ~95% interval of the median (order statistics)."""
    s = sorted(v)
    n = len(s)
    if n < 6:
        return None
    k = int(math.floor((n - 1.96 * math.sqrt(n)) / 2))
    return s[max(k, 0)], s[min(n - 1 - k, n - 1)]


def fmt_ci(v, f="%.3f"):
    ci = median_ci(v)
    return ("[" + f % ci[0] + ", " + f % ci[1] + "]") if ci else "n/a"


def yes(ok):
    return "**yes**" if ok else "**no**"


# ---- 5. warm start (bench/warm.sh) ---------------------------------------------
def warm_report(summary):
    """Summary rows and the section's lines, or None without warm start data."""
    if not os.path.exists(path("warm-load.tsv")) or not os.path.exists(path("warm-copy.txt")):
        return None
    load = {}
    compiled = {}
    for _, mode, load_s, wall_s, comp in read_rows("warm-load.tsv"):
        load.setdefault(mode, []).append((float(load_s), float(wall_s)))
        compiled[mode] = compiled.get(mode, 0) + int(comp)
    cold_load = median([x[0] for x in load["cold"]])
    seed_load = median([x[0] for x in load["seeded"]])
    cold_wall = median([x[1] for x in load["cold"]])
    seed_wall = median([x[1] for x in load["seeded"]])
    r_load = cold_load / seed_load if seed_load > 0 else float("inf")
    r_wall = cold_wall / seed_wall
    summary.append(("5a", "first torch `load()` in a new job: cold / seeded (`--ext-cache-seed`), ratio of "
                    "the medians of load()'s time (%d runs each, interleaved)" % len(load["cold"]),
                    "%.0fx (%.2f s / %.3f s); whole srun %.1fx" % (r_load, cold_load, seed_load, r_wall),
                    ">= 10", yes(r_load >= 10 and compiled.get("seeded", 0) == 0)))
    copy = {}
    runs = {}
    with open(path("warm-copy.txt")) as fh:
        for line in fh:
            f = line.split()
            if f[1] == "median":
                copy[f[0]] = {"runs": int(f[2]), "eng": int(f[3]), "cp": int(f[4]), "ratio": float(f[5]),
                              "files": int(f[6]), "bytes": int(f[7])}
            elif f[1] == "run":
                runs.setdefault(f[0], []).append(int(f[4]) / int(f[5]))
    for fs in ("tmpfs", "disk"):
        if fs in copy:
            summary.append(("5b" if fs == "tmpfs" else "5c",
                            "seed copy engine / `cp -a`, %d files, %.0f MiB cache-shaped tree (%s)" % (
                                copy[fs]["files"], copy[fs]["bytes"] / 1048576.0, fs),
                            "%.3f (95%% CI %s)" % (copy[fs]["ratio"], fmt_ci(runs[fs])), "<= 1.2",
                            yes(copy[fs]["ratio"] <= 1.2)))
    lines = []
    q = lines.append
    q("## 5. Warm start")
    q("")
    q("**5a.** `bench/warm.sh`: on the lab cluster, one job (`srun -N1 -w n1 --ext-cache=local "
      "--ext-cache-publish=DIR`) builds the JIT op of `tests/integration/torch` and publishes it; then, "
      "alternating the order, jobs that load it cold (`--ext-cache=local`, a fresh empty directory: "
      "torch compiles) and seeded (`--ext-cache-seed=DIR`: the plugin copies DIR in, as the user, "
      "before the task starts). `load()` is torch.utils.cpp_extension.load's own time in the task; "
      "`srun` the whole job as the user saw it (seeding included). Compiler runs: cold %d, seeded %d."
      % (compiled.get("cold", 0), compiled.get("seeded", 0)))
    q("")
    q("| mode | runs | median load() s | median srun s | all load() s |")
    q("|---|---|---|---|---|")
    for mode in ("cold", "seeded"):
        q("| %s | %d | %.3f | %.2f | %s |" % (mode, len(load[mode]), median([x[0] for x in load[mode]]),
                                             median([x[1] for x in load[mode]]),
                                             " ".join("%.3f" % x[0] for x in load[mode])))
    q("")
    if os.path.exists(path("warm-seed-log.txt")):
        with open(path("warm-seed-log.txt")) as fh:
            seeds = [ln.strip() for ln in fh if ln.strip()]
        if seeds:
            q("The seed as slurmd logged it (last run): `%s`" % seeds[-1])
            q("")
    q("**5b/5c.** `bench/warm_bench` (links the plugin's `libextc`): the seed copy engine "
      "(`extc_warm_copy_tree`: fd-relative walk, copy_file_range, modes and nanosecond times set "
      "through descriptors) against a spawned `cp -a` of the same tree (3 torch extension directories "
      "of objects and a 10 MiB .so each, 1000 Triton-like directories of 3 small files), alternating "
      "the order, a syncfs before each copy; both copies checked to hold every file.")
    q("")
    q("| fs | runs | engine median ms | cp -a median ms | engine / cp -a (median of per-run ratios) | 95% CI |")
    q("|---|---|---|---|---|---|")
    for fs in ("tmpfs", "disk"):
        if fs in copy:
            c = copy[fs]
            q("| %s | %d | %.1f | %.1f | %.3f | %s |" % (fs, c["runs"], c["eng"] / 1e6, c["cp"] / 1e6,
                                                      c["ratio"], fmt_ci(runs[fs])))
    q("")
    return lines


# ---- 6. torch.compile warm start (bench/compile.sh) -----------------------------
def compile_report(summary):
    """Summary row and the section's lines, or None without torch.compile data."""
    if not os.path.exists(path("compile.tsv")):
        return None
    runs = {}
    for _, mode, t_first, wall, hit, miss in read_rows("compile.tsv"):
        runs.setdefault(mode, []).append((float(t_first), float(wall), int(hit), int(miss)))
    env = {}
    if os.path.exists(path("compile-env.txt")):
        with open(path("compile-env.txt")) as fh:
            for line in fh:
                k, _, val = line.rstrip("\n").partition(" ")
                env[k] = val
    cold = runs.get("cold", [])
    seeded = runs.get("seeded", [])
    c_first = median([x[0] for x in cold])
    s_first = median([x[0] for x in seeded])
    c_wall = median([x[1] for x in cold])
    s_wall = median([x[1] for x in seeded])
    # the evidence is Inductor's own counters: every seeded run hit, every cold one missed
    seeded_hit = bool(seeded) and all(x[2] >= 1 and x[3] == 0 for x in seeded)
    cold_miss = bool(cold) and all(x[2] == 0 and x[3] >= 1 for x in cold)
    ratio = c_first / s_first if s_first > 0 else float("inf")
    summary.append(("6", "first torch.compile'd call (Inductor CPU backend) in a new job: cold / seeded "
                    "(`--ext-cache-seed`), ratio of the medians (%d runs each, interleaved; torch %s)"
                    % (len(cold), env.get("torch", "?")),
                    "%.1fx (%.3f s / %.3f s); whole srun %.2fx; FX graph cache: seeded runs hit %d of %d, "
                    "cold runs missed %d of %d" % (ratio, c_first, s_first, c_wall / s_wall,
                                                    sum(x[2] >= 1 and x[3] == 0 for x in seeded), len(seeded),
                                                    sum(x[2] == 0 and x[3] >= 1 for x in cold), len(cold)),
                    "reported; seeded runs hit", yes(seeded_hit and cold_miss)))
    pool = runs.get("pool", [])
    home = runs.get("home", [])
    if pool and home:
        p_first = median([x[0] for x in pool])
        h_first = median([x[0] for x in home])
        summary.append(("7d", "first torch.compile'd call in a new job from the node pool (`pool=node`): "
                        "cold / pool and pool / home (`--ext-cache=off`, Inductor's cache in the home), "
                        "medians of %d interleaved runs each (bench/compile.sh)" % len(pool),
                        "cold / pool %.2fx (%.3f s / %.3f s); pool / home %.2f (%.3f s); FX graph hits: "
                        "pool %d of %d, home %d of %d" % (
                            c_first / p_first if p_first > 0 else float("inf"), c_first, p_first,
                            p_first / h_first if h_first > 0 else float("inf"), h_first,
                            sum(x[2] >= 1 and x[3] == 0 for x in pool), len(pool),
                            sum(x[2] >= 1 and x[3] == 0 for x in home), len(home)),
                        "pool / home <= 1.2", yes(h_first > 0 and p_first / h_first <= 1.2)))
    lines = []
    q = lines.append
    q("## 6. torch.compile warm start")
    q("")
    q("`bench/compile.sh`: `tests/integration/torch/inductor.py` (a matmul and elementwise ops, "
      "`torch.compile(fn, backend=\"inductor\")`, Inductor's C++ backend on CPU) in one-rank jobs on lab "
      "node n1. One job (`--ext-cache=local --ext-cache-publish=DIR`) compiles and publishes; then, "
      "alternating the order, jobs start cold (`--ext-cache=local`, a fresh step directory) and seeded "
      "(`--ext-cache-seed=DIR`), from the node pool (`pool=node`, after one earlier job of the key: "
      "section 7's question) and from Inductor's cache in the user's home without the plugin "
      "(`--ext-cache=off`, filled once before). The first call's time is measured in the task around the first "
      "compiled call (trace, lowering, C++ compile, or an FX graph cache hit); hits and misses are "
      "Inductor's own counters (`torch._dynamo.utils.counters[\"inductor\"][\"fxgraph_cache_hit\"]`, "
      "`[\"fxgraph_cache_miss\"]`). Where: %s, %s, %s, %s. Debian 12's torch 1.13 has no "
      "torch.compile, so on this host the bench runs it in the Debian chroot of `tests/releases` with "
      "that release's Slurm and torch." % (env.get("os", "?"), env.get("slurm", "?"),
                                         "torch " + env.get("torch", "?"), env.get("compiler", "?")))
    q("")
    q("| mode | runs | median first call s | median srun s | FX graph hits / misses per run | all first calls s |")
    q("|---|---|---|---|---|---|")
    for mode, v in (("cold", cold), ("seeded", seeded), ("pool", pool), ("home", home)):
        if not v:
            continue
        q("| %s | %d | %.3f | %.2f | %s | %s |" % (
            mode, len(v), median([x[0] for x in v]), median([x[1] for x in v]),
            " ".join("%d/%d" % (x[2], x[3]) for x in v), " ".join("%.3f" % x[0] for x in v)))
    q("")
    return lines


# ---- 7. the node pool (bench/pool.sh) ---------------------------------------------
def pool_launch_rows(summary, q):
    """7b: each pool=node variant against pool=off, per-round ratios."""
    rounds = {}
    for r, variant, us in read_rows("pool-launch.tsv"):
        rounds.setdefault(r, {})[variant] = float(us) / 1000
    q("| variant | runs | median ms | ratio to pool=off (median of per-round ratios) | 95% CI | added ms |")
    q("|---|---|---|---|---|---|")
    q("| pool=off | %d | %.1f | 1 | | |" % (len(rounds), median([v["off"] for v in rounds.values()])))
    for variant, what in (("derived", "the key derived from the environment, the default; it holds nothing"),
                          ("newkey", "a key never seen before; its directory is made in the step")):
        pairs = [(v[variant], v["off"]) for v in rounds.values() if variant in v and "off" in v]
        ratios = [a / b for a, b in pairs]
        added = median([a - b for a, b in pairs])
        q("| pool=node, %s | %d | %.1f | %.3f | %s | %+.1f |" % (
            what, len(pairs), median([a for a, _ in pairs]), median(ratios), fmt_ci(ratios), added))
        summary.append(("7b" if variant == "derived" else "7b'",
                        "step launch with an empty pool, `srun -N3 -n6 --ext-cache=local true`: "
                        "pool=node (%s) / pool=off, %d interleaved rounds" % (what, len(pairs)),
                        "%.3f (95%% CI %s)" % (median(ratios), fmt_ci(ratios)), "<= 1.02",
                        yes(median(ratios) <= 1.02)))


def pool_report(summary):
    """Summary rows and the section's lines, or None without node pool data."""
    if not all(os.path.exists(path(n)) for n in ("pool-load.tsv", "pool-launch.tsv", "pool-seed.tsv",
                                                 "pool-seed.txt")):
        return None
    load = {}
    for _, mode, load_s, wall_s, comp in read_rows("pool-load.tsv"):
        load.setdefault(mode, []).append((float(load_s), float(wall_s), int(comp)))
    ml = {m: median([x[0] for x in v]) for m, v in load.items()}
    mw = {m: median([x[1] for x in v]) for m, v in load.items()}
    lines = []
    q = lines.append
    q("## 7. Node pool")
    q("")
    q("`bench/pool.sh`, on lab node n1 with `pool=node`. 7a: the first `load()` of the JIT op in a new job "
      "when the same environment ran on the node before (pool), with a key never seen (cold, an empty "
      "private directory), and with `--ext-cache=off` and `TORCH_EXTENSIONS_DIR` in the user's home built "
      "once before (home: the world without the plugin), interleaved. `load()`'s own time is printed by "
      "extload.py to 0.01 s, so a warm `load()` sits on that floor: the whole srun is the conservative "
      "figure. 7b: the launch of `srun -N3 -n6 --ext-cache=local true` with `pool=node` and nothing in "
      "the pool for the step's key, against `pool=off`, rounds in rotating order. 7c: a warm start "
      "by rename against a cold start, 2000 and 20000 files (below).")
    q("")
    q("| measure | pool | cold | home (no plugin) | cold / pool | pool / home |")
    q("|---|---|---|---|---|---|")
    q("| first `load()` (s, median) | %.3f | %.3f | %.3f | **%.1fx** | **%.2f** |" % (
        ml["pool"], ml["cold"], ml["home"], ml["cold"] / ml["pool"], ml["pool"] / ml["home"]))
    q("| whole srun (s, median) | %.3f | %.3f | %.3f | %.1fx | %.2f |" % (
        mw["pool"], mw["cold"], mw["home"], mw["cold"] / mw["pool"], mw["pool"] / mw["home"]))
    q("| compiler runs per job | %s | %s | %s | | |" % tuple(
        " ".join(str(x[2]) for x in load[m]) for m in ("pool", "cold", "home")))
    q("")
    summary.append(("7a", "first torch `load()` in a new job on a node that ran the environment before: "
                    "cold private / pool (`pool=node`), %d interleaved runs each" % len(load["pool"]),
                    "%.0fx (%.2f s / %.2f s); whole srun %.1fx" % (
                        ml["cold"] / ml["pool"], ml["cold"], ml["pool"], mw["cold"] / mw["pool"]),
                    ">= 10", yes(mw["cold"] / mw["pool"] >= 10 and ml["cold"] / ml["pool"] >= 10)))
    summary.append(("7a'", "the same: pool / the user's own home cache without the plugin",
                    "%.2f (`load()` %.2f s / %.2f s); whole srun %.2f" % (
                        ml["pool"] / ml["home"], ml["pool"], ml["home"], mw["pool"] / mw["home"]),
                    "<= 1.2", yes(ml["pool"] / ml["home"] <= 1.2 and mw["pool"] / mw["home"] <= 1.2)))
    pool_launch_rows(summary, q)
    q("")
    # 7c: seeded against cold, per filesystem and size, medians of the rounds
    starts = {}
    for fs, files, mode, _, us in read_rows("pool-seed.tsv"):
        starts.setdefault((fs, int(files)), {}).setdefault(mode, []).append(int(us) / 1e6)
    takes = {}
    with open(path("pool-seed.txt")) as fh:
        for line in fh:
            m = re.search(r"took (\d+) entries by rename \(no copy\) in ([0-9.]+) s$", line)
            if m:
                takes.setdefault(line.split()[0], []).append(float(m.group(2)))
    q("7c: a warm start by rename. `srun -N1 -w n1 --ext-cache=local true`, seeded from a key of N "
      "empty files in 20 directories against a key never seen (cold), interleaved rounds; whole "
      "srun wall times.")
    q("")
    q("| base on | files | rounds | seeded median s | cold median s | seeded - cold s |")
    q("|---|---|---|---|---|---|")
    for (fs, files), v in sorted(starts.items()):
        if "seeded" not in v or "cold" not in v:
            continue
        d = median(v["seeded"]) - median(v["cold"])
        q("| %s | %d | %d | %.3f | %.3f | %+.3f |" % (fs, files, len(v["seeded"]), median(v["seeded"]),
                                                    median(v["cold"]), d))
        summary.append(("7c", "a step seeded from the pool with %d files starts within 0.2 s of a cold "
                        "one, base on %s (seeded - cold, medians)" % (files, fs),
                        "%+.3f s" % d, "<= 0.2 s", yes(d <= 0.2)))
    for fs, v in sorted(takes.items()):
        q("")
        q("The take itself (the plugin's log), base on %s: median %.4f s over %d steps (all: %s)." % (
            fs, median(v), len(v), " ".join("%.4f" % x for x in v)))
    if not starts:
        q("Warm start: no rounds were recorded (see pool-slurmd-n1.log).")
    return lines


def print_one_section(report, what):
    """The summary rows and the section of one benchmark run alone."""
    rows = []
    section = report(rows)
    if section is None:
        sys.exit("report.py: no %s data in %s" % (what, DATA))
    print("| # | measure | result | target | met |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| %s |" % " | ".join(row))
    print("")
    print("\n".join(section))
    sys.exit(0)


if COMPILE_ONLY:
    print_one_section(compile_report, "torch.compile")
if WARM_ONLY:
    print_one_section(warm_report, "warm start")
if POOL_ONLY:
    print_one_section(pool_report, "node pool")


machine = {}
with open(path("machine.txt")) as fh:
    for line in fh:
        k, _, val = line.rstrip("\n").partition(": ")
        machine[k] = val
durations = {}
if os.path.exists(path("durations.txt")):
    with open(path("durations.txt")) as fh:
        for line in fh:
            k, val = line.split()
            durations[k] = int(val)

out = []
p = out.append
summary = []

# ---- 1. launch ------------------------------------------------------------------
LAUNCH_VARIANTS = ("none", "off", "local1", "local", "stub", "stub-env")
LAUNCH_TARGET = 1.01


def launch_report(summary):
    """Summary rows and the lines of section 1."""
    launch = {}   # (fs, variant) -> [ms]
    rounds = {}   # (fs, round) -> {variant: ms}
    for fs, r, v, us in read_rows("launch.tsv"):
        launch.setdefault((fs, v), []).append(int(us) / 1000.0)
        rounds.setdefault((fs, int(r)), {})[v] = int(us) / 1000.0

    def paired(fs, v):
        return [x[v] / x["none"] for (f, _), x in rounds.items() if f == fs and v in x and "none" in x]

    def diff(fs, v):
        return [x[v] - x["none"] for (f, _), x in rounds.items() if f == fs and v in x and "none" in x]

    for row, fs, what in (("1", "disk", "base on the lab nodes' disk"),
                          ("1b", "tmpfs", "base on a tmpfs in each node")):
        if not paired(fs, "local"):
            continue
        r = median(paired(fs, "local"))
        summary.append((row, "step launch: `srun -N3 -n6 true`, plugin loaded with `--ext-cache=local` / "
                        "not loaded (%s), median of %d interleaved pairs' ratios" % (what, len(paired(fs, "local"))),
                        "%.3f (95%% CI %s), %+.1f ms" % (r, fmt_ci(paired(fs, "local")), median(diff(fs, "local"))),
                        "<= %.2f" % LAUNCH_TARGET, yes(r <= LAUNCH_TARGET)))
    for row, v, what in (("1c", "stub", "a stand-in SPANK plugin with an option and nothing else "
                                        "(bench/launch_stub.c)"),
                         ("1d", "stub-env", "the stand-in setting as many variables as `local` exports "
                                            "(slurmstepd's spank_setenv alone)")):
        if paired("disk", v):
            summary.append((row, "diagnostic, step launch: %s / not loaded (disk)" % what,
                            "%.3f (95%% CI %s), %+.1f ms" % (median(paired("disk", v)), fmt_ci(paired("disk", v)),
                                                          median(diff("disk", v))), "reported", "-"))
    if paired("ext4", "local"):
        summary.append(("1e", "diagnostic, step launch: `--ext-cache=local` / not loaded, base on a "
                        "journaled ext4 of each node's own (a loop image)",
                        "%.3f (95%% CI %s), %+.1f ms" % (median(paired("ext4", "local")),
                                                      fmt_ci(paired("ext4", "local")),
                                                      median(diff("ext4", "local"))), "reported", "-"))
    lines = []
    q = lines.append
    q("## 1. Step launch overhead")
    q("")
    q("`srun -N3 -n6 true` as the lab user on the 3-node lab cluster (3 slurmd on this machine), timed "
      "inside the user's shell around srun. Before each run: wait until every node is idle (the previous "
      "job's epilog done, and the background emptier it started), then write plugstack.conf for the "
      "variant (steps read it at launch). Variants: **none** (empty plugstack.conf: no plugin loaded), "
      "**local** (plugin loaded, `--ext-cache=local`: the step's directory made and removed on every "
      "node), and as diagnostics **off** (plugin loaded, `default=off`, no option: it only parses its "
      "arguments), **local1** (`local` with `vars=TORCH_EXTENSIONS_DIR`: one cache variable), **stub** "
      "(bench/launch_stub.c instead: a SPANK plugin that registers an option, given to srun, and does "
      "nothing), **stub-env** (the same stub setting as many variables in user_init as `local` exports: "
      "what slurmstepd's spank_setenv costs by itself). Each round runs every variant once, in the "
      "orders of a Williams design (each variant follows each other one equally often); a ratio is the "
      "median over rounds of the variant's time over **none**'s in the same round, with a "
      "distribution-free 95% interval. slurmd runs with the plugin (for its epilog) and "
      "`SlurmdDebug=verbose` (the plugin logs its own timings). **disk**: the base on each node's "
      "/var/tmp as the lab has it (this machine's root filesystem); **tmpfs**: then each node's /var/tmp "
      "is a tmpfs inside its mount namespace, same cluster, same binaries; **ext4**: then a journaled "
      "ext4 of each node's own (a 512 MiB loop image made by `mkfs.ext4` with its defaults, mounted "
      "over that tmpfs), a disk filesystem as nodes usually have one, where this machine's root ext4 "
      "has no journal. Each variant runs twice first, as a warm-up.")
    q("")
    q("| base | variant | runs | median ms | min ms | max ms | ratio to none (median of per-round ratios) | 95% CI | added ms (median of per-round differences) |")
    q("|---|---|---|---|---|---|---|---|---|")
    for fs in ("disk", "tmpfs", "ext4"):
        for v in LAUNCH_VARIANTS:
            xs = launch.get((fs, v))
            if not xs:
                continue
            ratio = "1" if v == "none" else "%.3f" % median(paired(fs, v))
            ci = "" if v == "none" else fmt_ci(paired(fs, v))
            add = "" if v == "none" else "%+.1f" % median(diff(fs, v))
            q("| %s | %s | %d | %.1f | %.1f | %.1f | %s | %s | %s |" % (fs, v, len(xs), median(xs), min(xs),
                                                                  max(xs), ratio, ci, add))
    q("")
    own = {}
    for f in sorted(os.listdir(DATA)):
        if not f.startswith("launch-slurmd-"):
            continue
        fs = "disk"
        created = {}
        with open(path(f), errors="replace") as fh:
            for line in fh:
                if line.startswith("==== bench: tmpfs"):
                    fs = "tmpfs"
                if line.startswith("==== bench: ext4"):
                    fs = "ext4"
                m = re.search(r"ext-cache: job (\d+) step 0: created \S+ .* in ([0-9.]+) ms", line)
                if m:
                    created[m.group(1)] = float(m.group(2))
                m = re.search(r"ext-cache: job (\d+) step 0: removed \S+: removed (\d+),.* in ([0-9.]+) ms",
                              line)
                if m and m.group(1) in created:
                    # local leaves torch_kernels twice (in the leaf and in container/), local1 neither
                    v = "local1" if int(m.group(2)) < 5 else "local"
                    own.setdefault((fs, v), []).append((created[m.group(1)], float(m.group(3))))
    if own:
        q("The plugin's own time in each slurmstepd, from its log lines (`created ... in X ms` before the "
          "tasks start, `removed ... in Y ms` after they have ended), per step and node:")
        q("")
        q("| base | variant | steps x nodes | make directories: median ms | max | remove at step end: median ms | max |")
        q("|---|---|---|---|---|---|---|")
        for fs in ("disk", "tmpfs", "ext4"):
            for v in ("local1", "local"):
                xs = own.get((fs, v))
                if xs:
                    q("| %s | %s | %d | %.3f | %.3f | %.3f | %.3f |" % (
                        fs, v, len(xs), median([c for c, _ in xs]), max(c for c, _ in xs),
                        median([r for _, r in xs]), max(r for _, r in xs)))
        q("")
    q("Where `local`'s added milliseconds go, hook by hook and in CPU time, before and after the changes "
      "made for them: bench/RESULTS-launch.md (measured by hand with an instrumented build; dated, with "
      "its commits and commands). In short: slurmstepd ends a node's part of the step 100 ms after the "
      "first of its tasks exits (Slurm's `_wait_for_all_tasks`), so what the plugin adds is what delays "
      "the first task's exec on the slowest node: its hooks before exec, and the CPU it takes from the "
      "other nodes on this 2-core machine. The removal at step end runs after the tasks' exit has been "
      "sent to srun, but the step, and so the job, stays on the node until it is done: see 3b.")
    q("")
    return lines


if LAUNCH_ONLY:
    print("# spank-ext-cache: step launch overhead (`bench/run.sh --only launch`)")
    print("")
    with open(path("machine.txt")) as fh:
        for line in fh:
            print("- " + line.rstrip("\n"))
    print("")
    print_one_section(launch_report, "launch")

launch_section = launch_report(summary)

# ---- 2. removal -----------------------------------------------------------------
rm_runs = {}
rm_median = {}
with open(path("rm.txt")) as fh:
    for line in fh:
        f = line.split()
        if f[1] == "run":
            fs, shape, eng, rmv, entries = f[0], f[2], int(f[5]), int(f[6]), int(f[7])
            rm_runs.setdefault((fs, shape), []).append((eng, rmv, entries))
        elif f[1] == "median":
            fs, shape = f[0], f[2]
            rm_median[(fs, shape)] = {"runs": int(f[3]), "eng": int(f[4]), "rm": int(f[5]),
                                      "ratio": float(f[6]), "spawn": int(f[7])}
SHAPES = {"triton": "(a) Triton-like: 20000 dirs x 5 small files",
          "torch": "(b) torch-extension-like: 3 dirs, build.ninja, objects, 50 MB .so",
          "chain": "(c) 10000-deep directory chain"}
for shape, target in (("triton", 1.0), ("torch", None), ("chain", 1.0)):
    key = ("tmpfs", shape)
    if key not in rm_median:
        continue
    ratios = [e / r for e, r, _ in rm_runs[key]]
    m = rm_median[key]["ratio"]
    summary.append(("2" + "abc"["triton torch chain".split().index(shape)],
                    "removal %s, engine / `rm -rf` (tmpfs)" % SHAPES[shape][4:],
                    "%.3f (95%% CI %s)" % (m, fmt_ci(ratios)),
                    "<= 1.0" if target else "none", yes(m <= target) if target else "-"))

# ---- 3. epilog ------------------------------------------------------------------
TS = r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] "


def ts_ms(s):
    d = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f")
    return d.timestamp() * 1000.0


events = {}
with open(path("slurmd-n1-epilog.log"), errors="replace") as fh:
    for line in fh:
        m = re.match(TS + r"debug:  _rpc_terminate_job: uid = \d+ JobId=(\d+)$", line)
        if m:
            events.setdefault(m.group(2), {})["terminate"] = ts_ms(m.group(1))
            continue
        m = re.match(TS + r"debug:  JobId=(\d+): sent epilog complete msg", line)
        if m:
            events.setdefault(m.group(2), {})["complete"] = ts_ms(m.group(1))
            continue
        m = re.match(TS + r"\[(\d+)\.0\] task \d+ \(\d+\) exited with exit code", line)
        if m:
            events.setdefault(m.group(2), {})["task_exit"] = ts_ms(m.group(1))
            continue
        m = re.match(TS + r"\[(\d+)\.0\] ext-cache: job \d+ step 0: removed \S+: removed (\d+),.* in ([0-9.]+) ms", line)
        if m:
            events.setdefault(m.group(2), {})["step_rm_ms"] = float(m.group(4))
            events[m.group(2)]["step_rm_n"] = int(m.group(3))
            continue
        m = re.match(TS + r"debug:  completed epilog for jobid (\d+)", line)
        if m:
            events.setdefault(m.group(2), {})["script_end"] = ts_ms(m.group(1))
            continue
        m = re.match(TS + r"ext-cache: job (\d+): epilog: moved the job's tree to the trash in ([0-9.]+) ms", line)
        if m:
            events.setdefault(m.group(2), {})["moved_ms"] = float(m.group(3))
            continue
        m = re.match(TS + r"ext-cache: job (\d+): emptied the trash after the epilog: removed (\d+), "
                     r"could not remove (\d+).* in ([0-9.]+) ms", line)
        if m:
            e = events.setdefault(m.group(2), {})
            e["emptied"] = int(m.group(3))
            e["empty_failed"] = int(m.group(4))
            e["empty_ms"] = float(m.group(5))
ep = {}
ep_rounds = {}
ep_files = {}
with open(path("epilog-jobs.tsv")) as fh:
    next(fh)
    for line in fh:
        r, v, files, job = line.split()
        e = events.get(job, {})
        if "terminate" not in e or "complete" not in e:
            sys.exit("report: no epilog timestamps for job %s" % job)
        e["wall"] = e["complete"] - e["terminate"]
        ep.setdefault(v, []).append(e)
        ep_rounds.setdefault(int(r), {})[v] = e
        ep_files[v] = int(files)
ep_diff = [x["big"]["wall"] - x["empty"]["wall"] for x in ep_rounds.values() if len(x) == 2]
ep_added = median([e["wall"] for e in ep["big"]]) - median([e["wall"] for e in ep["empty"]])
summary.append(("3", "job epilog, slurmd's terminate request to \"epilog complete\" sent: "
                "%d-file tree minus empty tree" % ep_files["big"],
                "%+.0f ms (median of paired differences; 95%% CI %s ms)" % (median(ep_diff), fmt_ci(ep_diff, "%+.0f")),
                "< 50 ms", yes(median(ep_diff) < 50 and ep_added < 50)))

# ---- 4. footprint ---------------------------------------------------------------
fp = {"plugin": [], "none": []}
with open(path("footprint.tsv")) as fh:
    hdr = next(fh).split()
    for line in fh:
        row = dict(zip(hdr, line.split()))
        for k in hdr:
            if k not in ("mode", "got", "step"):
                row[k] = int(row[k])
        fp[row["mode"]].append(row)
all_rows = sorted(fp["plugin"] + fp["none"], key=lambda r: r["i"])
got_ok = all(r["got"] == "local" for r in fp["plugin"]) and all(r["got"] == "none" for r in fp["none"])


def growth(rows, key, k=100, avg=median):
    k = min(k, max(len(rows) // 4, 1))
    first = avg([r[key] for r in rows[:k]])
    last = avg([r[key] for r in rows[-k:]])
    return first, last, k


# Per-step slurmstepd: a fresh process each step, whose descriptor count varies by a few with
# Slurm's own connections; growth is the mean of the last k samples minus the mean of the first k.
# The long-lived processes must not grow at all in descriptors.
fp_lines = []
no_growth = True
for mode in ("plugin", "none"):
    rows = fp[mode]
    for key, unit, slack in (("stepd_rss_kb", "kB", 64), ("stepd_fds", "fds", 0.5)):
        first, last, k = growth(rows, key, avg=statistics.mean)
        grew = last - first > slack
        no_growth &= not grew
        fp_lines.append((mode, key, first, last, k, min(r[key] for r in rows), max(r[key] for r in rows), unit))
long_lived = []
for key, unit, slack in (("slurmd_rss_kb", "kB", None), ("slurmd_fds", "fds", 0),
                         ("batch_rss_kb", "kB", 0), ("batch_fds", "fds", 0)):
    first, last, k = growth(all_rows, key)
    if slack is not None:
        no_growth &= not (last - first > slack)
    long_lived.append((key, first, last, k, max(r[key] for r in all_rows), unit))
rss_ratio = median([r["stepd_rss_kb"] for r in fp["plugin"]]) / median([r["stepd_rss_kb"] for r in fp["none"]])
fd_diff = median([r["stepd_fds"] for r in fp["plugin"]]) - median([r["stepd_fds"] for r in fp["none"]])
summary.append(("4", "footprint across %d + %d interleaved steps: growth of slurmstepd RSS and descriptors "
                "(per-step and the batch step's; slurmd's descriptors)" % (len(fp["plugin"]), len(fp["none"])),
                "none; per-step slurmstepd with/without: RSS x%.3f, descriptors %+d" % (rss_ratio, fd_diff),
                "no growth", yes(no_growth and got_ok)))

warm_section = warm_report(summary)
compile_section = compile_report(summary)
pool_section = pool_report(summary)

# ---- the document ---------------------------------------------------------------
p("# spank-ext-cache benchmark results")
p("")
p("Generated by `bench/run.sh` (also `make bench`) on %s; do not edit, rerun it. "
  "It took %s s (launch %s, removal %s, epilog %s, footprint %s, warm start %s, torch.compile %s, "
  "node pool %s)." % (
      machine.get("date", "?"), durations.get("total", "?"), durations.get("launch", "?"),
      durations.get("removal", "?"), durations.get("epilog", "?"), durations.get("footprint", "?"),
      durations.get("warm", "?"), durations.get("compile", "?"), durations.get("pool", "?")))
p("Every figure compared with a target is a ratio or a difference of two things measured in the "
  "same run, interleaved (alternating order), as a median over repeated runs; the 95% intervals "
  "are distribution-free intervals of that median. Absolute times are reported for reference only: "
  "this machine is shared and noisy.")
p("")
p("## Machine")
p("")
p("| | |")
p("|---|---|")
for k in ("kernel", "os", "cpu", "cores", "memory", "slurm", "rm", "compiler", "python", "commit",
          "work fs", "disk fs", "ext4 fs", "load before", "load after", "params"):
    if k in machine:
        p("| %s | %s |" % (k, machine[k].replace("|", "\\|")))
p("")
p("## Summary")
p("")
p("| # | measure | result | target | met |")
p("|---|---|---|---|---|")
for row in sorted(summary, key=lambda row: row[0]):
    p("| %s |" % " | ".join(row))
p("")

out.extend(launch_section)
p("## 2. Removal engine vs `rm -rf`")
p("")
p("`bench/rm_bench` (links the plugin's `libextc`): every run builds two identical trees afresh, "
  "`syncfs`, removes one with `extc_remove_tree_at` (default limits and a deadline, as the epilog's "
  "emptier) and the other with `rm -rf` spawned (its exec counted; the median spawn cost of "
  "`rm -rf` on a missing name is listed), with a `syncfs` before each; the order alternates. Both "
  "removals are checked to leave nothing. **tmpfs**: a private tmpfs, where the cost is the "
  "walk itself (CPU and system calls). **disk**: the directory given by `EXTC_BENCH_WORK`, on this "
  "machine's root filesystem.")
p("")
p("| fs | tree | entries | runs | engine median ms | rm -rf median ms | engine / rm (median of per-run ratios) | 95% CI | rm spawn ms |")
p("|---|---|---|---|---|---|---|---|---|")
for (fs, shape), m in sorted(rm_median.items(), key=lambda kv: (kv[0][0] != "tmpfs", "triton torch chain".split().index(kv[0][1]))):
    runs = rm_runs[(fs, shape)]
    ratios = [e / r for e, r, _ in runs]
    p("| %s | %s | %d | %d | %.1f | %.1f | %.3f | %s | %.1f |" % (
        fs, SHAPES[shape], runs[0][2], m["runs"], m["eng"] / 1e6, m["rm"] / 1e6, m["ratio"],
        fmt_ci(ratios), m["spawn"] / 1e6))
p("")
if any(fs == "disk" for fs, _ in rm_median):
    p("On this machine's root filesystem (ext4 without a journal, mounted `discard`) every freed block "
      "costs a synchronous discard (`ext4_free_blocks` -> `blkdev_issue_discard` -> `submit_bio_wait`, "
      "about 1.5-3 ms each, seen in `/proc/PID/stack`): removing a tree there is bound by the device for "
      "any remover (a 10000-deep chain takes about 25 s with either), so only the tree with few, large "
      "extents is run on disk (`BENCH_RM_DISK_SHAPES`).")
    p("")

p("## 3. Job epilog wall time")
p("")
big = ep["big"]
emp = ep["empty"]
p("A one-node job (`srun -N1 -w n1 --ext-cache=job`) whose task writes %d empty files (100 directories "
  "of 1000) into its `TRITON_CACHE_DIR`, against the same job writing none; %d rounds, order "
  "alternating, each after the previous epilog and emptier have finished. Wall time from slurmd's "
  "log (`SlurmdDebug=debug`, millisecond stamps): from `_rpc_terminate_job` (the epilog starts) to "
  "`sent epilog complete msg` (slurmctld has answered: the node is idle again); also to "
  "`completed epilog` (the `slurmstepd spank epilog` process has exited) and the plugin's own `moved the job's tree to the trash in X ms`. n1's /var/tmp (the base) is a "
  "tmpfs in n1's mount namespace: on this machine's root ext4, creating 100000 files after a mass "
  "removal takes minutes (ext4's `recently_deleted` inode scan, without a journal) and emptying them "
  "minutes more (discards), which would make 11 rounds take hours; the rename that takes the tree "
  "out of the epilog's path does not depend on the filesystem's speed." % (ep_files["big"], len(ep_rounds)))
p("")
p("| tree | median ms terminate -> epilog complete | min | max | median ms terminate -> spank epilog script done | plugin's move median ms | background emptier median ms (after the epilog) |")
p("|---|---|---|---|---|---|---|")
for v, rows in (("%d files" % ep_files["big"], big), ("empty", emp)):
    walls = [e["wall"] for e in rows]
    script = [e["script_end"] - e["terminate"] for e in rows if "script_end" in e]
    moved = [e["moved_ms"] for e in rows if "moved_ms" in e]
    emptied = [e["empty_ms"] for e in rows if "empty_ms" in e]
    p("| %s | %.0f | %.0f | %.0f | %.0f | %.3f | %s |" % (
        v, median(walls), min(walls), max(walls), median(script), median(moved),
        "%.0f (removed %d entries, could not remove %d)" % (
            median(emptied), median([e["emptied"] for e in rows if "emptied" in e]),
            max([e["empty_failed"] for e in rows if "empty_failed" in e] or [0])) if emptied else "-"))
p("")
p("Added by the big tree: **%+.0f ms** (median of the per-round differences; difference of the medians "
  "%+.0f ms). slurmd polls for the end of the epilog script every 10, 20, 40 ... ms "
  "(`waitpid_timeout`), so epilog times come in those steps." % (median(ep_diff), ep_added))
p("")

stepend = {}
if os.path.exists(path("stepend-jobs.tsv")):
    with open(path("stepend-jobs.tsv")) as fh:
        next(fh)
        for line in fh:
            r, v, files, job = line.split()
            e = events.get(job, {})
            if "task_exit" in e and "complete" in e:
                e["held"] = e["complete"] - e["task_exit"]
                stepend.setdefault(v, []).append(e)
if stepend.get("local") and stepend.get("job"):
    p("### 3b. The same tree in a `local` step")
    p("")
    p("The same %d-file job, once with `--ext-cache=job` (the tree waits for the job epilog, which moves "
      "it to the trash) and once with `--ext-cache=local` (slurmstepd removes the step's directory "
      "when the step ends, with the engine, in place), %d rounds each, alternating. Measured in slurmd's "
      "log from the step's task exiting to the epilog's completion sent to slurmctld: how long the "
      "node stays allocated to the job after its work is done." % (ep_files["big"], len(stepend["local"])))
    p("")
    p("| step mode | task exit -> node idle, median ms | min | max | removal in slurmstepd at step end, median ms |")
    p("|---|---|---|---|---|")
    for v in ("job", "local"):
        rows = stepend[v]
        held = [e["held"] for e in rows]
        rm_ms = [e["step_rm_ms"] for e in rows if "step_rm_ms" in e]
        p("| %s | %.0f | %.0f | %.0f | %s |" % (v, median(held), min(held), max(held),
                                             "%.0f" % median(rm_ms) if rm_ms else "-"))
    p("")
    p("In `local` mode the removal at step end is synchronous in slurmstepd (`extc_slurmstepd_exit` -> "
      "`extc_tree_remove_leaf`): the node stays with the job for as long as the removal takes (here on "
      "tmpfs; on a disk where every freed block costs a discard, minutes). No target of the issue covers it.")
    p("")

p("## 4. Footprint across steps")
p("")
p("One batch job on n1 runs %d sequential steps (`srun -n1`), alternating one by one between the plugin "
  "loaded (`--ext-cache=local`) and not loaded (empty plugstack.conf, switched between steps). Each "
  "task hands its slurmstepd's pid to a root sampler (`bench/footprint.py`) through a FIFO and waits "
  "while the sampler reads that slurmstepd's VmRSS and open descriptors, and those of n1's slurmd and "
  "of the job's batch slurmstepd (both live through every step; the batch step has the plugin loaded). "
  "Growth: the first k samples against the last k (means for the per-step slurmstepd, a new process "
  "every step whose descriptor count varies with Slurm's own connections; medians for the two "
  "long-lived processes). Criterion: per-step slurmstepd, means grow by at most 64 kB and 0.5 "
  "descriptor; batch slurmstepd and slurmd, no descriptor more, batch slurmstepd no kB more. "
  "slurmd's RSS is reported, not judged: the plugin runs no code in slurmd per step (only at its "
  "start and exit; the job epilog is a separate `slurmstepd spank epilog` process). Every plugin step got its "
  "directory and no other did: %s." % (len(all_rows), "yes" if got_ok else "**NO**"))
p("")
p("| process | steps | first k | last k | min | max | unit |")
p("|---|---|---|---|---|---|---|")
for mode, key, first, last, k, lo, hi, unit in fp_lines:
    p("| per-step slurmstepd, %s (%s) | %d (k=%d) | %.1f | %.1f | %d | %d | %s |" % (
        "with plugin" if mode == "plugin" else "without plugin", key.split("_")[1],
        len(fp[mode]), k, first, last, lo, hi, unit))
for key, first, last, k, hi, unit in long_lived:
    who = "slurmd (n1)" if key.startswith("slurmd") else "batch step's slurmstepd"
    p("| %s (%s) | %d (k=%d) | %d | %d | - | %d | %s |" % (who, key.split("_")[1], len(all_rows), k, first, last, hi, unit))
p("")
p("Per-step slurmstepd with / without the plugin: RSS ratio %.3f (medians %d / %d kB), descriptors %+d "
  "(the plugin holds the job's directory open, locked shared, while the step runs: that is how the "
  "leftover sweep knows the job is alive on the node)." % (
      rss_ratio, median([r["stepd_rss_kb"] for r in fp["plugin"]]),
      median([r["stepd_rss_kb"] for r in fp["none"]]), fd_diff))
p("")
if warm_section is not None:
    out.extend(warm_section)
if compile_section is not None:
    out.extend(compile_section)
if pool_section is not None:
    out.append("")
    out.extend(pool_section)
print("\n".join(out))
