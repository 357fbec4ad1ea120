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

use_provider
uverbs_veth_devices uverbs_flush

check "B's answers arrive 200 ms late" ip netns exec h2 tc qdisc add dev v2 root netem delay 200ms
out=$(timeout 240 "$bin" mr0 mr1 "$g0" "$g1" 2>&1)
rc=$?
sed 's/^/#   /' <<<"$out"
check_eq "no flushed WQE's buffer was written or sent" 0 "$rc"
check "rdma link delete mr0" rdma link delete mr0
check "rdma link delete mr1" rdma link delete mr1
check "rmmod metaroce" rmmod metaroce
done_testing
