#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# PID 1 of a test guest: prepares the system, runs the job's test, dumps dmesg, powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LC_ALL=C

# Power off synchronously: once the 9p root goes away nothing may be exec'd,
# and PID 1 must never exit (that panics the guest).
off() {
	sync
	busybox poweroff -f
	echo o >/proc/sysrq-trigger
	while :; do :; done
}

job=
for arg in $(</proc/cmdline); do
	case "$arg" in
	mr_job=*) job=${arg#mr_job=} ;;
	esac
done
if [ ! -r "$job" ]; then
	echo "=== METAROCE-INIT-FAILED: no job file '$job'"
	off
fi
set -a	# the test sees the job's MR_* variables
# shellcheck source=/dev/null
. "$job"
set +a

mount -t devpts -o mode=0620,ptmxmode=0666 devpts /dev/pts 2>/dev/null || {
	mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
}
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# What udev makes on a booted system: bash's <(...) needs /dev/fd (dkms uses it).
ln -sfn /proc/self/fd /dev/fd
ln -sfn /proc/self/fd/0 /dev/stdin
ln -sfn /proc/self/fd/1 /dev/stdout
ln -sfn /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /var/tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
hostname "mr-$MR_ROLE"
ip link set lo up
echo 1 >/proc/sys/kernel/panic_on_oops

# The module under test, findable by modprobe (and by rdma link's autoload).
if [ -n "${MR_MODROOT:-}" ]; then
	dst=/lib/modules/$(uname -r)
	mkdir -p "$dst"	# a kernel not installed on the host (the debug kernel)
	cp "$MR_MODROOT"/modules.* "$dst/"
	cp -r "$MR_MODROOT/updates" "$dst/"
fi

if [ -n "${MR_ADDR:-}" ]; then
	modprobe virtio_net
	ip link set eth0 up
	ip addr add "$MR_ADDR" dev eth0
fi
if [ "${MR_LINKS:-0}" -gt 0 ] && ! bash "$MR_TOP/tools/testing/vm/fabric.sh"; then
	echo "=== METAROCE-INIT-FAILED: the fabric links (fabric.sh)"
	off
fi

echo "=== METAROCE-TEST-BEGIN $MR_NAME ($MR_ROLE)"
cd "$MR_TOP" || off
timeout -k 5 "$MR_TEST_TIMEOUT" bash "$MR_TEST" "${MR_ARGS[@]}" </dev/null 2>&1
rc=$?
echo "=== METAROCE-TEST-END rc=$rc"
# The debug kernel's leak detector (make selftests-debug): what the test left behind is
# reported as "unreferenced object", which vm.sh fails.  Two scans: kmemleak reports an
# object only when it stayed unreferenced across them.
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	echo "=== METAROCE-KMEMLEAK-BEGIN"
	cat /sys/kernel/debug/kmemleak
	echo "=== METAROCE-KMEMLEAK-END"
fi
echo "=== METAROCE-DMESG-BEGIN"
dmesg
echo "=== METAROCE-DMESG-END"
off
