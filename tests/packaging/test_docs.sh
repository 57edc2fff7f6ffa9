#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The documents (README.md, HACKING.md, NEWS, docs/*.md, the manual) against
# each other, the code and the build:
#   - every relative link resolves to a shipped document, and every #anchor
#     to a heading of it; no link leaves the repository, no document cites
#     one a reader of the repository cannot open;
#   - every document ships (Makefile.am's doc lists) and README links to it;
#     README is at most 200 lines;
#   - every path a document names in the tree exists;
#   - the manual, the admin guide and plugin/base/config.c name the same plugstack
#     arguments; the manual, the user guide and plugin/spank/option.c the same user
#     options; the documents and the code the same SLURM_EXT_CACHE* names;
#   - the plugstack line the package ships is the one README, the guides, the manual and
#     examples/ quote, each saying it turns the pool on and that the plugin's default is off;
#   - docs/cache-dirs.md's tables are plugin/base/vars.c's list, with its
#     make_dir and loads_code flags; every "N built-in variables" is the
#     length of that list, every "N attack and fault cases" the number of
#     cases in docs/security-cases.md.
# Prints ok/not ok lines, ends with "N passed, M failed"; about 1 s.
set -u
. "$(dirname "$0")/lib.sh"

pkg_begin docs
pkg_need man-db groff-base python3

top=$PKG_TOP
man=$top/docs/ext_cache.8
# the Markdown documents, relative to the top
mapfile -t mds < <(cd "$top" && printf '%s\n' README.md HACKING.md docs/*.md)
LC_ALL=C.UTF-8 MANWIDTH=1000 man -l "$man" 2>/dev/null | col -bx >"$PKG_WORK/man.txt"
mantext=$PKG_WORK/man.txt
section() { awk -v s="$1" '/^[A-Z]/ {on = ($0 == s); next} on' "$mantext"; }

# ---- links and anchors ----------------------------------------------------------------
# docs.py links: one line per bad link, "FILE:LINE: TARGET: why"
cat >"$PKG_WORK/docs.py" <<'PY'
import os, re, sys

top, shipped = sys.argv[2], set(sys.argv[3].split())

def slug(heading):
    # GitHub's anchors: lower case, punctuation dropped, spaces to hyphens
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")

def anchors(path):
    seen, out = {}, set()
    fenced = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"(#{1,6}) +(.*?) *#*$", line.rstrip("\n"))
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            out.add(s if n == 0 else "%s-%d" % (s, n))
            seen[s] = n + 1
    return out

def links():
    for rel in sys.argv[4:]:
        path = os.path.join(top, rel)
        for no, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("    "):
                continue  # a code block
            for target in re.findall(r"\]\(([^)\s]*)\)", re.sub(r"`[^`]*`", "", line)):
                where = "%s:%d: %s" % (rel, no, target)
                if re.match(r"[a-z]+:", target) or target.startswith("/"):
                    print(where + ": leaves the repository")
                    continue
                name, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(rel), name)) if name else rel
                if dest.startswith(".."):
                    print(where + ": leaves the repository")
                elif not os.path.isfile(os.path.join(top, dest)):
                    print(where + ": no such file")
                elif dest not in shipped:
                    print(where + ": %s is not a shipped document (Makefile.am)" % dest)
                elif anchor and (not dest.endswith(".md") or anchor not in anchors(os.path.join(top, dest))):
                    print(where + ": no heading #%s in %s" % (anchor, dest))

def linked():
    # the documents README.md links to, one a line
    for target in re.findall(r"\]\(([^)#\s]+)", open(os.path.join(top, "README.md"), encoding="utf-8").read()):
        print(os.path.normpath(target))

{"links": links, "linked": linked}[sys.argv[1]]()
PY
docs_py() { python3 "$PKG_WORK/docs.py" "$1" "$top" "$(pkg_docs | paste -sd' ' -)" "${mds[@]}"; }
t_eq "every relative link resolves to a shipped document and an existing #anchor; none leaves the repository" \
    "" "$(docs_py links)"
t_eq "no document links to a web page or cites notes outside the repository" "" \
    "$(cd "$top" && grep -nE 'https?://|design notes|design.s |design measurements|/work/|shared/design' "${mds[@]}" NEWS 2>/dev/null)"

# ---- every document ships, and README leads to it ---------------------------------------
# the words of the two variables' values, continuation lines included
make_docs=$(awk '/^(dist_doc_DATA|nobase_dist_doc_DATA) *=/ {on = 1; sub(/^[^=]*= */, "")}
    on {line = $0; sub(/\\$/, "", line); print line; if ($0 !~ /\\$/) on = 0}' "$top/Makefile.am" |
    tr -s ' \t' '\n' | grep . | sort)
t_eq "Makefile.am installs every document (README.md NEWS HACKING.md docs/*.md), nothing else" \
    "$(pkg_docs | sort)" "$make_docs"
missing=
linked=$(docs_py linked)
for doc in $(pkg_docs); do
    [ "$doc" = README.md ] && continue
    grep -qxF "$doc" <<<"$linked" || missing="$missing $doc"
done
t_eq "README.md links to every other document" "" "$missing"
t_check "README.md is at most 200 lines ($(wc -l <"$top/README.md"))" test "$(wc -l <"$top/README.md")" -le 200
missing=
while read -r doc; do
    [ -f "$top/$doc" ] || missing="$missing $doc"
done < <(grep -ohE 'docs/[a-z_.-]+\.(md|8)' "$man" | sed 's/\\//g' | sort -u)
t_eq "every document the manual names exists" "" "$missing"

# ---- paths in the tree ----------------------------------------------------------------
# a path a document names (plugin/<layer>/x.c, tests/..., ...) exists as named
missing=
for p in $(cd "$top" && grep -ohE '(^|[^A-Za-z0-9_./-])(plugin|tests|docs|bench|scripts|examples|enroot|etc|debian|fuzz)/[A-Za-z0-9_./-]*[A-Za-z0-9]' "${mds[@]}" |
    sed -E 's/^[^a-z]//' | sort -u); do
    # a file, a program built from one (tests/unit/test_config) or its log, a layer folder, a name's
    # prefix, or the logs' directory the tests make
    [ -e "$top/$p" ] || compgen -G "$top/${p%.log}*" >/dev/null ||
        [[ $p =~ ^plugin/(base|proc|container|fs|warm|pool|spank)$ ]] || [[ $p =~ ^tests/logs(/|$) ]] || missing="$missing $p"
done
t_eq "every path of the tree a document names exists" "" "$missing"

# ---- plugstack arguments: the code's, the manual's, the admin guide's ----------------------
code_keys=$(sed -n '/config_keys\[\] = {/,/^};/p' "$top/plugin/base/config.c" | grep -oE '^[[:space:]]*\{ "[a-z_]+",' |
    grep -oE '"[a-z_]+"' | tr -d '"' | sort -u)
t_check "plugin/base/config.c: its table of keys is found" test -n "$code_keys"
man_keys=$(section ARGUMENTS | grep -oE '^       [a-z_]+=' | sed 's/^ *//; s/=$//' | sort -u)
guide_keys=$(grep -oE '^\| `[a-z_]+=' "$top/docs/admin-guide.md" | sed 's/^| `//; s/=$//' | sort -u)
t_eq "the manual's ARGUMENTS are the keys of plugin/base/config.c" "$code_keys" "$man_keys"
t_eq "the admin guide's table of arguments is the same" "$code_keys" "$guide_keys"
# any `key=...` the README and the guides show is a key the code has (`key=value` is the form)
bad=
for k in $(cd "$top" && grep -ohE '`[a-z][a-z_]*=' README.md docs/admin-guide.md docs/user-guide.md | tr -d '`=' | sort -u); do
    [ "$k" = key ] || grep -qxF "$k" <<<"$code_keys" || bad="$bad $k"
done
t_eq "every \`key=\` the README and the guides show is a plugstack argument of plugin/base/config.c" "" "$bad"

# ---- user options and variables ------------------------------------------------------------
code_opts=$(sed -n '/^static struct spank_option options/,/^};/p' "$top/plugin/spank/option.c" |
    grep -oE '\.name = "[a-z-]+"' | grep -oE '"[a-z-]+"' | tr -d '"' | sort)
man_opts=$(section "USER OPTION" | grep -oE '^       --[a-z-]+' | sed 's/^ *--//' | sort -u)
t_eq "the manual documents exactly the options of plugin/spank/option.c" "$code_opts" "$man_opts"
missing=
for o in $code_opts; do
    grep -q -- "--$o\b" "$top/docs/user-guide.md" || missing="$missing --$o"
done
t_eq "the user guide names every option" "" "$missing"
bad=
for o in $(cd "$top" && grep -ohE -- '--ext-cache[a-z-]*' "${mds[@]}" | sed 's/-$//' | sort -u); do
    grep -qxF -- "${o#--}" <<<"$code_opts" || bad="$bad $o"
done
t_eq "every --ext-cache* option a document names exists" "" "$bad"
code_names=$(grep -rhoE '"SLURM_EXT_CACHE[A-Z_]*"' "$top/plugin" | tr -d '"' | sort -u)
doc_names=$(cd "$top" && grep -ohE 'SLURM_EXT_CACHE[A-Z_]*' "${mds[@]}" | sort -u)
t_eq "every SLURM_EXT_CACHE* name the documents use exists in plugin/, and each is documented" \
    "$code_names" "$doc_names"
missing=
for v in $code_names; do
    grep -q "\b$v\b" "$top/docs/user-guide.md" || missing="$missing $v"
done
t_eq "the user guide names every SLURM_EXT_CACHE* variable" "" "$missing"

# ---- the built-in variables: plugin/base/vars.c, docs/cache-dirs.md ------------------------------
# NAME SUBDIR MAKE_DIR LOADS_CODE, in the code's order
vars=$(sed -n 's/^[[:space:]]*{ "\([A-Z_]*\)", "\([a-z_]*\)", \(true\|false\), \(true\|false\) },$/\1 \2 \3 \4/p' \
    "$top/plugin/base/vars.c")
nvars=$(grep -c . <<<"$vars")
t_check "plugin/base/vars.c: the built-in list is found ($nvars variables)" test "$nvars" -gt 1
cd_table=$(awk '/^## The table/ {on = 1; next} /^## / {on = 0} on' "$top/docs/cache-dirs.md" |
    awk -F' *\\| *' '/^\| [A-Z]/ && $2 != "Variable" {print $2, ($7 ~ /^\*\*yes|^yes/ ? "true" : "false")}')
t_eq "docs/cache-dirs.md's table: the variables of plugin/base/vars.c, in order, and which the plugin makes" \
    "$(awk '{print $1, $3}' <<<"$vars")" "$cd_table"
noexec=$(awk '/^## Which tools load code/ {on = 1; next} /^## / {on = 0} on' "$top/docs/cache-dirs.md" |
    awk -F' *\\| *' '/^\| [A-Z]/ && $2 != "Variable" { n = split($2, v, /, */); for (i = 1; i <= n; i++) print v[i], ($3 == "yes" ? "true" : "false") }' |
    sort)
t_eq "docs/cache-dirs.md's noexec table: each variable once, loading code exactly where plugin/base/vars.c says" \
    "$(awk '{print $1, $4}' <<<"$vars" | sort)" "$noexec"

# ---- counts --------------------------------------------------------------------------------
# figures FILE... REGEX: "FILE: match" for each match of REGEX in FILE read as one line
# (a figure's words may straddle a line break); the manual as rendered
figures() {
    local re=${*: -1} f
    for f in "${@:1:$#-1}"; do
        tr '\n' ' ' <"$f" | sed 's/\\-/-/g; s/\\f[BIRP]//g' | tr -s ' ' | grep -oE "$re" | sed "s|^|${f#"$top"/}: |"
    done
}
docs_and=()
for f in "${mds[@]}" docs/ext_cache.8 spank-ext-cache.spec debian/control etc/plugstack.conf.d/ext-cache.conf.in \
    bench/report.py; do
    docs_and+=("$top/$f")
done
# every "N built-in (cache) variables" in the documents (NEWS is history: left out), the manual, the
# packaging, the benchmark's text
said=$(figures "${docs_and[@]}" '\b[0-9]+ built-in (cache )?variables')
t_eq "every \"N built-in variables\" says $nvars" "" "$(grep -vE ": $nvars built-in" <<<"$said")"
t_check "the count of built-in variables is stated ($(grep -c . <<<"$said") times)" test "$(grep -c . <<<"$said")" -ge 3
more=$(grep -oE '[0-9]+ more JIT cache variables' "$top/etc/plugstack.conf.d/ext-cache.conf.in" | grep -oE '^[0-9]+')
t_eq "the plugstack.conf.d snippet names 2 of them and \"$((nvars - 2)) more\"" "$((nvars - 2))" "$more"
cases=$(grep -oE '^\| [0-9]+ \|' "$top/docs/security-cases.md" | grep -oE '[0-9]+')
ncases=$(grep -c . <<<"$cases")
t_eq "docs/security-cases.md numbers its cases 1 to $ncases, each once" "$(seq 1 "$ncases")" "$(sort -n <<<"$cases")"
said=$(figures "${docs_and[@]}" '\b[0-9]+ (attack and fault|security) cases|\b[0-9]+ cases in all')
t_eq "every \"N attack and fault cases\" says $ncases" "" "$(grep -vE ": $ncases " <<<"$said")"
t_check "the count of cases is stated ($(grep -c . <<<"$said") times)" test "$(grep -c . <<<"$said")" -ge 3

# ---- the plugstack line ----------------------------------------------------------------------
# The line the package ships (commented out) and the line README and the admin guide tell an
# admin to enable are one line: what the pool does out of the box is said once.
shipped=$(sed -n 's|^#\(optional\) @SLURM_PLUGINDIR@/ext_cache.so |\1 |p' "$top/etc/plugstack.conf.d/ext-cache.conf.in")
t_check "the plugstack.conf.d snippet ships one plugin line" test "$(grep -c . <<<"$shipped")" -eq 1
for f in README.md docs/admin-guide.md examples/README.md examples/plugstack.conf.d/ext-cache.conf; do
    quoted=$(sed -n 's|^ *\(optional\) /usr/lib/x86_64-linux-gnu/slurm-wlm/ext_cache.so |\1 |p' "$top/$f" | sort -u)
    t_eq "$f quotes the plugstack line the package ships" "$shipped" "$quoted"
done
# the manual's first example, as rendered
quoted=$(section EXAMPLES | sed -n 's|^ *\(optional\) /usr/lib/x86_64-linux-gnu/slurm-wlm/ext_cache.so |\1 |p' | head -n1)
t_eq "the manual's first example is the plugstack line the package ships" "$shipped" "$quoted"
# whether the pool is on out of the box is one decision: the plugin's default is off (the manual,
# the admin guide's table), the shipped line turns it on, and every document that quotes the
# line says both
t_eq "the manual's pool= default is off" "Default: off." \
    "$(section ARGUMENTS | awk '/^       pool=off\|node$/ {on = 1; next} /^       [a-z_]+=/ {on = 0} on' |
        grep -oE 'Default: [a-z]+\.')"
# shellcheck disable=SC2016 # a Markdown table row, not an expansion
t_check "the admin guide's table: pool= defaults to off" grep -qE '^\| `pool=off\\\|node` \| `off` \|' "$top/docs/admin-guide.md"
t_eq "the shipped line has pool=node" pool=node "$(grep -ow 'pool=node' <<<"$shipped")"
missing=
for f in README.md docs/admin-guide.md examples/README.md etc/plugstack.conf.d/ext-cache.conf.in; do
    said=$(tr '\n' ' ' <"$top/$f" | tr -d '`#' | tr -s ' ')
    grep -q 'pool=node turns on the node pool\|turns on the node pool (pool=node)\|pool=node turns on the \[node pool\]' <<<"$said" ||
        missing="$missing $f:turns-on"
    grep -qi "without pool=node the pool is off, the plugin's default" <<<"$said" || missing="$missing $f:default"
done
section EXAMPLES | tr -s ' \n' ' ' | grep -q "and the node pool on (without pool=node the pool is off, the plugin's default)" ||
    missing="$missing docs/ext_cache.8"
t_eq "each document quoting the line says it turns the node pool on, and that without it the pool is off" "" "$missing"
# the log greps the manual gives are the admin guide's, which test_verbose.bats runs on a real slurmd log
t_eq "the manual's slurmd.log greps are the admin guide's" \
    "$(grep -oE "grep '[^']+' slurmd\.log" "$top/docs/admin-guide.md" | sed "s/ slurmd\.log$//")" \
    "$(section LOGGING | grep -oE "grep '[^']+' /var/log/slurm/slurmd\.log" | sed "s| /var/log/slurm/slurmd\.log$||")"

pkg_end
