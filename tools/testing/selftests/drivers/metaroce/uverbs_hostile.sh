#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# needs: provider
# A hostile process writes garbage into the rings mmapped from the kernel
# (random WQEs, wild indices, bad lengths, bad and foreign lkeys, the local
# DMA lkey, huge num_sge, a broken CQ consumer index, garbage and a wild index
# in an SRQ's ring; on UD QPs AH numbers that are none of its own: none,
# random, destroyed, of another PD or of another user context) and rings the
# doorbell: the kernel answers with error completions and the user_wqe_errors
# (and user_ah_errors) counters only, and the metaroce_user_wqe_error
# tracepoint with what the refused WQE asked, warns about nothing (vm.sh
# fails the run on any kernel warning), and a
# well-behaved QP pair in the same process keeps moving data, checked byte by
# byte.  The two devices sit in two namespaces joined by a veth pair.
. "$(dirname "$0")/lib.sh"

use_provider
uverbs_veth_devices uverbs_hostile

T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
echo > $T/trace
echo 1 > $T/events/metaroce/metaroce_user_wqe_error/enable
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
echo 0 > $T/events/metaroce/metaroce_user_wqe_error/enable
grep metaroce_user_wqe_error $T/trace | head -n 3 | sed 's/^ */#   /'
# uverbs_hostile.c's garbage send WQE 1000 + k with k == 2 (0x3ea): the local DMA lkey
# with a kernel address.
check "the tracepoint names the refused local DMA lkey and its kernel address" \
	grep -qE "metaroce_user_wqe_error: mr0 qp [0-9]+ send wr_id 0x3ea status [0-9]+ .* sge0 lkey 0x0 addr 0xffffffff81000000" $T/trace
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
