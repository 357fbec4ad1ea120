#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Boots Debian's 6.12 kernel in QEMU, runs one test script in the guest, judges it.
#
# usage: vm.sh [options] SCRIPT [ARGS...]
#   --pair            two guests joined by one virtual Ethernet wire (QEMU stream
#                     netdev); each runs SCRIPT with MR_ROLE=a|b and eth0 set to
#                     MR_ADDR (198.18.0.1/24 or 198.18.0.2/24)
#   --links K         with --pair: K more wires between the guests, the fabric
#                     links, each its own subnet (198.19.k.0/24), routed with a
#                     layer-4 ECMP hash between the endpoint addresses MR_EP and
#                     MR_PEER_EP (198.18.1.1 and 198.18.2.1); see fabric.sh
#   --name NAME       name of the run, for logs (default: the script's name)
#   --timeout SEC     wall-clock limit per guest (default 600)
#   --mem MB          guest memory (default 1024)
#   --no-module       do not install the freshly built metaroce.ko in the guest
#   --expect-fail WHY succeed only if the run fails for that reason: dmesg,
#                     exit, timeout or crash (one guest of a pair ended
#                     before its test did, and its peer was stopped) (the
#                     harness's own self-tests)
#
# The guest sees the host's root read-only (9p) under a tmpfs overlay, so it
# runs the host's binaries on the guest kernel.  A run fails if the script
# exits non-zero, the guest does not finish in time, or the guest's kernel log
# shows BUG, WARNING, Oops, a general protection fault, a hung task, KASAN,
# UBSAN, a refcount error or a panic.  Console logs: build/vm-logs/NAME*.log.
# VM_CMDLINE adds kernel parameters.  VM_DEBUG=1 (the selftests set it) boots
# with the memory and lockup checks Debian's kernel has built in: SLUB
# red zones, poisoning and free-pointer checks (slub_debug=FZPU), KFENCE
# sampling, pages poisoned and cleared when freed, and panics on soft
# lockups and hung tasks.  VM_KDIR=DIR boots the kernel built in DIR instead
# (the debug kernel of scripts/debug-kernel.sh, with what the tests need
# built in), with the metaroce.ko built against it.  VM_TIMEOUT_SCALE=N
# multiplies every guest's wall-clock limit (the debug kernel is about 5x slower).
# VM_TCG_PROFILE=DIR (TCG only) loads the tcgprof plugin (VM_TCG_PLUGIN, the
# libtcgprof.so) into each guest, with its snapshots in DIR/<role>
# (tools/testing/bench/tcgprof).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
cache=${METAROCE_CACHE:-/var/cache/metaroce}
logdir=$top/build/vm-logs

pair=0 links=0 name= timeout=600 mem=1024 module=1 expect_fail=
while [ $# -gt 0 ]; do
	case "$1" in
	--pair) pair=1 ;;
	--links) links=$2; shift ;;
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
[ $# -ge 1 ] || { sed -n '3,24p' "$0" >&2; exit 2; }
timeout=$((timeout * ${VM_TIMEOUT_SCALE:-1}))
if [ "$links" != 0 ] && { [ "$pair" != 1 ] || ! [[ "$links" =~ ^[1-8]$ ]]; }; then
	echo "vm.sh: --links K needs --pair and 1 <= K <= 8" >&2
	exit 2
fi
script=$(realpath "$1")
shift
name=${name:-$(basename "$script" .sh)}

"$top/scripts/setup.sh" vm
kver=$("$top/scripts/kver.sh" version 6.12)
kernel=/boot/vmlinuz-$kver
kmods=/lib/modules/$kver
if [ -n "${VM_KDIR:-}" ]; then
	kver=$(cat "$VM_KDIR/include/config/kernel.release")
	kernel=$VM_KDIR/arch/x86/boot/bzImage
	kmods=$VM_KDIR
fi
debug_cmdline=
if [ "${VM_DEBUG:-0}" = 1 ]; then
	debug_cmdline="slub_debug=FZPU kfence.sample_interval=10 init_on_free=1 page_poison=1"
	debug_cmdline+=" softlockup_panic=1 hung_task_panic=1"
	# A guest that panics dumps its whole log (the console shows only errors).
	debug_cmdline+=" panic_print=0x20"
fi
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
	[ -n "${VM_KDIR:-}" ] || ln -s "/lib/modules/$kver/kernel" "$modroot/lib/modules/$kver/kernel"
	cp "$kmods"/modules.{order,builtin,builtin.modinfo} "$modroot/lib/modules/$kver/"
	cp "$ko" "$modroot/lib/modules/$kver/updates/"
	if [ -n "${VM_KDIR:-}" ]; then
		depmod -b "$modroot" -F "$VM_KDIR/System.map" "$kver"
	else
		depmod -b "$modroot" "$kver"
	fi
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
# 4-level paging under TCG, as most real hosts run: with LA57 on, the debug kernel once
# reported a wild access in do_raw_spin_lock at boot (not seen since).  The crashes
# with impossible EFLAGS in rxe runs are not this: one came with LA57 off as well.
# They are not the guest's: four crashes (three double faults, one debug trap
# with TF set) at one instruction, kmem_cache_alloc_node_noprof's retry label,
# reached when SLUB's cmpxchg16b on the per-CPU freelist fails, with EFLAGS made
# of a register's bits.  QEMU 7.2's TCG gets the flags wrong there now and then
# (turning AVX off did not help), so the guests run without CX16: SLUB then
# takes the kernel's own interrupts-off emulation, plain moves and popf.
# Nor ERMS: with it the kernel clears a page with rep stosb, which TCG runs one
# byte per step, and Debian's kernel clears every page it allocates
# (init_on_alloc=1): tcgprof (make profile PROFILE_TCG=1) found a quarter of a
# MetaRoCE receiver's instructions in clear_page_erms, 2 bytes cleared per byte
# received (the NIC's receive buffers).  Without ERMS it takes rep stosq, 8
# bytes a step, as hardware without ERMS would; every transport's receive
# path clears the same pages.
# VM_CPU overrides the model.
cpu=${VM_CPU:-max,la57=off,cx16=off,erms=off}
[ "$acc" = kvm ] && cpu=host

run=$(mktemp -d "$top/build/vm-run.XXXXXX" 2>/dev/null || {
	mkdir -p "$top/build" && mktemp -d "$top/build/vm-run.XXXXXX"
})
# The wires' sockets: a short path (a Unix socket's name has at most 107 bytes).
wires=$(mktemp -d /tmp/metaroce-wires.XXXXXX)
qpids=()
cleanup() {
	for p in "${qpids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$run" "$wires"
}
trap cleanup EXIT
mkdir -p "$logdir"

write_job() { # role addr
	{
		printf 'MR_NAME=%q\nMR_ROLE=%q\nMR_TOP=%q\nMR_TEST=%q\n' "$name" "$1" "$top" "$script"
		printf 'MR_TEST_TIMEOUT=%q\nMR_ADDR=%q\nMR_PAIR=%q\n' "$((timeout - 30))" "$2" "$pair"
		printf 'MR_PEER=%q\n' "$3"
		printf 'MR_LINKS=%q\nMR_EP=%q\nMR_PEER_EP=%q\n' "$links" "${4:-}" "${5:-}"
		[ "$module" = 1 ] && printf 'MR_MODROOT=%q\n' "$modroot/lib/modules/$kver"
		printf 'MR_ARGS=('
		for a in "${args[@]}"; do printf '%q ' "$a"; done
		printf ')\n'
	} >"$run/job-$1.env"
}
args=("$@")

start_guest() { # role log [netdev args...]
	local role=$1 log=$2 plugin=()
	shift 2
	[ -z "${VM_TCG_PROFILE:-}" ] || [ "$acc" = kvm ] ||
		plugin=(-plugin "$VM_TCG_PLUGIN,dir=$VM_TCG_PROFILE/$role")
	timeout -k 10 "$timeout" qemu-system-x86_64 "${plugin[@]}" -accel "$acc" -cpu "$cpu" \
		-smp "$smp" -m "$mem" -nodefaults -no-user-config -display none \
		-monitor none -no-reboot -serial stdio \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 loglevel=4 log_buf_len=16M no_timer_check panic=-1 $debug_cmdline ${VM_CMDLINE:-} mr_init=$here/guest-init.sh mr_job=$run/job-$role.env" \
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		-device virtio-rng-pci "$@" </dev/null >"$log" 2>&1 &
	qpids+=($!)
}

# run_guests: boot the guest(s) of this run and wait for them.
run_guests() {
	logs=()
	if [ "$pair" = 1 ]; then
		smp=1
		# Wire 0 is eth0 (control, 198.18.0.0/24); wires 1..K are the fabric links,
		# recognised in the guest by their MACs 52:54:00:4d:1k:0r (fabric.sh).
		# A wire is a Unix stream socket between the two QEMUs: lossless (a full
		# socket stalls the sending NIC, as TCP would) and without Nagle.  QEMU's
		# TCP wires (socket,listen=) set TCP_NODELAY on the connecting side only,
		# so every frame guest a sent while its previous one was unacknowledged
		# waited for the host's delayed ACK: 40 ms, seen as a 64 B Write p99 of
		# 42 ms spread over 8 links (2.2 ms on one busy wire).
		socks=() nics_a=() nics_b=()
		for ((k = 0; k <= links; k++)); do
			sock=$wires/w$k.sock
			socks+=("$sock")
			mac=52:54:00:4d:52
			[ "$k" -gt 0 ] && mac=52:54:00:4d:$((10 + k))
			nics_a+=(-netdev "stream,id=n$k,server=on,addr.type=unix,addr.path=$sock"
				-device "virtio-net-pci,netdev=n$k,mac=$mac:01")
			nics_b+=(-netdev "stream,id=n$k,server=off,addr.type=unix,addr.path=$sock"
				-device "virtio-net-pci,netdev=n$k,mac=$mac:02")
		done
		write_job a 198.18.0.1/24 198.18.0.2 198.18.1.1 198.18.2.1
		write_job b 198.18.0.2/24 198.18.0.1 198.18.2.1 198.18.1.1
		logs=("$logdir/$name-a.log" "$logdir/$name-b.log")
		rm -f "${socks[@]}"	# a second boot (boot_crashed) waits for new ones
		start_guest a "${logs[0]}" "${nics_a[@]}"
		for sock in "${socks[@]}"; do
			for _ in $(seq 50); do
				[ -S "$sock" ] && break
				sleep 0.1
			done
		done
		start_guest b "${logs[1]}" "${nics_b[@]}"
	else
		smp=2
		write_job a "" ""
		logs=("$logdir/$name.log")
		start_guest a "${logs[0]}"
	fi

	# A guest whose kernel died (QEMU runs with -no-reboot and panic=-1: it exits)
	# leaves its peer waiting for it until the timeout, two hours in make bench.
	# The first guest to end without its test's end marker stops the other,
	# unless its time ran out (timeout's 124): the other's runs out with it.
	dead=
	if [ "${#qpids[@]}" -gt 1 ]; then
		local ended= st=0
		wait -n -p ended "${qpids[@]}" || st=$?
		for i in "${!qpids[@]}"; do
			[ "${qpids[$i]}" = "$ended" ] && [ "$st" != 124 ] || continue
			grep -aq '^=== METAROCE-TEST-END' "${logs[$i]}" && break
			dead=$(basename "${logs[$i]}" .log)
			echo "vm.sh: guest $dead ended before its test did; stopping the other"
			sleep 5	# the peer's console may still be printing what it saw
			for p in "${qpids[@]}"; do
				[ "$p" = "$ended" ] || kill "$p" 2>/dev/null || true
			done
		done
	fi
	for p in "${qpids[@]}"; do wait "$p" || true; done
	qpids=()
}

# boot_crashed: a guest's kernel died before the test started. Under TCG an SMP
# guest now and then takes an int3 while the kernel patches its own text at
# boot (seen: "Oops: int3" in sched_clock_cpu from start_secondary, no module
# loaded yet); that says nothing about the code under test, so the run is
# started once more.
boot_crashed() {
	local log
	for log in "${logs[@]}"; do
		if ! grep -aq '^=== METAROCE-TEST-BEGIN' "$log" &&
			grep -aEq 'Kernel panic|Oops' "$log"; then
			return 0
		fi
	done
	return 1
}

run_guests
if boot_crashed; then
	for log in "${logs[@]}"; do
		echo "[$(basename "$log" .log)] the guest kernel crashed while booting, before the test:"
		grep -aE -m 3 'Oops|RIP:|Kernel panic' "$log" | tr -d '\r' | sed 's/^/  | /'
		cp "$log" "${log%.log}.boot-crash.log"
	done
	echo "vm.sh: $name: booting again (kept as *.boot-crash.log)"
	run_guests
fi

# Judge each guest's console log.
# SLUB's reports start "BUG <cache> (<taint>): ...", KFENCE's "BUG: KFENCE:", page
# poisoning's "pagealloc: memory corruption", kmemleak's "unreferenced object".
bad='BUG:|BUG [^ ]+ \(|WARNING:|Oops|general protection|hung_task|blocked for more than|KASAN|UBSAN|refcount_t:|Kernel panic|kernel BUG|Call Trace:|INIT-FAILED|pagealloc: memory corruption|unreferenced object|possible circular locking|inconsistent lock state|INFO: trying to register non-static key|soft lockup'
fail=0 why=""
for log in "${logs[@]}"; do
	who=$(basename "$log" .log)
	# The test's own output, so failures explain themselves.
	sed -n '/^=== METAROCE-TEST-BEGIN/,/^=== METAROCE-TEST-END/p' "$log" | tr -d '\r' |
		sed "s/^/[$who] /"
	rc=$(sed -n 's/^=== METAROCE-TEST-END rc=\([0-9]*\).*/\1/p' "$log" | tr -d '\r' | tail -n1)
	if [ -z "$rc" ] && [ -n "$dead" ]; then
		# The guest that died says why in its kernel log, judged below; its
		# peer was stopped for it.
		echo "[$who] FAIL: guest $dead ended before its test did (crash); log: $log"
		fail=1 why+=" crash"
		if [ "$who" != "$dead" ]; then
			tail -n 5 "$log" | tr -d '\r' | sed "s/^/[$who] | /"
			continue
		fi
	elif [ -z "$rc" ]; then
		echo "[$who] FAIL: guest did not finish (timeout ${timeout}s or crash); log: $log"
		tail -n 30 "$log" | tr -d '\r' | sed "s/^/[$who] | /"
		fail=1 why+=" timeout"
		continue
	fi
	# The kernel command line names the debug options (hung_task_panic=1): not a report.
	# No reader may stop early here (grep -q, -m, head): under pipefail the writer's
	# SIGPIPE would fail the pipeline and hide the report.
	problems=$(sed '/ommand line: /d' "$log" | grep -aE "$bad" || true)
	if [ -n "$problems" ]; then
		echo "[$who] FAIL: kernel log shows a problem; log: $log"
		printf '%s\n' "$problems" | sed -n 1,5p | tr -d '\r' | sed "s/^/[$who] | /"
		fail=1 why+=" dmesg"
	fi
	if [ -n "$rc" ] && [ "$rc" != 0 ]; then
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
