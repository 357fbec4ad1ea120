#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The harness's ECMP fabric: h1 - r1 =(K links)= r2 - h2 routes, the layer-4 hash
# spreads UDP source ports over the links, and per-link netem applies.
. "$(dirname "$0")/lib.sh"

K=4
topo_ecmp $K "loss 0%" 50mbit
check "h1 reaches h2 across the fabric" ip netns exec h1 ping -c 2 -W 2 198.18.2.1
check "per-link qdisc: tbf with a netem child" sh -c \
	'ip netns exec r1 tc qdisc show dev p1 | grep -q tbf && ip netns exec r1 tc qdisc show dev p1 | grep -q netem'

tx_packets() { ip netns exec r1 cat "/sys/class/net/p$1/statistics/tx_packets"; }
declare -a before
for ((i = 1; i <= K; i++)); do before[i]=$(tx_packets "$i"); done
# 64 UDP flows that differ only in source port.
for ((sp = 30000; sp < 30064; sp++)); do
	ip netns exec h1 busybox nc -u -w 0 -p "$sp" 198.18.2.1 9 </dev/null >/dev/null 2>&1 &
done
wait
used=0
for ((i = 1; i <= K; i++)); do
	d=$(($(tx_packets "$i") - before[i]))
	log "link p$i carried $d packets"
	[ "$d" -gt 0 ] && used=$((used + 1))
done
check_eq "source ports spread over all $K links" "$K" "$used"
done_testing
