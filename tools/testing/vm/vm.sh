#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Boots Debian's 6.12 kernel in QEMU, runs one test script in the guest, judges it.
#
# usage: vm.sh [options] SCRIPT [ARGS...]
#   --pair            two guests joined by one virtual Ethernet wire (QEMU socket
#                     netdev); each runs SCRIPT with MR_ROLE=a|b and eth0 set to
#                     MR_ADDR (198.18.0.1/24 or 198.18.0.2/24)
#   --name NAME       name of the run, for logs (default: the script's name)
#   --timeout SEC     wall-clock limit per guest (default 600)
#   --mem MB          guest memory (default 1024)
#   --no-module       do not install the freshly built metaroce.ko in the guest
#   --expect-fail WHY succeed only if the run fails for that reason: dmesg,
#                     exit or timeout (the harness's own self-tests)
#
# The guest sees the host's root read-only (9p) under a tmpfs overlay, so it
# runs the host's binaries on the guest kernel.  A run fails if the script
# exits non-zero, the guest does not finish in time, or the guest's kernel log
# shows BUG, WARNING, Oops, a general protection fault, a hung task, KASAN,
# UBSAN, a refcount error or a panic.  Console logs: build/vm-logs/NAME*.log.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
cache=${METAROCE_CACHE:-/var/cache/metaroce}
logdir=$top/build/vm-logs

pair=0 name= timeout=600 mem=1024 module=1 expect_fail=
while [ $# -gt 0 ]; do
	case "$1" in
	--pair) pair=1 ;;
	--name) name=$2; shift ;;
	--timeout) timeout=$2; shift ;;
	--mem) mem=$2; shift ;;
	--no-module) module=0 ;;
	--expect-fail) expect_fail=$2; shift ;;
	--) shift; break ;;
	-*) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 1 ] || { sed -n '3,20p' "$0" >&2; exit 2; }
script=$(realpath "$1")
shift
name=${name:-$(basename "$script" .sh)}

"$top/scripts/setup.sh" vm
kver=$("$top/scripts/kver.sh" version 6.12)
kernel=/boot/vmlinuz-$kver
initrd=$cache/vm/initramfs-$kver.cpio.gz
"$here/mkinitramfs.sh" "$kver" "$initrd"
ko=$top/drivers/metaroce/metaroce.ko
if [ "$module" = 1 ] && [ ! -e "$ko" ]; then
	echo "vm.sh: $ko is not built (run make)" >&2
	exit 2
fi

# modprobe must find the module (rdma link autoloads it), but depmod over 9p
# under TCG takes minutes: index the host's module tree plus ours here, once
# per build, and let the guest copy the index files.
modroot=$top/build/vm-modroot
if [ "$module" = 1 ] && { [ ! -e "$modroot/stamp" ] || [ "$ko" -nt "$modroot/stamp" ]; }; then
	rm -rf "$modroot"
	mkdir -p "$modroot/lib/modules/$kver/updates"
	ln -s "/lib/modules/$kver/kernel" "$modroot/lib/modules/$kver/kernel"
	cp /lib/modules/"$kver"/modules.{order,builtin,builtin.modinfo} "$modroot/lib/modules/$kver/"
	cp "$ko" "$modroot/lib/modules/$kver/updates/"
	depmod -b "$modroot" "$kver"
	touch "$modroot/stamp"
fi

# KVM only when a probe boot proves it works (nested KVM often does not).
accel() {
	local boot_id probe result
	boot_id=$(cat /proc/sys/kernel/random/boot_id)
	probe=$cache/vm/kvm-probe.$boot_id
	if [ ! -e "$probe" ]; then
		result=tcg
		mkdir -p "$cache/vm"
		if [ -w /dev/kvm ]; then
			timeout 60 qemu-system-x86_64 -accel kvm -m 256 -nodefaults -no-user-config \
				-display none -monitor none -no-reboot -serial stdio \
				-kernel "$kernel" -initrd "$initrd" \
				-append "console=ttyS0 panic=-1 rdinit=/bin/true" \
				</dev/null >"$cache/vm/kvm-probe.log" 2>&1 || true
			grep -q "Run /bin/true as init process" "$cache/vm/kvm-probe.log" && result=kvm
		fi
		echo "$result" >"$probe"
	fi
	cat "$probe"
}
acc=$(accel)
cpu=max
[ "$acc" = kvm ] && cpu=host

run=$(mktemp -d "$top/build/vm-run.XXXXXX" 2>/dev/null || {
	mkdir -p "$top/build" && mktemp -d "$top/build/vm-run.XXXXXX"
})
qpids=()
cleanup() {
	for p in "${qpids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$run"
}
trap cleanup EXIT
mkdir -p "$logdir"

write_job() { # role addr
	{
		printf 'MR_NAME=%q\nMR_ROLE=%q\nMR_TOP=%q\nMR_TEST=%q\n' "$name" "$1" "$top" "$script"
		printf 'MR_TEST_TIMEOUT=%q\nMR_ADDR=%q\nMR_PAIR=%q\n' "$((timeout - 30))" "$2" "$pair"
		printf 'MR_PEER=%q\n' "$3"
		[ "$module" = 1 ] && printf 'MR_MODROOT=%q\n' "$modroot/lib/modules/$kver"
		printf 'MR_ARGS=('
		for a in "${args[@]}"; do printf '%q ' "$a"; done
		printf ')\n'
	} >"$run/job-$1.env"
}
args=("$@")

start_guest() { # role log [netdev args...]
	local role=$1 log=$2
	shift 2
	timeout -k 10 "$timeout" qemu-system-x86_64 -accel "$acc" -cpu "$cpu" \
		-smp "$smp" -m "$mem" -nodefaults -no-user-config -display none \
		-monitor none -no-reboot -serial stdio \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 loglevel=4 panic=-1 mr_init=$here/guest-init.sh mr_job=$run/job-$role.env" \
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		-device virtio-rng-pci "$@" </dev/null >"$log" 2>&1 &
	qpids+=($!)
}

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
	done
}

logs=()
if [ "$pair" = 1 ]; then
	smp=1
	port=$(free_port)
	write_job a 198.18.0.1/24 198.18.0.2
	write_job b 198.18.0.2/24 198.18.0.1
	logs=("$logdir/$name-a.log" "$logdir/$name-b.log")
	start_guest a "${logs[0]}" -netdev "socket,id=n0,listen=127.0.0.1:$port" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:4d:52:01
	for _ in $(seq 50); do
		ss -Hltn "sport = :$port" | grep -q . && break
		sleep 0.1
	done
	start_guest b "${logs[1]}" -netdev "socket,id=n0,connect=127.0.0.1:$port" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:4d:52:02
else
	smp=2
	write_job a "" ""
	logs=("$logdir/$name.log")
	start_guest a "${logs[0]}"
fi

for p in "${qpids[@]}"; do wait "$p" || true; done
qpids=()

# Judge each guest's console log.
bad='BUG:|WARNING:|Oops|general protection|hung_task|blocked for more than|KASAN|UBSAN|refcount_t:|Kernel panic|kernel BUG|Call Trace:|INIT-FAILED'
fail=0 why=""
for log in "${logs[@]}"; do
	who=$(basename "$log" .log)
	# The test's own output, so failures explain themselves.
	sed -n '/^=== METAROCE-TEST-BEGIN/,/^=== METAROCE-TEST-END/p' "$log" | tr -d '\r' |
		sed "s/^/[$who] /"
	rc=$(sed -n 's/^=== METAROCE-TEST-END rc=\([0-9]*\).*/\1/p' "$log" | tr -d '\r' | tail -n1)
	if [ -z "$rc" ]; then
		echo "[$who] FAIL: guest did not finish (timeout ${timeout}s or crash); log: $log"
		tail -n 30 "$log" | tr -d '\r' | sed "s/^/[$who] | /"
		fail=1 why+=" timeout"
		continue
	fi
	if grep -aEq "$bad" "$log"; then
		echo "[$who] FAIL: kernel log shows a problem; log: $log"
		grep -aE -m 5 "$bad" "$log" | tr -d '\r' | sed "s/^/[$who] | /"
		fail=1 why+=" dmesg"
	fi
	if [ "$rc" != 0 ]; then
		echo "[$who] FAIL: test exited $rc; log: $log"
		fail=1 why+=" exit"
	fi
done

if [ -n "$expect_fail" ]; then
	if [[ " $why " == *" $expect_fail "* ]]; then
		echo "vm.sh: $name failed as expected ($expect_fail)"
		exit 0
	fi
	echo "vm.sh: $name was expected to fail ($expect_fail) but did not (${why:- passed})"
	exit 1
fi
exit "$fail"
