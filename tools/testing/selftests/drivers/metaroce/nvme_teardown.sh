#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --timeout 720 --mem 1024
# Tear-down under traffic: while an NVMe-oF writer runs over MetaRoCE, guest b
# (the NVMe host) takes the transport away three ways: `rdma link delete`,
# `rmmod metaroce`, and removal of the netdev under the device. Each time the
# writer must end with an I/O error (not hang) and the controller must go;
# after the first two a new device connects and moves verified data again;
# at the end every module unloads (reference counts returned). dmesg must
# stay clean on both guests. The devices sit on a macvlan of the wire so
# that the netdev can go.
. "$(dirname "$0")/lib.sh"

NDEV=mv0
ME=198.18.10.${MR_ADDR#198.18.0.}
ME=${ME%/*}
PEER=198.18.10.${MR_PEER#198.18.0.}

# A fixed MAC: the peer's neighbour entry must stay right when mv0 comes back.
ndev_up() {
	ip link add link eth0 name $NDEV address "02:00:00:00:10:0${ME##*.}" \
		type macvlan mode bridge &&
		ip addr add "$ME/24" dev $NDEV && ip link set $NDEV up
}

dev_up() {
	rdma link add mr0 type metaroce netdev $NDEV && wait_for 5 port_is mr0 "4: ACTIVE"
}

check "peer reachable on the wire" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "macvlan $NDEV with $ME" ndev_up
check "peer reachable on the macvlan" wait_for 20 ping -c 1 -W 1 "$PEER"
check "modprobe metaroce" modprobe metaroce
check "mr0 on $NDEV" dev_up

# Connect, check a round trip of MIB (default 1) MiB, start a writer in the background.
start_writer() { # label [MIB]
	local label=$1 mib=${2:-1} dev

	check "$label: nvme connect -t rdma" nvme_connect "$PEER" 3
	log "$label: nvme connect tries: $(cat /tmp/nvme-tries)"
	check "$label: namespace block device appears" wait_for 30 nvme_ns_dev
	dev=$(nvme_ns_dev) || dev=/dev/null
	head -c "${mib}M" /dev/urandom >/tmp/mib
	check "$label: $mib MiB written" dd if=/tmp/mib of="$dev" bs=1M oflag=direct status=none
	check_eq "$label: and read back intact" "$(sha256sum </tmp/mib)" \
		"$(dd if="$dev" bs=1M count="$mib" iflag=direct status=none | sha256sum)"
	dd if=/dev/zero of="$dev" bs=64k count=100000 oflag=direct status=none 2>/tmp/writer.err &
	WRITER=$!
	sleep 3
	check "$label: the writer is running" kill -0 $WRITER
}

# The writer must stop with an error, and the controller must go.
writer_failed() { # label
	local label=$1 rc

	check "$label: the writer ends" wait_for 120 bash -c "! kill -0 $WRITER 2>/dev/null"
	wait $WRITER
	rc=$?
	check "$label: the writer saw an I/O error (exit $rc)" test $rc -ne 0
	log "$label: writer: $(tr '\n' ' ' </tmp/writer.err)"
	check "$label: the controller is gone" wait_for 120 nvme_gone
}

if [ "$MR_ROLE" = a ]; then
	check "nvmet-rdma target on $ME:$NVME_PORT" nvmet_up "$ME" 64
fi
check "barrier: target ready" pair_barrier ready

if [ "$MR_ROLE" = b ]; then
	check "modprobe nvme-rdma" modprobe nvme-rdma

	start_writer "link delete"
	check "link delete: rdma link delete mr0 under traffic" rdma link delete mr0
	writer_failed "link delete"

	check "rmmod: mr0 back" dev_up
	start_writer "rmmod"
	check "rmmod: rmmod metaroce under traffic" rmmod metaroce
	writer_failed "rmmod"

	check "after rmmod: modprobe metaroce again" modprobe metaroce
	check "after rmmod: mr0 back" dev_up
	start_writer "netdev removal" 4
	check "netdev removal: ip link del $NDEV under traffic" ip link del $NDEV
	writer_failed "netdev removal"
	check "netdev removal: mr0 went with its netdev" wait_for 10 \
		bash -c "! rdma link show mr0/1 >/dev/null 2>&1"
	check "after: rmmod nvme-rdma" modprobe -r nvme-rdma
fi
check "barrier: host done" pair_barrier done 800
log "counters: $(rdma statistic show link mr0/1 2>&1 | tr '\n' ' ')"
if [ "$MR_ROLE" = a ]; then
	# The host's device went: the target learned it, and the log says how.  From the
	# transport (closed by the peer, or the peer went silent while the target had data
	# out), or, when the target had nothing out as the host vanished (its responses all
	# acknowledged: no transport can tell a silent peer from an idle one), from NVMe's
	# keep-alive.  Seen first when the wires lost their 40 ms Nagle stalls (2026-12),
	# which had kept responses out longer.
	check "the target learned that the host went, and logged it" \
		bash -c "dmesg | grep -qE 'metaroce: mr0: connection to 198\.18\.[0-9.]+ failed its QPs: [a-z]|nvmet: ctrl [0-9]+ keep-alive timer \([0-9]+ seconds\) expired'"
	check "target torn down" nvmet_down
	check "rmmod nvmet-rdma" modprobe -r nvmet-rdma
	check "rdma link delete mr0" rdma link delete mr0
fi
check "rmmod metaroce" rmmod metaroce
check "no metaroce module left" bash -c "! grep -q '^metaroce ' /proc/modules"
done_testing
