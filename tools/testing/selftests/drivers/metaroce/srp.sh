#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 600 --mem 1024
# The SCSI RDMA Protocol over MetaRoCE, unmodified: guest a exports a file as
# a LUN with LIO's ib_srpt (configfs, listening through rdma_cm on port 5000),
# guest b logs in with ib_srp's add_target (dest=ADDRESS:PORT, as RoCE needs),
# writes random data through the 8-link ECMP fabric, reads it back with
# O_DIRECT and compares; then again, logged in anew, with 1% random loss on
# every link in both directions.  Every byte is checked, and dmesg must stay
# clean.
. "$(dirname "$0")/lib.sh"

MIB=16
LINKS=8
SRP_PORT=5000
CFS=/sys/kernel/config/target

check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

# ib_srpt names a port by the interface id of its GID 0 ("xxxx:xxxx:xxxx:xxxx").
srpt_port_name() {
	cut -d: -f5-8 /sys/class/infiniband/mr0/ports/1/gids/0
}

# The target: a file backstore as LUN 0 of mr0's port, for the initiator at $1.
srpt_up() { # INITIATOR_ADDRESS MIB
	local t b=$CFS/core/fileio_0/srp0 acl
	modprobe -a target_core_mod target_core_file ib_srpt || return 1
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return 1
	truncate -s "$2M" /tmp/srp-backing.img || return 1
	mkdir -p "$b" && echo "fd_dev_name=/tmp/srp-backing.img,fd_dev_size=$(($2 << 20))" \
		>"$b/control" && echo 1 >"$b/enable" || return 1
	mkdir -p "$CFS/srpt" && echo $SRP_PORT >"$CFS/srpt/discovery_auth/rdma_cm_port" || return 1
	t=$CFS/srpt/$(srpt_port_name)/tpgt_1
	mkdir -p "$t/lun/lun_0" && ln -s "$b" "$t/lun/lun_0/srp0" || return 1
	# ib_srpt names the session of an rdma_cm login by its cm_id's source
	# address, which on the target's side is the target's own (6.12: "Rejected
	# login for initiator <target address>"); an ACL for each, so the test holds
	# whichever address a kernel uses.
	for acl in "$t/acls/$1" "$t/acls/$MR_EP"; do
		mkdir -p "$acl/lun_0" && ln -s "$t/lun/lun_0" "$acl/lun_0/lun" || return 1
	done
	echo 1 >"$t/enable"
}

srpt_down() {
	local t
	t=$CFS/srpt/$(srpt_port_name)/tpgt_1
	echo 0 >"$t/enable" || return 1
	for acl in "$t/acls/$1" "$t/acls/$MR_EP"; do
		rm "$acl/lun_0/lun" && rmdir "$acl/lun_0" "$acl" || return 1
	done
	rm "$t/lun/lun_0/srp0" && rmdir "$t/lun/lun_0" "$t" "$(dirname "$t")" &&
		rmdir "$CFS/srpt" && echo 0 >"$CFS/core/fileio_0/srp0/enable" 2>/dev/null
	rmdir "$CFS/core/fileio_0/srp0" "$CFS/core/fileio_0" &&
		modprobe -r ib_srpt target_core_file
}

# The SCSI disk ib_srp made for our target, if logged in.
srp_disk() {
	local h d
	for h in /sys/class/scsi_host/host*; do
		[ "$(cat "$h/proc_name" 2>/dev/null)" = ib_srp ] || continue
		for d in "$h"/device/target*/*/block/*; do
			[ -e "$d" ] && { echo "/dev/$(basename "$d")"; return 0; }
		done
	done
	return 1
}

srp_login() { # TARGET_GUID
	echo "id_ext=$1,ioc_guid=$1,dest=$MR_PEER_EP:$SRP_PORT" \
		>/sys/class/infiniband_srp/srp-mr0-1/add_target
}

srp_logout() {
	local r
	for r in /sys/class/srp_remote_ports/*/delete; do
		[ -e "$r" ] && echo 1 >"$r"
	done
	wait_for 30 bash -c '! ls /sys/class/srp_remote_ports/* >/dev/null 2>&1'
}

initiator_round() { # LABEL TARGET_GUID
	local label=$1 dev t0 t1
	check "$label: login (add_target dest=$MR_PEER_EP:$SRP_PORT)" srp_login "$2"
	check "$label: the LUN's disk appears" wait_for 30 srp_disk
	if ! dev=$(srp_disk); then
		dev=/dev/null
		log "$label: SCSI hosts: $(grep -H . /sys/class/scsi_host/*/proc_name 2>&1 | tr '\n' ' ')"
		log "$label: /proc/scsi/scsi: $(tr -s ' \n' ' ' </proc/scsi/scsi)"
		dmesg | grep -iE "scsi|srp" | tail -n 8 | sed 's/^/#   dmesg: /'
	fi
	log "$label: LUN 0 is $dev"
	head -c $((MIB << 20)) /dev/urandom >/tmp/srp-data
	t0=$(date +%s%N)
	check "$label: write $MIB MiB (O_DIRECT)" dd if=/tmp/srp-data of="$dev" bs=1M \
		seek=1 oflag=direct conv=fsync status=none
	t1=$(date +%s%N)
	check "$label: read back $MIB MiB (O_DIRECT)" dd if="$dev" of=/tmp/srp-back bs=1M \
		skip=1 count="$MIB" iflag=direct status=none
	check_eq "$label: data read back is the data written" \
		"$(sha256sum </tmp/srp-data)" "$(sha256sum </tmp/srp-back)"
	log "$label: write $MIB MiB took $(((t1 - t0) / 1000000)) ms"
	check "$label: logout (the remote port deleted)" srp_logout
	check "$label: the disk is gone" wait_for 30 bash -c "! srp_disk"
	rm -f /tmp/srp-data /tmp/srp-back
	log "$label: counters: $(rdma statistic show link mr0/1 2>&1 | tr '\n' ' ')"
}
export -f srp_disk

fabric_mark "$LINKS"
if [ "$MR_ROLE" = a ]; then
	check "LIO ib_srpt target on $(srpt_port_name), rdma_cm port $SRP_PORT" \
		srpt_up "$MR_PEER_EP" $((MIB * 2))
	guid=$(tr -d : </sys/class/infiniband/mr0/node_guid)
	check "tell the initiator the target's GUID" pair_tell guid "$guid"
else
	check "modprobe ib_srp sd_mod" modprobe -a ib_srp sd_mod
	guid=$(pair_hear guid)
	log "target GUID $guid"
fi
check "barrier: target ready" pair_barrier ready
if [ "$MR_ROLE" = b ]; then
	sent0=$(hw_counter mr0 tx_packets)
	initiator_round clean "$guid"
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
	initiator_round "1% loss" "$guid"
fi
check "barrier: lossy round done" pair_barrier lossy-done 600

fabric_check_spread "$LINKS"
check_eq "no timer armed for a past deadline" 0 "$(hw_counter mr0 timer_past_deadlines)"

if [ "$MR_ROLE" = a ]; then
	check "target torn down" srpt_down "$MR_PEER_EP"
else
	check "rmmod ib_srp" modprobe -r ib_srp
fi
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
