#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --timeout 600
# needs: provider
# The extended Verbs API through our provider (uverbs_ex.c): CQs from
# ibv_create_cq_ex polled with ibv_start_poll/next_poll/end_poll and the
# ibv_wc_read_*() accessors, QPs from ibv_create_qp_ex whose WQEs are built
# with ibv_wr_*() (every RC operation, SGE lists, inline data and inline
# lists, UD with ibv_wr_set_ud_addr), all or nothing per batch (wr_abort, a
# batch past max_send_wr, too much inline), and EOPNOTSUPP for what the
# device does not do (timestamps, flow tags, memory windows, TSO).  RC between
# two QPs of mr0 (loopback, [MR-CONN-13]) and between mr0 and mr1, both in one
# namespace.
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
use_provider

A=198.18.1.1
B=198.18.2.1
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
for i in 0 1; do
	ip link add "d$i" type dummy
	ip link set "d$i" up
done
ip addr add "$A/24" dev d0
ip addr add "$B/24" dev d1
check "mr0 on d0" rdma link add mr0 type metaroce netdev d0
check "mr1 on d1" rdma link add mr1 type metaroce netdev d1
check "mr0 has the GID of $A" wait_for 10 addr_gid_index mr0 "$A"
check "mr1 has the GID of $B" wait_for 10 addr_gid_index mr1 "$B"
g0=$(addr_gid_index mr0 "$A")
g1=$(addr_gid_index mr1 "$B")

bin=/tmp/uverbs_ex
check "build the test program" gcc -O2 -Wall -Wextra -Werror -o "$bin" \
	"$here/uverbs_ex.c" "$here/uverbs_util.c" -libverbs
run_ex() { # LABEL DEV_A DEV_B GID_A GID_B
	local out rc
	out=$(timeout 240 "$bin" "$2" "$3" "$4" "$5" 2>&1)
	rc=$?
	sed 's/^/#   /' <<<"$out"
	check_eq "uverbs_ex $1" 0 "$rc"
}
run_ex "between two QPs of mr0" mr0 mr0 "$g0" "$g0"
run_ex "from mr0 to mr1" mr0 mr1 "$g0" "$g1"
check "no QP or CQ of uverbs_ex is left" \
	sh -c '! rdma resource show 2>/dev/null | grep -q "comm uverbs_ex"'
for d in mr0 mr1; do
	check_eq "$d: no user WQE errors" 0 "$(hw_counter $d user_wqe_errors)"
done
check "rdma link delete mr1" rdma link delete mr1
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
