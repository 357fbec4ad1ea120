#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 600
# needs: provider
# Userspace shared receive queues through our provider's mmapped SRQ ring:
# ibv_srq_pingpong (16 RC QPs on one SRQ, received data checked) between two
# guests across the 8-link ECMP fabric, clean and with 1% random loss on every
# link in both directions; then, in guest a, uverbs_srq.c on a veth pair: two
# QPs on one SRQ, a WQE with a bad lkey (a protection error on the QP that
# took it, counted in user_wqe_errors), a full SRQ, post_recv refused on a QP
# of an SRQ, the limit event (IBV_EVENT_SRQ_LIMIT_REACHED, once:
# MR-VERBS-15), and Sends that find the SRQ empty (RNR) completing once
# receives are posted.
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
use_provider

LINKS=8
check "peer reachable on the control wire" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

check "GID of $MR_EP" wait_for 5 addr_gid_index mr0 "$MR_EP"
gid=$(addr_gid_index mr0 "$MR_EP")

round() { # LABEL
	PAIR_TIMEOUT=300 PAIR_TAIL=8 run_pair "ibv_srq_pingpong -c $1" \
		ibv_srq_pingpong -d mr0 -g "$gid" -c -q 16 -n 300 -s 8192
	check "ibv_srq_pingpong $1: 300 iterations" grep -q "300 iters in" <<<"$RUN_OUT"
}

fabric_mark "$LINKS"
round "(clean fabric)"
lossy_links() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i" "loss 1%" || return 1; done
}
check "1% random loss on each of the $LINKS fabric links (our egress)" lossy_links
round "(1% loss on every link, both ways)"
for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i"; done
# The fabric carried it: 8 paths hash onto 8 links independently and take
# unequal shares, so (as in kverbs_loss) 3 links with 100 packets or more.
spread() {
	local i n used=0 counts=
	for ((i = 1; i <= LINKS; i++)); do
		n=$(($(fabric_tx_packets "$i") - FABRIC_MARK[i - 1]))
		counts+=" $n"
		[ "$n" -ge 100 ] && used=$((used + 1))
	done
	log "packets sent per fabric link:$counts"
	check "at least 3 of the $LINKS links carried traffic ($used did)" test "$used" -ge 3
}
spread
rdma statistic show link mr0/1 | tr ' ' '\n' | paste -d' ' - - | sed 's/^/# /'
check_eq "no user WQE errors" 0 "$(hw_counter mr0 user_wqe_errors)"
check "barrier: pingpong done" pair_barrier pingpong-done

# The single-process checks run in guest a, on a veth pair of its own.
if [ "$MR_ROLE" = a ]; then
	bin=/tmp/uverbs_srq
	check "build the test program" gcc -O2 -Wall -Wextra -Werror -I"$top/include/uapi" \
		-o "$bin" "$here/uverbs_srq.c" "$here/uverbs_util.c" -libverbs
	topo_veth_pair
	check "mr1 on h1/v1" ip netns exec h1 rdma link add mr1 type metaroce netdev v1
	check "mr2 on h2/v2" ip netns exec h2 rdma link add mr2 type metaroce netdev v2
	check "mr1 port ACTIVE" wait_for 5 port_is mr1 "4: ACTIVE"
	check "mr2 port ACTIVE" wait_for 5 port_is mr2 "4: ACTIVE"
	check "mr1 has its IPv4 GID" wait_for 10 addr_gid_index mr1 198.18.1.1
	check "mr2 has its IPv4 GID" wait_for 10 addr_gid_index mr2 198.18.1.2
	before=$(hw_counter mr2 user_wqe_errors)
	out=$(timeout 180 "$bin" mr1 mr2 "$(addr_gid_index mr1 198.18.1.1)" \
		"$(addr_gid_index mr2 198.18.1.2)" 2>&1)
	rc=$?
	sed 's/^/#   /' <<<"$out"
	check_eq "uverbs_srq: data, bad WQE, full SRQ and the limit event" 0 "$rc"
	check_eq "the bad SRQ WQE was counted on mr2" $((before + 1)) \
		"$(hw_counter mr2 user_wqe_errors)"
	check "its SRQ is gone when it exits" sh -c '! rdma resource show srq 2>/dev/null | grep -q "comm uverbs_srq"'
	check "rdma link delete mr1" rdma link delete mr1
	check "rdma link delete mr2" rdma link delete mr2
fi
check "barrier: done" pair_barrier done 300
check "rdma link delete mr0" rdma link delete mr0
done_testing
