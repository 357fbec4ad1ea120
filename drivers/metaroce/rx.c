// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where our packets come in: the UDP sockets of each network namespace, and in
 * softirq the checks and the demultiplexing of what they take (connections,
 * CONNECT_REQs, UD datagrams), drops counted by reason.
 */

#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>

#include "metaroce.h"
#include "connection.h"
#include "trace.h"
#include "core/codec.h"
#include "core/handshake.h"

static unsigned int metaroce_net_id __read_mostly;

/* Our sockets' receive buffers (sock_set_rcvbuf()): merged skbs queued while we take them off. */
#define METAROCE_RCVBUF		SZ_1M

/*
 * [MR-CC-9] every MR_SHARE_INTERVAL, share our receive capacity out among
 * the connections that delivered data (max-min fair, in the engine), and
 * put each share into the rate hint of that connection's ACKs.  Run
 * lazily from the receive path: hints only matter in ACKs, and ACKs only
 * follow received data.
 */
static void metaroce_share_tick(struct metaroce_dev *mdev, u64 now)
{
	struct metaroce_share_state *ss = &mdev->share;
	struct metaroce_conn *c;
	u64 interval;
	u32 n = 0, i;

	if (now - READ_ONCE(ss->at_ns) < MR_SHARE_INTERVAL_NS || !spin_trylock(&ss->lock))
		return;
	interval = now - ss->at_ns;
	if (interval < MR_SHARE_INTERVAL_NS)
		goto out;
	WRITE_ONCE(ss->at_ns, now);

	rcu_read_lock();
	/* A list, not conn_ids: walking an xarray of random 32-bit keys costs more. */
	list_for_each_entry_rcu(c, &mdev->share_conns, share_node) {
		if (n == METAROCE_SHARE_MAX)
			break;		/* the rest send no hint (0) */
		if (!refcount_inc_not_zero(&c->ref))
			continue;
		spin_lock(&c->lock);
		if (!c->established || c->dead) {
			spin_unlock(&c->lock);
			metaroce_conn_put(c);
			continue;
		}
		ss->s[n] = c->share;
		ss->s[n].active = c->share.bytes != 0;
		c->share.bytes = 0;
		spin_unlock(&c->lock);
		ss->conns[n++] = c;
	}
	rcu_read_unlock();

	mr_fairshare_compute(ss->s, n, metaroce_capacity_mbps(mdev),
			     (u32)min_t(u64, interval, U32_MAX));
	for (i = 0; i < n; i++) {
		c = ss->conns[i];
		spin_lock(&c->lock);
		c->share.share_mbps = ss->s[i].share_mbps;
		c->eng->local_hint = mr_rate_hint_encode(ss->s[i].share_mbps);
		spin_unlock(&c->lock);
		metaroce_conn_put(c);
	}
out:
	spin_unlock(&ss->lock);
}

/* The metaroce_path tracepoint: a sending path as an ACK of it left it. */
static void metaroce_trace_path(struct metaroce_conn *c, u32 path)
{
	const struct mr_path_tx *tp;

	if (!trace_metaroce_path_enabled() || path >= c->eng->cfg.n_paths)
		return;
	tp = &c->eng->tx_path[path];
	trace_metaroce_path(dev_name(&c->mdev->ibdev.dev), c->eng->cfg.local_conn_id, path, tp,
			    mr_path_rto_ns(tp, &c->eng->cfg.rto));
}

/*
 * A connection's packets in a row, under one reference and one hold of its
 * lock: a packet alone, or those GRO merged into one skb.
 */
struct metaroce_rx_conn {
	struct metaroce_conn *c;
	u64 now;			/* when the lock was taken */
	bool renew;			/* [MR-CONN-14] the peer ended it: begin anew */
};

/* Whether skb came in over its namespace's loopback device: sent to ourselves. */
static bool metaroce_rx_loopback(const struct metaroce_net *mnet, const struct sk_buff *skb)
{
	return skb->skb_iif == mnet->net->loopback_dev->ifindex;
}

/*
 * The connection a packet names by conn_id ([MR-CONN-3]), referenced; NULL
 * (counted) if there is none, or the packet is not its.
 */
static struct metaroce_conn *metaroce_rx_conn_find(struct metaroce_dev *mdev,
						   const struct sk_buff *skb, u32 conn_id)
{
	struct in6_addr laddr, raddr;
	struct metaroce_conn *c;

	rcu_read_lock();
	c = xa_load(&mdev->conn_ids, conn_id);
	if (c && !refcount_inc_not_zero(&c->ref))
		c = NULL;
	rcu_read_unlock();
	if (!c) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_UNKNOWN_CONN);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "unknown connection");
		return NULL;
	}
	/*
	 * [MR-SEC-3] a connection is its conn_id and its two addresses: a
	 * packet naming our id from elsewhere (or to another of our
	 * addresses) is not the peer's.  A connection to ourselves
	 * ([MR-CONN-13]) hears only what came back over loopback: from a
	 * wire, our own source address is forged.
	 */
	metaroce_skb_addrs(skb, &laddr, &raddr);
	if (!ipv6_addr_equal(&laddr, &c->laddr) || !ipv6_addr_equal(&raddr, &c->raddr) ||
	    (ipv6_addr_equal(&raddr, &laddr) && !metaroce_rx_loopback(mdev->mnet, skb))) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_WRONG_ADDR);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "connection of other addresses");
		metaroce_conn_put(c);
		return NULL;
	}
	return c;
}

/*
 * After the packets, with the connection's lock dropped: send what they asked
 * for, and let go of the connection.
 */
static void metaroce_rx_conn_done(struct metaroce_rx_conn *rc)
{
	struct metaroce_conn *c = rc->c;
	struct metaroce_dev *mdev = c->mdev;

	rc->c = NULL;
	metaroce_share_tick(mdev, rc->now);
	metaroce_conn_kick(c);
	/* [MR-CONN-14] after the kick: the renewal waits for the CLOSE_ACK to leave. */
	if (rc->renew)
		mod_delayed_work(system_wq, &mdev->conn_idle_work, 0);
	metaroce_conn_put(c);
}

/*
 * A packet of the connection whose lock is held: parsed from hdr (its first
 * bytes, at offset off of skb), its payload where skb has it; with skb NULL,
 * all of the packet is at hdr.
 */
static void metaroce_rx_conn_pkt(struct metaroce_rx_conn *rc, const struct mr_pkt *pkt, bool ce,
				 const struct sk_buff *skb, const u8 *hdr, u32 off)
{
	struct metaroce_conn *c = rc->c;
	struct metaroce_dev *mdev = c->mdev;
	struct mr_place pl;
	enum mr_hs_event ev;

	c->last_rx_ns = rc->now;
	switch (pkt->bth.opcode) {
	case MR_OP_CONNECT_RESP:
	case MR_OP_CLOSE:
	case MR_OP_CLOSE_ACK:
		ev = mr_hs_on_packet(&c->hs, rc->now, pkt);
		if (ev == MR_HS_EV_ESTABLISHED && !c->established)
			metaroce_conn_established(c);
		else if (ev == MR_HS_EV_CLOSED)
			rc->renew |= metaroce_conn_end_locked(c, NULL, "closed by the peer");
		else if (ev == MR_HS_EV_FAILED)
			metaroce_conn_fail_locked(c, "the peer refused the handshake");
		break;
	default:
		if (!c->established || c->dead) {
			metaroce_count(mdev, METAROCE_CNT_RX_DROP_UNKNOWN_CONN);
			break;
		}
		if (ce)
			metaroce_count(mdev, METAROCE_CNT_RX_ECN_CE);
		if (pkt->bth.opcode == MR_OP_ACK) {
			mr_conn_on_ack(c->eng, rc->now, pkt);
			metaroce_trace_path(c, pkt->bth.path_id);
		} else if (pkt->bth.opcode == MR_OP_NAK) {
			mr_conn_on_nak(c->eng, rc->now, pkt);
		} else if (mr_conn_receive(c->eng, rc->now, pkt, ce, &pl) == MR_RX_RESULT_PLACE) {
			metaroce_place(c, &pl, skb, hdr, off);
		}
		c->share.bytes += pkt->bth.payload_len;
		break;
	}
}

/*
 * The device over the netdev with ifindex, found from the socket a packet
 * arrived on: no reference is taken.  Under RCU, as the receive path runs; a
 * device leaves the list, and a grace period passes, before its connections
 * go (metaroce_net_unlist_dev()).
 */
static struct metaroce_dev *metaroce_dev_of_ifindex_rcu(struct metaroce_net *mnet, int ifindex)
{
	struct net_device *ndev;
	struct metaroce_dev *mdev;

	hlist_for_each_entry_rcu(mdev, &mnet->devs, mnet_node) {
		ndev = rcu_dereference(mdev->ndev);
		if (ndev && ndev->ifindex == ifindex)
			return mdev;
	}
	return NULL;
}

/*
 * A packet to one of this host's own addresses comes in over the loopback
 * device, not over the netdev it was sent from: a datagram to the device's
 * own GID, or a packet between two devices of one namespace.  Its device is
 * the one on the netdev that holds the destination address.  Under RCU.
 */
static struct metaroce_dev *metaroce_dev_of_local_dst(struct metaroce_net *mnet,
						      struct sk_buff *skb)
{
	struct net_device *ndev = NULL;

	if (skb->protocol == htons(ETH_P_IP))
		ndev = __ip_dev_find(mnet->net, ip_hdr(skb)->daddr, false);
#if IS_REACHABLE(CONFIG_IPV6)
	else if (skb->protocol == htons(ETH_P_IPV6))
		ndev = ipv6_dev_find(mnet->net, &ipv6_hdr(skb)->daddr, NULL);
#endif
	return ndev ? metaroce_dev_of_ifindex_rcu(mnet, ndev->ifindex) : NULL;
}

/*
 * The headers in the skb's head, and no more than them: a packet's first bytes
 * say how long its headers are (mr_pkt_header_need()).  The NIC's driver left
 * some bytes there already, often all of them.  A data packet's payload stays
 * where it came (placement copies it out of the skb's pages); a packet whose
 * payload the transport reads whole is made linear.  False: no memory.
 */
static bool metaroce_rx_pull_headers(struct sk_buff *skb)
{
	u32 len = skb->len - sizeof(struct udphdr);
	u32 have = min_t(u32, len, MR_PEEK_LEN);

	if (!pskb_may_pull(skb, sizeof(struct udphdr) + have) ||
	    !pskb_may_pull(skb, sizeof(struct udphdr) +
			   min(len, mr_pkt_header_need(skb->data + sizeof(struct udphdr), have))))
		return false;
	if (!skb_is_nonlinear(skb) ||
	    mr_pkt_payload_placed(skb->data + sizeof(struct udphdr),
				  skb_headlen(skb) - sizeof(struct udphdr)))
		return true;
	return !skb_linearize(skb);
}

static bool metaroce_rx_ce(const struct sk_buff *skb)
{
	return skb->protocol == htons(ETH_P_IP) ? INET_ECN_is_ce(ip_hdr(skb)->tos) :
						  INET_ECN_is_ce(ipv6_get_dsfield(ipv6_hdr(skb)));
}

/*
 * One packet in an skb of its own, skb->data at its UDP header, its checksum
 * verified.  Takes the skb.
 */
static void metaroce_rx_one(struct metaroce_dev *mdev, struct sk_buff *skb)
{
	struct metaroce_rx_conn rc;
	enum mr_parse_result res;
	struct mr_pkt pkt;
	const u8 *hdr;

	metaroce_count(mdev, METAROCE_CNT_RX_PACKETS);
	metaroce_count_add(mdev, METAROCE_CNT_RX_BYTES, skb->len);

	/* [MR-ENC-5] on IPv4 a zero UDP checksum (none) is not acceptable. */
	if (skb->protocol == htons(ETH_P_IP) && !udp_hdr(skb)->check) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_MALFORMED);
		goto drop;
	}
	/* The parser checks every length against what is really there. */
	if (!metaroce_rx_pull_headers(skb)) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_NOMEM);
		goto drop;
	}
	hdr = skb->data + sizeof(struct udphdr);
	res = mr_pkt_parse(hdr, skb->len - sizeof(struct udphdr), &pkt);
	if (res != MR_PARSE_OK) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_MALFORMED);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), mr_parse_result_name(res));
		dev_dbg_ratelimited(&mdev->ibdev.dev, "dropped malformed packet: %s\n",
				    mr_parse_result_name(res));
		goto drop;
	}

	pkt.sport = ntohs(udp_hdr(skb)->source);
	trace_metaroce_rx(dev_name(&mdev->ibdev.dev), &pkt, pkt.sport);
	if (pkt.bth.opcode == MR_OP_CONNECT_REQ) {
		metaroce_conn_rx_connect_req(mdev, skb);	/* takes the skb */
		return;
	}
	if (pkt.bth.opcode == MR_OP_UD_SEND) {
		metaroce_ud_rx(mdev, skb, &pkt);
	} else {
		rc.c = metaroce_rx_conn_find(mdev, skb, pkt.bth.conn_id);
		if (rc.c) {
			spin_lock(&rc.c->lock);
			rc.now = metaroce_now();
			rc.renew = false;
			metaroce_rx_conn_pkt(&rc, &pkt, metaroce_rx_ce(skb), skb, hdr,
					     sizeof(struct udphdr));
			spin_unlock(&rc.c->lock);
			metaroce_rx_conn_done(&rc);
		}
	}
	/* Taken by the transport (its own drops are counted there): not a drop for the stack. */
	consume_skb(skb);
	return;
drop:
	kfree_skb(skb);
}

/*
 * The packet of len bytes at offset off of a merged skb, in an skb of its own
 * as metaroce_rx_one() takes it: the merged skb's IP and UDP headers, then the
 * packet, linear.  For the few packets a merged skb seldom holds and that
 * need their skb (CONNECT_REQ, UD_SEND) or their payload whole.  NULL: no memory.
 */
static struct sk_buff *metaroce_rx_seg_copy(const struct sk_buff *skb, u32 off, u32 len)
{
	/* The IP header (and IPv6's extension headers) in front of the UDP header. */
	int iplen = -skb_network_offset(skb);
	u32 hlen = iplen + sizeof(struct udphdr);
	struct sk_buff *nskb;

	if (iplen <= 0 || skb_transport_offset(skb) || skb_headlen(skb) < sizeof(struct udphdr))
		return NULL;
	nskb = alloc_skb(hlen + len, GFP_ATOMIC);
	if (!nskb)
		return NULL;
	skb_put_data(nskb, skb_network_header(skb), hlen);
	if (skb_copy_bits(skb, off, skb_put(nskb, len), len)) {
		kfree_skb(nskb);
		return NULL;
	}
	skb_reset_network_header(nskb);
	skb_set_transport_header(nskb, iplen);
	__skb_pull(nskb, iplen);
	nskb->protocol = skb->protocol;
	nskb->skb_iif = skb->skb_iif;
	/* The lengths of this packet, as it was on the wire (a GRH shows the IP header). */
	udp_hdr(nskb)->len = htons(sizeof(struct udphdr) + len);
	if (nskb->protocol == htons(ETH_P_IP)) {
		ip_hdr(nskb)->tot_len = htons(hlen + len);
		ip_send_check(ip_hdr(nskb));
	} else {
		ipv6_hdr(nskb)->payload_len = htons(hlen - sizeof(struct ipv6hdr) + len);
	}
	return nskb;
}

/* Bytes of each packet of a merged skb copied out to parse it: any header whole. */
#define METAROCE_RX_HDR_MAX	MR_MAX_HDR_LEN

/*
 * Where the walk over a merged skb's page fragments stands: fragment i begins
 * at offset start.  Its packets are visited in order, so each fragment is
 * passed once per skb, not once per packet after it.
 */
struct metaroce_frag_pos {
	u32 i;
	u32 start;
};

static void metaroce_frag_pos_init(struct metaroce_frag_pos *pos, const struct sk_buff *skb)
{
	pos->i = 0;
	pos->start = skb_headlen(skb);
}

/*
 * The n bytes at offset off of skb where they lie, if they lie in one piece:
 * in its head or in one page fragment (GRO leaves each merged packet in a
 * fragment of its own).  NULL if not: then they are copied out.  pos moves
 * past the fragments that end before off; off never goes back.
 */
static const u8 *metaroce_skb_peek(const struct sk_buff *skb, struct metaroce_frag_pos *pos,
				   u32 off, u32 n)
{
	const struct skb_shared_info *sh = skb_shinfo(skb);
	const skb_frag_t *f;
	u32 end;

	if (off + n <= skb_headlen(skb))
		return skb->data + off;
	if (!skb_frags_readable(skb))
		return NULL;
	for (; pos->i < sh->nr_frags; pos->i++, pos->start = end) {
		f = &sh->frags[pos->i];
		end = pos->start + skb_frag_size(f);
		if (off >= end)
			continue;
		if (off < pos->start || off + n > end || PageHighMem(skb_frag_page(f)))
			return NULL;
		return (const u8 *)skb_frag_address(f) + (off - pos->start);
	}
	return NULL;
}

enum metaroce_rx_seg {
	METAROCE_SEG_END,	/* no packet left */
	METAROCE_SEG_CONN,	/* a connection's, parsed */
	METAROCE_SEG_COPY,	/* to be copied out (metaroce_rx_seg_copy()) */
	METAROCE_SEG_BAD,	/* malformed: counted */
};

/*
 * The packet at offset off of a merged skb of seg-byte packets: its length
 * (*len) and what it is.  A connection's is parsed into pkt from its first
 * bytes (*hdr: in the skb's head or a fragment, or copied to buf); *whole
 * says that all of it lies at *hdr, its payload too.
 */
static enum metaroce_rx_seg metaroce_rx_seg(struct metaroce_dev *mdev, const struct sk_buff *skb,
					    struct metaroce_frag_pos *pos, u32 seg, u32 off,
					    u8 *buf, const u8 **hdr, u32 *len, bool *whole,
					    struct mr_pkt *pkt)
{
	enum mr_parse_result res;
	u32 n;

	if (off >= skb->len)
		return METAROCE_SEG_END;
	*len = min(seg, skb->len - off);
	n = min_t(u32, *len, METAROCE_RX_HDR_MAX);
	/* GRO leaves a merged packet whole in a fragment (all but, as a rule, the first). */
	*hdr = metaroce_skb_peek(skb, pos, off, *len);
	*whole = *hdr;
	if (!*hdr)
		*hdr = metaroce_skb_peek(skb, pos, off, n);
	if (!*hdr)
		*hdr = skb_header_pointer(skb, off, n, buf);
	/* The last packet may be shorter than a header: the parser says so. */
	if (!*hdr || (n < *len && !mr_pkt_payload_placed(*hdr, n)) ||
	    (n >= MR_BTH_LEN &&
	     ((*hdr)[1] == MR_OP_CONNECT_REQ || (*hdr)[1] == MR_OP_UD_SEND)))
		return METAROCE_SEG_COPY;
	metaroce_count(mdev, METAROCE_CNT_RX_PACKETS);
	metaroce_count_add(mdev, METAROCE_CNT_RX_BYTES, sizeof(struct udphdr) + *len);
	res = mr_pkt_parse(*hdr, *len, pkt);
	if (res != MR_PARSE_OK) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_MALFORMED);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), mr_parse_result_name(res));
		return METAROCE_SEG_BAD;
	}
	pkt->sport = ntohs(udp_hdr(skb)->source);
	trace_metaroce_rx(dev_name(&mdev->ibdev.dev), pkt, pkt->sport);
	return METAROCE_SEG_CONN;
}

/*
 * Packets GRO merged into one skb (UDP GSO: equal lengths but the last, one
 * flow, one ECN codepoint), skb->data at the UDP header, checksums verified.
 * Each is parsed from a copy of its headers and placed from where it lies;
 * a connection's packets in a row are handled under one lookup and one hold
 * of its lock.  Does not take the skb.
 */
static void metaroce_rx_gso(struct metaroce_dev *mdev, struct sk_buff *skb)
{
	u32 seg = skb_shinfo(skb)->gso_size, off = sizeof(struct udphdr), len = 0, id, n;
	struct metaroce_frag_pos pos;
	u8 buf[METAROCE_RX_HDR_MAX];
	bool ce = metaroce_rx_ce(skb);
	bool whole;
	struct metaroce_rx_conn rc;
	enum metaroce_rx_seg k;
	struct sk_buff *nskb;
	struct mr_pkt pkt;
	const u8 *hdr;

	metaroce_count(mdev, METAROCE_CNT_RX_GSO_SKBS);
	/*
	 * Not ours, nor merged from ours: segments too short for a header, or
	 * no checksum (GRO merges only what has one).  Each segment counted.
	 */
	if (seg < MR_BTH_LEN || (skb->protocol == htons(ETH_P_IP) && !udp_hdr(skb)->check)) {
		n = seg ? max_t(u32, DIV_ROUND_UP(skb->len - sizeof(struct udphdr), seg), 1) : 1;
		metaroce_count_add(mdev, METAROCE_CNT_RX_PACKETS, n);
		metaroce_count_add(mdev, METAROCE_CNT_RX_BYTES,
				   skb->len + (n - 1) * sizeof(struct udphdr));
		metaroce_count_add(mdev, METAROCE_CNT_RX_DROP_MALFORMED, n);
		return;
	}
	metaroce_frag_pos_init(&pos, skb);
	k = metaroce_rx_seg(mdev, skb, &pos, seg, off, buf, &hdr, &len, &whole, &pkt);
	while (k != METAROCE_SEG_END) {
		if (k == METAROCE_SEG_COPY) {
			nskb = metaroce_rx_seg_copy(skb, off, len);
			if (nskb) {
				metaroce_rx_one(mdev, nskb);
			} else {
				metaroce_count(mdev, METAROCE_CNT_RX_PACKETS);
				metaroce_count(mdev, METAROCE_CNT_RX_DROP_NOMEM);
			}
		} else if (k == METAROCE_SEG_CONN) {
			rc.c = metaroce_rx_conn_find(mdev, skb, pkt.bth.conn_id);
			if (rc.c) {
				/* This packet and those after it of the same connection. */
				id = pkt.bth.conn_id;
				spin_lock(&rc.c->lock);
				rc.now = metaroce_now();
				rc.renew = false;
				do {
					if (k == METAROCE_SEG_CONN)
						metaroce_rx_conn_pkt(&rc, &pkt, ce,
								     whole ? NULL : skb, hdr,
								     off);
					off += len;
					k = metaroce_rx_seg(mdev, skb, &pos, seg, off, buf, &hdr,
							    &len, &whole, &pkt);
				} while (k == METAROCE_SEG_BAD ||
					 (k == METAROCE_SEG_CONN && pkt.bth.conn_id == id));
				spin_unlock(&rc.c->lock);
				metaroce_rx_conn_done(&rc);
				continue;	/* k is the next packet's already */
			}
		}
		off += len;
		k = metaroce_rx_seg(mdev, skb, &pos, seg, off, buf, &hdr, &len, &whole, &pkt);
	}
}

/*
 * A datagram to our port, taken off the socket: skb->data at its payload,
 * the IP and UDP headers in front; skb->dev is UDP's scratch now, the netdev
 * it came in on is skb->skb_iif.  Softirq context, under RCU.  Takes the skb.
 */
static void metaroce_rx(struct metaroce_net *mnet, struct sk_buff *skb)
{
	struct metaroce_dev *mdev;

	/* Packets count against the device of the netdev they arrived on (or were sent to). */
	mdev = metaroce_dev_of_ifindex_rcu(mnet, skb->skb_iif);
	if (!mdev && metaroce_rx_loopback(mnet, skb))
		mdev = metaroce_dev_of_local_dst(mnet, skb);
	if (!mdev)
		goto drop;
	/*
	 * Verified on arrival (by the NIC, or when GRO merged it) or here, as
	 * recvmsg() would: while skb->dev still holds UDP's scratch.
	 */
	if (!udp_skb_csum_unnecessary(skb) && __udp_lib_checksum_complete(skb)) {
		metaroce_count(mdev, METAROCE_CNT_RX_PACKETS);
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_MALFORMED);
		goto drop;
	}
	skb->dev = NULL;
	__skb_push(skb, sizeof(struct udphdr));
	if (!skb_is_gso(skb)) {
		metaroce_rx_one(mdev, skb);
		return;
	}
	metaroce_rx_gso(mdev, skb);
	consume_skb(skb);
	return;
drop:
	skb->dev = NULL;
	kfree_skb(skb);
}

/*
 * UDP queued datagrams to our socket (sk_data_ready, in softirq context):
 * take them off at once.  A plain UDP socket rather than an encapsulation
 * socket (encap_rcv), because UDP cuts what GRO merged back into packets
 * before it hands them to encap_rcv; to a socket that accepts them
 * (UDP_GRO) it queues them whole.
 */
static void metaroce_udp_data_ready(struct sock *sk)
{
	struct metaroce_net *mnet;
	struct sk_buff *skb;
	int off = 0, err;

	/* UDP calls it in softirq; the connections' locks are taken as there. */
	local_bh_disable();
	rcu_read_lock();
	mnet = rcu_dereference_sk_user_data(sk);
	/* NULL: the socket is closing (udp_tunnel_sock_release()); it frees what it holds. */
	while (mnet) {
		skb = __skb_recv_udp(sk, MSG_DONTWAIT, &off, &err);
		if (!skb) {
			if (err == -EAGAIN)
				break;
			continue;	/* sock_error() took a pending socket error: try again */
		}
		metaroce_rx(mnet, skb);
	}
	rcu_read_unlock();
	local_bh_enable();
}

static struct socket *metaroce_udp_open(struct metaroce_net *mnet, bool ipv6)
{
	struct udp_port_cfg cfg = {
		.local_udp_port = htons(metaroce_udp_port),
	};
	struct socket *sock;
	struct sock *sk;
	int err;

	if (ipv6) {
		cfg.family = AF_INET6;
		cfg.local_ip6 = in6addr_any;
		cfg.ipv6_v6only = 1;
	} else {
		cfg.family = AF_INET;
		cfg.local_ip.s_addr = htonl(INADDR_ANY);
	}
	err = udp_sock_create(mnet->net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	sk = sock->sk;
	/* Take what GRO merged whole (UDP_GRO); room for what arrives while we take it off. */
	udp_set_bit(GRO_ENABLED, sk);
	udp_set_bit(ACCEPT_L4, sk);
	sock_set_rcvbuf(sk, METAROCE_RCVBUF);
	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, mnet);
	sk->sk_data_ready = metaroce_udp_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	return sock;
}

static void metaroce_udp_close(struct socket **sock)
{
	if (*sock)
		udp_tunnel_sock_release(*sock);
	*sock = NULL;
}

static int metaroce_net_open(struct metaroce_net *mnet)
{
	struct socket *sock;

	sock = metaroce_udp_open(mnet, false);
	if (IS_ERR(sock)) {
		pr_notice("cannot open UDP port %u: %pe\n", metaroce_udp_port, sock);
		return PTR_ERR(sock);
	}
	mnet->sock4 = sock;

	if (!IS_ENABLED(CONFIG_IPV6))
		return 0;
	sock = metaroce_udp_open(mnet, true);
	if (PTR_ERR_OR_ZERO(sock) == -EAFNOSUPPORT)	/* IPv6 disabled: IPv4 only */
		return 0;
	if (IS_ERR(sock)) {
		pr_notice("cannot open UDPv6 port %u: %pe\n", metaroce_udp_port, sock);
		metaroce_udp_close(&mnet->sock4);
		return PTR_ERR(sock);
	}
	mnet->sock6 = sock;
	return 0;
}

struct metaroce_net *metaroce_net_get(struct net *net)
{
	struct metaroce_net *mnet = net_generic(net, metaroce_net_id);
	int err = 0;

	mutex_lock(&mnet->lock);
	if (!mnet->users)
		err = metaroce_net_open(mnet);
	if (!err)
		mnet->users++;
	mutex_unlock(&mnet->lock);
	return err ? ERR_PTR(err) : mnet;
}

void metaroce_net_put(struct metaroce_net *mnet)
{
	if (!mnet)
		return;
	mutex_lock(&mnet->lock);
	if (!--mnet->users) {
		metaroce_udp_close(&mnet->sock6);
		metaroce_udp_close(&mnet->sock4);
	}
	mutex_unlock(&mnet->lock);
}

/*
 * The device's packets are handed to it from now on.  Under RTNL, as every
 * change of mnet->devs is, so that the device cannot be unregistered
 * meanwhile (metaroce_dealloc_driver()).
 */
void metaroce_net_list_dev(struct metaroce_dev *mdev)
{
	ASSERT_RTNL();
	hlist_add_head_rcu(&mdev->mnet_node, &mdev->mnet->devs);
}

/*
 * No packet is handed to the device after this returns, and none is still
 * being handled: the receive path runs under RCU.  Under RTNL, so that a second
 * caller returns only after the first one's grace period.
 */
void metaroce_net_unlist_dev(struct metaroce_dev *mdev)
{
	ASSERT_RTNL();
	if (hlist_unhashed(&mdev->mnet_node))
		return;
	hlist_del_init_rcu(&mdev->mnet_node);
	synchronize_net();
}

static int __net_init metaroce_pernet_init(struct net *net)
{
	struct metaroce_net *mnet = net_generic(net, metaroce_net_id);

	mnet->net = net;
	mutex_init(&mnet->lock);
	INIT_HLIST_HEAD(&mnet->devs);
	return 0;
}

static void __net_exit metaroce_pernet_exit(struct net *net)
{
	struct metaroce_net *mnet = net_generic(net, metaroce_net_id);

	/* Netdevs left the namespace before us, and took their devices along. */
	if (mnet->users)
		pr_err("namespace exits with %u device(s) attached\n", mnet->users);
	metaroce_udp_close(&mnet->sock6);
	metaroce_udp_close(&mnet->sock4);
	mutex_destroy(&mnet->lock);
}

static struct pernet_operations metaroce_pernet_ops = {
	.init = metaroce_pernet_init,
	.exit = metaroce_pernet_exit,
	.id = &metaroce_net_id,
	.size = sizeof(struct metaroce_net),
};

/*
 * The stack tests a static key (udp_encap_needed_key, and IPv6's) before GRO
 * looks for the socket a datagram goes to, and so before it merges datagrams
 * for a socket that accepts them whole (UDP_GRO: ours); enabling UDP_GRO on a
 * socket takes the key.  Our sockets open with a namespace's first device and
 * close with its last, so without a hold of our own every such rdma link add
 * and delete could flip the key: kernel text patched while every CPU receives
 * UDP.  In TCG guests a CPU receiving then took the patch's int3 as an oops
 * (udp_queue_rcv_one_skb(), rx_bad_packets.sh).  Held from load to unload.
 */
static void metaroce_udp_encap_hold(void)
{
	udp_encap_enable();
#if IS_ENABLED(CONFIG_IPV6)
	static_branch_inc(&udpv6_encap_needed_key);
#endif
}

static void metaroce_udp_encap_release(void)
{
#if IS_ENABLED(CONFIG_IPV6)
	static_branch_dec(&udpv6_encap_needed_key);
#endif
	udp_encap_disable();
}

int metaroce_rx_init(void)
{
	int err;

	metaroce_udp_encap_hold();
	err = register_pernet_subsys(&metaroce_pernet_ops);
	if (err)
		metaroce_udp_encap_release();
	return err;
}

void metaroce_rx_exit(void)
{
	unregister_pernet_subsys(&metaroce_pernet_ops);
	metaroce_udp_encap_release();
}
