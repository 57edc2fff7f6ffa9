#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""torch.compile a small function with Inductor's CPU backend, call it once,
and report what this rank's compile did and where it left its caches.

Usage: inductor.py [BARRIER_DIR [NRANKS]]

With BARRIER_DIR, every rank creates BARRIER_DIR/<rank> after importing
torch and waits (bounded, 300 s) until NRANKS files are there, so that all
ranks look their graph up in the cache at about the same moment: in a cold
step the two ranks of a node both miss (each compile takes seconds, the
barrier releases them within a fraction of one).

The function is a few elementwise ops around a matmul on CPU tensors,
compiled with torch.compile(fn, backend="inductor") and called once: the
first call traces, lowers and compiles (Inductor's C++ backend: a .cpp
compiled by $CXX into a .so), or finds the graph in the FX graph cache.

What is reported comes from Inductor itself:
  * counters: torch._dynamo.utils.counters["inductor"]["fxgraph_cache_hit"],
    ["fxgraph_cache_miss"] and ["fxgraph_cache_bypass"] (torch/_inductor/
    codecache.py, FxGraphCache.load_with_key), and the AOT-autograd cache's
    counters["aot_autograd"]["autograd_cache_hit" / "_miss" / "_bypass"]
    (torch/_functorch/_aot_autograd/autograd_cache.py);
  * the directory Inductor used: its own cache_dir() (torch/_inductor/
    runtime/cache_dir_utils.py), and what that directory holds after the
    call: entries under fxgraph/ and aotautograd/, generated .cpp and .so
    files elsewhere in it, files under locks/;
  * whether Inductor's default directory, tempfile.gettempdir()/
    torchinductor_<user>, exists on this node after the call.

The last line, on stdout, is "RESULT key=value ..." (values have no spaces).
"""
import os
import socket
import sys
import time

T0 = time.time()
BARRIER = sys.argv[1] if len(sys.argv) > 1 else None
NRANKS = int(sys.argv[2]) if len(sys.argv) > 2 else 0

import torch  # noqa: E402

T_IMPORT = time.time() - T0

if not hasattr(torch, "compile"):
    print(f"RESULT node={os.environ.get('SLURMD_NODENAME') or socket.gethostname()} "
          f"rank={os.environ.get('SLURM_PROCID', '-')} torch={torch.__version__} compile=no", flush=True)
    sys.exit(0)

from torch._dynamo.utils import counters  # noqa: E402

try:
    from torch._inductor.runtime.cache_dir_utils import cache_dir, default_cache_dir
except ImportError:  # torch < 2.4
    from torch._inductor.utils import cache_dir, default_cache_dir  # noqa: F401

try:
    import torch._functorch.config as functorch_config

    AUTOGRAD_CACHE = int(bool(getattr(functorch_config, "enable_autograd_cache", False)))
except ImportError:
    AUTOGRAD_CACHE = 0


try:
    import torch._inductor.config as inductor_config

    COMPILE_THREADS = inductor_config.compile_threads
except (ImportError, AttributeError):
    COMPILE_THREADS = "-"


def fn(x, w, b):
    y = torch.relu(x @ w + b)
    return torch.sigmoid(y) * 2.0 - torch.tanh(y) + y * y


compiled = torch.compile(fn, backend="inductor")
torch.manual_seed(0)
x = torch.randn(64, 32)
w = torch.randn(32, 16)
b = torch.randn(16)

rank = os.environ.get("SLURM_PROCID", "0")
waited = 0.0
if BARRIER:
    t = time.time()
    open(os.path.join(BARRIER, rank), "w").close()
    while len(os.listdir(BARRIER)) < NRANKS:
        if time.time() - t > 300:
            print(f"barrier: {len(os.listdir(BARRIER))} of {NRANKS} ranks after 300 s", file=sys.stderr)
            sys.exit(3)
        time.sleep(0.02)
    waited = time.time() - t

t = time.time()
out = compiled(x, w, b)
T_FIRST = time.time() - t
t = time.time()
compiled(x, w, b)
T_SECOND = time.time() - t
ok = int(torch.allclose(out, fn(x, w, b), rtol=1e-4, atol=1e-4))

cdir = cache_dir()


def tree(top):
    """(fxgraph entries, aotautograd entries, .cpp files, .so files, .so files
    written since this rank started, lock files, locks/ files)."""
    fx = aot = cpp = so = so_new = lock = locks = 0
    for d, dirs, files in os.walk(top):
        rel = os.path.relpath(d, top)
        first = rel.split(os.sep)[0]
        for f in files:
            if first == "fxgraph":
                fx += 1
            elif first == "aotautograd":
                aot += 1
            elif first == "locks":
                locks += 1
            if f.endswith(".cpp"):
                cpp += 1
            elif f.endswith(".so"):
                so += 1
                so_new += os.stat(os.path.join(d, f)).st_mtime >= T0
            if f.endswith(".lock") or f == "lock":
                lock += 1
    return fx, aot, cpp, so, so_new, lock, locks


fx, aot, cpp, so, so_new, lock, locks = tree(cdir)
top = ",".join(sorted(e for e in os.listdir(cdir) if not (len(e) == 2 and e.isalnum()))) or "-"
ind = counters["inductor"]
aotc = counters["aot_autograd"]


def env(name):
    return os.environ.get(name) or "-"


fields = {
    "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
    "rank": rank,
    "job": env("SLURM_JOB_ID"),
    "step": env("SLURM_STEP_ID"),
    "torch": torch.__version__,
    "compile": "yes",
    "mode": env("SLURM_EXT_CACHE_MODE"),
    "cachedir": env("SLURM_EXT_CACHE_DIR"),
    "inddir_env": env("TORCHINDUCTOR_CACHE_DIR"),
    "inddir": cdir,
    "default_dir": default_cache_dir(),
    "default_exists": int(os.path.exists(default_cache_dir())),
    "autograd_cache": AUTOGRAD_CACHE,
    "compile_threads": COMPILE_THREADS,
    "fx_hit": ind["fxgraph_cache_hit"],
    "fx_miss": ind["fxgraph_cache_miss"],
    "fx_bypass": ind["fxgraph_cache_bypass"],
    "aot_hit": aotc["autograd_cache_hit"],
    "aot_miss": aotc["autograd_cache_miss"],
    "aot_bypass": aotc["autograd_cache_bypass"],
    "n_fxgraph": fx,
    "n_aotautograd": aot,
    "n_cpp": cpp,
    "n_so": so,
    "n_so_new": so_new,
    "n_lockfiles": lock,
    "n_locks_dir": locks,
    "top": top,
    "ok": ok,
    "waited": f"{waited:.2f}",
    "t_import": f"{T_IMPORT:.2f}",
    "t_first": f"{T_FIRST:.3f}",
    "t_second": f"{T_SECOND:.4f}",
    "t_total": f"{time.time() - T0:.2f}",
}
print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()), flush=True)
