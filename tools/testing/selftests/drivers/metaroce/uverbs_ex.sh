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
# device does not do (timestamps, flow tags, UD memory windows, TSO;
# uverbs_mw binds windows with ibv_wr_bind_mw).  RC between
# two QPs of mr0 (loopback, [MR-CONN-13]) and between mr0 and mr1, both in one
# namespace.  Then [MR-ENC-6] on the wire (lo, which carries it all): the
# DSCP of a UD AH's traffic class and of an RC QP's (ib_write_bw --tclass),
# the module's dscp for everything else, and the dscp parameter.
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
use_provider

check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
two_local_devices

# DSCP counters on lo's egress: tc flower, one filter per DSCP of interest.
modprobe sch_ingress 2>/dev/null
modprobe cls_flower 2>/dev/null
check "clsact on lo" tc qdisc add dev lo clsact
pref=1
for dscp in 46 26 10; do
	check "count DSCP $dscp on lo" tc filter add dev lo egress pref $pref protocol ip flower \
		ip_proto udp dst_port 64791 ip_tos $((dscp << 2))/0xfc action pass
	pref=$((pref + 1))
done
# dscp_pkts DSCP: MetaRoCE packets with that DSCP that left over lo so far.
dscp_pkts() {
	local pref
	case $1 in 46) pref=1 ;; 26) pref=2 ;; 10) pref=3 ;; esac
	tc -s filter show dev lo egress pref "$pref" |
		awk '/Sent/ { for (i = 1; i < NF; i++) if ($(i + 1) == "pkt") { print $i; exit } }'
}

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
# Two runs, one datagram each in class 0xb8; the rest (RC and its ACKs) in ours.
check_eq "the UD AH's traffic class gave its datagram DSCP 46, once per run" 2 "$(dscp_pkts 46)"
n26=$(dscp_pkts 26)
check "RC packets, ACKs and handshakes went with the default DSCP 26 ($n26)" test "${n26:-0}" -ge 20

# local_pair SERVER_CMD -- CLIENT_CMD, both on this guest; RUN_RC: the client's status.
local_pair() {
	local srv=() pid
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	timeout 120 "${srv[@]}" >/tmp/server.out 2>&1 &
	pid=$!
	sleep 1
	client_connect 20 timeout 90 "$@"
	RUN_RC=$CLIENT_RC
	sed 's/^/#   /' <<<"$CLIENT_OUT" | tail -n 3
	wait "$pid" || RUN_RC=1
}
b46=$(dscp_pkts 46)
b26=$(dscp_pkts 26)
local_pair ib_write_bw -d mr0 -x "$g0" --tclass=184 -n 100 -s 65536 -- \
	ib_write_bw -d mr0 -x "$g0" --tclass=184 -n 100 -s 65536 127.0.0.1
check_eq "ib_write_bw --tclass=184 between two QPs of mr0" 0 "$RUN_RC"
d46=$(($(dscp_pkts 46) - b46))
d26=$(($(dscp_pkts 26) - b26))
# 100 Writes of 64 KiB in packets that fit d0's MTU of 1500: 4,370 data packets
# at least; ACKs stay in DSCP 26.
check "its QPs' Writes went with DSCP 46 ($d46 packets)" test "$d46" -ge 4370
check "its ACKs went with DSCP 26 ($d26 packets)" test "$d26" -ge 1

check_fails "dscp=64 refused" "" sh -c 'echo 64 > /sys/module/metaroce/parameters/dscp'
check_eq "  ...dscp still 26" 26 "$(cat /sys/module/metaroce/parameters/dscp)"
check "dscp=10" sh -c 'echo 10 > /sys/module/metaroce/parameters/dscp'
b10=$(dscp_pkts 10)
local_pair ib_write_bw -d mr0 -x "$g0" -n 20 -s 65536 -- \
	ib_write_bw -d mr0 -x "$g0" -n 20 -s 65536 127.0.0.1
check_eq "ib_write_bw without a traffic class" 0 "$RUN_RC"
d10=$(($(dscp_pkts 10) - b10))
check "its packets went with the module's DSCP 10 ($d10)" test "$d10" -ge 874
check "dscp back to 26" sh -c 'echo 26 > /sys/module/metaroce/parameters/dscp'
tc qdisc del dev lo clsact
check "no QP or CQ of uverbs_ex is left" \
	sh -c '! rdma resource show 2>/dev/null | grep -q "comm uverbs_ex"'
for d in mr0 mr1; do
	check_eq "$d: no user WQE errors" 0 "$(hw_counter $d user_wqe_errors)"
done
check "rdma link delete mr1" rdma link delete mr1
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
