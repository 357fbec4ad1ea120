#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make install / make uninstall: what the build made, where the system looks for it.
#   install.sh install|uninstall [module] [provider] [man]   (default: all three)
#
#   module    drivers/metaroce/metaroce.ko -> /lib/modules/KVER/updates/metaroce.ko,
#             KVER from the module's own vermagic, then depmod KVER
#   provider  build/provider/libmetaroce-rdmav<pabi>.so -> libibverbs' provider
#             directory, and metaroce.driver -> its configuration directory
#             (both read from the installed libibverbs: scripts/ibverbs-paths.sh)
#   man       build/man/metaroce.7 -> PREFIX/share/man/man7/ (PREFIX=/usr/local)
#
# DESTDIR=DIR installs under DIR (packaging) and then runs no depmod.  The
# module and the provider go where the kernel and libibverbs look, not under
# PREFIX: neither searches anywhere else.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
destdir=${DESTDIR:-}
prefix=${PREFIX:-/usr/local}

die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

action=${1:-}
shift || true
case "$action" in
install | uninstall) ;;
*) die "usage: install.sh install|uninstall [module] [provider] [man]" ;;
esac
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(module provider man)

ko=$top/drivers/metaroce/metaroce.ko
# The kernel a module is for: the first word of its vermagic.
module_kver() {
	if [ -n "${KVER:-}" ]; then
		echo "$KVER"
	elif [ -f "$ko" ]; then
		modinfo -F vermagic "$ko" | awk '{ print $1 }'
	else
		uname -r
	fi
}

run_depmod() { # kver
	if [ -n "$destdir" ]; then
		say "DESTDIR set: no depmod (run depmod -a $1 where the files end up)"
	elif [ -e "/lib/modules/$1/modules.order" ]; then
		depmod -a "$1"
	else
		say "kernel $1 is not installed here: no depmod"
	fi
}

module() {
	local kver dst
	kver=$(module_kver)
	dst=$destdir/lib/modules/$kver/updates/metaroce.ko
	if [ "$action" = install ]; then
		[ -f "$ko" ] || die "$ko is not built (make)"
		if command -v dkms >/dev/null && [ -n "$(dkms status -m metaroce 2>/dev/null)" ]; then
			say "warning: DKMS also has metaroce; the two copies shadow each other: keep one"
		fi
		install -D -m 0644 "$ko" "$dst"
		say "installed $dst"
	else
		rm -f "$dst"
		say "removed $dst"
	fi
	run_depmod "$kver"
}

provider() {
	local dir conf pabi so
	dir=$("$top/scripts/ibverbs-paths.sh" provider-dir)
	conf=$("$top/scripts/ibverbs-paths.sh" config-dir)
	pabi=$("$top/scripts/ibverbs-paths.sh" pabi)
	so=libmetaroce-rdmav$pabi.so
	if [ "$action" = install ]; then
		[ -f "$top/build/provider/$so" ] ||
			die "build/provider/$so is not built (make provider), or libibverbs' private ABI $pabi is not the one it was built for"
		install -D -m 0644 "$top/build/provider/$so" "$destdir$dir/$so"
		install -D -m 0644 "$top/userspace/metaroce.driver" "$destdir$conf/metaroce.driver"
		say "installed $destdir$dir/$so and $destdir$conf/metaroce.driver"
	else
		rm -f "$destdir$dir/$so" "$destdir$conf/metaroce.driver"
		say "removed $destdir$dir/$so and $destdir$conf/metaroce.driver"
	fi
}

man() {
	local dst=$destdir$prefix/share/man/man7/metaroce.7
	if [ "$action" = install ]; then
		[ -f "$top/build/man/metaroce.7" ] || die "build/man/metaroce.7 is not built (make man)"
		install -D -m 0644 "$top/build/man/metaroce.7" "$dst"
		say "installed $dst"
	else
		rm -f "$dst"
		say "removed $dst"
	fi
}

for part in "${parts[@]}"; do
	case "$part" in
	module | provider | man) "$part" ;;
	*) die "unknown part '$part' (module, provider, man)" ;;
	esac
done
