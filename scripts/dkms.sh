#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The module's source as DKMS takes it, and DKMS without a package.
#   dkms.sh source DIR   copy what the module build needs (Kbuild files, the C sources and
#                        headers, the uapi header) into DIR, the layout kept, no dkms.conf
#                        (the package build adds it with dh_dkms)
#   dkms.sh install      (root) that source and dkms.conf in /usr/src/metaroce-VERSION, then
#                        dkms add, and dkms install for every kernel whose headers are
#                        installed; kernels dkms.conf excludes (BUILD_EXCLUSIVE_KERNEL: the
#                        series drivers/metaroce/compat.h supports) are skipped
#   dkms.sh uninstall    (root) dkms remove --all, and the source in /usr/src
# After dkms.sh install, DKMS rebuilds the module whenever headers of a new kernel
# are installed (AUTOINSTALL).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=$("$top/scripts/version.sh")
name=metaroce

die() { echo "dkms.sh: $*" >&2; exit 1; }

copy_source() { # dest
	local dest=$1 f
	mkdir -p "$dest"
	# Everything Kbuild compiles, wherever the module's files move inside
	# drivers/metaroce; test-only case tables stay behind.
	(cd "$top" && find Kbuild drivers/metaroce include/uapi/rdma/metaroce-abi.h \
		-path '*/tests' -prune -o -type f \( -name Kbuild -o -name '*.[ch]' \) -print) |
		while read -r f; do
			case "$f" in *.mod.c) continue ;; esac
			install -D -m 0644 "$top/$f" "$dest/$f"
		done
	[ -f "$dest/drivers/metaroce/Kbuild" ] || die "no drivers/metaroce/Kbuild copied to $dest"
}

case "${1:-}" in
source)
	[ -n "${2:-}" ] || die "usage: dkms.sh source DIR"
	copy_source "$2"
	;;
install)
	command -v dkms >/dev/null || die "dkms is not installed (apt-get install dkms)"
	src=/usr/src/$name-$version
	if [ -n "$(dkms status -m "$name" -v "$version")" ]; then
		dkms remove -m "$name" -v "$version" --all
	fi
	rm -rf "$src"
	copy_source "$src"
	sed "s/#MODULE_VERSION#/$version/" "$top/dkms.conf" >"$src/dkms.conf"
	dkms add -m "$name" -v "$version"
	built=0
	for build in /lib/modules/*/build; do
		[ -d "$build" ] || continue
		kver=$(basename "$(dirname "$build")")
		rc=0
		dkms install -m "$name" -v "$version" -k "$kver" || rc=$?
		case $rc in
		0) built=$((built + 1)) ;;
		77) echo "dkms.sh: $kver skipped: dkms.conf does not build for this kernel" ;;
		*) die "dkms install for $kver failed (exit $rc)" ;;
		esac
	done
	[ "$built" -gt 0 ] || die "no installed kernel with headers that $name supports"
	dkms status -m "$name"
	;;
uninstall)
	command -v dkms >/dev/null || die "dkms is not installed"
	if [ -n "$(dkms status -m "$name" -v "$version")" ]; then
		dkms remove -m "$name" -v "$version" --all
	fi
	rm -rf "/usr/src/$name-$version"
	;;
*)
	die "usage: dkms.sh source DIR | install | uninstall"
	;;
esac
