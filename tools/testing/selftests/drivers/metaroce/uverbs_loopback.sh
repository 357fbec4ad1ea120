#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --timeout 600
# needs: provider
# One host trying the device out, as NICs and rdma_rxe allow ([MR-CONN-13]):
# unmodified Verbs tools whose two ends run on one guest, through our
# provider's rings.  RC QPs of one device connected to each other
# (ibv_rc_pingpong with data validation, perftest's ib_read_bw and
# ib_write_bw, rping through rdma_cm with verification), a UD datagram to the
# device's own GID (ibv_ud_pingpong with data validation), and RC between two
# devices of one network namespace (their packets come in over loopback, not
# over either device's netdev).  Last, UCX's UCP tag_bw with ud_verbs as its
# only transport between mr0 and mr1: 64 KiB messages as 1 KiB datagrams
# with UCX's own acknowledgements, so each UD QP's send ring (doorbell) and
# receive ring (softirq) are read at the same moment.  The kernel once copied
# both through one buffer and read one ring's WQE as the other's (a "local
# protection error" within 4,000 datagrams, every run).
. "$(dirname "$0")/lib.sh"

use_provider

check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "modprobe rdma_ucm" modprobe rdma_ucm
# Two dummy netdevs hold the addresses; what is sent to them goes over loopback.
two_local_devices

# local_pair NAME SERVER_CMD -- CLIENT_CMD: the server in the background, the client
# (tried again while the server does not listen yet); both must succeed.  The client's
# output is left in RUN_OUT.
local_pair() {
	local name=$1 srv=() cli=() out rc pid
	shift
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	timeout 120 "${srv[@]}" >/tmp/server.out 2>&1 &
	pid=$!
	sleep 1
	client_connect 20 timeout 90 "${cli[@]}"
	out=$CLIENT_OUT rc=$CLIENT_RC
	wait "$pid"
	check_eq "$name: server side completes" 0 "$?"
	sed 's/^/#   /' /tmp/server.out | tail -n 3
	sed 's/^/#   /' <<<"$out" | tail -n 4
	check_eq "$name: client side completes" 0 "$rc"
	RUN_OUT=$out
}

rx0=$(hw_counter mr0 rx_packets)
local_pair "ibv_rc_pingpong, two QPs of mr0" \
	ibv_rc_pingpong -d mr0 -g "$g0" -c -n 200 -s 4096 -- \
	ibv_rc_pingpong -d mr0 -g "$g0" -c -n 200 -s 4096 127.0.0.1
check "ibv_rc_pingpong on mr0 moved 200 iterations" grep -q "200 iters" <<<"$RUN_OUT"
rx=$(($(hw_counter mr0 rx_packets) - rx0))
check "mr0 took its own packets back ($rx)" test "$rx" -ge 400

local_pair "ib_read_bw, two QPs of mr0" \
	ib_read_bw -d mr0 -x "$g0" -F -n 200 -s 65536 -- \
	ib_read_bw -d mr0 -x "$g0" -F -n 200 -s 65536 127.0.0.1
local_pair "ib_write_bw, two QPs of mr0" \
	ib_write_bw -d mr0 -x "$g0" -F -n 200 -s 65536 -- \
	ib_write_bw -d mr0 -x "$g0" -F -n 200 -s 65536 127.0.0.1

local_pair "rping through rdma_cm to $A, verified" \
	rping -s -a "$A" -C 50 -S 4096 -V -- \
	rping -c -a "$A" -C 50 -S 4096 -V

local_pair "ibv_ud_pingpong, a datagram to mr0's own GID" \
	ibv_ud_pingpong -d mr0 -g "$g0" -c -s 1024 -n 100 -- \
	ibv_ud_pingpong -d mr0 -g "$g0" -c -s 1024 -n 100 127.0.0.1
check "ibv_ud_pingpong on mr0 moved 100 iterations" grep -q "100 iters" <<<"$RUN_OUT"

rx1=$(hw_counter mr1 rx_packets)
local_pair "ibv_rc_pingpong, mr0 to mr1 in one namespace" \
	ibv_rc_pingpong -d mr1 -g "$g1" -c -n 200 -s 4096 -- \
	ibv_rc_pingpong -d mr0 -g "$g0" -c -n 200 -s 4096 127.0.0.1
check "ibv_rc_pingpong mr0 to mr1 moved 200 iterations" grep -q "200 iters" <<<"$RUN_OUT"
rx=$(($(hw_counter mr1 rx_packets) - rx1))
check "mr1 took mr0's packets ($rx), though they came over loopback" test "$rx" -ge 200

for round in 1 2; do
	UCX_WARN_UNUSED_ENV_VARS=n UCX_TLS=ud_verbs UCX_NET_DEVICES=mr0:1 local_pair \
		"UCX tag_bw over ud_verbs alone, mr1 to mr0, round $round" \
		ucx_perftest -p 13340 -- \
		env UCX_NET_DEVICES=mr1:1 ucx_perftest 127.0.0.1 -p 13340 -t tag_bw -s 65536 -n 300 -w 20
	check "UCX tag_bw round $round finished 300 messages" grep -qE "^Final: +300 " <<<"$RUN_OUT"
done

for d in mr0 mr1; do
	check_eq "$d: no user WQE errors" 0 "$(hw_counter $d user_wqe_errors)"
	check_eq "$d: no timer armed for a past deadline" 0 "$(hw_counter $d timer_past_deadlines)"
done
check "rdma link delete mr1" rdma link delete mr1
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
