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

# check "description" command...: the command must succeed.
check() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$what"
	else
		not_ok "$what"
		echo "$out" | sed 's/^/#   /'
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
# The EUI-64 the core shows for a MAC (ff:fe inserted, universal/local bit flipped).
mac_to_guid() {
	local IFS=: b
	read -ra b <<<"$1"
	printf '%02x%s:%sff:fe%s:%s%s\n' $((0x${b[0]} ^ 2)) "${b[1]}" "${b[2]}" \
		"${b[3]}" "${b[4]}" "${b[5]}"
}
# Network namespace NS (or "" for the current one) has the MetaRoCE UDP port open.
udp_port_open() { # ns [port]
	local port=${2:-4793}
	if [ -n "$1" ]; then
		ip netns exec "$1" ss -Hlun "sport = :$port" | grep -q .
	else
		ss -Hlun "sport = :$port" | grep -q .
	fi
}
udp_port_closed() { ! udp_port_open "$@"; }

# ---- topologies (addresses in 198.18.0.0/15 only) ----

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

# Both guests call pair_barrier NAME; neither returns before the other arrived.
pair_barrier() {
	local port=$((7000 + $(cksum <<<"$1" | cut -d' ' -f1) % 1000)) i
	if [ "$MR_ROLE" = a ]; then
		timeout 120 busybox nc -l -p "$port" </dev/null >/dev/null
	else
		for ((i = 0; i < 1200; i++)); do
			busybox nc "${MR_PEER}" "$port" </dev/null >/dev/null 2>&1 && return 0
			sleep 0.1
		done
		return 1
	fi
}
