#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 600 --mem 1024
# NFS over RDMA over MetaRoCE, unmodified: guest a runs the kernel NFS server
# (nfsd with its RDMA listener, svcrdma, on port 20049) exporting a tmpfs,
# guest b mounts it with `mount -t nfs4 -o proto=rdma,port=20049` (xprtrdma),
# copies random data in, and the server checks what arrived; b mounts again
# (nothing cached) and reads it back with O_DIRECT, then runs fio with verify
# on the mount.  Then again with 1% random loss on every fabric link in both
# directions.  Every byte is checked, and dmesg must stay clean.
. "$(dirname "$0")/lib.sh"

MIB=16
LINKS=8
NFS_RDMA_PORT=20049
EXPORT=/srv/nfs
MNT=/mnt/nfs

check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

# The server: NFSv4 only (no rpcbind), a tmpfs exported as the pseudo root, nfsd
# listening on RDMA.  The grace period after start is cut to its minimum so that
# the first OPEN does not wait 90 s.
nfsd_up() {
	modprobe -a nfsd rpcrdma || return 1
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || return 1
	mkdir -p "$EXPORT" /var/lib/nfs/v4recovery && mount -t tmpfs -o size=64M tmpfs "$EXPORT" ||
		return 1
	echo "$EXPORT 198.18.0.0/15(rw,sync,no_root_squash,insecure,no_subtree_check,fsid=0)" \
		>/etc/exports
	echo 10 >/proc/fs/nfsd/nfsv4leasetime && echo 10 >/proc/fs/nfsd/nfsv4gracetime || return 1
	exportfs -ra && rpc.mountd -N 3 && rpc.nfsd -N 3 4 || return 1
	echo "rdma $NFS_RDMA_PORT" >/proc/fs/nfsd/portlist && grep -qx "rdma $NFS_RDMA_PORT" \
		/proc/fs/nfsd/portlist
}

nfsd_down() {
	rpc.nfsd 0 && exportfs -ua && pkill -x rpc.mountd && umount "$EXPORT" &&
		umount /proc/fs/nfsd && modprobe -r nfsd
}

nfs_mount() {
	timeout 120 mount -t nfs4 -o "vers=4.2,proto=rdma,port=$NFS_RDMA_PORT" "$MR_PEER_EP:/" \
		"$MNT" &&
		grep -q " $MNT nfs4 .*proto=rdma" /proc/mounts
}

# One round from the client: write a file of random data, let the server check it,
# read it back from a fresh mount with O_DIRECT, fio with verify.
client_round() { # label file
	local label=$1 f=$2 t0 t1
	head -c $((MIB << 20)) /dev/urandom >/tmp/nfs-data
	check "$label: mount -t nfs4 -o proto=rdma (the mount is over rdma)" nfs_mount
	t0=$(date +%s%N)
	check "$label: copy $MIB MiB in" dd if=/tmp/nfs-data of="$MNT/$f" bs=1M conv=fsync status=none
	t1=$(date +%s%N)
	log "$label: copy $MIB MiB in took $(((t1 - t0) / 1000000)) ms"
	check "$label: umount" umount "$MNT"
	check "barrier: $label file written" pair_barrier "$label-written"
	check_eq "$label: the server holds the data written" \
		"$(sha256sum </tmp/nfs-data | cut -d' ' -f1)" "$(pair_hear "$label-sum")"
	check "$label: mount again" nfs_mount
	check "$label: read $MIB MiB back (O_DIRECT)" dd if="$MNT/$f" of=/tmp/nfs-back bs=1M \
		iflag=direct status=none
	check_eq "$label: data read back is the data written" \
		"$(sha256sum </tmp/nfs-data)" "$(sha256sum </tmp/nfs-back)"
	check "$label: fio 4 KiB random write+verify (crc32c) on the mount" fio --name=v \
		--filename="$MNT/fio-$f" --rw=randwrite --bs=4k --size=4M --ioengine=libaio \
		--iodepth=16 --direct=1 --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output=/tmp/fio.out
	check "$label: umount" umount "$MNT"
	rm -f /tmp/nfs-data /tmp/nfs-back
	log "$label: counters: $(rdma statistic show link mr0/1 2>&1 | tr '\n' ' ')"
}

# The server's side of a round: the checksum of what arrived, told to the client.
server_round() { # label file
	check "barrier: $1 file written" pair_barrier "$1-written" 600
	check "$1: tell the client the checksum of what arrived" \
		pair_tell "$1-sum" "$(sha256sum <"$EXPORT/$2" | cut -d' ' -f1)"
}

fabric_mark "$LINKS"

if [ "$MR_ROLE" = a ]; then
	check "nfsd with an RDMA listener on port $NFS_RDMA_PORT" nfsd_up
else
	check "modprobe rpcrdma nfsv4" modprobe -a rpcrdma nfsv4
	mkdir -p "$MNT"
fi
check "barrier: server ready" pair_barrier ready
if [ "$MR_ROLE" = b ]; then
	sent0=$(hw_counter mr0 tx_packets)
	client_round clean clean.bin
	# The data went over MetaRoCE: MIB MiB out, at most 4 KiB a packet.
	sent=$(($(hw_counter mr0 tx_packets) - sent0))
	check "the clean round's data crossed mr0 ($sent packets sent)" test "$sent" -ge $((MIB * 256))
else
	server_round clean clean.bin
fi
check "barrier: clean round done" pair_barrier clean 600

lossy() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape $i "loss 1%" || return 1; done
}
check "1% random loss on each of the $LINKS fabric links" lossy
check "barrier: lossy wire on both sides" pair_barrier lossy
if [ "$MR_ROLE" = b ]; then
	client_round lossy lossy.bin
else
	server_round lossy lossy.bin
fi
check "barrier: lossy round done" pair_barrier lossy-done 600

# The packets went over the fabric, sprayed: most links carried a share.
fabric_check_spread "$LINKS"
check_eq "no timer armed for a past deadline" 0 "$(hw_counter mr0 timer_past_deadlines)"

if [ "$MR_ROLE" = a ]; then
	check "nfsd stopped" nfsd_down
else
	check "rmmod nfsv4 rpcrdma" modprobe -r nfsv4 rpcrdma
fi
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
