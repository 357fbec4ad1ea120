#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make provider: builds the rdma-core provider (userspace/providers/metaroce)
# inside rdma-core's own source tree, which Debian's archive serves.
#
# Debian's libibverbs-dev has no <infiniband/driver.h>, so a provider needs
# rdma-core's source.  Bookworm's 44.0 tarball is no longer served; trixie's
# 56.1 is, and still speaks libibverbs' private ABI 34, so what it builds
# loads into bookworm's libibverbs 44.  The tarball is fetched with a private
# apt configuration (the machine's sources are never touched), checked
# against a pinned SHA-256, and cached with the unpacked tree in
# $METAROCE_CACHE/rdma-core/.  METAROCE_RDMA_CORE_TARBALL=FILE uses a local
# copy instead; METAROCE_DEBIAN_MIRROR overrides http://deb.debian.org/debian.
#
# Output: build/provider/libmetaroce-rdmav34.so and metaroce.driver.  Load it
# with RDMAV_DRIVERS=$PWD/build/provider/libmetaroce (no -rdmav34.so suffix).
# provider.sh --fetch only puts the tarball in the cache and prints its path
# (make deb ships it in the source package).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${METAROCE_CACHE:-/var/cache/metaroce}/rdma-core
out=$top/build/provider

RC_VERSION=56.1
RC_TARBALL=rdma-core_$RC_VERSION.orig.tar.gz
RC_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8
RC_SUITE=trixie
PABI=34		# IBVERBS_PRIVATE_34: what bookworm's libibverbs 44 exports
mirror=${METAROCE_DEBIAN_MIRROR:-http://deb.debian.org/debian}

die() { echo "provider.sh: $*" >&2; exit 1; }
tmp=
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT

"$top/scripts/setup.sh" provider || die "cannot install the build dependencies"
mkdir -p "$cache" "$out" || die "cannot create $cache"

# One build at a time per cache: the tree's providers/metaroce link points
# at the clone being built.
exec 9>"$cache/.lock"
flock 9

sha_ok() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$RC_SHA256" ]; }

# Downloads the orig tarball into $cache with apt-get source, through a
# configuration that only knows one deb-src line.
fetch_tarball() {
	local ver
	local -a apt
	tmp=$(mktemp -d "$cache/apt.XXXXXX")
	mkdir -p "$tmp/lists/partial" "$tmp/parts" "$tmp/cache/archives/partial" "$tmp/dl"
	echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $RC_SUITE main" \
		>"$tmp/sources.list"
	apt=(-q -o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=$tmp/parts"
		-o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache"
		-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
		-o APT::Sandbox::User=root -o Acquire::Languages=none)
	echo "provider.sh: fetching $RC_TARBALL from $mirror ($RC_SUITE, deb-src)" >&2
	# apt-get update exits 0 even when nothing could be fetched.
	apt-get "${apt[@]}" update >"$tmp/update.log" 2>&1
	if ! compgen -G "$tmp/lists/*_source_Sources*" >/dev/null; then
		grep -E '^(E|W|Err):' "$tmp/update.log" >&2
		echo "provider.sh: could not download $RC_SUITE's source index" >&2
		return 1
	fi
	# Any Debian revision of 56.1 carries the same orig tarball.
	ver=$(apt-cache "${apt[@]}" showsrc rdma-core 2>/dev/null | awk -v f="$RC_TARBALL" '
		/^Version:/ { v = $2 }
		$0 ~ f { print v; exit }')
	if [ -z "$ver" ]; then
		echo "provider.sh: $RC_SUITE no longer lists rdma-core $RC_VERSION" >&2
		return 1
	fi
	# The .dsc may be missing from the pool (404) while the tarball is
	# there: apt then fails after downloading what it could, so judge by
	# the tarball itself.
	(cd "$tmp/dl" && apt-get "${apt[@]}" source --download-only "rdma-core=$ver") \
		>"$tmp/source.log" 2>&1 || true
	if [ ! -s "$tmp/dl/$RC_TARBALL" ]; then
		cat "$tmp/source.log" >&2
		return 1
	fi
	sha_ok "$tmp/dl/$RC_TARBALL" || {
		echo "provider.sh: $RC_TARBALL from $mirror does not match SHA-256 $RC_SHA256" >&2
		return 1
	}
	mv "$tmp/dl/$RC_TARBALL" "$cache/$RC_TARBALL"
}

tarball=$cache/$RC_TARBALL
if [ -n "${METAROCE_RDMA_CORE_TARBALL:-}" ]; then
	sha_ok "$METAROCE_RDMA_CORE_TARBALL" ||
		die "$METAROCE_RDMA_CORE_TARBALL is not rdma-core $RC_VERSION (SHA-256 $RC_SHA256)"
	cp "$METAROCE_RDMA_CORE_TARBALL" "$tarball"
fi
if [ ! -f "$tarball" ] || ! sha_ok "$tarball"; then
	rm -f "$tarball"
	fetch_tarball || die "cannot get rdma-core $RC_VERSION's source ($RC_TARBALL) from Debian's
archive ($mirror, suite $RC_SUITE): the userspace provider cannot be built.
Place the file somewhere and run again with METAROCE_RDMA_CORE_TARBALL=/path/to/$RC_TARBALL."
fi
if [ "${1:-}" = --fetch ]; then
	echo "$tarball"
	exit 0
fi

# The unpacked tree, made once and then patched in place.
src=$cache/rdma-core-$RC_VERSION
if [ ! -e "$src/.unpacked" ]; then
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -xzf "$tarball" -C "$src.tmp" --strip-components=1 || die "cannot unpack $tarball"
	touch "$src.tmp/.unpacked"
	mv "$src.tmp" "$src"
fi

# Our provider and ABI header go where upstream would keep them.
"$top/scripts/rdma-core-add-provider.sh" "$src"

# Configure once per clone (its own build directory), then build the
# provider and what it links against: nothing else of rdma-core.
bld=$out/cmake
qpex=$("$top/scripts/ibverbs-paths.sh" qp-ex-size) || die "cannot read the system's struct ibv_qp_ex"
if [ ! -f "$bld/build.ninja" ] || ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$bld/CMakeCache.txt" ||
	! grep -qx "METAROCE_SYS_QP_EX_SIZE:STRING=$qpex" "$bld/CMakeCache.txt"; then
	rm -rf "$bld"
	cmake -S "$src" -B "$bld" -GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_SKIP_RPATH=ON \
		-DMETAROCE_SYS_QP_EX_SIZE:STRING="$qpex" \
		>"$out/configure.log" 2>&1 || {
		tail -30 "$out/configure.log" >&2
		die "cmake failed (log: $out/configure.log)"
	}
fi
target=metaroce-rdmav$PABI
ninja -C "$bld" -j2 "$target" >"$out/build.log" 2>&1 || {
	grep -E -A5 'error|warning' "$out/build.log" | head -40 >&2
	die "building $target failed (log: $out/build.log)"
}
so=$bld/lib/lib$target.so
[ -f "$so" ] || die "ninja built $target but $so is missing"
cp "$so" "$out/lib$target.so.tmp"
mv "$out/lib$target.so.tmp" "$out/lib$target.so"
cp "$top/userspace/metaroce.driver" "$out/metaroce.driver"
so=$out/lib$target.so

# The provider must load into the system's libibverbs.
"$top/scripts/provider-check.sh" "$so" >/dev/null || die "$so does not fit the system's libibverbs"
sys=$(ldconfig -p | awk '$1 == "libibverbs.so.1" && /x86-64/ && !found { print $NF; found = 1 }')
echo "provider.sh: built $so (IBVERBS_PRIVATE_$PABI, loads into $sys)"
echo "provider.sh: use RDMAV_DRIVERS=$out/libmetaroce, or $out/metaroce.driver in /etc/libibverbs.d/"
