#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The seams of plugin/, read from the sources alone (no compiler, no build).

    tests/lib/seams.py [--root DIR] CHECK

CHECK is one of:
  layers    every #include "..." in plugin/<layer>/ names a header of its own
            layer or of a lower one (LAYERS, lowest first);
  slurm     only plugin/spank/ includes <slurm/...>;
  headers   every header declares only functions its own .c file defines (a
            static inline function in a header is the header's own);
  includes  no include cycle among plugin/'s files (x.c and x.h including y.h:
            x depends on y);
  calls     no call cycle among plugin/'s files (x.c calling a function y.c
            defines: x calls y);
  names     each exported name says its file: a function a .c file defines
            with external linkage is extc_<x> or extc_<x>_..., <x> the file's
            stem or the stem without its layer's "<layer>_" (fs/fs_tree.c:
            fs_tree or tree); spank/dispatch.c may also define the entry
            points (slurm_spank_*, plugin_*), no other file may, and the
            files of NAME_FREE_FILES (at most 3) may export any extc_ name;
  namesakes a static function or file-scope variable of the same name in two
            or more .c files (lint.sh prints these as warnings).
Prints one line per finding and exits 1 if there is any, 0 if none, 2 if the
tree cannot be read as expected.

The reading is the house style's, not C's grammar: comments and string
literals are blanked, preprocessor lines dropped, and a top-level
"HEAD { ... }" whose HEAD ends in a parameter list is a function definition.
"""
import os
import re
import sys

# Lowest first: a file of one layer may include headers of its own layer and
# of the layers before it, never of a later one.
LAYERS = ["base", "proc", "container", "fs", "warm", "pool", "tier", "spank"]
SLURM_LAYER = "spank"
C_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case",
              "_Alignof", "alignof", "_Static_assert", "__attribute__", "__typeof__",
              "typeof", "defined", "offsetof", "va_arg", "__builtin_expect"}
# The files that may export extc_ names not saying the file (at most 3; the
# names check refuses more). Each is here because its names are used on
# almost every line and read as the language's own, where the file's name in
# each call would be noise:
NAME_FREE_FILES = {
    # extc_fmt, extc_vfmt, extc_escape, extc_has_prefix, extc_parse_u32,
    # extc_sanitize: the bounded string work of nearly every function that
    # builds a path or a message, read as snprintf and strncmp are
    "plugin/base/text.c",
    # extc_error, extc_info, extc_verbose, extc_debug, extc_user: every log
    # line of the plugin is one of these calls, read as a printf is
    "plugin/spank/log.c",
}
# The plugin's entry points, the names Slurm looks up (spank/ext_cache.lds),
# and the one file that may define them.
ENTRY_PREFIXES = ("slurm_spank_", "plugin_")
ENTRY_FILE = "plugin/spank/dispatch.c"


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(2)


def sources(root):
    """plugin/'s .c and .h files, as paths relative to root, sorted."""
    out = []
    for d, _, files in os.walk(os.path.join(root, "plugin")):
        for f in files:
            if f.endswith((".c", ".h")):
                out.append(os.path.relpath(os.path.join(d, f), root))
    if not out:
        fail(f"no .c or .h file under {root}/plugin")
    return sorted(out)


def layer_of(path):
    """plugin/<layer>/x.c -> <layer>; None for a file directly in plugin/."""
    parts = path.split(os.sep)
    return parts[1] if len(parts) > 2 else None


def module_of(path):
    """plugin/fs/fs_tree.c and plugin/fs/fs_tree.h -> plugin/fs/fs_tree."""
    return os.path.splitext(path)[0]


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def includes(text):
    """[(kind, name, line)]: kind '"' or '<'."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
        if m:
            out.append((m.group(1), m.group(2), n))
    return out


def blank(text):
    """Comments, string and character literals and preprocessor lines as spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            # a directive, with its continuation lines
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "\n":
            out.append(c)
            at_line_start = True
            i += 1
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        at_line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_attributes(head):
    """HEAD without __attribute__((...)) groups."""
    while True:
        m = re.search(r"__attribute__\s*\(", head)
        if not m:
            return head
        depth, j = 0, m.end() - 1
        while j < len(head):
            if head[j] == "(":
                depth += 1
            elif head[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        head = head[:m.start()] + " " + head[j + 1:]


def declared_name(head):
    """The function a declaration or definition HEAD names, else None."""
    head = strip_attributes(" ".join(head.split()))
    if re.match(r"(typedef|struct|union|enum)\b[^(]*$", head) or head.startswith("typedef"):
        return None
    if "=" in head.split("(")[0]:
        return None
    m = re.search(r"([A-Za-z_]\w*)\s*\(", head)
    if not m or m.group(1) in C_KEYWORDS:
        return None
    # a pointer to a function, "int (*name)(...)", is a variable
    if re.search(r"\(\s*\*", head[:m.end() + 2]) and head.find("(*") < m.start():
        return None
    return m.group(1)


def top_level(text):
    """The top-level items of blanked TEXT: [(kind, head, body, line)], kind
    'def' (a HEAD { BODY } whose HEAD has a parameter list) or 'decl' (a
    statement ending in ';')."""
    items = []
    depth = 0
    head_start = 0
    body_start = None
    pending_def = None
    line = 1
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c == "{":
            if depth == 0:
                head = text[head_start:i]
                pending_def = (head, line) if re.search(r"\)\s*$", strip_attributes(head)) else None
                body_start = i + 1
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                fail("unbalanced braces")
            if depth == 0 and pending_def:
                items.append(("def", pending_def[0], text[body_start:i], pending_def[1]))
                pending_def = None
                head_start = i + 1
        elif c == ";" and depth == 0:
            items.append(("decl", text[head_start:i], "", line))
            head_start = i + 1
        i += 1
    return items


def is_static(head):
    return re.search(r"\bstatic\b", head) is not None


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = sources(root)
        self.text = {f: read(root, f) for f in self.files}
        self.blanked = {f: blank(t) for f, t in self.text.items()}
        self.items = {f: top_level(b) for f, b in self.blanked.items()}
        # header file name (as included) -> path; names are unique in plugin/
        self.header_path = {}
        for f in self.files:
            if f.endswith(".h"):
                rel = os.path.relpath(f, "plugin")
                self.header_path[rel] = f
        # the functions each file defines with external linkage, and where
        self.defined_in = {}
        self.defs = {}
        for f in self.files:
            self.defs[f] = set()
            for kind, head, _, _ in self.items[f]:
                if kind != "def":
                    continue
                name = declared_name(head)
                if not name:
                    continue
                if f.endswith(".h"):
                    self.defs[f].add(name)  # static inline: the header's own
                elif not is_static(head):
                    self.defs[f].add(name)
                    self.defined_in.setdefault(name, f)
        if not self.defined_in:
            fail("no function definition found in plugin/'s .c files: the reading is broken")

    def resolve(self, including, name):
        """The plugin path an #include "name" in file 'including' reads, else None."""
        if name in self.header_path:
            return self.header_path[name]
        beside = os.path.normpath(os.path.join(os.path.dirname(including), name))
        return beside if beside in self.text else None


def check_layers(t):
    bad = []
    for f in t.files:
        lf = layer_of(f)
        if lf is None:
            bad.append(f"{f}: not in a layer's folder (plugin/{{{','.join(LAYERS)}}}/)")
            continue
        if lf not in LAYERS:
            bad.append(f"{f}: {lf}/ is not a layer ({', '.join(LAYERS)})")
            continue
        for kind, name, line in includes(t.text[f]):
            if kind != '"':
                continue
            target = t.resolve(f, name)
            if target is None:
                bad.append(f"{f}:{line}: includes \"{name}\", not a header of plugin/")
                continue
            lt = layer_of(target)
            if lt in LAYERS and LAYERS.index(lt) > LAYERS.index(lf):
                bad.append(f"{f}:{line}: {lf}/ includes \"{name}\" of {lt}/, a higher layer")
    return bad


def check_slurm(t):
    bad = []
    for f in t.files:
        for kind, name, line in includes(t.text[f]):
            slurm = name.startswith("slurm/") or os.path.basename(name) in ("spank.h", "slurm.h")
            if slurm and layer_of(f) != SLURM_LAYER:
                bad.append(f"{f}:{line}: includes {kind}{name}{'>' if kind == '<' else kind}; "
                           f"only {SLURM_LAYER}/ may")
    return bad


def check_headers(t):
    bad = []
    for h in t.files:
        if not h.endswith(".h"):
            continue
        c = module_of(h) + ".c"
        own = t.defs[h] | t.defs.get(c, set())
        for kind, head, _, line in t.items[h]:
            if kind != "decl":
                continue
            name = declared_name(head)
            if not name or name in own:
                continue
            where = t.defined_in.get(name)
            said = f"defined in {where}" if where else "defined in no plugin/ file"
            mine = c if c in t.text else f"{c} (there is none)"
            bad.append(f"{h}:{line}: declares {name}(), {said}, not in {mine}")
    return bad


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def describe(graph, comp, why):
    members = set(comp)
    edges = []
    for a in comp:
        for b in sorted(graph.get(a, ())):
            if b in members:
                edges.append(f"  {a} -> {b}" + (f" ({why[(a, b)]})" if why else ""))
    return "\n".join(edges)


def cycle_findings(kind, files, edges):
    """Build the graph between the modules of files from (file, file it
    depends on, reason) edges, and name each cycle in it with the reasons
    of its edges."""
    graph = {module_of(f): set() for f in files}
    why = {}
    for f, target, reason in edges:
        a, b = module_of(f), module_of(target)
        if a != b:
            graph[a].add(b)
            why.setdefault((a, b), reason)
    return [f"{kind} cycle among {', '.join(c)}:\n{describe(graph, c, why)}"
            for c in cycles(graph)]


def include_edges(t):
    for f in t.files:
        for kind, name, line in includes(t.text[f]):
            target = t.resolve(f, name) if kind == '"' else None
            if target:
                yield f, target, f"{f}:{line}"


def call_edges(t):
    for f in t.files:
        for kind, head, body, _ in t.items[f]:
            if kind != "def":
                continue
            caller = declared_name(head)
            for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", body):
                where = t.defined_in.get(m.group(1))
                if where:
                    yield f, where, f"{caller}() calls {m.group(1)}()"


def check_includes(t):
    return cycle_findings("include", t.files, include_edges(t))


def check_calls(t):
    return cycle_findings("call", t.files, call_edges(t))


def name_line(head, name, line):
    """The line NAME is on in a definition HEAD whose "{" is on LINE."""
    m = re.search(r"\b" + re.escape(name) + r"\s*\(", head)
    return line - head[m.start():].count("\n") if m else line


def own_stems(path):
    """What the exported names of .c file PATH may start with after "extc_":
    its stem, and that stem without "<layer>_" if it starts with it."""
    stem = os.path.basename(module_of(path))
    layer = layer_of(path)
    out = [stem]
    if layer and stem.startswith(layer + "_") and len(stem) > len(layer) + 1:
        out.append(stem[len(layer) + 1:])
    return out


def check_names(t):
    if len(NAME_FREE_FILES) > 3:
        fail(f"NAME_FREE_FILES lists {len(NAME_FREE_FILES)} files; at most 3")
    bad = []
    for f in t.files:
        if not f.endswith(".c"):
            continue
        stems = own_stems(f)
        allowed = [f"extc_{s}[_*]" for s in stems]
        if f == ENTRY_FILE:
            allowed += [p + "*" for p in ENTRY_PREFIXES]
        if f in NAME_FREE_FILES:
            allowed = ["extc_*"]
        allowed = " or ".join(allowed) if len(allowed) < 3 else \
            ", ".join(allowed[:-1]) + " or " + allowed[-1]
        for kind, head, _, line in t.items[f]:
            if kind != "def" or is_static(head):
                continue
            name = declared_name(head)
            if not name:
                continue
            if any(name == f"extc_{s}" or name.startswith(f"extc_{s}_") for s in stems):
                continue
            if f == ENTRY_FILE and name.startswith(ENTRY_PREFIXES):
                continue
            if f in NAME_FREE_FILES and name.startswith("extc_"):
                continue
            bad.append(f"{f}:{name_line(head, name, line)}: exports {name}(); "
                       f"its names are {allowed}")
    return bad


def static_names(head):
    """The names a file-scope static declaration HEAD defines: a function
    definition's, or each variable's ("static int a, *b[2] = {...};"); a
    prototype defines none."""
    head = strip_attributes(" ".join(head.split()))
    if not re.match(r"(\w+\s+)*static\b", head) or re.match(r"typedef\b", head):
        return []
    # initializers out: brace groups first, then what follows each "="
    while True:
        cut = re.sub(r"\{[^{}]*\}", " ", head)
        if cut == head:
            break
        head = cut
    names = []
    depth, start, parts = 0, 0, []
    for i, c in enumerate(head):
        depth += c in "(["
        depth -= c in ")]"
        if c == "," and depth == 0:
            parts.append(head[start:i])
            start = i + 1
    parts.append(head[start:])
    for part in parts:
        part = part.split("=")[0]
        ptr = re.search(r"\(\s*\*\s*(?:const\s+)?([A-Za-z_]\w*)\s*\)", part)
        if ptr:
            names.append(ptr.group(1))  # a pointer to a function: a variable
            continue
        if "(" in part:
            continue  # a prototype
        part = re.sub(r"\[[^\]]*\]", " ", part)
        m = re.search(r"([A-Za-z_]\w*)\s*$", part)
        if m and m.group(1) not in ("static", "const", "volatile"):
            names.append(m.group(1))
    return names


def check_namesakes(t):
    where = {}  # name -> [(file:line, "()" for a function or "" for a variable)]
    for f in t.files:
        if not f.endswith(".c"):
            continue
        for kind, head, _, line in t.items[f]:
            if not is_static(head):
                continue
            if kind == "def":
                name = declared_name(head)
                if name:
                    where.setdefault(name, []).append((f"{f}:{name_line(head, name, line)}", "()"))
                continue
            for name in static_names(head):
                m = re.search(r"\b" + re.escape(name) + r"\b", head)
                at = line - head[m.start():].count("\n") if m else line
                where.setdefault(name, []).append((f"{f}:{at}", ""))
    bad = []
    for name, places in sorted(where.items()):
        if len({p.rsplit(":", 1)[0] for p, _ in places}) < 2:
            continue
        at = [p for p, _ in places]
        kinds = {k for _, k in places}
        what = name + kinds.pop() if len(kinds) == 1 else f"{name} (as a function and as a variable)"
        bad.append(f"{', '.join(at[:-1])} and {at[-1]}: "
                   f"{'both define' if len(at) == 2 else 'each defines'} static {what}")
    return bad


CHECKS = {"layers": check_layers, "slurm": check_slurm, "headers": check_headers,
          "includes": check_includes, "calls": check_calls, "names": check_names,
          "namesakes": check_namesakes}


def main(argv):
    root = "."
    args = list(argv)
    if len(args) >= 2 and args[0] == "--root":
        root = args[1]
        args = args[2:]
    if len(args) != 1 or args[0] not in CHECKS:
        fail(f"usage: seams.py [--root DIR] {{{'|'.join(CHECKS)}}}")
    findings = CHECKS[args[0]](Tree(root))
    for line in findings:
        print(line)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
