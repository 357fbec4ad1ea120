#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 720
# needs: provider
# Userspace UD QPs and address handles over MetaRoCE between two guests,
# through our provider's rings, across an 8-link ECMP fabric: clean, then
# with 1% random loss on every link in both directions.  ibv_ud_pingpong -c
# checks every datagram's data (the GRH comes first in each receive buffer);
# udaddy resolves its peer through rdma_cm (SIDR over our GSI QP), answers
# from an AH made from the first receive's GRH (ibv_create_ah_from_wc) and
# exchanges immediate data.
# UD is unreliable by design ([MR-VERBS-9]: a datagram is never
# retransmitted), and neither tool survives one lost datagram: on the lossy
# fabric a run that lost one is repeated (up to 8 times, short runs), and
# the round passes when one run completes.  Guest a is the client, and its
# result decides for both.
. "$(dirname "$0")/lib.sh"

use_provider

LINKS=8
check "peer reachable on the control wire" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "modprobe rdma_ucm" modprobe rdma_ucm
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

check "GID of $MR_EP" wait_for 5 addr_gid_index mr0 "$MR_EP"
gid=$(addr_gid_index mr0 "$MR_EP")
log "GID index $gid"

# ud_pingpong NAME ITERS: one run; the server (b) listens on the control wire.
ud_pingpong() {
	local i out rc
	if [ "$MR_ROLE" = b ]; then
		out=$(timeout 90 ibv_ud_pingpong -d mr0 -g "$gid" -c -s 1024 -r 64 -n "$2" 2>&1)
		rc=$?
	else
		# The server may not listen yet (slow start under TCG): retry connecting.
		for ((i = 0; i < 20; i++)); do
			sleep 1
			out=$(timeout 60 ibv_ud_pingpong -d mr0 -g "$gid" -c -s 1024 -r 64 \
				-n "$2" "$MR_PEER" 2>&1)
			rc=$?
			[ "$rc" != 0 ] && grep -q "Couldn't connect" <<<"$out" || break
		done
	fi
	sed 's/^/#   /' <<<"$out" | tail -n 4
	RUN_OUT=$out
	return "$rc"
}

# udaddy_run CONNECTIONS: one run; guest b serves, guest a connects.
udaddy_run() {
	local out rc
	if [ "$MR_ROLE" = b ]; then
		out=$(timeout 90 udaddy -b "$MR_EP" -c "$1" -C 10 2>&1)
		rc=$?
	else
		sleep 3
		client_connect 20 timeout 60 udaddy -s "$MR_PEER_EP" -c "$1" -C 10
		out=$CLIENT_OUT rc=$CLIENT_RC
	fi
	sed 's/^/#   /' <<<"$out" | tail -n 4
	RUN_OUT=$out
	[ "$rc" = 0 ] && grep -q "data transfers complete" <<<"$out"
}

# tries NAME N CMD...: run CMD in both guests up to N times, until it works in guest a.
tries() {
	local name=$1 n=$2 i rc word
	shift 2
	TRIES=none
	for ((i = 1; i <= n; i++)); do
		check "barrier: $name, run $i" pair_barrier "$name-$i"
		"$@"
		rc=$?
		if [ "$MR_ROLE" = a ]; then
			pair_tell "$name-$i" "$rc" || return 1
		else
			word=$(pair_hear "$name-$i") || return 1
			log "$name: run $i: here $rc, in guest a $word"
			rc=$word
		fi
		[ "$rc" = 0 ] && { TRIES=$i; return 0; }
	done
	return 1
}

round() { # LABEL PP_ITERS RUNS
	local tx0
	tx0=$(hw_counter mr0 tx_packets)
	tries "pp $1" "$3" ud_pingpong "$1" "$2"
	check_eq "ibv_ud_pingpong -c, $2 iterations $1 (run $TRIES of at most $3)" 0 $?
	if [ "$MR_ROLE" = a ]; then
		check "ibv_ud_pingpong $1 reports $2 iters" grep -q "$2 iters" <<<"$RUN_OUT"
	fi
	tries "udaddy $1" "$3" udaddy_run 2
	check_eq "udaddy, 2 connections of 10 datagrams each way $1 (run $TRIES of at most $3)" 0 $?
	check "$1: at least $2 datagrams sent" test $(($(hw_counter mr0 tx_packets) - tx0)) -ge "$2"
}

fabric_mark "$LINKS"
round "(clean fabric)" 1000 1
fabric_check_spread "$LINKS"
lossy_links() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i" "loss 1%" || return 1; done
}
check "1% random loss on each of the $LINKS fabric links (our egress)" lossy_links
round "(1% loss on every link, both ways)" 20 8
for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i"; done

rdma statistic show link mr0/1 | tr ' ' '\n' | paste -d' ' - - | sed 's/^/# /'
for c in user_wqe_errors user_ah_errors ud_send_errors rx_drop_qkey place_errors \
	timer_past_deadlines; do
	check_eq "counter $c is 0" 0 "$(hw_counter mr0 "$c")"
done
check "rx_packets counted the datagrams" test "$(hw_counter mr0 rx_packets)" -ge 1000
check "barrier: done" pair_barrier done
check "rdma link delete mr0" rdma link delete mr0
done_testing
