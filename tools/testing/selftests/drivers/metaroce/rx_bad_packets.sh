#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Malformed, truncated, oversized and unknown-connection packets are dropped and
# counted by reason ([MR-GEN-5], [MR-WIRE-12], [MR-CONN-3]), with no kernel warning,
# and the device keeps working.
. "$(dirname "$0")/lib.sh"

topo_veth_pair
check "modprobe metaroce" modprobe metaroce
check "mr0 on h2/v2" ip netns exec h2 rdma link add mr0 type metaroce netdev v2

counter() { hw_counter mr0 "$1"; }
# send HEX: one UDP datagram from h1 to mr0's port (perl writes it in one write()).
sent_bytes=0
send() {
	local hex=${1// /}
	sent_bytes=$((sent_bytes + 8 + ${#hex} / 2))	# UDP header + datagram
	ip netns exec h1 bash -c "perl -e 'print pack(\"H*\", \$ARGV[0])' '${1// /}' \
		>/dev/udp/198.18.1.2/$MR_UDP_PORT"
}

check_eq "counters start at zero" "0 0 0" \
	"$(counter rx_packets) $(counter rx_drop_malformed) $(counter rx_drop_unknown_conn)"

# The drop tracepoint names each reason.
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
check "tracepoint metaroce:metaroce_rx_drop exists" test -d $T/events/metaroce/metaroce_rx_drop
echo 1 >$T/events/metaroce/metaroce_rx_drop/enable
echo >$T/trace

# A well-formed SEND (middle packet) for a connection id nobody owns.
good="01 01 0000 a1b2c3d4 0003 0004 00000064 00000011 00000007 00001000 01020304 00002000 00000002 deadbeef"
send "$good"
send "01"					# truncated: one byte
send "${good:0:20}"				# truncated: half a base header
send "02${good:2}"				# unknown version
send "01 7f${good:5}"				# unknown opcode
send "$good 00"					# one byte more than payload_len says
send "$(printf '%02x' $((RANDOM % 256)))$(head -c 300 /dev/urandom | od -An -tx1 | tr -d ' \n')"
check "all 7 datagrams seen" wait_for 5 sh -c "rdma statistic show link mr0/1 | grep -q 'rx_packets 7 '"
check_eq "6 dropped as malformed" 6 "$(counter rx_drop_malformed)"
check_eq "1 dropped for an unknown connection" 1 "$(counter rx_drop_unknown_conn)"
check_eq "bytes counted from the UDP header on" "$sent_bytes" "$(counter rx_bytes)"
trace=$(cat $T/trace)
echo 0 >$T/events/metaroce/metaroce_rx_drop/enable
check_eq "7 drops traced" 7 "$(grep -c 'metaroce_rx_drop: mr0 ' <<<"$trace")"
check "the unknown connection is traced by reason" grep -q 'metaroce_rx_drop: mr0 unknown connection' <<<"$trace"

# What GRO merged, or a UDP GSO write (UDP_SEGMENT) made, reaches the socket as
# one skb (the veth keeps it whole): each segment is a packet of its own, checked
# as any other.  send_gso SIZE HEX: one write of HEX, cut into SIZE-byte segments.
send_gso() {
	ip netns exec h1 perl -e '
		use IO::Socket::INET;
		my $s = IO::Socket::INET->new(Proto => "udp", PeerAddr => $ARGV[0]) or die "socket: $!";
		setsockopt($s, 17, 103, pack("i", $ARGV[1])) or die "UDP_SEGMENT: $!";
		$s->send(pack("H*", $ARGV[2])) or die "send: $!";
	' "198.18.1.2:$MR_UDP_PORT" "$1" "${2// /}"
}
g=${good// /}
junk_req="0120$(printf '00%.0s' $(seq 38))"	# a CONNECT_REQ's first bytes, 40 in all
p0=$(counter rx_packets) m0=$(counter rx_drop_malformed) u0=$(counter rx_drop_unknown_conn)
send_gso $((${#g} / 2)) "$g$g$g"			# three SENDs for no connection
send_gso 8 "$(printf '01%.0s' $(seq 20))"		# segments shorter than any header
send_gso 40 "$junk_req$junk_req$junk_req"		# copied out for the CONNECT_REQ path
send_gso $((${#g} / 2)) "${g}01"			# a SEND, then a last segment of one byte
check "the 4 merged skbs were taken whole" wait_for 5 sh -c \
	'[ "$(rdma statistic show link mr0/1 | grep -o "rx_gso_skbs [0-9]*" | cut -d" " -f2)" = 4 ]'
check_eq "each segment a packet: 3 + 3 + 3 + 2" $((p0 + 11)) "$(counter rx_packets)"
check_eq "the SENDs dropped for an unknown connection" $((u0 + 4)) "$(counter rx_drop_unknown_conn)"
check_eq "the short, the one-byte and the CONNECT_REQ segments dropped as malformed" \
	$((m0 + 7)) "$(counter rx_drop_malformed)"

# A flood of garbage leaves the device and module usable.
# One process sends all 200 (a process per datagram took minutes on a KASAN kernel).
ip netns exec h1 perl -e '
	use IO::Socket::INET;
	my $s = IO::Socket::INET->new(Proto => "udp", PeerAddr => $ARGV[0]) or die "socket: $!";
	open(my $r, "<", "/dev/urandom") or die;
	for (1 .. 200) { read($r, my $d, 1 + int(rand(64))); $s->send($d) or die "send: $!"; }
' "198.18.1.2:$MR_UDP_PORT"
check "the flood was counted" wait_for 5 sh -c '[ "$(rdma statistic show link mr0/1 | grep -o "rx_packets [0-9]*" | cut -d" " -f2)" -ge 218 ]'
check "port still ACTIVE" port_is mr0 "4: ACTIVE"
check "rdma link delete mr0" rdma link delete mr0

# Datagrams keep coming while the namespace's last device goes and its socket
# closes under them: udp_tunnel_sock_release() clears the socket's user data a
# grace period before the socket stops receiving, and the receive path must drop
# what comes in meanwhile.  Sends fail while no socket listens (ICMP port
# unreachable); the sender carries on.
ip netns exec h1 perl -e '
	use IO::Socket::INET;
	my $s = IO::Socket::INET->new(Proto => "udp", PeerAddr => $ARGV[0]) or die "socket: $!";
	my $d = "\x01" x 64;
	while (1) { $s->send($d); }
' "198.18.1.2:$MR_UDP_PORT" &
flood=$!
cycles=0
for _ in $(seq 20); do
	ip netns exec h2 rdma link add mr0 type metaroce netdev v2 &&
		rdma link delete mr0 && cycles=$((cycles + 1))
done
kill $flood
wait $flood 2>/dev/null
check_eq "20 devices made and deleted under a flood to the port" 20 "$cycles"
check "rmmod" rmmod metaroce
done_testing
