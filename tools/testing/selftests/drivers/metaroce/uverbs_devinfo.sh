#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Userspace Verbs sees a MetaRoCE device honestly: the provider (make provider)
# matches it by driver id under any name, ibv_devinfo shows what the kernel
# reports, PDs and user MRs work, CQs and RC and UD QPs are created (what is not
# there yet says EOPNOTSUPP), and removing
# the device from under a process that holds it neither hangs nor leaks pins.
# needs: provider
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
use_provider
ok "rdma-core provider built"

# Constants the kernel reports, read from where they are defined.
hdr_const() { # file NAME: a literal number, or the test stops (a 0 would pass checks it must not)
	local v
	v=$(awk -v n="$2" '$1 == "#define" && $2 == n { print $3; exit }' "$top/$1")
	[[ $v =~ ^(0x[0-9a-fA-F]+|[0-9]+)$ ]] || { echo "FAIL: $2 in $1 is not a literal number: '$v'" >&2; exit 1; }
	printf '%d' "$v"
}
kconst() { hdr_const drivers/metaroce/metaroce.h "$1"; }

# field NAME: one field of "ibv_devinfo -v" output on stdin ("4096 (5)", "Ethernet", ...).
field() {
	awk -v f="$1" '
		{ k = $0; sub(/:.*/, "", k); gsub(/^[ \t]+|[ \t]+$/, "", k) }
		k == f { v = substr($0, index($0, ":") + 1); gsub(/^[ \t]+|[ \t]+$/, "", v); print v; exit }'
}
# devinfo_is DEV FIELD VALUE, asking the device afresh (each run costs seconds under TCG).
devinfo_is() { [ "$(ibv_devinfo -v -d "$1" 2>/dev/null | field "$2")" = "$3" ]; }

bin=/tmp/uverbs_basic
check "build the test program" gcc -O2 -Wall -Wextra -Werror -o "$bin" "$here/uverbs_basic.c" -libverbs

ip link add t1 type veth peer name t2
ip link set t1 up
ip link set t2 up
ip addr add 198.18.3.1/24 dev t1

check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "rdma link add mr0 on t1" rdma link add mr0 type metaroce netdev t1
# A name without our prefix: the provider must match by driver id, not name.
check "rdma link add hca_west on t2" rdma link add hca_west type metaroce netdev t2
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"

# -- the uverbs character device
uverbs_of() { grep -lx "$1" /sys/class/infiniband_verbs/uverbs*/ibdev 2>/dev/null | head -n1; }
check "mr0 has a uverbs device" wait_for 5 sh -c "grep -qx mr0 /sys/class/infiniband_verbs/uverbs*/ibdev"
uv=$(basename "$(dirname "$(uverbs_of mr0)")")
check "/dev/infiniband/$uv is a character device" test -c "/dev/infiniband/$uv"
check_eq "uverbs ABI version is ours" "$(hdr_const include/uapi/rdma/metaroce-abi.h METAROCE_UVERBS_ABI_VERSION)" \
	"$(cat "/sys/class/infiniband_verbs/$uv/abi_version")"

# -- ibv_devices: both devices under the names the user chose
devices=$(ibv_devices 2>&1)
echo "$devices" | sed 's/^/# /'
for d in mr0 hca_west; do
	guid=$(tr -d : <"/sys/class/infiniband/$d/node_guid")
	check "ibv_devices lists $d with its node GUID" grep -qE "^[[:space:]]*${d}[[:space:]]+${guid}\$" <<<"$devices"
done
check "no warnings from libibverbs" sh -c '! grep -qi warning' <<<"$devices"

# -- ibv_devinfo -v: what query_device and query_port report
check "GID table holds 198.18.3.1" wait_for 5 \
	grep -qx "0000:0000:0000:0000:0000:ffff:c612:0301" /sys/class/infiniband/mr0/ports/1/gids/*
info=$(ibv_devinfo -v -d mr0 2>&1)
echo "$info" | sed 's/^/# /'
devinfo() { field "$2" <<<"$info"; }
check_eq "transport" "InfiniBand (0)" "$(devinfo mr0 transport)"
check_eq "link_layer" "Ethernet" "$(devinfo mr0 link_layer)"
check_eq "port state" "PORT_ACTIVE (4)" "$(devinfo mr0 state)"
check_eq "phys_state" "LINK_UP (5)" "$(devinfo mr0 phys_state)"
check_eq "node_guid as in sysfs" "$(cat /sys/class/infiniband/mr0/node_guid)" "$(devinfo mr0 node_guid)"
check_eq "fw_ver as in sysfs" "$(cat /sys/class/infiniband/mr0/fw_ver)" "$(devinfo mr0 fw_ver)"
check_eq "vendor_id" "0xffffff" "$(devinfo mr0 vendor_id)"
check_eq "vendor_part_id is the driver id" \
	"$(hdr_const include/uapi/rdma/metaroce-abi.h METAROCE_DRIVER_ID)" "$(devinfo mr0 vendor_part_id)"
for pair in max_qp:METAROCE_MAX_QP max_qp_wr:METAROCE_MAX_QP_WR max_sge:METAROCE_MAX_SGE \
	max_cq:METAROCE_MAX_CQ max_cqe:METAROCE_MAX_CQE max_mr:METAROCE_MAX_MR \
	max_pd:METAROCE_MAX_PD max_ah:METAROCE_MAX_AH max_mw:METAROCE_MAX_MR; do
	check_eq "${pair%%:*} = ${pair#*:}" "$(kconst "${pair#*:}")" "$(devinfo mr0 "${pair%%:*}")"
done
check_eq "max_mr_size" "0xffffffffffffffff" "$(devinfo mr0 max_mr_size)"
# The kernel transport carries Reads and atomics, and fast registration.
check_eq "atomic_cap" "ATOMIC_HCA (1)" "$(devinfo mr0 atomic_cap)"
check_eq "max_qp_rd_atom" 64 "$(devinfo mr0 max_qp_rd_atom)"
check_eq "max_qp_init_rd_atom" 64 "$(devinfo mr0 max_qp_init_rd_atom)"
# What the device does, and nothing else (ib_user_verbs.h's IB_UVERBS_DEVICE_*):
# CURR_QP_STATE_MOD 0x80 (uverbs_basic datapath), PORT_ACTIVE_EVENT 0x400 (below),
# SYS_IMAGE_GUID 0x800, RC_RNR_NAK_GEN 0x1000 (uverbs_srq), MEM_MGT_EXTENSIONS
# 0x200000 (FRWR: nvme_of, iser, srp, nfs_rdma), MEM_WINDOW 0x20000 and
# MEM_WINDOW_TYPE_2B 0x1000000 (uverbs_mw), SRQ_RESIZE 0x2000 (uverbs_srq).
# Not checksums, XRC, bad P_Key/Q_Key counters (no PMA), N_NOTIFY_CQ.
check_eq "device_cap_flags: exactly what the device does" "0x01223c80" \
	"$(devinfo mr0 device_cap_flags)"
check_eq "sys_image_guid is the node GUID" "$(devinfo mr0 node_guid)" "$(devinfo mr0 sys_image_guid)"
check_eq "max_mtu" "4096 (5)" "$(devinfo mr0 max_mtu)"
check_eq "gid_tbl_len" "$(kconst METAROCE_GID_TABLE_LEN)" "$(devinfo mr0 gid_tbl_len)"
check "GID of 198.18.3.1 (IPv4-mapped, RoCE v2)" \
	grep -qE 'GID\[ *[0-9]+\]:[[:space:]]+::ffff:198\.18\.3\.1, RoCE v2$' <<<"$info"

# -- active_mtu follows the netdev: the largest IB MTU that fits after our overhead
overhead=$(kconst METAROCE_MAX_OVERHEAD) || exit 1
for pair in 1500:"1024 (3)" 9000:"4096 (5)" $((4096 + overhead - 1)):"2048 (4)" \
	$((4096 + overhead)):"4096 (5)" 1500:"1024 (3)"; do
	mtu=${pair%%:*}
	ip link set t1 mtu "$mtu"
	check "netdev MTU $mtu -> active_mtu ${pair#*:}" wait_for 5 devinfo_is mr0 active_mtu "${pair#*:}"
done

# -- port state follows the netdev, and a process holding the device hears of
# it (IBV_DEVICE_PORT_ACTIVE_EVENT)
# hold DEV OUT: a holder in the background (pid in HOLDER), ready when it says so.
hold() {
	"$bin" "$1" hold >"$2" 2>&1 &
	HOLDER=$!
	check "a process holds $1 (a PD and a pinned 1 MiB MR)" wait_for 10 grep -q '^holding' "$2"
}
# holder_done OUT: waits up to 10 s for the holder; HOLD_RESULT says how it ended.
holder_done() {
	local i rc=0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$HOLDER" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$HOLDER" 2>/dev/null; then
		kill "$HOLDER"
		HOLD_RESULT="still running"
	else
		wait "$HOLDER" || rc=$?
		HOLD_RESULT="exit=$rc $(grep '^released' "$1")"
	fi
	sed 's/^/#   /' "$1"
}

hold mr0 /tmp/hold-mr0.out
ip link set t1 down
check "netdev down -> PORT_DOWN" wait_for 5 devinfo_is mr0 state "PORT_DOWN (1)"
check "the process got IBV_EVENT_PORT_ERR" wait_for 5 grep -qx "event port error" /tmp/hold-mr0.out
ip link set t1 up
check "netdev up -> PORT_ACTIVE" wait_for 5 devinfo_is mr0 state "PORT_ACTIVE (4)"
check "the process got IBV_EVENT_PORT_ACTIVE" wait_for 5 grep -qx "event port active" /tmp/hold-mr0.out

# -- the provider's verbs
check "open mr0, query device and port" "$bin" mr0 open
check "open hca_west (matched by driver id)" "$bin" hca_west open
check "allocate and free a PD" "$bin" mr0 pd
check "register and deregister a user buffer" "$bin" mr0 mr
check "writable MR over read-only memory is refused" "$bin" mr0 mr-readonly
check "an MR with MW_BIND access registers" "$bin" mr0 mr-mwbind
# Ring memory is charged like pinned MR pages (VmPin, RLIMIT_MEMLOCK): a CQ of
# 1,000,000 entries (a 48 MiB ring) counts while it lives, and a process
# without CAP_IPC_LOCK cannot make one under an 8 MiB limit.
out=$("$bin" mr0 bigcq 2>&1)
check "a 1,000,000-entry CQ's ring is in VmPin while it lives, not after ($out)" \
	bash -c '[[ $1 =~ grew=([0-9]+)\ left=0$ ]] && [ "${BASH_REMATCH[1]}" -ge 49152 ]' _ "$out"
limited=(prlimit --memlock=8388608:8388608 setpriv --bounding-set=-ipc_lock)
out=$("${limited[@]}" "$bin" mr0 bigcq 2>&1)
check_eq "it is refused without CAP_IPC_LOCK under an 8 MiB RLIMIT_MEMLOCK ($out)" 3 "$?"
check "small rings still fit under that limit (datapath)" "${limited[@]}" "$bin" mr0 datapath
check "CQ, SRQ, RC and UD QPs on mmapped rings; a wrong current state and a CQ_EX with timestamps refused" \
	"$bin" mr0 datapath

# -- the device goes away under a process that holds it (mr0's holder, from above)
check "its pages are pinned" sh -c \
	'p=$(sed -n "s/^holding pinned=//p" /tmp/hold-mr0.out); [ "${p:-0}" -ge 1024 ]'
check "rdma link delete mr0 does not wait for the process" timeout 20 rdma link delete mr0
check "mr0 gone" wait_for 5 ibdev_gone mr0
holder_done /tmp/hold-mr0.out
check_eq "the process got DEVICE_FATAL, its pages were unpinned" "exit=0 released pinned=0" "$HOLD_RESULT"

hold hca_west /tmp/hold-west.out
check "rmmod metaroce does not wait for the process" timeout 30 rmmod metaroce
holder_done /tmp/hold-west.out
check_eq "the process got DEVICE_FATAL, its pages were unpinned" "exit=0 released pinned=0" "$HOLD_RESULT"
check "no uverbs device left" sh -c '! ls /sys/class/infiniband_verbs/ | grep -q uverbs'

done_testing
