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
# 64 UDP flows that differ only in source port, sent one after the other by one
# process (perl's core Socket module) so none is lost to a busy port.
ip netns exec h1 perl -MSocket -e '
	my $dst = sockaddr_in(9, inet_aton("198.18.2.1"));
	for my $sport (30000 .. 30063) {
		socket(my $s, PF_INET, SOCK_DGRAM, 0) or die "socket: $!";
		bind($s, sockaddr_in($sport, INADDR_ANY)) or die "bind $sport: $!";
		send($s, "x", 0, $dst) or die "send: $!";
		close($s);
		select(undef, undef, undef, 0.01);
	}'
check_eq "64 flows sent" 0 $?
sleep 1
used=0
for ((i = 1; i <= K; i++)); do
	d=$(($(tx_packets "$i") - before[i]))
	log "link p$i carried $d packets"
	[ "$d" -gt 0 ] && used=$((used + 1))
done
check_eq "source ports spread over all $K links" "$K" "$used"
done_testing
