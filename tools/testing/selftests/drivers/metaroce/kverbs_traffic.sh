#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --timeout 600
# Kernel Verbs traffic with every byte and completion checked (ktraffic/mr_ktraffic.ko):
# first over rdma_rxe, which proves the test module itself, then over MetaRoCE,
# one op at a time.
. "$(dirname "$0")/lib.sh"

ko=$(cd "$(dirname "$0")" && pwd)/ktraffic/mr_ktraffic.ko
if [ ! -e "$ko" ]; then
	not_ok "mr_ktraffic.ko is built (missing: $ko; build it on the host with" \
		"make -C /lib/modules/KVER/build M=${ko%/*} modules)"
	done_testing
fi

# ktraffic PARAM...: one load of the test module, its report shown; succeeds
# only if every op passed.  A load that passed is unloaded again.
ktraffic() {
	local mark="mr_ktraffic-test-$RANDOM$RANDOM" rc
	echo "$mark" >/dev/kmsg
	insmod "$ko" "$@" 2>&1 | sed 's/^/#   /'
	rc=${PIPESTATUS[0]}
	dmesg | sed -n "/$mark/,\$p" | grep -o 'mr_ktraffic: .*' |
		grep -vE 'enabling unsafe global rkey|taints kernel|tainting kernel' | sed 's/^/#   /'
	[ "$rc" = 0 ] && rmmod mr_ktraffic
	return "$rc"
}

# check_ktraffic "description" PARAM...: the load must pass.
check_ktraffic() {
	local what=$1
	shift
	log "$what: $*"
	if ktraffic "$@"; then
		ok "$what"
	else
		not_ok "$what"
	fi
}

resources() { rdma resource show | grep -E " ($1):" | sort; }
has_gid() { grep -qx "$2" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null; }

# ---- rdma_rxe: the baseline that proves the module ----
# rxe lives in init_net only: two veth ends there, each its own device.  The
# kernel would route between two local addresses through lo; sending is bound
# to the device's netdev (rxe and the address resolver both route with the
# netdev as output interface), so the packets cross the veth, and the
# receiving end must accept a source address that is also local.
log "== rdma_rxe (baseline: proves mr_ktraffic itself)"
check "modprobe rdma_rxe" modprobe rdma_rxe
ip link add x1 type veth peer name x2
for x in x1 x2; do
	sysctl -qw "net.ipv4.conf.$x.accept_local=1" "net.ipv4.conf.$x.rp_filter=0"
done
sysctl -qw net.ipv4.conf.all.rp_filter=0
ip addr add 198.18.3.1/24 dev x1
ip addr add 198.18.3.2/24 dev x2
ip link set x1 up
ip link set x2 up
check "rxe0 on x1" rdma link add rxe0 type rxe netdev x1
check "rxe1 on x2" rdma link add rxe1 type rxe netdev x2
check "rxe0 has its IPv4 GID" wait_for 10 has_gid rxe0 0000:0000:0000:0000:0000:ffff:c612:0301
check "rxe1 has its IPv4 GID" wait_for 10 has_gid rxe1 0000:0000:0000:0000:0000:ffff:c612:0302
before=$(resources 'rxe0|rxe1')

rxe=(dev_a=rxe0 dev_b=rxe1 timeout_ms=60000)
check_ktraffic "rxe: every op, 4 KiB x 1000, depth 16" "${rxe[@]}" size=4096 count=1000 depth=16
check_ktraffic "rxe: loads again; 1-byte messages" "${rxe[@]}" size=1 count=300 depth=8
check_ktraffic "rxe: 64 KiB + 1, many packets and a ragged tail" "${rxe[@]}" size=65537 count=60 depth=4
check_ktraffic "rxe: depth 1, one message at a time" "${rxe[@]}" size=3000 count=100 depth=1
check_ktraffic "rxe: 1 MiB Sends, Writes and Reads" "${rxe[@]}" size=1048576 count=8 depth=2 \
	ops=send,write,read
check_ktraffic "rxe: one device talking to itself" dev_a=rxe0 dev_b=rxe0 timeout_ms=60000 \
	size=2048 count=200 depth=8
check_ktraffic "rxe: atomics at depth 64" "${rxe[@]}" ops=fetch_add,cmp_swp count=2000 depth=64

check_fails "an unknown device fails the load" "No such device" \
	insmod "$ko" dev_a=nosuch dev_b=rxe1
check_fails "an unknown op fails the load" "Invalid" \
	insmod "$ko" dev_a=rxe0 dev_b=rxe1 ops=send,bogus
check_fails "depth 0 fails the load" "Invalid" insmod "$ko" dev_a=rxe0 dev_b=rxe1 depth=0
check "nothing stays loaded" sh -c '! grep -q "^mr_ktraffic " /proc/modules'
check_eq "rxe PDs, CQs, QPs and MRs as before the runs" "$before" "$(resources 'rxe0|rxe1')"

# A device that goes away under a run: the run fails, nothing warns, and
# the device's removal completes once the module lets go of it.
log "rxe: x2 deleted during a run"
vanish=/tmp/ktraffic-vanish.log
ktraffic dev_a=rxe0 dev_b=rxe1 ops=write size=4096 count=100000000 depth=16 \
	timeout_ms=15000 >"$vanish" 2>&1 &
load=$!
sleep 2
ip link del x2
wait "$load"
rc=$?
cat "$vanish"
check_eq "the run failed (insmod exit status)" 1 "$rc"
check "it failed because of the removal, not the op timeout" \
	sh -c "grep -q 'write count=.* FAIL ' $vanish && ! grep -q 'FAIL timeout' $vanish"
check "rxe1 gone" wait_for 10 ibdev_gone rxe1
check "rxe0 gone with its veth peer" wait_for 10 ibdev_gone rxe0
check "nothing stays loaded" sh -c '! grep -q "^mr_ktraffic " /proc/modules'
check "rmmod rdma_rxe" rmmod rdma_rxe

# ---- MetaRoCE, in namespaces ----
log "== MetaRoCE"
topo_veth_pair
check "modprobe metaroce" modprobe metaroce
check "mr0 on h1/v1" ip netns exec h1 rdma link add mr0 type metaroce netdev v1
check "mr1 on h2/v2" ip netns exec h2 rdma link add mr1 type metaroce netdev v2
check "mr0 port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
check "mr1 port ACTIVE" wait_for 5 port_is mr1 "4: ACTIVE"
check "mr0 has its IPv4 GID" wait_for 10 has_gid mr0 0000:0000:0000:0000:0000:ffff:c612:0101
check "mr1 has its IPv4 GID" wait_for 10 has_gid mr1 0000:0000:0000:0000:0000:ffff:c612:0102
before=$(resources 'mr0|mr1')
# [MR-CONN-12] each op makes a fresh QP pair, so each makes (and closes) a
# connection: mr0 (lower address) asks, mr1 waits for its CONNECT_REQ.
mr=(dev_a=mr0 dev_b=mr1 timeout_ms=60000)
ops=send,send_imm,write,write_imm,read,cmp_swp,fetch_add
for op in ${ops//,/ }; do
	check_ktraffic "METAROCE: $op, 4 KiB x 1000, depth 16" "${mr[@]}" ops=$op \
		size=4096 count=1000 depth=16
done
check_ktraffic "METAROCE: every op, 1-byte messages" "${mr[@]}" ops=$ops size=1 count=300 depth=8
check_ktraffic "METAROCE: every op, 64 KiB + 1" "${mr[@]}" ops=$ops size=65537 count=60 depth=4
# Packets the transport took are consumed, not dropped: a drop monitor (the
# skb:kfree_skb tracepoint, dropwatch) sees no drop by metaroce on a clean link.
tr=/sys/kernel/tracing
[ -e "$tr/trace" ] || mount -t tracefs nodev "$tr"
echo >"$tr/trace"
echo 1 >"$tr/events/skb/kfree_skb/enable"
check_ktraffic "METAROCE: 1 MiB Sends, Writes and Reads" "${mr[@]}" size=1048576 count=8 depth=2 \
	ops=send,write,read
echo 0 >"$tr/events/skb/kfree_skb/enable"
drops=$(grep -c 'location=metaroce_' "$tr/trace" || true)
log "skb:kfree_skb in metaroce during that run: $drops$(grep -m 3 -o 'location=metaroce_[^ ]*' "$tr/trace" | sed 's/^/ /' | tr -d '\n')"
check_eq "METAROCE: no packet of the clean run freed as a drop by metaroce" 0 "$drops"
check_ktraffic "METAROCE: inline Sends and Writes (source overwritten after posting), CQs resized" \
	"${mr[@]}" ops=send,send_imm,write,write_imm size=200 count=300 depth=8 \
	inline_max=256 resize_cq=1
# tx_gso=1 (experimental, off by default): a path's burst leaves as one UDP GSO
# skb.  The veth carries it whole, so the receiver takes it as one merged skb
# (rx_gso_skbs) and walks it packet by packet.  Every byte must still arrive.
both() { echo $(($(hw_counter mr0 "$1") + $(hw_counter mr1 "$1"))); } # counter of mr0 + mr1
tx0=$(both tx_gso_skbs) rx0=$(both rx_gso_skbs)
echo 1 >/sys/module/metaroce/parameters/tx_gso
check_ktraffic "METAROCE with tx_gso=1: Sends, Writes and Reads, 64 KiB + 1" "${mr[@]}" \
	ops=send,write,read size=65537 count=60 depth=4
echo 0 >/sys/module/metaroce/parameters/tx_gso
tx1=$(both tx_gso_skbs) rx1=$(both rx_gso_skbs)
check "tx_gso=1 sent GSO skbs ($tx0 -> $tx1)" test "$tx1" -gt "$tx0"
check "and the receiver took them whole ($rx0 -> $rx1)" test "$rx1" -gt "$rx0"
# [MR-CONN-13] QPs of one device connected to each other, every op, as on rxe above.
check_ktraffic "METAROCE: one device talking to itself (loopback)" dev_a=mr0 dev_b=mr0 \
	timeout_ms=60000 size=2048 count=200 depth=8
# [MR-ENC-3] IPv6: the same ops between the global IPv6 GIDs (2001:2::/48, the
# benchmarking range).
ip -n h1 addr add 2001:2::1/64 dev v1 nodad
ip -n h2 addr add 2001:2::2/64 dev v2 nodad
check "mr0 has its IPv6 GID" wait_for 10 has_gid mr0 2001:0002:0000:0000:0000:0000:0000:0001
check "mr1 has its IPv6 GID" wait_for 10 has_gid mr1 2001:0002:0000:0000:0000:0000:0000:0002
check_ktraffic "METAROCE over IPv6: every op, 4 KiB x 200" "${mr[@]}" ipv6=1 ops=$ops \
	size=4096 count=200 depth=8
check_eq "METAROCE: PDs, CQs, QPs and MRs as before the runs" "$before" "$(resources 'mr0|mr1')"
check "nothing stays loaded" sh -c '! grep -q "^mr_ktraffic " /proc/modules'
check "rdma link delete mr0" rdma link delete mr0
check "rdma link delete mr1" rdma link delete mr1
check "rmmod metaroce" rmmod metaroce
done_testing
