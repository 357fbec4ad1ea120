#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 4 --timeout 600
# Two guests joined by a 4-link ECMP fabric (vm.sh --links): the fabric routes
# between the endpoints, and mr_ktraffic's two-host mode carries verified
# Writes, Sends and Reads between them over MetaRoCE (sprayed over the links) and
# rxe (a Read's every byte is checked at the client, which fills its buffer with
# the complement of what the server's slot holds before each Read).
. "$(dirname "$0")/lib.sh"

check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "modprobe rdma_rxe" modprobe rdma_rxe
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "rxe0 on fab0" rdma link add rxe0 type rxe netdev fab0
gid=$(printf '0000:0000:0000:0000:0000:ffff:c612:%02x01' "$(cut -d. -f3 <<<"$MR_EP")")
check "mr0 has the endpoint's GID" wait_for 10 grep -qx "$gid" /sys/class/infiniband/mr0/ports/1/gids/1
check "rxe0 has the endpoint's GID" wait_for 10 grep -qx "$gid" /sys/class/infiniband/rxe0/ports/1/gids/1
check "barrier: both sides ready" pair_barrier ready

before=()
for i in 1 2 3 4; do before+=("$(fabric_tx_packets "$i")"); done
# run NAME DEV OP: the server (b) and the client (a) of one two-host run.
run() {
	local out
	if [ "$MR_ROLE" = b ]; then
		out=$(kt_load dev_a="$2" role=server timeout_ms=60000)
		check_eq "$1: server load passed" 0 $?
	else
		out=$(kt_load dev_a="$2" role=client peer="$MR_PEER" ops="$3" size=65536 count=200 \
			depth=16 ring=64 timeout_ms=60000)
		check_eq "$1: client load passed" 0 $?
		check "$1: client reports PASS" grep -q "mr_ktraffic: $3 count=200 .* PASS" <<<"$out"
		check "$1: client reports latency" grep -q "mr_ktraffic: $3 latency samples=200 " <<<"$out"
	fi
	echo "$out" | sed 's/^/#   /'
	check "barrier: $1 done" pair_barrier "$1"
}
run "MetaRoCE write" mr0 write
run "MetaRoCE send" mr0 send
if [ "$MR_ROLE" = a ]; then	# the sender's data; b sends ACKs only
	used=0
	for i in 1 2 3 4; do
		[ $(($(fabric_tx_packets "$i") - before[i - 1])) -gt 50 ] && used=$((used + 1))
	done
	log "fabric links that carried MetaRoCE data: $used of 4"
	check "MetaRoCE sprayed over at least 2 of 4 links ($used)" test "$used" -ge 2
fi
run "MetaRoCE read" mr0 read
run "rxe write" rxe0 write
run "rxe send" rxe0 send
run "rxe read" rxe0 read

# A client that finds no server fails cleanly.
if [ "$MR_ROLE" = a ]; then
	check_fails "client without a server fails the load" "" \
		insmod "$MR_TOP/tools/testing/selftests/drivers/metaroce/ktraffic/mr_ktraffic.ko" \
		dev_a=mr0 role=client peer="$MR_PEER" port=1 ops=write count=1 timeout_ms=2000
fi
check "nothing stays loaded" sh -c '! grep -q "^mr_ktraffic " /proc/modules'
check "barrier: end" pair_barrier end
check "rdma link delete mr0" rdma link delete mr0
check "rdma link delete rxe0" rdma link delete rxe0
done_testing
