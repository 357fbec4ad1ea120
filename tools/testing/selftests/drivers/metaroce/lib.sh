#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared helpers of the metaroce guest tests: assertions, topologies, pair barrier.
# Sourced by every test; tests run as root inside a guest made by tools/testing/vm.

set -u
MR_FAILS=0
MR_CHECKS=0

log() { echo "# $*"; }

ok() { # description
	MR_CHECKS=$((MR_CHECKS + 1))
	echo "ok $MR_CHECKS - $*"
}

not_ok() { # description
	MR_CHECKS=$((MR_CHECKS + 1))
	MR_FAILS=$((MR_FAILS + 1))
	echo "not ok $MR_CHECKS - $*"
}

# check "description" command...: the command must succeed.  A pair_barrier that
# fails ends the test: the peer did not come, so the guests are out of step and
# every later barrier could only time out in turn (ucx once spent 20 minutes so).
check() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$what"
	else
		not_ok "$what"
		echo "$out" | sed 's/^/#   /'
		if [ "$1" = pair_barrier ]; then
			echo "# Bail out! the peer did not reach barrier '$2': the test ends here"
			done_testing
		fi
	fi
}

# check_fails "description" "expected error text" command...: the command must
# fail and say so with the expected text (e.g. the strerror of an errno).
check_fails() {
	local what=$1 want=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		not_ok "$what (succeeded, expected: $want)"
	elif ! grep -qF -- "$want" <<<"$out"; then
		not_ok "$what (expected '$want')"
		echo "$out" | sed 's/^/#   /'
	else
		ok "$what"
	fi
}

# check_eq "description" expected actual
check_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1 (expected '$2', got '$3')"
	fi
}

# wait_for SECONDS command...: poll until the command succeeds.
wait_for() {
	local limit=$1 i
	shift
	for ((i = 0; i < limit * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

done_testing() {
	echo "1..$MR_CHECKS"
	if [ "$MR_FAILS" -ne 0 ]; then
		echo "# $MR_FAILS of $MR_CHECKS checks failed"
		exit 1
	fi
	exit 0
}

# ---- the device under test ----

ibdev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
ibdev_gone() { ! ibdev_exists "$1"; }
port_state() { cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null; }
port_is() { [ "$(port_state "$1")" = "$2" ]; } # dev "4: ACTIVE"
# hw_counter DEV NAME: one port counter of `rdma statistic` (port 1).
hw_counter() {
	rdma statistic show link "$1"/1 -j | tr ',{}' '\n\n\n' | sed -n "s/^\"$2\":\([0-9]*\)$/\1/p"
}
# hw_counters DEV: every port counter of DEV, "name value" a line, from one query.
hw_counters() {
	rdma statistic show link "$1"/1 -j | tr ',{}' '\n\n\n' | sed -n 's/^"\([a-z_0-9]*\)":\([0-9]*\)$/\1 \2/p'
}
# cpu_times: "busy total" in USER_HZ ticks.  Under TCG the ticks do not add up to the
# time that passed (seen: 25 s of ticks in 4 s), so only their ratio means anything:
# the busy share of a wall time measured with uptime_ms.
cpu_times() { awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }
uptime_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
# use_provider: libibverbs loads our provider from build/provider (it appends
# -rdmav34.so itself); the test ends failed when the provider was not built.
# Sets top (the source tree) and provider.
use_provider() {
	top=${MR_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../../.." && pwd)}
	provider=$top/build/provider/libmetaroce
	if [ ! -f "$provider-rdmav34.so" ]; then
		not_ok "rdma-core provider built: $provider-rdmav34.so is missing (make provider failed or was not run; see its output)"
		done_testing
	fi
	export RDMAV_DRIVERS=$provider
}

# addr_gid_index DEV ADDR: the GID table index of an IPv4 address (IPv4-mapped GID).
addr_gid_index() {
	local want f
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		[ "$(cat "$f" 2>/dev/null)" = "$want" ] && { basename "$f"; return 0; }
	done
	return 1
}
# The EUI-64 the core shows for a MAC (ff:fe inserted, universal/local bit flipped).
mac_to_guid() {
	local IFS=: b
	read -ra b <<<"$1"
	printf '%02x%s:%sff:fe%s:%s%s\n' $((0x${b[0]} ^ 2)) "${b[1]}" "${b[2]}" \
		"${b[3]}" "${b[4]}" "${b[5]}"
}
# The module's default UDP port, read from the user ABI header that defines it.
MR_UDP_PORT=$(awk '$1 == "#define" && $2 == "METAROCE_UDP_PORT_DEFAULT" { print $3 }' \
	"$(dirname "${BASH_SOURCE[0]}")/../../../../../include/uapi/rdma/metaroce-abi.h")
# Network namespace NS (or "" for the current one) has the MetaRoCE UDP port open.
udp_port_open() { # ns [port]
	local port=${2:-$MR_UDP_PORT}
	if [ -n "$1" ]; then
		ip netns exec "$1" ss -Hlun "sport = :$port" | grep -q .
	else
		ss -Hlun "sport = :$port" | grep -q .
	fi
}
udp_port_closed() { ! udp_port_open "$@"; }

# ---- topologies (addresses in 198.18.0.0/15 only) ----

# two_local_devices: mr0 on dummy d0 ($A, 198.18.1.1) and mr1 on dummy d1 ($B,
# 198.18.2.1) in this namespace, ports ACTIVE, their GID indices in g0 and g1.
# What one sends to the other (or to itself) comes in over loopback.
two_local_devices() {
	local i
	A=198.18.1.1
	B=198.18.2.1
	for i in 0 1; do
		ip link add "d$i" type dummy
		ip link set "d$i" up
	done
	ip addr add "$A/24" dev d0
	ip addr add "$B/24" dev d1
	check "mr0 on d0" rdma link add mr0 type metaroce netdev d0
	check "mr1 on d1" rdma link add mr1 type metaroce netdev d1
	check "mr0 port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
	check "mr1 port ACTIVE" wait_for 5 port_is mr1 "4: ACTIVE"
	check "mr0 has the GID of $A" wait_for 10 addr_gid_index mr0 "$A"
	check "mr1 has the GID of $B" wait_for 10 addr_gid_index mr1 "$B"
	g0=$(addr_gid_index mr0 "$A")
	g1=$(addr_gid_index mr1 "$B")
}

# Two hosts in namespaces h1 and h2 joined by one veth pair: h1/v1 198.18.1.1,
# h2/v2 198.18.1.2.
topo_veth_pair() {
	ip netns add h1
	ip netns add h2
	ip link add v1 netns h1 type veth peer name v2 netns h2
	ip -n h1 addr add 198.18.1.1/24 dev v1
	ip -n h2 addr add 198.18.1.2/24 dev v2
	ip -n h1 link set lo up
	ip -n h2 link set lo up
	ip -n h1 link set v1 up
	ip -n h2 link set v2 up
}

# uverbs_veth_devices PROGRAM: what the user-Verbs test programs run on: PROGRAM.c
# (with uverbs_util.c) built into /tmp/PROGRAM, MetaRoCE devices mr0 on h1/v1 and
# mr1 on h2/v2 of topo_veth_pair with their ports ACTIVE.  Sets bin, and g0 and g1,
# the GID indices of their IPv4 addresses.  Needs use_provider first (it sets top).
uverbs_veth_devices() {
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	bin=/tmp/$1
	check "build the test program" gcc -O2 -Wall -Wextra -Werror -I"$top/include/uapi" \
		-o "$bin" "$here/$1.c" "$here/uverbs_util.c" -libverbs
	topo_veth_pair
	check "modprobe metaroce" modprobe metaroce
	check "modprobe ib_uverbs" modprobe ib_uverbs
	veth_devices
}

# veth_devices: MetaRoCE devices mr0 on h1/v1 and mr1 on h2/v2 of topo_veth_pair, their
# ports ACTIVE and their IPv4 GIDs there; sets g0 and g1, the GIDs' indices.
veth_devices() {
	check "mr0 on h1/v1" ip netns exec h1 rdma link add mr0 type metaroce netdev v1
	check "mr1 on h2/v2" ip netns exec h2 rdma link add mr1 type metaroce netdev v2
	check "mr0 port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
	check "mr1 port ACTIVE" wait_for 5 port_is mr1 "4: ACTIVE"
	check "mr0 has its IPv4 GID" wait_for 10 addr_gid_index mr0 198.18.1.1
	check "mr1 has its IPv4 GID" wait_for 10 addr_gid_index mr1 198.18.1.2
	g0=$(addr_gid_index mr0 198.18.1.1)
	g1=$(addr_gid_index mr1 198.18.1.2)
}

# ibv_devices_list NAME...: libibverbs (through the installed or chosen provider) lists
# each device; its output goes to the log.
ibv_devices_list() {
	local devices d
	devices=$(ibv_devices 2>&1)
	sed 's/^/#   /' <<<"$devices"
	for d in "$@"; do
		check "ibv_devices lists $d" grep -qE "^[[:space:]]*${d}[[:space:]]" <<<"$devices"
	done
	check "libibverbs does not complain" sh -c '! grep -qi warning' <<<"$devices"
}

# Hosts h1 (198.18.1.1) and h2 (198.18.2.1) behind routers r1 and r2 joined by
# K parallel links, with a layer-4 multipath hash so the UDP source port picks
# the link.  Each fabric link gets "netem LOSS" (e.g. "loss 1%") if given, and
# "tbf RATE" if given.
#   topo_ecmp K [NETEM_ARGS] [RATE]
topo_ecmp() {
	local k=$1 netem=${2:-} rate=${3:-} i nh1="" nh2="" dev
	for ns in h1 r1 r2 h2; do
		ip netns add "$ns"
		ip -n "$ns" link set lo up
	done
	ip link add e1 netns h1 type veth peer name e1 netns r1
	ip link add e2 netns h2 type veth peer name e2 netns r2
	ip -n h1 addr add 198.18.1.1/24 dev e1
	ip -n r1 addr add 198.18.1.254/24 dev e1
	ip -n h2 addr add 198.18.2.1/24 dev e2
	ip -n r2 addr add 198.18.2.254/24 dev e2
	ip -n h1 link set e1 up; ip -n r1 link set e1 up
	ip -n h2 link set e2 up; ip -n r2 link set e2 up
	# The endpoints cut UDP GSO bursts (fabric.sh says why): netem drops packets.
	ip netns exec h1 ethtool -K e1 tx-udp-segmentation off >/dev/null
	ip netns exec h2 ethtool -K e2 tx-udp-segmentation off >/dev/null
	for r in r1 r2; do
		ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1
		ip netns exec "$r" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
	done
	for ((i = 1; i <= k; i++)); do
		ip link add "p$i" netns r1 type veth peer name "p$i" netns r2
		ip -n r1 addr add "198.19.$i.1/24" dev "p$i"
		ip -n r2 addr add "198.19.$i.2/24" dev "p$i"
		ip -n r1 link set "p$i" up
		ip -n r2 link set "p$i" up
		nh1+=" nexthop via 198.19.$i.2 dev p$i"
		nh2+=" nexthop via 198.19.$i.1 dev p$i"
		for r in r1 r2; do
			dev="p$i"
			if [ -n "$rate" ]; then
				ip netns exec "$r" tc qdisc add dev "$dev" root handle 1: \
					tbf rate "$rate" burst 32kb latency 20ms
				[ -n "$netem" ] && ip netns exec "$r" tc qdisc add dev "$dev" \
					parent 1:1 handle 10: netem $netem
			elif [ -n "$netem" ]; then
				ip netns exec "$r" tc qdisc add dev "$dev" root netem $netem
			fi
		done
	done
	ip -n h1 route add default via 198.18.1.254
	ip -n h2 route add default via 198.18.2.254
	# shellcheck disable=SC2086
	ip -n r1 route add 198.18.2.0/24 $nh1
	# shellcheck disable=SC2086
	ip -n r2 route add 198.18.1.0/24 $nh2
}

# ---- two guests (vm.sh --pair) ----

# Both guests call pair_barrier NAME [SECONDS]; neither returns before the other
# arrived, or SECONDS (default 120) passed.
pair_barrier() {
	local port=$((7000 + $(cksum <<<"$1" | cut -d' ' -f1) % 1000)) i secs=${2:-120}
	if [ "$MR_ROLE" = a ]; then
		timeout "$secs" busybox nc -l -p "$port" </dev/null >/dev/null
	else
		for ((i = 0; i < secs * 10; i++)); do
			busybox nc "${MR_PEER}" "$port" </dev/null >/dev/null 2>&1 && return 0
			sleep 0.1
		done
		return 1
	fi
}

# pair_tell NAME WORD on guest a, WORD=$(pair_hear NAME) on guest b: one word
# from a to b over the control wire (e.g. whether a round worked), or fail
# after SECONDS (default 120).
pair_tell() { # NAME WORD [SECONDS]
	local port=$((8000 + $(cksum <<<"$1" | cut -d' ' -f1) % 1000))
	echo "$2" | timeout "${3:-120}" busybox nc -l -p "$port" >/dev/null
}
pair_hear() { # NAME [SECONDS]
	local port=$((8000 + $(cksum <<<"$1" | cut -d' ' -f1) % 1000)) i word
	for ((i = 0; i < ${2:-120} * 10; i++)); do
		word=$(busybox nc "$MR_PEER" "$port" </dev/null 2>/dev/null)
		[ -n "$word" ] && { echo "$word"; return 0; }
		sleep 0.1
	done
	return 1
}

# client_connect TRIES CMD...: run a client, again (a second later) while it could not
# reach a server that is not listening yet, at most TRIES times.  Sets CLIENT_OUT (its
# output) and CLIENT_RC.  "Not listening yet" in each client's words: perftest's and
# the pingpongs' TCP exchange ("Couldn't connect", "unable to init the socket"),
# ucx_perftest's ("Connection refused"), and rdma_cm's answer when no one listens on the
# service: a REJECT with reason 8, invalid service ID (rping, ucmatose: "REJECTED, error
# 8"), or for UD's SIDR "UNREACHABLE" (udaddy).  Seen when a slower machine started a
# server later than the fixed sleep before its client allowed.
client_connect() {
	local tries=$1 i
	shift
	for ((i = 0; i < tries; i++)); do
		[ "$i" = 0 ] || sleep 1
		CLIENT_OUT=$("$@" 2>&1)
		CLIENT_RC=$?
		[ "$CLIENT_RC" != 0 ] &&
			grep -qiE "couldn't connect|unable to init the socket|connection refused|RDMA_CM_EVENT_REJECTED, error:? 8\b|RDMA_CM_EVENT_UNREACHABLE" \
				<<<"$CLIENT_OUT" || break
	done
}

# run_pair NAME CMD [ARG...]: after a barrier, CMD as the server on guest b and as the
# client on guest a, with the peer's address appended; the client tries again while the
# server does not listen yet (slow start under TCG).  PAIR_TIMEOUT (seconds, default 180)
# and PAIR_TAIL (output lines shown, default 25) may be set for one call.  The output is
# left in RUN_OUT.
run_pair() {
	local name=$1 out rc secs=${PAIR_TIMEOUT:-180}
	shift
	check "barrier: $name" pair_barrier "$name"
	if [ "$MR_ROLE" = b ]; then
		out=$(timeout "$secs" "$@" 2>&1)
		rc=$?
	else
		sleep 1
		client_connect 20 timeout "$secs" "$@" "$MR_PEER"
		out=$CLIENT_OUT rc=$CLIENT_RC
	fi
	sed 's/^/#   /' <<<"$out" | tail -n "${PAIR_TAIL:-25}"
	check_eq "$name ($MR_ROLE side) completes" 0 "$rc"
	RUN_OUT=$out
}

# ---- NVMe over Fabrics (nvme_of, nvme_teardown) ----
NVME_NQN=nqn.2026-11.org.metaroce:selftest
NVME_PORT=4420

# nvmet_up ADDR MIB: export a MIB MiB loop device as $NVME_NQN over rdma on ADDR.
nvmet_up() {
	local s=/sys/kernel/config/nvmet/subsystems/$NVME_NQN p=/sys/kernel/config/nvmet/ports/1

	modprobe nvmet-rdma && modprobe loop || return 1
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return 1
	truncate -s "$2M" /tmp/nvme-backing.img || return 1
	losetup -f --show /tmp/nvme-backing.img >/tmp/loopdev || return 1
	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" || return 1
	mkdir "$s/namespaces/1" && cat /tmp/loopdev >"$s/namespaces/1/device_path" &&
		echo 1 >"$s/namespaces/1/enable" || return 1
	mkdir "$p" || return 1
	echo rdma >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo "$1" >"$p/addr_traddr" && echo $NVME_PORT >"$p/addr_trsvcid" || return 1
	ln -s "$s" "$p/subsystems/$NVME_NQN"
}

nvmet_down() {
	local s=/sys/kernel/config/nvmet/subsystems/$NVME_NQN p=/sys/kernel/config/nvmet/ports/1

	rm -f "$p/subsystems/$NVME_NQN" && rmdir "$p" &&
		echo 0 >"$s/namespaces/1/enable" && rmdir "$s/namespaces/1" && rmdir "$s" &&
		losetup -d "$(cat /tmp/loopdev)"
}

# nvme_connect ADDR [TRIES]: connect to $NVME_NQN at ADDR over rdma; the
# number of tries it took is left in /tmp/nvme-tries.
nvme_connect() {
	local i
	for ((i = 1; i <= ${2:-1}; i++)); do
		echo "$i" >/tmp/nvme-tries
		if nvme connect -t rdma -n "$NVME_NQN" -a "$1" -s $NVME_PORT \
			--hostnqn="nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)"; then
			return 0
		fi
		sleep 2
	done
	return 1
}

# The namespace block device of $NVME_NQN, if connected.
nvme_ns_dev() {
	local c

	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] && [ "$(cat "$c/subsysnqn")" = "$NVME_NQN" ] || continue
		ls -d /dev/"$(basename "$c")"n1 2>/dev/null && return 0
	done
	return 1
}

# No controller of $NVME_NQN left.
nvme_gone() {
	! nvme_ns_dev >/dev/null && ! grep -qsx "$NVME_NQN" /sys/class/nvme/nvme*/subsysnqn
}

# ---- the fabric between two guests (vm.sh --pair --links K, see vm/fabric.sh) ----

# fabric_shape LINK [NETEM_ARGS] [RATE]: this guest's egress on fabric link
# LINK: "netem NETEM_ARGS" (e.g. "loss 1% delay 1ms"), under "tbf RATE" if given.
fabric_shape() {
	local dev=l$1 netem=${2:-} rate=${3:-}
	ip netns exec fr tc qdisc del dev "$dev" root 2>/dev/null || true
	if [ -n "$rate" ]; then
		ip netns exec fr tc qdisc add dev "$dev" root handle 1: \
			tbf rate "$rate" burst 32kb latency 50ms || return 1
		[ -z "$netem" ] || ip netns exec fr tc qdisc add dev "$dev" parent 1:1 \
			handle 10: netem $netem || return 1
	elif [ -n "$netem" ]; then
		ip netns exec fr tc qdisc add dev "$dev" root handle 10: netem $netem || return 1
	fi
}

# fabric_use K: route to the peer over fabric links 1..K only.
fabric_use() {
	local i nh=()
	for ((i = 1; i <= $1; i++)); do
		nh+=(nexthop via "198.19.$i.$([ "$MR_ROLE" = a ] && echo 2 || echo 1)" dev "l$i")
	done
	ip -n fr route replace "${MR_PEER_EP%.*}.0/24" "${nh[@]}"
}

# fabric_tx_packets LINK: packets this guest sent on fabric link LINK.
fabric_tx_packets() {
	ip netns exec fr cat "/sys/class/net/l$1/statistics/tx_packets"
}
# fabric_mark K, then fabric_check_spread K: at least 4 of the K links carried
# 100 or more of our packets since the mark (a check of the spraying).
fabric_mark() {
	local i
	FABRIC_MARK=()
	for ((i = 1; i <= $1; i++)); do FABRIC_MARK+=("$(fabric_tx_packets "$i")"); done
}
fabric_check_spread() {
	local i n used=0 counts=
	for ((i = 1; i <= $1; i++)); do
		n=$(($(fabric_tx_packets "$i") - FABRIC_MARK[i - 1]))
		counts+=" $n"
		[ "$n" -ge 100 ] && used=$((used + 1))
	done
	log "packets sent per fabric link:$counts"
	check "at least 4 of the $1 links carried traffic ($used did)" test "$used" -ge 4
}

# kt_load PARAM...: one load of ktraffic/mr_ktraffic.ko; prints its report
# lines ("mr_ktraffic: ..."), succeeds only if the run passed, unloads it again.
kt_load() {
	local ko mark="mr-kt-$RANDOM$RANDOM" rc
	ko=$MR_TOP/tools/testing/selftests/drivers/metaroce/ktraffic/mr_ktraffic.ko
	echo "$mark" >/dev/kmsg
	insmod "$ko" "$@" >/dev/null 2>&1
	rc=$?
	dmesg | sed -n "/$mark/,\$p" | grep -o 'mr_ktraffic: .*' |
		grep -vE 'enabling unsafe global rkey|taints kernel|tainting kernel'
	[ "$rc" = 0 ] && rmmod mr_ktraffic
	return "$rc"
}

# iSER over LIO and open-iscsi (iser.sh, iser_logout_loop.sh): the test sets IQN and PORT.
# The target: a file backstore as LUN 0 of $IQN, an iSER portal on ADDR.
lio_up() { # ADDR MIB
	modprobe -a target_core_mod iscsi_target_mod ib_isert target_core_file || return 1
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return 1
	truncate -s "$2M" /tmp/iser-backing.img || return 1
	# rtslib keeps its state (ALUA, persistent reservations) under /etc.
	mkdir -p /etc/rtslib-fb-target || return 1
	/usr/bin/python3 - "$1" "$IQN" $PORT /tmp/iser-backing.img $(($2 << 20)) <<-'EOF'
	import sys
	from rtslib_fb import FabricModule, FileIOStorageObject, LUN, NetworkPortal, TPG, Target
	addr, iqn, port, img, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
	so = FileIOStorageObject("iser0", img, size=size)
	tpg = TPG(Target(FabricModule("iscsi"), iqn), 1)
	for name, value in (("authentication", "0"), ("demo_mode_write_protect", "0"),
	                    ("generate_node_acls", "1"), ("cache_dynamic_acls", "1")):
	    tpg.set_attribute(name, value)
	LUN(tpg, 0, so)
	NetworkPortal(tpg, addr, port).iser = True
	tpg.enable = True
	EOF
}

# Whether the target's IQN has no session left: the count drops when LIO's
# session close is all but done (iscsit_close_session), after the logout.
lio_idle() {
	[ "$(cat "/sys/kernel/config/target/iscsi/$IQN/fabric_statistics/iscsi_instance/sessions")" = 0 ]
}

lio_down() {
	# Not while a session still closes: LIO would finish closing it on the
	# TPG that this frees (a use-after-free in iscsit_close_session(), seen
	# as a soft lockup on a poisoned session_lock; 6.12).
	wait_for 30 lio_idle || return 1
	sleep 1
	# The fabric's configfs directory holds iscsi_target_mod until it goes.
	/usr/bin/python3 -c 'from rtslib_fb import RTSRoot; RTSRoot().clear_existing(confirm=True)' &&
		rmdir /sys/kernel/config/target/iscsi &&
		modprobe -r ib_isert iscsi_target_mod target_core_file
}

# The initiator: iscsid and an iface bound to the iser transport.
initiator_up() {
	modprobe -a ib_iser sd_mod || return 1
	mkdir -p /etc/iscsi /var/lib/iscsi /run/lock/iscsi || return 1
	echo "InitiatorName=iqn.2026-12.org.metaroce:host-b" >/etc/iscsi/initiatorname.iscsi
	iscsid || return 1
	iscsiadm -m iface -I iser0 -o new >/dev/null &&
		iscsiadm -m iface -I iser0 -o update -n iface.transport_name -v iser >/dev/null
}

# The SCSI disk of our session, if logged in.
iser_disk() {
	local d
	d=$(iscsiadm -m session -P3 2>/dev/null | sed -n 's/.*Attached scsi disk \(sd[a-z]*\).*/\1/p' | head -n1)
	[ -n "$d" ] && [ -b "/dev/$d" ] && echo "/dev/$d"
}
