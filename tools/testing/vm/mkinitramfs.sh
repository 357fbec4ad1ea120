#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds (once per kernel and init script) the busybox initramfs the guests boot.
#   mkinitramfs.sh KVER OUTPUT
set -euo pipefail
kver=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
moddir=/lib/modules/$kver/kernel

[ -e "$out" ] && [ "$out" -nt "$here/initramfs-init" ] && exit 0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{bin,mods,proc,sys,dev,lower,rw,newroot}
cp /bin/busybox "$tmp/bin/busybox"
install -m 0755 "$here/initramfs-init" "$tmp/init"
# busybox insmod cannot read compressed modules.
for m in fs/netfs/netfs net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p fs/overlayfs/overlay; do
	src=$moddir/$m.ko
	name=$(basename "$m")
	# A kernel with them built in (the debug kernel) has no module directory.
	[ -d "$moddir" ] || continue
	if [ -e "$src.xz" ]; then
		xz -dc "$src.xz" >"$tmp/mods/$name.ko"
	elif [ -e "$src.zst" ]; then
		zstd -qdc "$src.zst" >"$tmp/mods/$name.ko"
	else
		cp "$src" "$tmp/mods/$name.ko"
	fi
done
mkdir -p "$(dirname "$out")"
(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
