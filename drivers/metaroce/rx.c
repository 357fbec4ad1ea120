// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Receive path: UDP encap hook in softirq, validation, demultiplexing, drops by reason. */

#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>

#include "metaroce.h"
#include "trace.h"
#include "core/codec.h"

/*
 * Called by UDP for every datagram to our port, in softirq context, after the
 * UDP checksum was verified; skb->data points at the UDP header.  Returns 0:
 * the skb is always consumed.
 */
int metaroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	enum mr_parse_result res;
	struct metaroce_dev *mdev;
	struct mr_pkt pkt;

	/* Packets count against the device of the netdev they arrived on. */
	mdev = metaroce_dev_from_netdev(skb->dev);
	if (!mdev)
		goto drop;
	metaroce_count(mdev, METAROCE_CNT_RX_PACKETS);
	metaroce_count_add(mdev, METAROCE_CNT_RX_BYTES, skb->len);

	/* [MR-ENC-5] on IPv4 a zero UDP checksum (none) is not acceptable. */
	if (skb->protocol == htons(ETH_P_IP) && !udp_hdr(skb)->check) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_MALFORMED);
		goto put;
	}
	/* The parser checks every length against what is really there. */
	if (skb_linearize(skb)) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_NOMEM);
		goto put;
	}
	res = mr_pkt_parse(skb->data + sizeof(struct udphdr), skb->len - sizeof(struct udphdr),
			   &pkt);
	if (res != MR_PARSE_OK) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_MALFORMED);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), mr_parse_result_name(res));
		dev_dbg_ratelimited(&mdev->ibdev.dev, "dropped malformed packet: %s\n",
				    mr_parse_result_name(res));
		goto put;
	}

	pkt.sport = ntohs(udp_hdr(skb)->source);
	trace_metaroce_rx(dev_name(&mdev->ibdev.dev), &pkt, pkt.sport);
	if (pkt.bth.opcode == MR_OP_CONNECT_REQ) {
		metaroce_conn_rx_connect_req(mdev, skb);	/* takes the skb */
		ib_device_put(&mdev->ibdev);
		return 0;
	}
	if (pkt.bth.opcode == MR_OP_UD_SEND) {
		metaroce_ud_rx(mdev, skb, &pkt);
		goto put;
	}
	metaroce_conn_rx(mdev, skb, &pkt, skb->protocol == htons(ETH_P_IP) ?
			 INET_ECN_is_ce(ip_hdr(skb)->tos) :
			 INET_ECN_is_ce(ipv6_get_dsfield(ipv6_hdr(skb))));
put:
	ib_device_put(&mdev->ibdev);
drop:
	kfree_skb(skb);
	return 0;
}
