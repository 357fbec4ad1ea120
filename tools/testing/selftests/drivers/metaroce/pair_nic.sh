#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair
# needs: provider
# MetaRoCE on the guests' own NICs (virtio-net, not a veth: a real NIC's
# per-CPU stats are not the tunnel kind, and passing it as the tunnel device
# of udp_tunnel6_xmit_skb warned in iptunnel_xmit_stats, issue 13 defect 8).
# ibv_rc_pingpong with data validation between the two guests' eth0, over the
# link-local IPv6 GID (index 0, the one a user types first), a global IPv6
# GID (2001:2::/48, the IPv6 benchmarking range) and the IPv4-mapped GID;
# vm.sh fails the run on any kernel warning.
. "$(dirname "$0")/lib.sh"

use_provider

[ "$MR_ROLE" = a ] && me6=2001:2:0:1::1 || me6=2001:2:0:1::2
[ "$MR_ROLE" = a ] && peer6=2001:2:0:1::2 || peer6=2001:2:0:1::1
check "global IPv6 address on eth0" ip addr add "$me6/64" dev eth0 nodad
check "peer reachable over IPv4" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "peer reachable over IPv6" wait_for 20 ping -6 -c 1 -W 1 "$peer6"
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "mr0 on eth0" rdma link add mr0 type metaroce netdev eth0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

# gid_of PATTERN: the index of the first GID matching the extended regex.
gid_of() {
	local f
	for f in /sys/class/infiniband/mr0/ports/1/gids/*; do
		grep -qE "$1" "$f" 2>/dev/null && { basename "$f"; return 0; }
	done
	return 1
}
check "a link-local GID" wait_for 10 gid_of '^fe80:'
check "the global IPv6 GID" wait_for 10 gid_of '^2001:0002:0000:0001:'
check "the IPv4-mapped GID" wait_for 10 addr_gid_index mr0 "${MR_ADDR%/*}"
ll=$(gid_of '^fe80:')
g6=$(gid_of '^2001:0002:0000:0001:')
g4=$(addr_gid_index mr0 "${MR_ADDR%/*}")
log "GIDs: link-local $ll, global IPv6 $g6, IPv4 $g4"
check_eq "the link-local GID is index 0" 0 "$ll"

for g in "$ll" "$g6" "$g4"; do
	run_pair "ibv_rc_pingpong -g $g" ibv_rc_pingpong -d mr0 -g "$g" -c -n 100 -s 4096
	if [ "$MR_ROLE" = a ]; then
		check "ibv_rc_pingpong -g $g moved 100 iterations" grep -q "100 iters" <<<"$RUN_OUT"
	fi
done
check "barrier: done" pair_barrier done
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" rmmod metaroce
done_testing
