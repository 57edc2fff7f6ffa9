# SPDX-License-Identifier: GPL-2.0-or-later
"""Triton 3.x's file cache, as this test suite models it (Triton is not in Debian).

Read in triton-lang/triton at commit 10852d2ef21250fd4ac56e44ff65f82fe88a45fa:
python/triton/runtime/cache.py (FileCacheManager: a kernel's files in
<TRITON_CACHE_DIR>/<key>/; put_group writes "__grp__<name>" as
json.dumps({"child_paths": {file: absolute path}}); get_group keeps the
children whose path exists) and python/triton/compiler/compiler.py
(compile: the group of "<kernel>.json"; a hit needs that file among the
children). This is the suite's own port of those rules, not Triton's code.

    triton_cache.py put CACHE KEY KERNEL     write one kernel as Triton does
    triton_cache.py lookup CACHE KEY KERNEL INSIDE
        print "hit" or "miss", and "inside" or "outside": whether every
        child found lies below INSIDE
"""
import json
import os
import sys


def put(cache, key, kernel):
    kdir = os.path.join(cache, key)
    os.makedirs(kdir, exist_ok=True)
    group = {}
    for ext in ("json", "cubin", "ptx", "ttir"):
        name = f"{kernel}.{ext}"
        path = os.path.join(kdir, name)
        # written whole under another name, then renamed: as put() does
        with open(path + ".tmp", "w") as f:
            f.write(f"{kernel} {ext}\n")
        os.replace(path + ".tmp", path)
        group[name] = path
    with open(os.path.join(kdir, f"__grp__{kernel}.json"), "w") as f:
        f.write(json.dumps({"child_paths": group}))


def lookup(cache, key, kernel, inside):
    grp = os.path.join(cache, key, f"__grp__{kernel}.json")
    if not os.path.exists(grp):
        return "miss", "inside"
    with open(grp) as f:
        child_paths = json.load(f).get("child_paths")
    if child_paths is None:
        return "miss", "inside"
    found = {c: p for c, p in child_paths.items() if os.path.exists(p)}
    where = "inside"
    for p in found.values():
        if not p.startswith(inside.rstrip("/") + "/"):
            where = "outside"
    return ("hit" if f"{kernel}.json" in found else "miss"), where


def main(argv):
    if len(argv) == 5 and argv[1] == "put":
        put(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 6 and argv[1] == "lookup":
        print(*lookup(argv[2], argv[3], argv[4], argv[5]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
