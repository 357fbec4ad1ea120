#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --timeout 600
# 64 RC QPs from one host to another share one connection (one stream each):
# mr_ktraffic's two-host mode with flows=64 moves verified Writes and Sends
# on every QP at once.  The engine once had 32 stream slots per peer, so the
# 33rd QP to a host failed (and a user holding 32 QPs locked the kernel's
# initiators out): issue 13 defect 7.  No stream may fail to open.  With
# four Sends in flight per QP and the server's receives reposted late, RNR
# refusals are common here: a Send whose RNR NAK gave way to a later one's
# once hung (its message probe now brings the NAK back, [MR-REL-11]).
. "$(dirname "$0")/lib.sh"

QPS=64
check "peer reachable on the wire" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "modprobe metaroce" modprobe metaroce
check "mr0 on eth0" rdma link add mr0 type metaroce netdev eth0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
check "mr0 has its IPv4 GID" wait_for 10 addr_gid_index mr0 "${MR_ADDR%/*}"
check "barrier: both sides ready" pair_barrier ready

for op in write send; do
	if [ "$MR_ROLE" = b ]; then
		out=$(kt_load dev_a=mr0 role=server flows=$QPS timeout_ms=60000)
		check_eq "$op: server load passed" 0 $?
	else
		sleep 2
		out=$(kt_load dev_a=mr0 role=client peer="$MR_PEER" ops=$op size=16384 count=20 \
			depth=4 ring=16 flows=$QPS timeout_ms=60000)
		check_eq "$op: client load passed, $QPS QPs" 0 $?
		check "$op: every one of the $QPS QPs reports PASS" grep -q "mr_ktraffic: flows=$QPS passed=$QPS" <<<"$out"
	fi
	echo "$out" | sed 's/^/#   /' | tail -n 8
	check "barrier: $op done" pair_barrier "$op"
done
for cn in retransmits rtos msg_probes naks_sent naks_received; do
	echo "# $cn $(hw_counter mr0 $cn)"
done
check_eq "no stream failed to open" 0 "$(hw_counter mr0 stream_open_errors)"
check_eq "no connection failed" 0 "$(hw_counter mr0 conn_failures)"
check "barrier: end" pair_barrier end
check "rdma link delete mr0" rdma link delete mr0
done_testing
