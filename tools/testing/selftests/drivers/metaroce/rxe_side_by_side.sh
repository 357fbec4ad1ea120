#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# metaroce runs beside rdma_rxe: its own UDP port and driver id, even on the
# same netdev, and removing rxe leaves our devices alone.
. "$(dirname "$0")/lib.sh"

ip link add y1 type veth peer name y2
ip link set y1 up
ip link set y2 up

check "modprobe rdma_rxe" modprobe rdma_rxe
check "modprobe metaroce" modprobe metaroce
check "rxe0 on y1" rdma link add rxe0 type rxe netdev y1
check "mr0 on y1 too" rdma link add mr0 type metaroce netdev y1
check "mr1 on y2" rdma link add mr1 type metaroce netdev y2
check "RoCEv2 port 4791 open (rxe)" udp_port_open "" 4791
check "MetaRoCE port $MR_UDP_PORT open" udp_port_open ""
check "three devices" sh -c '[ "$(ls /sys/class/infiniband | wc -l)" = 3 ]'
# rmmod rdma_rxe runs ib_unregister_driver(RDMA_DRIVER_RXE): a shared driver
# id would take our devices along.
check "rmmod rdma_rxe" rmmod rdma_rxe
check "rxe0 gone" wait_for 5 ibdev_gone rxe0
check "mr0 survives rxe's removal" ibdev_exists mr0
check "mr1 survives rxe's removal" ibdev_exists mr1
check "our port stays open" udp_port_open ""
check "rmmod metaroce" rmmod metaroce
check "all gone" sh -c '[ "$(ls /sys/class/infiniband | wc -l)" = 0 ]'
done_testing
