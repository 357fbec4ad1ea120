#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Builds, once, a debug kernel from Debian's linux-source-6.12 for the guest tests:
# KASAN (generic, inline), lockdep (PROVE_LOCKING), kmemleak, UBSAN and the atomic-sleep
# check, with everything the tests use built in (RDMA core, rxe, NVMe-oF over RDMA, 9p,
# overlayfs, virtio, veth, macvlan, tun, netem, tbf, ECMP routing), cached outside the
# clone.  Built in, rdma_rxe and nvmet-rdma cannot be unloaded: the checks of
# rxe_side_by_side and nvme_teardown that rmmod them fail on this kernel.
#   debug-kernel.sh            build if needed, print the build directory
#   debug-kernel.sh --release  print the kernel release of the build
# Used by `make selftests-debug` (VM_KERNEL= and VM_KDIR= for vm.sh and run.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${METAROCE_CACHE:-/var/cache/metaroce}
out=$cache/debug-kernel
stamp=$out/.metaroce-config

if [ "${1:-}" = --release ]; then
	cat "$out/include/config/kernel.release"
	exit 0
fi

"$here/setup.sh" kunit >&2	# the kernel source, bc, flex, bison, libelf, libssl
src=$("$here/kernel-source.sh")

# The options, in one place: the stamp holds them, so a change rebuilds.
opts=(
	# what the guests need to boot and run the tests, built in
	DEVTMPFS DEVTMPFS_MOUNT TMPFS BLK_DEV_INITRD SERIAL_8250 SERIAL_8250_CONSOLE
	VIRTIO_PCI VIRTIO_NET HW_RANDOM HW_RANDOM_VIRTIO NET_9P NET_9P_VIRTIO 9P_FS OVERLAY_FS
	MODULES MODULE_UNLOAD NET_NS IPV6 VETH MACVLAN TUN NET_SCH_NETEM NET_SCH_TBF NET_SCHED
	IP_ADVANCED_ROUTER IP_MULTIPLE_TABLES IP_ROUTE_MULTIPATH INET_DIAG INET_UDP_DIAG
	CONFIGFS_FS BLK_DEV_LOOP DEBUG_FS TRACING FTRACE
	INFINIBAND INFINIBAND_USER_ACCESS INFINIBAND_ADDR_TRANS RDMA_RXE
	NVME_CORE BLK_DEV_NVME NVME_FABRICS NVME_RDMA NVME_TARGET NVME_TARGET_RDMA
	# the checks
	KASAN KASAN_GENERIC KASAN_INLINE PROVE_LOCKING DEBUG_ATOMIC_SLEEP DEBUG_KMEMLEAK
	DEBUG_KMEMLEAK_AUTO_SCAN UBSAN UBSAN_BOUNDS DEBUG_LIST DETECT_HUNG_TASK
	SOFTLOCKUP_DETECTOR DEBUG_INFO_NONE
)
want="${opts[*]}"
if [ -e "$out/arch/x86/boot/bzImage" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
	echo "$out"
	exit 0
fi

mkdir -p "$out"
start=$SECONDS
echo "debug-kernel.sh: configuring $out (x86_64 defconfig + ${#opts[@]} options)" >&2
make -s -C "$src" O="$out" defconfig >&2
cfg=(--disable LOCALVERSION_AUTO --set-str LOCALVERSION -mrdebug --disable MODULE_SIG
     --disable DEBUG_INFO_BTF --disable KFENCE)
for o in "${opts[@]}"; do cfg+=(--enable "$o"); done
"$src/scripts/config" --file "$out/.config" "${cfg[@]}"
make -s -C "$src" O="$out" olddefconfig >&2
# olddefconfig drops what it cannot satisfy: say so rather than boot a kernel without it.
missing=()
for o in "${opts[@]}"; do
	grep -q "^CONFIG_$o=y" "$out/.config" || missing+=("$o")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "debug-kernel.sh: not set after olddefconfig: ${missing[*]}" >&2
	exit 1
fi
echo "debug-kernel.sh: building (nice, -j$(nproc)); this takes a while" >&2
nice -n 19 make -s -C "$src" O="$out" -j"$(nproc)" bzImage modules >&2
echo "$want" >"$stamp"
echo "debug-kernel.sh: built $(cat "$out/include/config/kernel.release") in $((SECONDS - start)) s" >&2
echo "$out"
