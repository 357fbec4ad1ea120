#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The demo's guest side: MetaRoCE across an 8-link ECMP fabric and rdma_rxe on a
# veth pair, the same kernel Verbs Write workload (mr_ktraffic, every byte
# checked) at 0% and 1% random loss, printed side by side.
. "$(dirname "$0")/../selftests/drivers/metaroce/lib.sh"

ko=$MR_TOP/tools/testing/selftests/drivers/metaroce/ktraffic/mr_ktraffic.ko
say() { echo "demo: $*"; }

# run DEV_A DEV_B: one Write run, prints MB/s (or FAIL).
run() {
	local mark="demo-$RANDOM$RANDOM" line
	echo "$mark" >/dev/kmsg
	insmod "$ko" dev_a="$1" dev_b="$2" ops=write size=65536 count=200 depth=16 \
		timeout_ms=120000 >/dev/null 2>&1 && rmmod mr_ktraffic
	line=$(dmesg | sed -n "/$mark/,\$p" | grep -o 'mr_ktraffic: write .*' | tail -n1)
	case "$line" in
	*PASS) sed 's/.*MBps=\([0-9.]*\) PASS/\1/' <<<"$line" ;;
	*) echo "FAIL" ;;
	esac
}
set_loss() { # percent
	local i r
	for ((i = 1; i <= 8; i++)); do
		for r in r1 r2; do ip netns exec "$r" tc qdisc change dev "p$i" root netem loss "$1%"; done
	done
	tc qdisc change dev x1 root netem loss "$1%"
	tc qdisc change dev x2 root netem loss "$1%"
}

say "building topologies: MetaRoCE h1 - r1 =(8 links, layer-4 ECMP)= r2 - h2; rxe on a veth pair"
topo_ecmp 8 "loss 0%"
modprobe metaroce && modprobe rdma_rxe || exit 1
ip netns exec h1 rdma link add mr0 type metaroce netdev e1 || exit 1
ip netns exec h2 rdma link add mr1 type metaroce netdev e2 || exit 1
ip link add x1 type veth peer name x2
for x in x1 x2; do sysctl -qw "net.ipv4.conf.$x.accept_local=1" "net.ipv4.conf.$x.rp_filter=0"; done
sysctl -qw net.ipv4.conf.all.rp_filter=0
ip addr add 198.18.3.1/24 dev x1
ip addr add 198.18.3.2/24 dev x2
ip link set x1 up
ip link set x2 up
tc qdisc add dev x1 root netem loss 0%
tc qdisc add dev x2 root netem loss 0%
rdma link add rxe0 type rxe netdev x1 || exit 1
rdma link add rxe1 type rxe netdev x2 || exit 1
wait_for 10 grep -qx 0000:0000:0000:0000:0000:ffff:c612:0301 /sys/class/infiniband/rxe0/ports/1/gids/1
wait_for 10 grep -qx 0000:0000:0000:0000:0000:ffff:c612:0101 /sys/class/infiniband/mr0/ports/1/gids/1
rdma link show | sed 's/^/demo:   /'

declare -A r
for loss in 0 1; do
	set_loss "$loss"
	say "loss $loss%: MetaRoCE Write 200 x 64 KiB ..."
	r[mr,$loss]=$(run mr0 mr1)
	say "loss $loss%: rxe Write 200 x 64 KiB ..."
	r[rxe,$loss]=$(run rxe0 rxe1)
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else print "-" }'; }
echo
echo "| transport (kernel Verbs Write, 64 KiB) | 0% loss MB/s | 1% loss MB/s | 1% / 0% |"
echo "|---|---|---|---|"
echo "| MetaRoCE, 8 ECMP links | ${r[mr,0]} | ${r[mr,1]} | $(ratio "${r[mr,0]}" "${r[mr,1]}") |"
echo "| rdma_rxe (RoCEv2, go-back-N), veth | ${r[rxe,0]} | ${r[rxe,1]} | $(ratio "${r[rxe,0]}" "${r[rxe,1]}") |"
echo
say "every byte of every run was verified by mr_ktraffic; TCG-emulated guest: compare ratios, not absolute MB/s"
say "not like for like: rxe only runs in init_net, so it has a direct veth; MetaRoCE crosses two routers"
say "and 8 netem links (the benchmark suite, make bench, is still to come)"
rdma statistic show link mr0/1 | sed 's/^/demo:   /'
rdma link delete mr0; rdma link delete mr1; rdma link delete rxe0; rdma link delete rxe1
[[ "${r[mr,0]}${r[mr,1]}" != *FAIL* ]]
