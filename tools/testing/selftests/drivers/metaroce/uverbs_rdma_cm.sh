#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 600
# needs: provider
# Userspace rdma_cm over MetaRoCE between two guests, across an 8-link ECMP
# fabric, clean and then with 1% random loss on every link both ways:
# librdmacm resolves and connects through the kernel's rdma_cm (our GSI QP
# carries the CM MADs) and the RC QPs live on our provider's rings. rping
# with -V verifies every ping's data; ucmatose exchanges messages on several
# connections.
. "$(dirname "$0")/lib.sh"

use_provider
ME=$MR_EP
LINKS=8

check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "modprobe rdma_ucm" modprobe rdma_ucm
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

cm_round() { # LABEL
	check "barrier: $1: both ready" pair_barrier "ready-$1"
	if [ "$MR_ROLE" = a ]; then
		check "$1: rping server: 20 verified pings" \
			timeout 300 rping -s -a "$ME" -V -C 20 -S 1000
		check "$1: ucmatose server: 4 connections" timeout 300 ucmatose -b "$ME" -c 4 -C 10
	else
		sleep 2
		client_connect 20 timeout 300 rping -c -a "$MR_PEER_EP" -V -v -C 20 -S 1000
		out=$CLIENT_OUT
		check_eq "$1: rping client: 20 verified pings (exit status)" 0 "$CLIENT_RC"
		check_eq "$1: rping client printed 20 pings" 20 "$(grep -c '^ping data: ' <<<"$out")"
		sleep 3
		client_connect 20 timeout 300 ucmatose -s "$MR_PEER_EP" -c 4 -C 10
		out=$CLIENT_OUT
		check_eq "$1: ucmatose client: 4 connections (exit status)" 0 "$CLIENT_RC"
		echo "$out" | tail -n 5 | sed 's/^/#   /'
	fi
	check "barrier: $1: done" pair_barrier "done-$1" 300
}

lossy_links() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i" "loss 1%" || return 1; done
}

cm_round clean
check "1% random loss on each of the $LINKS fabric links (our egress)" lossy_links
cm_round lossy
log "counters: $(rdma statistic show link mr0/1 2>&1 | tr '\n' ' ')"
check_eq "no timer armed for a past deadline" 0 "$(hw_counter mr0 timer_past_deadlines)"
check "rdma link delete mr0" rdma link delete mr0
done_testing
