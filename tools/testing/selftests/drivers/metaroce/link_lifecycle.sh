#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A device's life: rdma link add/delete, port following the netdev, netdev
# deletion, namespace moves, links inside a namespace, rmmod with devices.
. "$(dirname "$0")/lib.sh"

topo_veth_pair

check "modprobe metaroce" modprobe metaroce

# -- add in a non-initial namespace; the device is visible everywhere (shared mode)
check "rdma link add mr0 on h1/v1" ip netns exec h1 rdma link add mr0 type metaroce netdev v1
check "device in /sys/class/infiniband" ibdev_exists mr0
check "rdma link show (in h1) names the netdev" \
	sh -c 'ip netns exec h1 rdma link show mr0/1 | grep -q "netdev v1"'
check "rdma dev show lists mr0" sh -c 'rdma dev show mr0 | grep -q "node_type ca"'
check_eq "node GUID derived from the MAC" \
	"$(mac_to_guid "$(ip netns exec h1 cat /sys/class/net/v1/address)")" \
	"$(cat /sys/class/infiniband/mr0/node_guid)"
check "UDP port $MR_UDP_PORT open in h1" udp_port_open h1
check "UDP port not opened in h2" udp_port_closed h2
check "UDP port not opened in init_net" udp_port_closed ""
check "port ACTIVE while v1 is up" wait_for 5 port_is mr0 "4: ACTIVE"
check "GID table holds the IPv4-mapped address" wait_for 5 \
	grep -qx "0000:0000:0000:0000:0000:ffff:c612:0101" /sys/class/infiniband/mr0/ports/1/gids/*
check "GID type is RoCE v2" sh -c 'grep -l "RoCE v2" /sys/class/infiniband/mr0/ports/1/gid_attrs/types/* | grep -q .'

# -- port follows the netdev
ip -n h1 link set v1 down
check "port DOWN when v1 goes down" wait_for 5 port_is mr0 "1: DOWN"
ip -n h1 link set v1 up
check "port ACTIVE again when v1 comes up" wait_for 5 port_is mr0 "4: ACTIVE"
ip -n h2 link set v2 down
check "port DOWN when the peer drops carrier" wait_for 5 port_is mr0 "1: DOWN"
ip -n h2 link set v2 up
check "port ACTIVE when carrier returns" wait_for 5 port_is mr0 "4: ACTIVE"

# -- rdma link delete
check "rdma link delete mr0" rdma link delete mr0
check "device gone after delete" wait_for 5 ibdev_gone mr0
check "UDP port closed with the last device of h1" wait_for 5 udp_port_closed h1
check "the name can be used again" ip netns exec h1 rdma link add mr0 type metaroce netdev v1
check "a second device on another netdev" ip netns exec h2 rdma link add mr1 type metaroce netdev v2
check "both devices listed" sh -c '[ "$(rdma link show | grep -cE "^link mr[01]/1 ")" = 2 ]'

# -- moving the netdev to another namespace removes its device
ip netns add h3
ip -n h1 link set v1 netns h3
check "device gone when its netdev changes namespace" wait_for 5 ibdev_gone mr0
check "h1's UDP port closed" wait_for 5 udp_port_closed h1
check "device can be made in the new namespace" ip netns exec h3 rdma link add mr0 type metaroce netdev v1
check "UDP port open in h3" udp_port_open h3

# -- deleting the netdev removes its device
ip -n h3 link del v1	# takes v2 (and mr1) along: a veth pair dies together
check "device gone with its netdev" wait_for 5 ibdev_gone mr0
check "peer's device gone with the veth pair" wait_for 5 ibdev_gone mr1
check "no UDP port left in h2" wait_for 5 udp_port_closed h2
check "no UDP port left in h3" wait_for 5 udp_port_closed h3

# -- a namespace that dies takes its devices along
ip netns add h4
ip -n h4 link add d4 type veth peer name d5
ip -n h4 link set d4 up
check "device on a veth in h4" ip netns exec h4 rdma link add mr4 type metaroce netdev d4
ip netns del h4
check "device gone with its namespace" wait_for 10 ibdev_gone mr4

# -- [MR-CC-9] the receive capacity the rate hints share out: the netdev's link
# speed (a tap's is whatever ethtool set), read when the device is made and at
# every netdev event; 10000 where the netdev reports none; link_mbps overrides.
modprobe tun
ip tuntap add tap9 mode tap
check "tap9 reports 25 Gbit/s" ethtool -s tap9 speed 25000 duplex full
ip link set tap9 up
check "rdma link add mr9 on tap9" rdma link add mr9 type metaroce netdev tap9
check_eq "mr9 shares out tap9's speed" 25000 "$(hw_counter mr9 rx_capacity_mbps)"
ethtool -s tap9 speed 1000 duplex full
ip link set tap9 down
ip link set tap9 up
check_eq "  ...and its new speed after the next netdev event" 1000 \
	"$(hw_counter mr9 rx_capacity_mbps)"
ip link add d9 type dummy
ip link set d9 up
check "rdma link add mr8 on a dummy (no speed)" rdma link add mr8 type metaroce netdev d9
check_eq "mr8 shares out 10000 Mbit/s" 10000 "$(hw_counter mr8 rx_capacity_mbps)"
check "rdma link delete mr8" rdma link delete mr8
check "rdma link delete mr9" rdma link delete mr9
check "reload with link_mbps=5000" sh -c 'modprobe -r metaroce && modprobe metaroce link_mbps=5000'
check "rdma link add mr9 on tap9" rdma link add mr9 type metaroce netdev tap9
check_eq "link_mbps wins over the speed" 5000 "$(hw_counter mr9 rx_capacity_mbps)"
check "rdma link delete mr9" rdma link delete mr9
check "reload without parameters" sh -c 'modprobe -r metaroce && modprobe metaroce'
ip link del tap9
ip link del d9

# -- rmmod with devices present
ip link add w1 type veth peer name w2
ip link set w1 up
ip link set w2 up
check "device in init_net" rdma link add mr5 type metaroce netdev w1
check "rmmod with a device present" rmmod metaroce
check "device gone after rmmod" ibdev_gone mr5
check "UDP port closed after rmmod" udp_port_closed ""
check "no module left" sh -c '! grep -q "^metaroce " /proc/modules'
check "rdma link add autoloads the module" rdma link add mr5 type metaroce netdev w1
check "module loaded again" grep -q "^metaroce " /proc/modules
check "rmmod again" rmmod metaroce
check "netdev deletable after all" ip link del w1

done_testing
