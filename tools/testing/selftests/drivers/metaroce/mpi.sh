#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 900
# needs: provider
# Open MPI (Debian's openmpi-bin 4.1) over MetaRoCE, unmodified: mpirun on
# guest a starts two ranks on each guest (the remote daemon through ssh to a
# dropbear server on guest b, over the control wire) and runs mpi_check.c,
# MPI_Allreduce and MPI_Alltoall of patterns every rank verifies, eager and
# rendezvous sizes.  Open MPI is told to use the device two ways: through
# its UCX PML (Open MPI's own choice when UCX finds a device; UCP wires RC
# endpoints up over ud_verbs), and through its OFI MTL (pml cm, mtl ofi) and
# libfabric's verbs provider under ofi_rxm, which connects RC QPs through
# rdma_cm.  The two ranks of one guest reach each other over the device too
# (loopback, [MR-CONN-13]).  Not through the openib BTL: Debian's build has
# only its udcm connection method, which is for InfiniBand.
# libfabric as it comes: with its default of 256 peers ofi_rxm asks for a CQ
# of more than 65,535 entries (the device's max_cqe was that once; it is
# 4,194,303 now, its ring memory charged to the process).  Across the 8-link
# ECMP fabric, clean, then
# with 1% random loss on every link in both directions.
. "$(dirname "$0")/lib.sh"

use_provider

LINKS=8
here=$(cd "$(dirname "$0")" && pwd)
check "peer reachable on the control wire" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
check "GID of $MR_EP" wait_for 5 addr_gid_index mr0 "$MR_EP"
check "build mpi_check with mpicc" mpicc -O2 -Wall -Wextra -Werror -o /tmp/mpi_check \
	"$here/mpi_check.c"

# The launcher's way in: guest a's key, told to guest b, which runs dropbear.
if [ "$MR_ROLE" = a ]; then
	check "an ssh key for mpirun" ssh-keygen -q -t ed25519 -N '' -f /tmp/mpi_key
	check "tell guest b the key" pair_tell key "$(cat /tmp/mpi_key.pub)"
else
	key=$(pair_hear key)
	mkdir -p -m 700 /root/.ssh /etc/dropbear
	echo "$key" >/root/.ssh/authorized_keys
	chmod 600 /root/.ssh/authorized_keys
	check "guest a's key arrived" grep -q ssh-ed25519 /root/.ssh/authorized_keys
	# The daemon must not hold check's output pipe open.
	start_dropbear() {
		dropbear -R -E -p "${MR_ADDR%/*}:22" -P /tmp/dropbear.pid \
			</dev/null >/tmp/dropbear.log 2>&1 && wait_for 10 test -s /tmp/dropbear.pid
	}
	check "dropbear listens on the control wire" start_dropbear
fi
check "barrier: ssh ready" pair_barrier ssh

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi_run() { # ucx|ofi
	local via
	if [ "$1" = ucx ]; then
		via=(--mca pml ucx -x UCX_NET_DEVICES=mr0:1 -x UCX_TLS=rc_verbs,ud_verbs,self
		     -x UCX_WARN_UNUSED_ENV_VARS=n)
	else
		via=(--mca pml cm --mca mtl ofi -x FI_PROVIDER="verbs;ofi_rxm"
		     -x FI_VERBS_IFACE=fab0)
	fi
	timeout 600 mpirun -np 4 --host "${MR_ADDR%/*}:2,$MR_PEER:2" \
		--mca plm_rsh_agent ssh \
		--mca plm_rsh_args "-i /tmp/mpi_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" \
		--mca oob_tcp_if_include eth0 --mca btl self "${via[@]}" \
		-x RDMAV_DRIVERS /tmp/mpi_check 3
}

round() { # LABEL
	local out rc via
	for via in ucx ofi; do
		if [ "$MR_ROLE" = a ]; then
			out=$(mpi_run "$via" 2>&1)
			rc=$?
			tail -n 8 <<<"$out" | sed 's/^/#   /'
			check_eq "mpirun $1, $via: 4 ranks over mr0 end well" 0 "$rc"
			check "mpirun $1, $via: every element verified" \
				grep -q "every element verified" <<<"$out"
		fi
		check "barrier: $1 $via done" pair_barrier "mpi-$1-$via" 700
	done
}

fabric_mark "$LINKS"
sent0=$(hw_counter mr0 tx_packets)
round clean
sent=$(($(hw_counter mr0 tx_packets) - sent0))
check "the ranks' data crossed mr0 ($sent packets sent)" test "$sent" -ge 1000
lossy_links() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i" "loss 1%" || return 1; done
}
check "1% random loss on each of the $LINKS fabric links (our egress)" lossy_links
check "barrier: lossy" pair_barrier lossy
round "1% loss"
fabric_check_spread "$LINKS"
check_eq "no user WQE errors" 0 "$(hw_counter mr0 user_wqe_errors)"
check_eq "no timer armed for a past deadline" 0 "$(hw_counter mr0 timer_past_deadlines)"
[ "$MR_ROLE" = b ] && kill "$(cat /tmp/dropbear.pid)"
check "rdma link delete mr0" rdma link delete mr0
done_testing
