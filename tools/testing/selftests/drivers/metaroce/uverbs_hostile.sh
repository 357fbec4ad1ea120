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

use_provider
uverbs_veth_devices uverbs_hostile

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
