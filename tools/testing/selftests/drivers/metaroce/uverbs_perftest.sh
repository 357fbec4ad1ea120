#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 600
# needs: provider
# Unmodified userspace Verbs programs between two guests over MetaRoCE, through
# our provider's mmapped rings: ibv_rc_pingpong with data validation, then
# perftest's bandwidth and latency tests (its own TCP exchange on the control
# wire, no rdma_cm), across an 8-link ECMP fabric: clean, then with 1% random
# loss on every link in both directions.
# Arguments (vm.sh --pair uverbs_perftest.sh ARGS) pick a subset: perftest
# names, "clean" to skip the lossy round.
. "$(dirname "$0")/lib.sh"

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
log "GID index $gid"

perftests="ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat"
lossy=1
if [ $# -gt 0 ]; then
	perftests=$(tr ' ' '\n' <<<"$*" | grep '^ib_' | tr '\n' ' ')
	[[ " $* " != *" clean "* ]] || lossy=0
fi

round() { # LABEL
	local t
	run_pair "ibv_rc_pingpong -c $1" ibv_rc_pingpong -d mr0 -g "$gid" -c -n 200 -s 4096
	if [ "$MR_ROLE" = a ]; then
		check "ibv_rc_pingpong $1 moved 200 iterations" grep -q "200 iters" <<<"$RUN_OUT"
	fi
	for t in $perftests; do
		case $t in
		*_lat) run_pair "$t $1" "$t" -d mr0 -x "$gid" -F -n 200 -s 64 ;;
		ib_atomic_bw) run_pair "$t $1" "$t" -d mr0 -x "$gid" -F -n 500 ;;
		*) run_pair "$t $1" "$t" -d mr0 -x "$gid" -F -n 200 -s 65536 ;;
		esac
	done
}

fabric_mark "$LINKS"
round "(clean fabric)"
if [ "$lossy" = 1 ]; then
	lossy_links() {
		local i
		for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i" "loss 1%" || return 1; done
	}
	check "1% random loss on each of the $LINKS fabric links (our egress)" lossy_links
	round "(1% loss on every link, both ways)"
	for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i"; done
fi
fabric_check_spread "$LINKS"
rdma statistic show link mr0/1 | tr ' ' '\n' | paste -d' ' - - | sed 's/^/# /'
check_eq "no user WQE errors" 0 "$(hw_counter mr0 user_wqe_errors)"
check_eq "no timer armed for a past deadline" 0 "$(hw_counter mr0 timer_past_deadlines)"
check "barrier: done" pair_barrier done
check "rdma link delete mr0" rdma link delete mr0
done_testing
