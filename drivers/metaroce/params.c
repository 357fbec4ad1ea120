// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The module's parameters, all in one place: what an administrator may set. */

#include <linux/module.h>

#include "metaroce.h"

unsigned short metaroce_udp_port = METAROCE_UDP_PORT_DEFAULT;
module_param_named(udp_port, metaroce_udp_port, ushort, 0444);
MODULE_PARM_DESC(udp_port,
		 "UDP port every device listens on and sends to, the same on all hosts (port number, default 64791)");

unsigned int metaroce_paths = 8;
module_param_named(paths, metaroce_paths, uint, 0444);
MODULE_PARM_DESC(paths,
		 "Paths (UDP source ports) a connection offers, 1..16 (count, default 8)");

/*
 * [MR-REL-3] RTO bounds; 0 keeps the spec's defaults (100 us .. 1 s).  The
 * minimum is made for datacenter RTTs; virtual machines on busy hosts stall
 * for milliseconds, and a higher minimum saves the RTOs those stalls cost.
 */
unsigned int metaroce_rto_min_us;
module_param_named(rto_min_us, metaroce_rto_min_us, uint, 0644);
MODULE_PARM_DESC(rto_min_us,
		 "Minimum retransmission timeout (microseconds; 0, the default, means 100)");
unsigned int metaroce_rto_max_us;
module_param_named(rto_max_us, metaroce_rto_max_us, uint, 0644);
MODULE_PARM_DESC(rto_max_us,
		 "Maximum retransmission timeout (microseconds; 0, the default, means 1000000)");

/*
 * [MR-SEC-4] Connections a peer can make us hold: a CONNECT_REQ that needs a
 * new connection is dropped once the device has this many.  Connections that
 * our own QPs ask for are bounded by the QPs and not refused.
 */
unsigned int metaroce_max_conns = 1024;
module_param_named(max_conns, metaroce_max_conns, uint, 0644);
MODULE_PARM_DESC(max_conns,
		 "Connections per device that peers may open; further CONNECT_REQs are dropped (connections, default 1024)");

/*
 * [MR-SEC-4] Connections our own QPs may make: each QP to a new peer address
 * makes one, so a local user with many GIDs to aim at could otherwise pin
 * memory without bound.  Beyond it, moving a QP to RTR fails with ENOMEM.
 */
unsigned int metaroce_max_local_conns = 4096;
module_param_named(max_local_conns, metaroce_max_local_conns, uint, 0644);
MODULE_PARM_DESC(max_local_conns,
		 "Connections per device that local QPs may open; further RTRs fail with ENOMEM (connections, default 4096)");

/* [MR-ENC-6] The DSCP of packets whose QP or AH names no traffic class. */
unsigned int metaroce_dscp = METAROCE_DSCP;

static int metaroce_dscp_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int err = kstrtouint(val, 0, &v);

	if (err)
		return err;
	if (v > 63)
		return -ERANGE;
	WRITE_ONCE(metaroce_dscp, v);
	return 0;
}

static const struct kernel_param_ops metaroce_dscp_ops = {
	.set = metaroce_dscp_set,
	.get = param_get_uint,
};
module_param_cb(dscp, &metaroce_dscp_ops, &metaroce_dscp, 0644);
MODULE_PARM_DESC(dscp,
		 "DSCP of the packets of QPs and AHs whose traffic class names none, and of ACKs, NAKs and connection management (0..63, default 26)");

/* [MR-CC-9] 0: each device takes its netdev's link speed (metaroce_capacity_mbps()). */
unsigned int metaroce_link_mbps;
module_param_named(link_mbps, metaroce_link_mbps, uint, 0444);
MODULE_PARM_DESC(link_mbps,
		 "Receive capacity shared out by the rate hints (Mbit/s; 0, the default, takes each netdev's link speed, or 10000 where it reports none)");

/*
 * Experimental, off by default: on the bench's fabric it gains nothing
 * measurable (the hosts' per-frame cost decides there).  The guest crash in
 * rdma_rxe's runs that first kept it off was seen again with it off.
 */
bool metaroce_tx_gso;
module_param_named(tx_gso, metaroce_tx_gso, bool, 0644);
MODULE_PARM_DESC(tx_gso,
		 "Send a path's burst of data packets as one UDP GSO skb (boolean, experimental, default 0)");
