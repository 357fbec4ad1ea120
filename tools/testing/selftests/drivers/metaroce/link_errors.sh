#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdma link add refuses what it cannot serve, with a meaningful errno and no side
# effects: unknown netdev, duplicate name, second device on a netdev, loopback,
# non-Ethernet netdevs.
. "$(dirname "$0")/lib.sh"

ndevs() { ls /sys/class/infiniband 2>/dev/null | wc -l; }
# After a refused request: nothing was created and no socket was opened.
no_side_effects() { # expected-device-count
	[ "$(ndevs)" = "$1" ] && udp_port_closed "" && ! ibdev_exists bad0
}

check "modprobe metaroce" modprobe metaroce
ip link add x1 type veth peer name x2
ip link set x1 up
ip link set x2 up

check_fails "unknown netdev: ENODEV" "No such device" \
	rdma link add bad0 type metaroce netdev nosuchdev
check "  ...no side effects" no_side_effects 0

check_fails "loopback: EOPNOTSUPP" "Operation not supported" \
	rdma link add bad0 type metaroce netdev lo
check "  ...no side effects" no_side_effects 0

modprobe tun
ip tuntap add dev tun0 mode tun
ip link set tun0 up
check_fails "non-Ethernet (tun): EOPNOTSUPP" "Operation not supported" \
	rdma link add bad0 type metaroce netdev tun0
check "  ...no side effects" no_side_effects 0

check "a good device" rdma link add mr0 type metaroce netdev x1
check_fails "duplicate name: EEXIST" "File exists" \
	rdma link add mr0 type metaroce netdev x2
check "  ...the first device is untouched" sh -c \
	'rdma link show mr0/1 | grep -q "netdev x1" && [ "$(ls /sys/class/infiniband | wc -l)" = 1 ]'
check_fails "second device on the same netdev: EBUSY" "Device or resource busy" \
	rdma link add bad0 type metaroce netdev x1
check "  ...no side effects" sh -c '[ "$(ls /sys/class/infiniband | wc -l)" = 1 ] && [ ! -e /sys/class/infiniband/bad0 ]'
check_fails "unknown link type: rejected" "" rdma link add bad0 type nosuchtype netdev x2
check "UDP port still open for mr0" udp_port_open ""

# The kernel said why in its log, not with a warning.
check "dmesg names the refused netdevs" sh -c 'dmesg | grep -q "lo is not an Ethernet device" && dmesg | grep -q "x1 already carries MetaRoCE device mr0"'

check "rdma link delete mr0" rdma link delete mr0
check_fails "deleting it twice: ENODEV" "" rdma link delete mr0
check "rmmod" rmmod metaroce
done_testing
