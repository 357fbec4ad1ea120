#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Guest side of vm.sh --pair --links K: an ECMP fabric of K links between the two guests.
#
# Each guest keeps its endpoint in the initial namespace, where rxe, TCP and
# MetaRoCE all run (rxe works in init_net only), and routes through a router
# namespace "fr" that owns the K fabric NICs:
#
#   init_net: fab0 MR_EP/24 --veth-- fr: fab0 .254/24, l1..lK 198.19.k.{1,2}/24 --wire k-- peer
#
# fr forwards with a layer-4 multipath hash over the K links, so each UDP source
# port (MetaRoCE path, rxe QP) or TCP connection picks a link.  Per-link loss,
# rate and delay go on each link's egress in fr (lib.sh: fabric_shape).
set -euo pipefail

k=${MR_LINKS:?}
role=${MR_ROLE:?}
me=1 peer=2
[ "$role" = b ] && me=2 peer=1
ep_net=${MR_EP%.*}
peer_net=${MR_PEER_EP%.*}

ip netns add fr
ip -n fr link set lo up
ip netns exec fr sysctl -qw net.ipv4.ip_forward=1
ip netns exec fr sysctl -qw net.ipv4.fib_multipath_hash_policy=1
ip netns exec fr sysctl -qw net.ipv4.conf.all.rp_filter=0
ip netns exec fr sysctl -qw net.ipv4.conf.default.rp_filter=0
sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0

# Fabric NICs by MAC (vm.sh: 52:54:00:4d:1k:0r), whatever names they were given.
nexthops=()
for ((i = 1; i <= k; i++)); do
	mac=52:54:00:4d:$((10 + i)):0$me
	dev=
	for n in /sys/class/net/*; do
		if [ "$(cat "$n/address")" = "$mac" ]; then
			dev=${n##*/}
		fi
	done
	[ -n "$dev" ] || { echo "fabric.sh: no NIC with MAC $mac" >&2; exit 1; }
	ip link set "$dev" down
	ip link set "$dev" netns fr name "l$i"
	ip -n fr addr add "198.19.$i.$me/24" dev "l$i"
	ip -n fr link set "l$i" up
	# The router stands in for a switch, whose forwarding costs the hosts nothing:
	# it forwards UDP as GRO trains (TCP's are merged by plain GRO already).  Loss
	# and delay act on each packet at the sender's egress, before the merging.
	ip netns exec fr ethtool -K "l$i" rx-udp-gro-forwarding on >/dev/null 2>&1 || true
	nexthops+=(nexthop via "198.19.$i.$peer" dev "l$i")
done

ip link add fab0 type veth peer name fab0 netns fr
ip addr add "$MR_EP/24" dev fab0
ip -n fr addr add "$ep_net.254/24" dev fab0
# MetaRoCE sends a path's burst as one UDP GSO skb, TCP a 64 KB TSO skb; a veth
# would carry either whole through the router to the links' netem, which would
# then drop or delay the burst as one packet, and the router would forward one
# skb for what the wire carries as dozens of frames.  Cut both at the endpoint,
# as a NIC does: every transport's frames cross the router (the switch) and its
# netem one by one, at the same cost per frame.  (TCP's TSO went through whole
# until 2026-12: its bursts cost the router one forwarding each, MetaRoCE's
# packets one each, and netem's loss took a whole 64 KB of TCP at a time.)
ethtool -K fab0 tx-udp-segmentation off tso off >/dev/null
ip link set fab0 up
ip -n fr link set fab0 up
ip route add "$peer_net.0/24" via "$ep_net.254" dev fab0
ip -n fr route add "$peer_net.0/24" "${nexthops[@]}"

# The links are up when every one of them reaches the peer's end (ARP done).
for ((i = 1; i <= k; i++)); do
	for _ in $(seq 100); do
		ip netns exec fr ping -c 1 -W 1 "198.19.$i.$peer" >/dev/null 2>&1 && continue 2
		sleep 0.2
	done
	echo "fabric.sh: link $i does not reach 198.19.$i.$peer" >&2
	exit 1
done
# The endpoint learns its gateway now, as a host on a network long up has.  The
# RDMA core resolves a destination MAC (rdma_resolve_ip(), so mr_ktraffic and
# rdma_cm alike) by asking for the neighbour and retrying only when a neighbour
# update event comes or its own timeout ends (drivers/infiniband/core/addr.c,
# process_one_req()): when the ARP answer beat the queued request, the first
# connection after boot waited 4 to 22 s, whatever the transport.
ping -c 1 -W 2 "$ep_net.254" >/dev/null 2>&1 ||
	{ echo "fabric.sh: the endpoint does not reach its router $ep_net.254" >&2; exit 1; }
echo "fabric: $k links, $MR_EP -> $MR_PEER_EP over l1..l$k"
