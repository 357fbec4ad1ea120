#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --links 8 --timeout 900
# needs: provider
# UCX (Debian's ucx-utils 1.13) over MetaRoCE, unmodified, through our
# provider: ucx_info lists the device with its rc_verbs and ud_verbs
# transports; ucx_perftest's UCT put, get and active-message tests run over
# rc_verbs (zero-copy put and get are RDMA WRITE and READ), its UCT
# active-message tests over ud_verbs, and its UCP tag, put and get tests over
# rc_verbs wired up by ud_verbs from addresses exchanged out of band; io_demo
# (UCP's tag API over rc_verbs, connected through rdma_cm) moves reads and
# writes with its data-integrity check on.  Across the 8-link ECMP fabric,
# clean, then with 1% random loss on every link in both directions.  Guest b
# serves, guest a connects.
# ud_verbs needs the UD receive completion's sl to say the packet's network
# header (the ABI's METAROCE_CQE_SL_*, as mlx5 reports it): UCX reads it to
# find the destination address in the GRH area and dropped every datagram
# before (its endpoints timed out, here and over rdma_rxe).
. "$(dirname "$0")/lib.sh"

use_provider

LINKS=8
check "peer reachable on the control wire" wait_for 20 ping -c 1 -W 1 "$MR_PEER"
check "peer endpoint reachable over the fabric" wait_for 20 ping -c 1 -W 1 "$MR_PEER_EP"
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "modprobe rdma_ucm" modprobe rdma_ucm
check "mr0 on fab0" rdma link add mr0 type metaroce netdev fab0
check "port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
check "GID of $MR_EP" wait_for 5 addr_gid_index mr0 "$MR_EP"

# UCX picks the GID by itself: RoCE v2 over IPv4 first.  Its own memory
# hooks are not needed for a test (and want a writable /proc/self/...).
export UCX_NET_DEVICES=mr0:1 UCX_WARN_UNUSED_ENV_VARS=n

info=$(ucx_info -d 2>&1)
check "ucx_info -d lists mr0:1" grep -q "Device: mr0:1" <<<"$info"
check "ucx_info -d: rc_verbs on mr0:1" \
	bash -c "grep -A3 'Transport: rc_verbs' | grep -q 'Device: mr0:1'" <<<"$info"
check "ucx_info -d: ud_verbs on mr0:1" \
	bash -c "grep -A3 'Transport: ud_verbs' | grep -q 'Device: mr0:1'" <<<"$info"
grep -E "Transport:|Device:|bandwidth|latency" <<<"$info" | head -n 20 | sed 's/^/#   /'

# perf NAME ARGS...: ucx_perftest server on b, client on a; the client's last lines logged.
perf() {
	local name=$1
	shift
	PAIR_TAIL=3 run_pair "$name" ucx_perftest -p 13337 -n 300 -w 20 "$@"
	if [ "$MR_ROLE" = a ]; then
		check "$name: the client printed its final numbers" \
			grep -qE "^Final:|^ *[0-9]+ +[0-9]" <<<"$RUN_OUT"
	fi
}

# io_demo: UCP over rc_verbs, connected through rdma_cm (the sockaddr transport) to
# the peer's fabric address; the server (b) runs until the client (a) is done.
io_demo_run() { # LABEL
	local name="io_demo $1 (reads and writes, data checked)" pid
	check "barrier: $name" pair_barrier "io-$1"
	if [ "$MR_ROLE" = b ]; then
		UCX_TLS=rc_verbs,self io_demo -p 13338 -q -d 1024:65536 >/tmp/io_demo.out 2>&1 &
		pid=$!
		check "barrier: $name done" pair_barrier "io-$1-done" 300
		kill "$pid" 2>/dev/null
		wait "$pid"
		check_eq "$name: the server ran until stopped (no abort)" 143 "$?"
		tail -n 4 /tmp/io_demo.out | sed 's/^/#   /'
		check "$name: the server found no data corruption" \
			bash -c "! grep -qi corruption /tmp/io_demo.out"
	else
		sleep 2
		UCX_TLS=rc_verbs,self client_connect 10 \
			timeout 240 io_demo -p 13338 -q -i 400 -o read,write -d 1024:65536 \
			-n 60 "$MR_PEER_EP"
		tail -n 6 <<<"$CLIENT_OUT" | sed 's/^/#   /'
		check_eq "$name: the client completes" 0 "$CLIENT_RC"
		check "barrier: $name done" pair_barrier "io-$1-done" 300
	fi
}

round() { # LABEL
	perf "rc_verbs put_bw zcopy $1" -d mr0:1 -x rc_verbs -t put_bw -D zcopy -s 65536
	perf "rc_verbs get zcopy $1" -d mr0:1 -x rc_verbs -t get -D zcopy -s 65536
	perf "rc_verbs am_bw bcopy $1" -d mr0:1 -x rc_verbs -t am_bw -D bcopy -s 4096
	perf "ud_verbs am_lat $1" -d mr0:1 -x ud_verbs -t am_lat
	perf "ud_verbs am_bw bcopy $1" -d mr0:1 -x ud_verbs -t am_bw -D bcopy -s 900
	# UCP: endpoints from worker addresses exchanged over ucx_perftest's socket.
	UCX_TLS=rc_verbs,ud_verbs perf "UCP tag_bw $1" -t tag_bw -s 65536
	UCX_TLS=rc_verbs,ud_verbs perf "UCP put_bw $1" -t ucp_put_bw -s 65536
	UCX_TLS=rc_verbs,ud_verbs perf "UCP get $1" -t ucp_get -s 65536
	io_demo_run "$1"
}

fabric_mark "$LINKS"
round "clean"
lossy_links() {
	local i
	for ((i = 1; i <= LINKS; i++)); do fabric_shape "$i" "loss 1%" || return 1; done
}
check "1% random loss on each of the $LINKS fabric links (our egress)" lossy_links
check "barrier: lossy" pair_barrier lossy
round "1% loss"
fabric_check_spread "$LINKS"
rdma statistic show link mr0/1 | tr ' ' '\n' | paste -d' ' - - | sed 's/^/# /'
check_eq "no user WQE errors" 0 "$(hw_counter mr0 user_wqe_errors)"
check_eq "no timer armed for a past deadline" 0 "$(hw_counter mr0 timer_past_deadlines)"
check "barrier: done" pair_barrier done
check "rdma link delete mr0" rdma link delete mr0
done_testing
