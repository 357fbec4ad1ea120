#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 600 --mem 1024
# iSCSI Extensions for RDMA over MetaRoCE, unmodified: guest a exports a file
# as a LUN with LIO's iSER target (ib_isert, configured through
# python3-rtslib-fb: targetcli's backstore commands need a system bus the
# guests lack), guest b logs in with open-iscsi's iser transport (ib_iser),
# writes random data through the 8-link ECMP fabric, reads it back with
# O_DIRECT and compares, and logs out; then again with 1% random loss on every
# link in both directions.  Every byte is checked, and dmesg must stay clean.
. "$(dirname "$0")/lib.sh"

MIB=16
LINKS=8
IQN=iqn.2026-12.org.metaroce:selftest
PORT=3260

check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

# One round from the initiator: discover, log in over iser, write MIB MiB of random
# data at an offset, read it back with O_DIRECT, compare, log out.
initiator_round() { # label
	local label=$1 dev t0 t1

	check "$label: discovery finds $IQN" bash -c \
		"iscsiadm -m discovery -t st -p '$MR_PEER_EP:$PORT' -I iser0 | grep -q '$IQN'"
	check "$label: login over iser" iscsiadm -m node -T "$IQN" -p "$MR_PEER_EP:$PORT" \
		-I iser0 --login
	check "$label: the session's transport is iser" \
		bash -c "iscsiadm -m session | grep -q '^iser: .*$IQN'"
	check "$label: the LUN's disk appears" wait_for 30 iser_disk
	dev=$(iser_disk) || dev=/dev/null
	log "$label: LUN 0 is $dev"
	head -c $((MIB << 20)) /dev/urandom >/tmp/iser-data
	t0=$(date +%s%N)
	check "$label: write $MIB MiB (O_DIRECT)" dd if=/tmp/iser-data of="$dev" bs=1M \
		seek=1 oflag=direct conv=fsync status=none
	t1=$(date +%s%N)
	check "$label: read back $MIB MiB (O_DIRECT)" dd if="$dev" of=/tmp/iser-back bs=1M \
		skip=1 count="$MIB" iflag=direct status=none
	check_eq "$label: data read back is the data written" \
		"$(sha256sum </tmp/iser-data)" "$(sha256sum </tmp/iser-back)"
	log "$label: write $MIB MiB took $(((t1 - t0) / 1000000)) ms"
	check "$label: logout" iscsiadm -m node -T "$IQN" -p "$MR_PEER_EP:$PORT" -I iser0 --logout
	check "$label: the disk is gone" wait_for 30 bash -c "! iser_disk"
	rm -f /tmp/iser-data /tmp/iser-back
	log "$label: counters: $(rdma statistic show link mr0/1 2>&1 | tr '\n' ' ')"
}
export -f iser_disk
export IQN

fabric_mark "$LINKS"

if [ "$MR_ROLE" = a ]; then
	check "LIO iSER target on $MR_EP:$PORT" lio_up "$MR_EP" $((MIB * 2))
else
	check "open-iscsi initiator with an iser iface" initiator_up
fi
check "barrier: target ready" pair_barrier ready
if [ "$MR_ROLE" = b ]; then
	sent0=$(hw_counter mr0 tx_packets)
	initiator_round clean
	# The data went over MetaRoCE, not over iSCSI's TCP: 2 x MIB MiB at most 4 KiB a packet.
	sent=$(($(hw_counter mr0 tx_packets) - sent0))
	check "the clean round's data crossed mr0 ($sent packets sent)" test "$sent" -ge $((MIB * 256))
fi
check "barrier: clean round done" pair_barrier clean 600

lossy() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape $i "loss 1%" || return 1; done
}
check "1% random loss on each of the $LINKS fabric links" lossy
check "barrier: lossy wire on both sides" pair_barrier lossy
if [ "$MR_ROLE" = b ]; then
	initiator_round "1% loss"
fi
check "barrier: lossy round done" pair_barrier lossy-done 600

# The packets went over the fabric, sprayed: most links carried a share.
fabric_check_spread "$LINKS"
check_eq "no timer armed for a past deadline" 0 "$(hw_counter mr0 timer_past_deadlines)"

if [ "$MR_ROLE" = a ]; then
	check "target torn down" lio_down
else
	check "iscsid stopped" iscsiadm -k 0
	check "rmmod ib_iser" modprobe -r ib_iser
fi
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
