#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# needs: provider
# A hostile process writes garbage into the rings mmapped from the kernel
# (random WQEs, wild indices, bad lengths, bad and foreign lkeys, the local
# DMA lkey, huge num_sge, a broken CQ consumer index, garbage and a wild index
# in an SRQ's ring; on UD QPs AH numbers that are none of its own: none,
# random, destroyed, of another PD or of another user context) and rings the
# doorbell: the kernel answers with error completions and the user_wqe_errors
# (and user_ah_errors) counters only, warns about nothing (vm.sh fails the run
# on any kernel warning), and a
# well-behaved QP pair in the same process keeps moving data, checked byte by
# byte.  The two devices sit in two namespaces joined by a veth pair.
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
use_provider

bin=/tmp/uverbs_hostile
check "build the test program" gcc -O2 -Wall -Wextra -Werror -I"$top/include/uapi" \
	-o "$bin" "$here/uverbs_hostile.c" "$here/uverbs_util.c" -libverbs

topo_veth_pair
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "mr0 on h1/v1" ip netns exec h1 rdma link add mr0 type metaroce netdev v1
check "mr1 on h2/v2" ip netns exec h2 rdma link add mr1 type metaroce netdev v2
check "mr0 port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
check "mr1 port ACTIVE" wait_for 5 port_is mr1 "4: ACTIVE"

gid_index() { # DEV GID
	local f
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		[ "$(cat "$f" 2>/dev/null)" = "$2" ] && { basename "$f"; return 0; }
	done
	return 1
}
check "mr0 has its IPv4 GID" wait_for 10 gid_index mr0 0000:0000:0000:0000:0000:ffff:c612:0101
check "mr1 has its IPv4 GID" wait_for 10 gid_index mr1 0000:0000:0000:0000:0000:ffff:c612:0102
g0=$(gid_index mr0 0000:0000:0000:0000:0000:ffff:c612:0101)
g1=$(gid_index mr1 0000:0000:0000:0000:0000:ffff:c612:0102)

before=$(hw_counter mr0 user_wqe_errors)
ah_before=$(hw_counter mr0 user_ah_errors)
out=$(timeout 120 "$bin" mr0 mr1 "$g0" "$g1" 2>&1)
rc=$?
sed 's/^/#   /' <<<"$out"
check_eq "the hostile process ran to the end, the good pair unharmed" 0 "$rc"
for d in mr0 mr1; do
	rdma statistic show link "$d"/1 | tr ' ' '\n' | paste -d' ' - - | sed 's/^/# /'
done
after=$(hw_counter mr0 user_wqe_errors)
log "user_wqe_errors on mr0: $before -> $after"
check "the bad WQEs were counted" test "$after" -gt "$before"
ah_after=$(hw_counter mr0 user_ah_errors)
log "user_ah_errors on mr0: $ah_before -> $ah_after"
# Five bad AH numbers: 0, random, destroyed, another PD's, another context's.
check "the bad AH numbers were counted" test "$((ah_after - ah_before))" -ge 5
check "its QPs and CQs are gone when it exits" wait_for 10 \
	sh -c '! rdma resource show qp | grep -q "comm uverbs_hostile"'
check "rdma link delete mr0" rdma link delete mr0
check "rdma link delete mr1" rdma link delete mr1
check "rmmod metaroce" rmmod metaroce
done_testing
