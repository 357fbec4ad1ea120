#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 720 --mem 1024
# NVMe over Fabrics over MetaRoCE, unmodified: guest a exports a loop device
# with nvmet-rdma, guest b connects with `nvme connect -t rdma` (rdma_cm over
# our GSI QP, then RC queues), writes random data through an 8-link ECMP
# fabric, reads it back and compares checksums, and runs fio with verify;
# then again with 1% random loss on every link in both directions, the
# target now on shared receive queues (nvmet-rdma use_srq=1). Every byte is
# checked, and dmesg must stay clean.
. "$(dirname "$0")/lib.sh"

MIB=16

LINKS=8
check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

# One round from the host: connect, write MIB MiB of random data at an offset,
# read it back with O_DIRECT, compare, disconnect.
host_round() { # label
	local label=$1 dev t0 t1

	check "$label: nvme discover sees the subsystem" \
		bash -c "nvme discover -t rdma -a '$MR_PEER_EP' -s $NVME_PORT | grep -q '$NVME_NQN'"
	check "$label: nvme connect -t rdma" nvme_connect "$MR_PEER_EP"
	check "$label: namespace block device appears" wait_for 30 nvme_ns_dev
	dev=$(nvme_ns_dev) || dev=/dev/null
	log "$label: namespace is $dev"
	head -c $((MIB << 20)) /dev/urandom >/tmp/nvme-data
	t0=$(date +%s%N)
	check "$label: write $MIB MiB (O_DIRECT)" dd if=/tmp/nvme-data of="$dev" bs=1M \
		seek=1 oflag=direct conv=fsync status=none
	t1=$(date +%s%N)
	check "$label: read back $MIB MiB (O_DIRECT)" dd if="$dev" of=/tmp/nvme-back bs=1M \
		skip=1 count="$MIB" iflag=direct status=none
	check_eq "$label: data read back is the data written" \
		"$(sha256sum </tmp/nvme-data)" "$(sha256sum </tmp/nvme-back)"
	log "$label: write $MIB MiB took $(((t1 - t0) / 1000000)) ms"
	check "$label: fio 4 KiB random write+verify (crc32c)" fio --name=v \
		--filename="$dev" --rw=randwrite --bs=4k --size=4M --offset=$(((MIB + 2) << 20)) \
		--ioengine=libaio --iodepth=16 --direct=1 --verify=crc32c \
		--verify_fatal=1 --do_verify=1 --output=/tmp/fio.out
	check "$label: nvme disconnect" nvme disconnect -n "$NVME_NQN"
	rm -f /tmp/nvme-data /tmp/nvme-back
	log "$label: counters: $(rdma statistic show link mr0/1 2>&1 | tr '\n' ' ')"
	check_eq "$label: no timer armed for a past deadline" 0 \
		"$(hw_counter mr0 timer_past_deadlines)"
}

fabric_mark "$LINKS"

if [ "$MR_ROLE" = a ]; then
	check "nvmet-rdma target on $MR_EP:$NVME_PORT" nvmet_up "$MR_EP" $((MIB * 2))
fi
check "barrier: target ready" pair_barrier ready
if [ "$MR_ROLE" = b ]; then
	check "modprobe nvme-rdma" modprobe nvme-rdma
	host_round clean
fi
check "barrier: clean round done" pair_barrier clean 600

# The target again, on SRQs: its queues share receive WQEs per completion vector.
srq_target() {
	nvmet_down && modprobe -r nvmet-rdma && modprobe nvmet-rdma use_srq=1 &&
		nvmet_up "$MR_EP" $((MIB * 2))
}
if [ "$MR_ROLE" = a ]; then
	check "nvmet-rdma target again, with use_srq=1" srq_target
	# nvmet makes its SRQs with the first queue and frees them with the last:
	# look for them while the host is connected.
	rm -f /tmp/srq-seen
	(for ((i = 0; i < 300; i++)); do
		rdma resource show srq 2>/dev/null | grep -q "dev mr0 " && { touch /tmp/srq-seen; break; }
		sleep 1
	done) &
fi

lossy() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape $i "loss 1%" || return 1; done
}
check "1% random loss on each of the $LINKS fabric links" lossy
check "barrier: lossy wire on both sides" pair_barrier lossy
if [ "$MR_ROLE" = b ]; then
	host_round "1% loss"
fi
check "barrier: lossy round done" pair_barrier lossy-done 600
if [ "$MR_ROLE" = a ]; then
	check "the target's queues used shared receive queues (rdma resource show srq)" \
		test -e /tmp/srq-seen
fi

# The packets went over the fabric, sprayed: most links carried a share.
fabric_check_spread "$LINKS"

if [ "$MR_ROLE" = a ]; then
	check "target torn down" nvmet_down
	check "rmmod nvmet-rdma" modprobe -r nvmet-rdma
else
	check "rmmod nvme-rdma" modprobe -r nvme-rdma
fi
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
