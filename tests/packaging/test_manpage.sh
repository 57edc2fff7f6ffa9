#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The manual ext_cache(8) against the code: it renders without warnings, has
# every section an admin needs, and documents exactly the plugstack arguments
# plugin/base/config.c accepts (each with the default the code uses), the user
# option and its environment form, every exported variable and the built-in
# variable list. The parser itself (plugin/base/config.c, compiled here into a
# small driver) judges the argument values the manual, the plugstack.conf.d
# snippet, README.md and docs/admin-guide.md show. Also: the admin guide and
# the snippet name every argument, the user guide lists the built-in
# variables, and the versions in configure.ac, the manual, debian/changelog
# and the RPM spec agree.
# Prints ok/not ok lines, ends with "N passed, M failed"; about 2 s.
set -u
. "$(dirname "$0")/lib.sh"

pkg_begin manpage
pkg_need man-db groff-base gcc

top=$PKG_TOP
man=$top/docs/ext_cache.8
conf_in=$top/etc/plugstack.conf.d/ext-cache.conf.in
[ -f "$man" ] || { t_fail "docs/ext_cache.8 exists" "missing"; pkg_end; }

# ---- rendering ----------------------------------------------------------------
warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$man" 2>&1 >"$PKG_WORK/man80.txt")
t_eq "man --warnings -l renders without warnings" "" "$warn"
t_check "the rendering is not empty" test -s "$PKG_WORK/man80.txt"
warn=$(groff -t -man -ww -z "$man" 2>&1)
t_eq "groff -t -man -ww (all warnings) is silent" "" "$warn"
# one line per paragraph, plain text: what the checks below read
LC_ALL=C.UTF-8 MANWIDTH=1000 man -l "$man" 2>/dev/null | col -bx >"$PKG_WORK/man.txt"
text=$PKG_WORK/man.txt

missing=
for s in NAME SYNOPSIS DESCRIPTION ARGUMENTS "USER OPTION" ENVIRONMENT "DIRECTORY LAYOUT" \
    LIFECYCLE FAILURES LOGGING SECURITY FILES EXAMPLES "SEE ALSO"; do
    grep -qx "$s" "$text" || missing="$missing [$s]"
done
t_eq "every section is there" "" "$missing"
missing=
for s in "What fails the job" "What only warns" "What never drains a node"; do
    grep -qx "   $s" "$text" || missing="$missing [$s]"
done
t_eq "failure semantics: fails, warns, never drains" "" "$missing"
t_check "the hang message users search for is quoted" \
    grep -q 'Using /home/you/.cache/torch_extensions/py310_cu118 as PyTorch extensions root\.\.\.' "$text"

# section SECTION: the rendered text of one section (heading excluded)
section() { awk -v s="$1" '/^[A-Z]/ {on = ($0 == s); next} on' "$text"; }
# entry SECTION ITEM: the rendered paragraph(s) of one .TP item whose tag starts with ITEM
entry() {
    section "$1" | awk -v k="$2" '
        /^       [^ ]/ { on = (index(substr($0, 8), k) == 1) }
        on'
}

# ---- the argument parser, compiled from the plugin's own sources ----------------
lib_sources=$(sed -n '/^libextc_la_SOURCES/,/^$/p' "$top/Makefile.am" | grep -oE 'plugin/[a-z]+/[a-z_]+\.c' | sed "s|^|$top/|")
cat >"$PKG_WORK/argcheck.c" <<'C'
/* argcheck defaults | builtins | reserved NAME | parse ARG... | mode VALUE */
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/mode.h"

int main(int argc, char **argv)
{
	struct extc_config cfg;
	const struct extc_var *vars;
	char why[1024];
	size_t i, n;

	if (argc == 2 && strcmp(argv[1], "defaults") == 0) {
		if (extc_config_parse(&cfg, 0, NULL, why, sizeof(why)) < 0)
			return (puts(why), 1);
		printf("base %s\n", cfg.base);
		printf("default %s\n", extc_mode_name(cfg.default_mode));
		printf("on_error %s\n", cfg.on_error == EXTC_ON_ERROR_FAIL ? "fail" :
		       cfg.on_error == EXTC_ON_ERROR_WARN ? "warn" : "auto");
		printf("allow_shared_fs %s\n", cfg.allow_shared_fs ? "yes" : "no");
		printf("vars %s\n", cfg.nvars == extc_vars_builtin(&vars) ? "builtin" : "other");
		printf("seed %s\n", cfg.seed[0] ? cfg.seed : "none");
		printf("seed_max %lluG\n", (unsigned long long)(cfg.seed_max >> 30));
		printf("seed_timeout %u\n", cfg.seed_timeout);
		printf("publish_timeout %u\n", cfg.publish_timeout);
		printf("pool %s\n", cfg.pool ? "node" : "off");
		printf("pool_max %lluG\n", (unsigned long long)(cfg.pool_max >> 30));
		printf("pool_total_max %lluG\n", (unsigned long long)(cfg.pool_total_max >> 30));
		printf("pool_ttl %u\n", cfg.pool_ttl);
		printf("pool_max_keys %u\n", cfg.pool_max_keys);
		printf("pool_max_inodes %llu\n", (unsigned long long)cfg.pool_max_inodes);
		printf("tier %s\n", cfg.tier[0] ? cfg.tier : "none");
		printf("tier_timeout %u\n", cfg.tier_timeout);
		printf("tier_keep %u\n", cfg.tier_keep);
		return (0);
	}
	if (argc == 2 && strcmp(argv[1], "builtins") == 0) {
		n = extc_vars_builtin(&vars);
		for (i = 0; i < n; i++)
			printf("%s %s\n", vars[i].name, vars[i].subdir);
		return (0);
	}
	if (argc >= 2 && strcmp(argv[1], "parse") == 0) {
		if (extc_config_parse(&cfg, argc - 2, argv + 2, why, sizeof(why)) < 0)
			return (puts(why), 1);
		return (0);
	}
	if (argc == 3 && strcmp(argv[1], "mode") == 0) {
		enum extc_mode mode;

		if (extc_mode_parse(argv[2], "--ext-cache", &mode, why, sizeof(why)) < 0)
			return (puts(why), 1);
		return (0);
	}
	fputs("usage: argcheck defaults|builtins|parse ARG...|mode VALUE\n", stderr);
	return (2);
}
C
# shellcheck disable=SC2086
if out=$(cc -std=gnu11 -D_GNU_SOURCE -I"$top/plugin" -o "$PKG_WORK/argcheck" "$PKG_WORK/argcheck.c" $lib_sources 2>&1); then
    t_pass "the argument parser of plugin/base/config.c builds into a driver"
else
    t_fail "the argument parser of plugin/base/config.c builds into a driver" "$out"
    pkg_end
fi
argcheck() { "$PKG_WORK/argcheck" "$@"; }

# ---- the arguments: the code's list, the manual's list ---------------------------
# the parser's table of keys: one { "key", parser } row each
code_keys=$(sed -n '/config_keys\[\] = {/,/^};/p' "$top/plugin/base/config.c" | grep -oE '^[[:space:]]*\{ "[a-z_]+",' |
    grep -oE '"[a-z_]+"' | tr -d '"' | sort -u)
help_keys=$(argcheck parse bogus=1 2>&1 | sed -n 's/.*valid arguments are \([a-z_=, ]*\).*/\1/p' |
    tr ',' '\n' | tr -d ' =' | grep . | sort -u)
t_check "plugin/base/config.c: parsed keys found" test -n "$code_keys"
t_eq "plugin/base/config.c: the keys it parses are the keys its error message lists" "$code_keys" "$help_keys"
man_keys=$(section ARGUMENTS | grep -oE '^       [a-z_]+=' | sed 's/^ *//; s/=$//' | sort -u)
t_eq "the manual documents exactly the arguments the code accepts" "$code_keys" "$man_keys"

# a key the parser does not know is refused (so acceptance below means something)
# shellcheck disable=SC2016 # $0 is the inner shell's: the argcheck program
t_check "the parser refuses an undocumented key" bash -c '! "$0" parse bogus=1 >/dev/null' "$PKG_WORK/argcheck"

declare -A sample=([base]=/var/tmp/ext-cache [vars]="TORCH_EXTENSIONS_DIR,TRITON_CACHE_DIR:triton"
    [seed]=/shared/jit-seeds/%U/%u [seed_max]="0 512K 2G 1T" [seed_timeout]="1 300 86400"
    [publish_timeout]="1 300 86400" [tier]=/shared/%U/.ext-cache-tier
    [tier_timeout]="1 30 3600" [tier_keep]="1 3 64")
# a key that is accepted only beside another (the site tier fills the node pool)
declare -A beside=([tier]=pool=node)
declare -A defaults=()
while read -r k v; do defaults[$k]=$v; done < <(argcheck defaults)
for k in $code_keys; do
    body=$(entry ARGUMENTS "$k=")
    tag=$(head -n1 <<<"$body" | sed 's/^ *//')
    # the values the tag shows (off|local|job), or a sample for a placeholder (PATH)
    if [[ $tag =~ ^$k=([a-z|]+)$ ]]; then
        values=${BASH_REMATCH[1]//|/ }
    else
        values=${sample[$k]:-}
    fi
    bad=
    for v in $values; do
        # shellcheck disable=SC2086 # no word or one
        out=$(argcheck parse ${beside[$k]:-} "$k=$v") || bad="$bad [$k=$v: $out]"
    done
    t_eq "$k=: every value the manual shows ($values) is accepted" "" "$bad"
    if [[ $tag =~ ^$k=([a-z|]+)$ ]]; then
        # shellcheck disable=SC2016 # $0 and $1 are the inner shell's
        t_check "$k=: a value the manual does not show is refused" \
            bash -c '! "$0" parse "$1" >/dev/null' "$PKG_WORK/argcheck" "$k=bogus"
    fi
    case ${defaults[$k]:-?} in
        auto) want="Default: fail when the user asked for a mode" ;;
        builtin) want="Default: the built-in list" ;;
        *) want="Default: ${defaults[$k]:-?}" ;;
    esac
    t_contains "$k=: the manual gives the code's default (${defaults[$k]:-?})" "$want" "$body"
done
t_contains "allow_shared_fs=: the other spellings it accepts are documented" \
    "(yes, true or 1 accept; no, false or 0 refuse)" "$(entry ARGUMENTS allow_shared_fs=)"
for v in true 1 false 0; do
    t_check "allow_shared_fs=$v is accepted, as documented" argcheck parse "allow_shared_fs=$v"
done

# reserved variable names: the code's lists, the manual's list
code_reserved=$(sed -n '/reserved_vars\[\] = {/,/};/p; /reserved_prefixes\[\] = {/,/};/p' "$top/plugin/base/config_vars.c" |
    grep -oE '"[A-Za-z_]+"' | tr -d '"' | sort -u)
man_reserved=$(entry ARGUMENTS vars= | grep -o 'Refused names.*' | grep -oE '\b[A-Z_]{2,}\b' | sort -u)
t_eq "vars=: the manual lists exactly the names and prefixes the code refuses" "$code_reserved" "$man_reserved"
bad=
for name in $(sed -n '/reserved_vars\[\] = {/,/};/p' "$top/plugin/base/config_vars.c" | grep -oE '"[A-Za-z_]+"' | tr -d '"'); do
    argcheck parse "vars=$name" >/dev/null && bad="$bad $name"
done
t_eq "vars=: each refused name is refused by the parser" "" "$bad"

# ---- built-in variables -------------------------------------------------------
builtins=$(argcheck builtins)
# (a page break of the rendered manual may put a blank line inside the table)
man_table=$(section ENVIRONMENT | awk '/^ +variable +subdirectory$/ {on = 1; next} on && NF == 2 {print $1, $2; next}
    on && NF == 0 {next} on {exit}')
t_eq "the manual's built-in variable table is the code's list, in order" "$builtins" "$man_table"
# the user guide's sentence "Built-in variables: `A`, `B`, ... `Z`." (up to its full stop)
guide_builtins=$(sed -n '/^Built-in variables/,/^$/p' "$top/docs/user-guide.md" | tr '\n' ' ' | sed 's/`\. .*//' |
    grep -oE '`[A-Z_]+' | tr -d '`')
t_eq "docs/user-guide.md lists the same built-in variables" "$(awk '{print $1}' <<<"$builtins")" "$guide_builtins"

# ---- user options, environment forms, exported variables ----------------------
# NAME=ARGINFO, or NAME alone for a flag (no .arginfo string)
opts=$(sed -n '/^static struct spank_option options/,/^};/p' "$top/plugin/spank/option.c" |
    awk -F'"' '/\.name = "/ { if (n != "") print n a; n = $2; a = "" } /\.arginfo = "/ { a = "=" $2 }
        END { if (n != "") print n a }')
t_eq "plugin/spank/option.c registers --ext-cache, --ext-cache-seed, --ext-cache-publish and --ext-cache-verbose" \
    "ext-cache=MODE ext-cache-seed=DIR ext-cache-publish=DIR ext-cache-verbose" "${opts//$'\n'/ }"
for o in $opts; do
    t_check "the manual documents --$o" grep -qx -- "       --$o" <(section "USER OPTION")
done
modes=$(sed -n '/mode_names\[\] = {/,/};/p' "$top/plugin/base/mode.c" | grep -oE '"[a-z]+"' | tr -d '"' | sort)
man_modes=$(section "USER OPTION" | grep -oE '^              (local|job|off|[a-z]+)  ' | awk '{print $1}' | sort)
for v in $(grep -ohE '#define EXTC_ENV_(SEED|PUBLISH|KEY) "[A-Z_]+"' "$top/plugin/base/seed_path.h" | grep -oE '"[A-Z_]+"' | tr -d '"'); do
    t_check "the manual documents the environment form $v=" grep -qE "^       $v=[A-Z]+\$" <(section "USER OPTION")
done
t_eq "the manual documents exactly the modes of plugin/base/mode.c" "$modes" "$man_modes"
for m in $modes; do
    t_check "mode $m is accepted by the code" argcheck mode "$m"
done
envverbose=$(sed -n 's/^#define EXTC_ENV_VERBOSE "\(.*\)"$/\1/p' "$top/plugin/warm/warm_report.h")
t_check "the manual documents the environment form $envverbose=1" grep -qx "       $envverbose=1" <(section "USER OPTION")
envreq=$(sed -n 's/^#define EXTC_ENV_REQUEST_NAME "\(.*\)"$/\1/p' "$top/plugin/base/mode.h")
t_check "the manual documents the environment form $envreq=MODE" grep -qx "       $envreq=MODE" <(section "USER OPTION")
exported=$(sed -n 's/^#define EXTC_ENV_[A-Z_]* "\(.*\)"$/\1/p' "$top/plugin/base/envvars.h" | sort)
man_exported=$(section ENVIRONMENT | grep -oE '^       SLURM_[A-Z_]+$' | sed 's/^ *//' | sort)
t_eq "the manual documents exactly the variables plugin/base/envvars.h exports" "$exported" "$man_exported"
man_names=$(grep -oE 'SLURM_EXT_CACHE[A-Z_]*' "$text" | sort -u)
code_names=$(grep -rhoE '"SLURM_EXT_CACHE[A-Z_]*"' "$top/plugin" | tr -d '"' | sort -u)
t_eq "every SLURM_EXT_CACHE* name in the manual exists in the code, and vice versa" "$code_names" "$man_names"

# ---- the directory layout: plugin/base/layout.h's, the manual's, the admin guide's ----
code_layout=$(sed -n 's|^ \* \(<base>/<uid>/.*\)$|\1|p' "$top/plugin/base/layout.h" | head -n1)
t_check "plugin/base/layout.h states the layout" test -n "$code_layout"
t_eq "the manual's layout is plugin/base/layout.h's ($code_layout)" "$(tr -d '<>' <<<"$code_layout")" \
    "$(section "DIRECTORY LAYOUT" | sed -n '1s/^ *//p')"
t_check "docs/admin-guide.md's layout is plugin/base/layout.h's" grep -qE "^    ${code_layout//./\\.} " "$top/docs/admin-guide.md"

# ---- examples and the shipped snippet are accepted by the parser ----------------
n=0
bad=
while read -r -a line; do
    n=$((n + 1))
    out=$(argcheck parse "${line[@]:2}") || bad="$bad [${line[*]}: $out]"
done < <(section EXAMPLES | sed -n 's/^ *\(optional\|required\) \(.*ext_cache\.so.*\)$/\1 \2/p')
t_check "the manual has plugstack.conf examples" test "$n" -ge 2
t_eq "every plugstack.conf example in the manual is accepted" "" "$bad"
snippet=$(sed -n 's/^#\(optional\|required\) \(.*ext_cache\.so.*\)$/\1 \2/p' "$conf_in")
t_eq "the plugstack.conf.d snippet has one commented plugin line" 1 "$(grep -c . <<<"$snippet")"
t_eq "the snippet has no active line" "" "$(grep -v '^#' "$conf_in" | grep -v '^[[:space:]]*$')"
read -r -a line <<<"$snippet"
t_check "the snippet's arguments are accepted" argcheck parse "${line[@]:2}"
for doc in README.md docs/admin-guide.md; do
    doc_line=$(grep -E '^ +(optional|required) /.*ext_cache\.so' "$top/$doc" | head -n1)
    read -r -a line <<<"$doc_line"
    t_check "$doc has a plugstack.conf line" test -n "$doc_line"
    t_check "$doc's plugstack.conf line is accepted" argcheck parse "${line[@]:2}"
done
missing=
for k in $code_keys; do
    grep -q "^#   $k=" "$conf_in" || missing="$missing snippet:$k"
    grep -q "^| \`$k=" "$top/docs/admin-guide.md" || missing="$missing admin-guide:$k"
done
t_eq "docs/admin-guide.md's table and the snippet name every argument" "" "$missing"

# ---- log lines: the prefix sites grep for --------------------------------------
bad=$(grep -nE 'slurm_(error|info|verbose|debug[0-9]?|spank_log)\(' "$top"/plugin/*/*.c |
    grep -v 'slurm_[a-z_0-9]*("ext-cache: ' | grep -v '^[^:]*log\.c:' || true)
t_eq "every direct Slurm log call in plugin/ starts with \"ext-cache: \"" "" "$bad"
t_check "plugin/spank/log.c prefixes every line with \"ext-cache: \"" grep -q 'fn("ext-cache: %s%s", scope, line)' "$top/plugin/spank/log.c"

# ---- one version everywhere ------------------------------------------------------
version=$(pkg_version)
t_eq "the manual's header names this version" "spank-ext-cache $version" \
    "$(sed -n 's/^\.TH [^"]*"[^"]*" "\([^"]*\)".*/\1/p' "$man")"
t_eq "debian/changelog's version is $version-N" "$version" \
    "$(sed -n '1s/^spank-ext-cache (\([^-)]*\)-[^)]*).*/\1/p' "$top/debian/changelog")"
t_eq "the RPM spec's Version is $version" "$version" "$(awk '$1 == "Version:" {print $2}' "$top/spank-ext-cache.spec")"
t_check "NEWS has an entry for $version" grep -q "^$version\b" "$top/NEWS"

pkg_end
