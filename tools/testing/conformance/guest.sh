#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# In a test guest (vm.sh): the DUT (metaroce.ko, mr0 on veth cd/v2 198.18.1.2) and the
# tester (mr_conformance in namespace ct on v1 198.18.1.1), then the suite's TAP and JUnit.
#   guest.sh [MUTANT_KO [GTEST_FILTER [FUZZ_ITERS [FUZZ_SEED]]]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
suite=$top/build/conformance/mr_conformance
mutant=${1:-}
filter=${2:-*}
# The receive-path fuzzer's packets and seed (FuzzTest; its own defaults when empty).
export CONF_FUZZ_ITERS=${3:-} CONF_FUZZ_SEED=${4:-}

if [ -n "$mutant" ]; then
	# The guest's module tree is a tmpfs overlay: the mutant replaces the module there.
	cp "$mutant" "/lib/modules/$(uname -r)/updates/metaroce.ko"
	echo "# device under test: mutant $mutant"
fi

ip netns add ct
ip netns add cd
ip link add v1 netns ct type veth peer name v2 netns cd
# The tester's addresses: 1 the shared peer, 3 a second one above the DUT, the rest for
# fresh handshakes (20-22, 24-26: connections of one test, 23: a stranger).
testers=(1 3 4 5 10 11 12 13 14 15 16 17 20 21 22 23 24 25 26)
for a in "${testers[@]}"; do
	ip -n ct addr add "198.18.1.$a/24" dev v1
done
ip -n cd addr add 198.18.1.2/24 dev v2
for ns in ct cd; do ip -n "$ns" link set lo up; done
ip -n ct link set v1 up
ip -n cd link set v2 up
# The DUT's neighbours, fixed: the kernel's address resolution (rdma_resolve_ip, which
# mr_dut uses as kernel ULPs do) waited out its whole 2 s timeout here for a neighbour
# it had to ask for, and the single-threaded tester answers no one meanwhile.
mac=$(ip -n ct -br link show v1 | awk '{print $3}')
for a in "${testers[@]}"; do
	ip -n cd neigh replace "198.18.1.$a" lladdr "$mac" dev v2 nud permanent
done
# The tester reads the DUT's packets from a raw socket, which takes a UDP GSO skb whole
# (the DUT sends a path's burst as one): the veth cuts them, as a NIC without UDP
# segmentation offload does.
ip netns exec cd ethtool -K v2 tx-udp-segmentation off >/dev/null
modprobe metaroce
ip netns exec cd rdma link add mr0 type metaroce netdev v2
insmod "$here/dut/mr_dut.ko" ibdev=mr0

# `ip netns exec` remounts /sys: the tester reaches the control file through /run.
mkdir -p /run/mr_debugfs
mount -t debugfs debugfs /run/mr_debugfs
export CONF_DUT_CTL=/run/mr_debugfs/mr_dut/ctl
# And the DUT's counters through a sysfs of this namespace (`rdma statistic` takes 150 ms).
mkdir -p /run/mr_sysfs
mount -t sysfs sysfs /run/mr_sysfs
export CONF_DUT_SYSFS=/run/mr_sysfs

rc=0
ip netns exec ct "$suite" --gtest_filter="$filter" \
	--gtest_output=xml:/tmp/conformance.xml || rc=$?
echo "=== JUNIT-BEGIN"
cat /tmp/conformance.xml 2>/dev/null || true
echo "=== JUNIT-END"

rmmod mr_dut
ip netns exec cd rdma link delete mr0
exit "$rc"
