#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --timeout 600
# needs: provider
# Doorbell efficiency: a streaming ib_write_bw between two guests, its client
# traced with strace from start to end (setup included).  Posting writes the
# SQ ring and rings the doorbell (a post_send command without WRs) only when
# the kernel is not already draining the ring, so the client makes well under
# one system call per posted WQE.  Prints "syscalls per WQE: X" and the
# doorbells among them.
. "$(dirname "$0")/lib.sh"

use_provider
iters=5000

check "peer reachable on the wire" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "mr0 on eth0" rdma link add mr0 type metaroce netdev eth0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
check "GID of ${MR_ADDR%/*}" wait_for 5 addr_gid_index mr0 "${MR_ADDR%/*}"
gid=$(addr_gid_index mr0 "${MR_ADDR%/*}")
bw=(ib_write_bw -d mr0 -x "$gid" -F -n "$iters" -s 1024)

check "barrier: ready" pair_barrier ready
if [ "$MR_ROLE" = b ]; then
	out=$(timeout 300 "${bw[@]}" 2>&1)
	check_eq "ib_write_bw server completes" 0 $?
else
	sleep 1
	client_connect 20 timeout 300 strace -f -qq -y -o /tmp/trace "${bw[@]}" "$MR_PEER"
	out=$CLIENT_OUT rc=$CLIENT_RC
	sed 's/^/#   /' <<<"$out" | tail -n 4
	check_eq "ib_write_bw client completes under strace" 0 "$rc"
	# One line per system call: "<... resumed>" halves and signal or exit
	# notes are not calls of their own.
	calls=$(grep -cvE 'resumed>|^[0-9]+ +(\+\+\+|---)' /tmp/trace)
	doorbells=$(grep -cE '(write|ioctl)\([0-9]+</dev/infiniband/uverbs[0-9]+>' /tmp/trace)
	per=$(awk -v c="$calls" -v n="$iters" 'BEGIN { printf "%.3f", c / n }')
	log "system calls of the whole client run: $calls for $iters WQEs"
	log "uverbs commands (write or ioctl: doorbells and the setup): $doorbells"
	echo "# syscalls per WQE: $per"
	check "syscalls per WQE well under 1 (< 0.5): $per" \
		awk -v p="$per" 'BEGIN { exit !(p < 0.5) }'
fi
check "barrier: done" pair_barrier done
check "rdma link delete mr0" rdma link delete mr0
done_testing
