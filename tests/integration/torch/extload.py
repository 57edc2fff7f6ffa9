#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""JIT-build and call a small C++ op the way DeepSpeed's op builder does, and
report what this rank did.

Usage: extload.py NAME

NAME is the extension's name, i.e. its build directory under the extensions
root.  Like DeepSpeed's OpBuilder.jit_load(), this calls
torch.utils.cpp_extension.load() with verbose=True, so torch prints
"Using <root> as PyTorch extensions root..." and ninja's output; then it
prints "Time to load NAME op: N seconds" and calls the op.

The instrumentation only observes what torch does:
  * the build lock: FileBaton.try_acquire / FileBaton.wait (torch 1.13 and
    2.6: a lock file whose existence is the lock) or the FileLock that
    cpp_extension holds instead from torch 2.14 on (an OS lock on that
    file): did this process take the build lock ("took") or find it held
    ("busy"), and how long it waited.
  * cpp_extension._run_ninja_build: how many compile (.o) and link (.so)
    commands ninja ran for this process, from the build directory's
    .ninja_log before and after (ninja appends one line per command it runs;
    torch calls ninja only while holding the lock, so the difference is this
    process's own work).
Before anything else it notes what the step's directory (SLURM_EXT_CACHE_DIR)
held and whether TORCH_EXTENSIONS_DIR existed yet (leaf0, tedir0).
After the load it also reports the totals in .ninja_log (every build ever
made in that directory) and the identity (st_dev:st_ino) of the build
directory, so that the test can tell one shared directory from several
private ones even when their paths are equal.

The last line, on stdout, is "RESULT key=value ..." (values have no spaces);
role is "built" (ninja compiled or linked something for this process),
"waited" (the lock was held by another process: it waited, then loaded what
that process built) or "reused" (took the lock, ninja had nothing to do).
"""
import os
import socket
import sys
import time

T0 = time.time()
# What the step's directory held before torch ran: the plugin leaves
# TORCH_EXTENSIONS_DIR for torch to make (docs/cache-dirs.md).
LEAF0 = ",".join(sorted(os.listdir(os.environ["SLURM_EXT_CACHE_DIR"]))) or "empty" \
    if os.environ.get("SLURM_EXT_CACHE_DIR") else "-"
TEDIR0 = ("yes" if os.path.isdir(os.environ["TORCH_EXTENSIONS_DIR"]) else "no") \
    if os.environ.get("TORCH_EXTENSIONS_DIR") else "-"
HERE = os.path.dirname(os.path.abspath(__file__))
NAME = sys.argv[1] if len(sys.argv) > 1 else "extc_op"
# EXTC_OP_LIGHT=1: the same interface from csrc/extc_light.cpp, which
# includes pybind11 alone and builds in seconds (for suites that test where
# builds go, not how a build behaves)
LIGHT = os.environ.get("EXTC_OP_LIGHT") == "1"
SOURCE = os.path.join(HERE, "csrc", "extc_light.cpp" if LIGHT else "extc_op.cpp")
INCLUDE = os.path.join(HERE, "include")
HEADER = os.path.join(INCLUDE, "extc_version.h")

import torch  # noqa: E402
import torch.utils.cpp_extension as cpp_ext  # noqa: E402
from torch.utils.file_baton import FileBaton  # noqa: E402

T_IMPORT = time.time() - T0

rec = {"baton": "none", "lock": "", "waited": 0.0, "build_s": 0.0, "compiled": 0, "linked": 0}


def ninja_log(build_dir):
    """(compile lines, link lines) in build_dir/.ninja_log."""
    o = so = 0
    try:
        with open(os.path.join(build_dir, ".ninja_log")) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 4:
                    if parts[3].endswith(".o"):
                        o += 1
                    elif parts[3].endswith(".so"):
                        so += 1
    except FileNotFoundError:
        pass
    return o, so


_try_acquire = FileBaton.try_acquire
_wait = FileBaton.wait
_run_ninja_build = cpp_ext._run_ninja_build


def try_acquire(self):
    got = _try_acquire(self)
    rec["baton"] = "took" if got else "busy"
    rec["lock"] = self.lock_file_path
    return got


def wait(self):
    t = time.time()
    try:
        _wait(self)
    finally:
        rec["waited"] = time.time() - t


def run_ninja_build(build_directory, verbose, error_prefix):
    o0, so0 = ninja_log(build_directory)
    t = time.time()
    try:
        _run_ninja_build(build_directory, verbose, error_prefix)
    finally:
        rec["build_s"] = time.time() - t
        o1, so1 = ninja_log(build_directory)
        rec["compiled"], rec["linked"] = o1 - o0, so1 - so0


FileBaton.try_acquire = try_acquire
FileBaton.wait = wait
cpp_ext._run_ninja_build = run_ninja_build

_FileLock = getattr(cpp_ext, "FileLock", None)
if _FileLock is not None:
    import filelock  # noqa: E402

    class ObservedFileLock(_FileLock):
        """torch 2.14's build lock, taken as torch takes it, with what happened noted."""

        def acquire(self, timeout=None, *args, **kwargs):
            if rec["baton"] != "none":
                return super().acquire(timeout, *args, **kwargs)
            rec["lock"] = self.lock_file
            try:
                proxy = super().acquire(0)
                rec["baton"] = "took"
                return proxy
            except filelock.Timeout:
                rec["baton"] = "busy"
            t = time.time()
            try:
                return super().acquire(timeout, *args, **kwargs)
            finally:
                rec["waited"] = time.time() - t

    cpp_ext.FileLock = ObservedFileLock
    # torch 2.14 announces its root through logging, at INFO, where 1.13 and
    # 2.6 print it: show it as those do, on stderr
    import logging  # noqa: E402
    _h = logging.StreamHandler(sys.stderr)
    _h.setFormatter(logging.Formatter("%(message)s"))
    cpp_ext.logger.addHandler(_h)
    cpp_ext.logger.setLevel(logging.INFO)

# --- what DeepSpeed's OpBuilder.jit_load() does, minus the CUDA parts --------
t = time.time()
op = cpp_ext.load(
    name=NAME,
    sources=[SOURCE],
    extra_include_paths=[INCLUDE],
    extra_cflags=["-O2"],
    verbose=True,
)
T_LOAD = time.time() - t
print(f"Time to load {NAME} op: {T_LOAD:.2f} seconds", flush=True)

# --- use it --------------------------------------------------------------------
if LIGHT:
    ok = int(op.sgd_step(1.0, 3.0, 0.5) == -0.5)
else:
    p = torch.ones(8)
    g = torch.arange(8, dtype=torch.float32)
    op.sgd_step_(p, g, 0.5)
    ok = int(torch.equal(p, 1 - 0.5 * g))
version = op.version()

header = "?"
with open(HEADER) as f:
    for line in f:
        if line.startswith("#define EXTC_OP_VERSION"):
            header = line.split()[2]

build_dir = os.path.dirname(rec["lock"]) if rec["lock"] else cpp_ext._get_build_directory(NAME, False)
st = os.stat(build_dir)
so_path = os.path.realpath(op.__file__)
log_o, log_so = ninja_log(build_dir)
if rec["compiled"] or rec["linked"]:
    role = "built"
elif rec["baton"] == "busy":
    role = "waited"
else:
    role = "reused"


def env(name):
    return os.environ.get(name) or "-"


fields = {
    "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
    "rank": env("SLURM_PROCID"),
    "lrank": env("SLURM_LOCALID"),
    "job": env("SLURM_JOB_ID"),
    "step": env("SLURM_STEP_ID"),
    "mode": env("SLURM_EXT_CACHE_MODE"),
    "cachedir": env("SLURM_EXT_CACHE_DIR"),
    "tedir": env("TORCH_EXTENSIONS_DIR"),
    "leaf0": LEAF0,
    "tedir0": TEDIR0,
    "root": os.path.dirname(build_dir),
    "builddir": build_dir,
    "dirid": f"{st.st_dev}:{st.st_ino}",
    "role": role,
    "baton": rec["baton"],
    "waited": f"{rec['waited']:.2f}",
    "build_s": f"{rec['build_s']:.2f}",
    "compiled": rec["compiled"],
    "linked": rec["linked"],
    "log_o": log_o,
    "log_so": log_so,
    "so": so_path,
    "so_ino": os.stat(so_path).st_ino,
    "version": version,
    "header": header,
    "ok": ok,
    "t_import": f"{T_IMPORT:.2f}",
    "t_load": f"{T_LOAD:.2f}",
    "t_total": f"{time.time() - T0:.2f}",
    "start": f"{T0:.2f}",
}
print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()), flush=True)
