#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 2400 --mem 1024
# run: by name (make selftests T=iser_logout_loop): 100 cycles, 10 to 20 minutes.
# iSER's whole lifecycle again and again on a lossy fabric: guest b discovers,
# logs in, writes and reads back 4 MiB and logs out, CYCLES times, with LOSS
# random loss on every link both ways.  Each cycle makes and tears down two
# connections (discovery, then the session), and a QP whose rdma_cm exchange
# is slow meets the idle CLOSE of the last ([MR-CONN-14]); each logout races
# its response's MSGACK against the DREQ ([MR-ACK-9]: LIO WARNs on a flushed
# logout response, and the harness fails a test on any WARNING).  Every cycle
# must pass, no connection may fail, and the counters of both sides are printed.
. "$(dirname "$0")/lib.sh"

CYCLES=100
LOSS=5%
MIB=4
LINKS=8
IQN=iqn.2026-12.org.metaroce:selftest
PORT=3260
export -f iser_disk
export IQN

check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
if [ "$MR_ROLE" = a ]; then
	check "LIO iSER target on $MR_EP:$PORT" lio_up "$MR_EP" $((MIB * 2))
else
	check "open-iscsi initiator with an iser iface" initiator_up
fi
lossy() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape $i "loss $LOSS" || return 1; done
}
check "$LOSS random loss on each of the $LINKS fabric links" lossy
check "barrier: target ready, wire lossy" pair_barrier ready

# One cycle; says which step failed.
cycle() {
	local dev
	iscsiadm -m discovery -t st -p "$MR_PEER_EP:$PORT" -I iser0 2>&1 | grep -q "$IQN" ||
		{ echo "discovery"; return 1; }
	iscsiadm -m node -T "$IQN" -p "$MR_PEER_EP:$PORT" -I iser0 --login >/dev/null 2>&1 ||
		{ echo "login"; return 1; }
	wait_for 30 iser_disk || { echo "no disk"; return 1; }
	dev=$(iser_disk)
	head -c $((MIB << 20)) /dev/urandom >/tmp/iser-data
	dd if=/tmp/iser-data of="$dev" bs=1M oflag=direct conv=fsync status=none &&
		dd if="$dev" of=/tmp/iser-back bs=1M count="$MIB" iflag=direct status=none &&
		cmp -s /tmp/iser-data /tmp/iser-back || { echo "data"; return 1; }
	iscsiadm -m node -T "$IQN" -p "$MR_PEER_EP:$PORT" -I iser0 --logout >/dev/null 2>&1 ||
		{ echo "logout"; return 1; }
	wait_for 30 bash -c "! iser_disk" || { echo "disk stays"; return 1; }
}

if [ "$MR_ROLE" = b ]; then
	failed=0 t0=$SECONDS
	for ((i = 1; i <= CYCLES; i++)); do
		why=$(cycle) || {
			failed=$((failed + 1))
			log "cycle $i failed at: $why ($(date +%T))"
			# What is left of the session goes, so that the next cycle starts clean.
			iscsiadm -m node -T "$IQN" -p "$MR_PEER_EP:$PORT" -I iser0 --logout \
				>/dev/null 2>&1
		}
	done
	log "$CYCLES cycles in $((SECONDS - t0)) s, $failed failed"
	check_eq "every cycle: discovery, login, $MIB MiB written and read back, logout" 0 "$failed"
	check "iscsid stopped" iscsiadm -k 0
fi
check "barrier: cycles done" pair_barrier done $((MR_TEST_TIMEOUT - 120))

for c in conn_failures conn_renewals restart_challenges rtos retransmits; do
	log "$c: $(hw_counter mr0 "$c")"
done
check_eq "no connection failed its QPs" 0 "$(hw_counter mr0 conn_failures)"
if [ "$MR_ROLE" = a ]; then
	check "target torn down" lio_down
else
	check "rmmod ib_iser" modprobe -r ib_iser
fi
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
