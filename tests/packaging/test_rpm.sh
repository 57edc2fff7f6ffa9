#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The RPM spec, for real: `make dist` on a clean copy of the source tree, then
# `rpmbuild -tb` on the tarball (the spec travels inside it) against the
# installed Slurm headers, with Debian's rpm. The package holds the plugin in
# %{_libdir}/slurm, the commented plugstack.conf.d snippet as a
# %config(noreplace) file, the manual and the docs, and requires exactly the
# Slurm version it was built against. (rpmbuild runs with --nodeps: Debian's
# rpm database knows no slurm-devel; the headers are Debian's libslurm-dev.)
# The build runs %check (make check, the packager's tier), and every
# program of it must pass, none skipped.
# Prints ok/not ok lines, ends with "N passed, M failed". About 1 minute.
set -u
. "$(dirname "$0")/lib.sh"

pkg_begin rpm
pkg_need rpm cpio elfutils build-essential autoconf automake libtool pkg-config libslurm-dev libcmocka-dev \
    slurm-wlm-basic-plugins python3 man-db groff-base

name=spank-ext-cache
version=$(pkg_version)
slurm=$(pkg_slurm_version)
t_check "Slurm's version read from slurm/slurm_version.h ($slurm)" test -n "$slurm"
t_eq "the spec's Version is the package's" "$version" "$(awk '$1 == "Version:" {print $2}' "$PKG_TOP/$name.spec")"

# ---- the tarball -------------------------------------------------------------------------
src=$PKG_WORK/src
pkg_copy_source "$src" || { t_fail "copy the source tree" "failed"; pkg_end; }
pkg_run "make dist" "$PKG_LOGS/rpm-dist.log" \
    bash -c "cd '$src' && autoreconf -fi && ./configure && make dist" || pkg_end
tarball=$src/$name-$version.tar.gz
t_check "the tarball carries the spec" bash -c "tar -tzf '$tarball' | grep -qx '$name-$version/$name.spec'"

# ---- rpmbuild -tb ------------------------------------------------------------------------
top=$PKG_WORK/rpmbuild
pkg_run "rpmbuild -tb $name-$version.tar.gz" "$PKG_LOGS/rpm-build.log" \
    rpmbuild -tb --nodeps --define "_topdir $top" "$tarball" || pkg_end
pkg_check_unit_tests_ran "$PKG_LOGS/rpm-build.log"
rpmfile=$(find "$top/RPMS" -name "$name-$version-*.rpm" ! -name '*debug*' | head -n1)
t_check "$name-$version-*.rpm made" test -n "$rpmfile" || pkg_end
t_note "$(rpm -qpi "$rpmfile" 2>/dev/null)"

t_eq "Name Version" "$name $version" "$(rpm -qp --qf '%{NAME} %{VERSION}' "$rpmfile")"
requires=$(rpm -qp --requires "$rpmfile")
t_eq "Requires: slurm = $slurm (exactly the Slurm it was built against)" "slurm = $slurm" \
    "$(grep -x "slurm = $slurm" <<<"$requires")"
t_note "Requires: $(grep -v '^rpmlib(' <<<"$requires" | paste -sd, -)"
t_contains "the description names the Slurm version" "Built against Slurm" "$(rpm -qp --qf '%{DESCRIPTION}' "$rpmfile")"
libdir=$(rpm --eval '%{_libdir}')
plugin=$libdir/slurm/ext_cache.so
conf=/etc/slurm/plugstack.conf.d/ext-cache.conf
hook=/etc/enroot/hooks.d/50-ext-cache.sh
files=$(rpm -qpl "$rpmfile")
missing=
for re in "$plugin" "$conf" "$hook" '/usr/share/man/man8/ext_cache\.8(\.gz)?' \
    "/usr/share/doc/$name/README\\.md" "/usr/share/doc/$name/NEWS"; do
    grep -qxE "$re" <<<"$files" || missing="$missing $re"
done
t_eq "it holds the plugin, the snippet, the enroot hook, the manual and the docs" "" "$missing"
missing=
for doc in $(pkg_docs); do
    grep -qxF "/usr/share/doc/$name/$doc" <<<"$files" || missing="$missing $doc"
done
t_eq "it holds every document ($(pkg_docs | paste -sd' ' -)) in /usr/share/doc/$name" "" "$missing"
t_eq "it holds LICENSE as the package's license" 1 "$(grep -cxE "/usr/share/licenses/$name(-$version)?/LICENSE" <<<"$files")"
t_eq "the enroot hook is root's, mode 0755 (enroot runs only executable hooks)" "-rwxr-xr-x root root" \
    "$(rpm -qp --qf '[%{FILENAMES} %{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME}\n]' "$rpmfile" | awk -v h="$hook" '$1 == h {print $2, $3, $4}')"
t_eq "no .la, nothing under /usr/local" "" "$(grep -E '\.la$|^/usr/local' <<<"$files")"
t_eq "the snippet and the enroot hook are the only config files" "$hook $conf" "$(rpm -qpc "$rpmfile" | sort | paste -sd' ' -)"
t_eq "... both marked %config(noreplace)" "$hook noreplace $conf noreplace" \
    "$(rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$rpmfile" | awk -v c="$conf" -v h="$hook" '$1 == c || $1 == h {print $1, ($2 ~ /n/ ? "noreplace" : "replace")}' | sort | paste -sd' ' -)"

x=$PKG_WORK/extracted
mkdir -p "$x"
(cd "$x" && rpm2cpio "$rpmfile" | cpio -idm --quiet)
t_eq "the packaged snippet is all comments (not enabled)" "" "$(grep -v '^#' "$x$conf" | grep -v '^[[:space:]]*$')"
t_check "its commented line names the packaged plugin" grep -qE "^#optional $plugin base=" "$x$conf"
pkg_check_plugin "packaged ext_cache.so" "$x$plugin"
man=$(find "$x/usr/share/man/man8" -name 'ext_cache.8*' 2>/dev/null | sort | head -n1)
warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$man" 2>&1 >/dev/null)
t_eq "the packaged manual renders without warnings" "" "$warn"

pkg_end
