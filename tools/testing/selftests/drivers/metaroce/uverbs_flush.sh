#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# needs: provider
# [MR-SEC-8] Nothing is placed into, or sent from, a flushed WQE's buffers: a
# Read flushed before its (delayed) response arrives leaves its buffer as it
# was; a Send flushed while it waits for a receive is never delivered after
# its buffer was reused; a QP taken through Error and RESET connects again
# and moves verified data (uverbs_flush.c).  B's egress is delayed by netem
# so that its answers arrive late.  Issue 13 defect 2.
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
use_provider

bin=/tmp/uverbs_flush
check "build the test program" gcc -O2 -Wall -Wextra -Werror -I"$top/include/uapi" \
	-o "$bin" "$here/uverbs_flush.c" "$here/uverbs_util.c" -libverbs

topo_veth_pair
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "mr0 on h1/v1" ip netns exec h1 rdma link add mr0 type metaroce netdev v1
check "mr1 on h2/v2" ip netns exec h2 rdma link add mr1 type metaroce netdev v2
check "mr0 port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
check "mr1 port ACTIVE" wait_for 5 port_is mr1 "4: ACTIVE"
check "mr0 has its IPv4 GID" wait_for 10 addr_gid_index mr0 198.18.1.1
check "mr1 has its IPv4 GID" wait_for 10 addr_gid_index mr1 198.18.1.2
g0=$(addr_gid_index mr0 198.18.1.1)
g1=$(addr_gid_index mr1 198.18.1.2)

check "B's answers arrive 200 ms late" ip netns exec h2 tc qdisc add dev v2 root netem delay 200ms
out=$(timeout 240 "$bin" mr0 mr1 "$g0" "$g1" 2>&1)
rc=$?
sed 's/^/#   /' <<<"$out"
check_eq "no flushed WQE's buffer was written or sent" 0 "$rc"
check "rdma link delete mr0" rdma link delete mr0
check "rdma link delete mr1" rdma link delete mr1
check "rmmod metaroce" rmmod metaroce
done_testing
