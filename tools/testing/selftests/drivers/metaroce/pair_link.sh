#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair
# Two guests on one virtual wire: each links a MetaRoCE device on eth0 and an
# rxe device beside it, and rxe carries a perftest run between the guests (the
# baseline setup the benchmarks use).
. "$(dirname "$0")/lib.sh"

check "peer reachable on the wire" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "modprobe metaroce" modprobe metaroce
check "mr0 on eth0" rdma link add mr0 type metaroce netdev eth0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
me=$(printf '0000:0000:0000:0000:0000:ffff:c612:00%02x' "$(cut -d/ -f1 <<<"${MR_ADDR#198.18.0.}")")
check "GID table holds our IPv4-mapped address" wait_for 5 \
	grep -qx "$me" /sys/class/infiniband/mr0/ports/1/gids/*

check "modprobe rdma_rxe" modprobe rdma_rxe
check "rxe0 on eth0 beside mr0" rdma link add rxe0 type rxe netdev eth0
check "barrier: both sides ready" pair_barrier ready
if [ "$MR_ROLE" = b ]; then
	check "rxe ib_write_bw server" timeout 120 ib_write_bw -d rxe0 -x 1 -s 4096 -n 500 -F
else
	sleep 2
	client_connect 20 timeout 120 ib_write_bw -d rxe0 -x 1 -s 4096 -n 500 -F "$MR_PEER"
	out=$CLIENT_OUT
	check_eq "rxe ib_write_bw client ran" 0 "$CLIENT_RC"
	bw=$(awk '/^ 4096/ {print $4}' <<<"$out")
	log "rxe ib_write_bw 4 KiB: ${bw:-?} MB/s"
	check "perftest reported a bandwidth" test -n "$bw"
fi
check "barrier: done" pair_barrier done
check "rdma link delete mr0" rdma link delete mr0
done_testing
