#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make deb: the Debian source package and the binary packages metaroce-dkms and
# ibverbs-provider-metaroce, built with dpkg-buildpackage into build/deb/, then
# checked with lintian (its report: build/deb/lintian.txt).
#
# The upstream tarball holds the files git tracks or would track (not those
# .gitignore names; outside git, the tree without build/), so what `make` built
# never goes in.  rdma-core's
# source, which the provider is built in, is the source package's second
# upstream tarball (component rdma-core): the same file Debian ships as
# rdma-core_56.1.orig.tar.gz, fetched and cached by scripts/provider.sh.
# Nothing is written outside the tree but apt installs and that cache.
#
# Unchanged inputs (tracked files, rdma-core tarball, libibverbs1 version)
# leave build/deb as it is; FORCE=1 rebuilds.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/deb

die() { echo "deb.sh: $*" >&2; exit 1; }

"$top/scripts/setup.sh" deb || die "cannot install the packaging tools"
rc_tarball=$("$top/scripts/provider.sh" --fetch) || die "cannot get rdma-core's source"
version=$("$top/scripts/version.sh")
debver=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
stamp=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Timestamp)

cd "$top"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	list() { git ls-files -z --cached --others --exclude-standard; }
else
	list() { find . -path ./build -prune -o -path ./.git -prune -o -type f -printf '%P\0'; }
fi
# Files that exist (a tracked file deleted in the work tree is left out).
files() {
	list | while IFS= read -r -d '' f; do
		if [ -f "$f" ]; then printf '%s\0' "$f"; fi
	done
}

inputs=$( {
	files | xargs -0 sha256sum
	sha256sum "$rc_tarball" | cut -d' ' -f1
	dpkg-query -W -f='${Version}\n' libibverbs1
} | sha256sum | cut -d' ' -f1)
if [ "${FORCE:-0}" != 1 ] && [ -f "$out/inputs.sha256" ] &&
	[ "$(cat "$out/inputs.sha256")" = "$inputs" ] &&
	compgen -G "$out/*_$debver*.deb" >/dev/null; then
	echo "deb.sh: build/deb is up to date (inputs unchanged; FORCE=1 rebuilds):"
	printf "  %s\n" "$out"/*.deb
	exit 0
fi

rm -rf "$out"
mkdir -p "$out"
src=$out/metaroce-$version
files | grep -zv '^debian/' |
	tar --create --xz --file "$out/metaroce_$version.orig.tar.xz" --null --files-from=- \
		--transform "s,^,metaroce-$version/," --sort=name --owner=0 --group=0 \
		--numeric-owner --mtime="@$stamp"
cp "$rc_tarball" "$out/metaroce_$version.orig-rdma-core.tar.gz"

# The tree dpkg-source -x would unpack: upstream, the component in rdma-core/, debian/.
tar -xJf "$out/metaroce_$version.orig.tar.xz" -C "$out"
mkdir "$src/rdma-core"
tar -xzf "$out/metaroce_$version.orig-rdma-core.tar.gz" -C "$src/rdma-core" --strip-components=1
files | grep -z '^debian/' | tar --create --null --files-from=- | tar -x -C "$src"

cd "$src"
if ! dpkg-checkbuilddeps >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || die "missing build dependencies: $(dpkg-checkbuilddeps 2>&1 | sed 's/.*: //')"
	echo "deb.sh: installing the build dependencies of debian/control"
	DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q --no-install-recommends "$src" \
		>"$out/build-dep.log" 2>&1 || {
		tail -20 "$out/build-dep.log" >&2
		die "apt-get build-dep failed (log: $out/build-dep.log)"
	}
fi

echo "deb.sh: dpkg-buildpackage $debver (log: build/deb/build.log)"
# The tree's build/provider has nothing to do with this build; parallel as the machine allows.
if ! DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc >"$out/build.log" 2>&1; then
	grep -E -B2 -A8 'error|Error|failed' "$out/build.log" | tail -40 >&2
	die "dpkg-buildpackage failed (log: $out/build.log)"
fi

changes=$out/metaroce_${debver}_$(dpkg-architecture -qDEB_HOST_ARCH).changes
echo "deb.sh: lintian"
lintian --info --display-info --pedantic "$changes" >"$out/lintian.txt" 2>&1 || true
# The tags (the report explains each); lintian's own chatter is left in the file.
grep -E '^[A-MO-Z]: ' "$out/lintian.txt" | sed 's/^/  /' || echo "  (no tags)"
if grep -qE '^[EW]: ' "$out/lintian.txt"; then
	die "lintian reports errors or warnings (build/deb/lintian.txt)"
fi
echo "$inputs" >"$out/inputs.sha256"
echo "deb.sh: built in build/deb/:"
printf "  %s\n" "$out"/*.deb "$out"/*.dsc
