// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Our packets onto the wire: route (cached per path), UDP and IP encapsulation, xmit. */

#include <linux/inetdevice.h>
#include <linux/jhash.h>
#include <net/addrconf.h>
#include <net/dst_cache.h>
#include <net/inet_ecn.h>
#include <net/ip6_route.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <net/udp_tunnel.h>

#include "metaroce.h"

/* Packets and bytes sent, a UDP GSO skb counting as the packets it is cut into. */
static void metaroce_count_tx(struct metaroce_dev *mdev, const struct sk_buff *skb)
{
	u32 segs = skb_is_gso(skb) ? skb_shinfo(skb)->gso_segs : 1;

	metaroce_count_add(mdev, METAROCE_CNT_TX_PACKETS, segs);
	metaroce_count_add(mdev, METAROCE_CNT_TX_BYTES, skb->len + segs * sizeof(struct udphdr));
}

static void metaroce_net_xmit4(struct metaroce_dev *mdev, struct sk_buff *skb, __be32 saddr,
			       __be32 daddr, u16 sport, struct dst_cache *dc, u8 tos)
{
	struct net_device *ndev;
	struct metaroce_net *mnet;
	struct flowi4 fl4 = {};
	struct rtable *rt = NULL;

	rcu_read_lock();
	/* Detach clears ndev, waits for readers, and only then lets go of mnet. */
	ndev = rcu_dereference(mdev->ndev);
	mnet = READ_ONCE(mdev->mnet);
	if (!ndev || !mnet || !mnet->sock4)
		goto drop;
	fl4.flowi4_proto = IPPROTO_UDP;
	fl4.daddr = daddr;
	fl4.saddr = saddr;
	fl4.fl4_sport = htons(sport);
	fl4.fl4_dport = htons(metaroce_udp_port);
	if (dc)
		rt = dst_cache_get_ip4(dc, &fl4.saddr);
	if (!rt) {
		/*
		 * Out of our netdev, unless the peer is an address of this host:
		 * then over loopback, wherever that address lives ([MR-CONN-13]).
		 */
		if (!__ip_dev_find(dev_net(ndev), daddr, false))
			fl4.flowi4_oif = ndev->ifindex;
		rt = ip_route_output_key(dev_net(ndev), &fl4);
		if (IS_ERR(rt)) {
			metaroce_count(mdev, METAROCE_CNT_TX_DROP_NOROUTE);
			goto drop;
		}
		if (dc)
			dst_cache_set_ip4(dc, &rt->dst, fl4.saddr);
	}
	metaroce_count_tx(mdev, skb);
	udp_tunnel_xmit_skb(rt, mnet->sock4->sk, skb, fl4.saddr, fl4.daddr, tos,
			    ip4_dst_hoplimit(&rt->dst), htons(IP_DF), htons(sport),
			    htons(metaroce_udp_port), false, false);
	rcu_read_unlock();
	return;
drop:
	rcu_read_unlock();
	kfree_skb(skb);
}

static void metaroce_net_xmit6(struct metaroce_dev *mdev, struct sk_buff *skb,
			       struct in6_addr *saddr, struct in6_addr *daddr, u16 sport,
			       struct dst_cache *dc, u8 tos)
{
#if IS_ENABLED(CONFIG_IPV6)
	struct net_device *ndev;
	struct metaroce_net *mnet;
	struct dst_entry *dst = NULL;
	struct flowi6 fl6 = {};
	__be32 label;

	rcu_read_lock();
	ndev = rcu_dereference(mdev->ndev);
	mnet = READ_ONCE(mdev->mnet);
	if (!ndev || !mnet || !mnet->sock6)
		goto drop;
	/* [MR-ENC-3] the flow label follows the path's entropy. */
	label = htonl(sport) & IPV6_FLOWLABEL_MASK;
	fl6.flowi6_proto = IPPROTO_UDP;
	fl6.daddr = *daddr;
	fl6.saddr = *saddr;
	fl6.flowlabel = ip6_make_flowinfo(tos, label);
	fl6.fl6_sport = htons(sport);
	fl6.fl6_dport = htons(metaroce_udp_port);
	if (dc)
		dst = dst_cache_get_ip6(dc, &fl6.saddr);
	if (!dst) {
#if IS_REACHABLE(CONFIG_IPV6)
		if (!ipv6_chk_addr(dev_net(ndev), daddr, NULL, 0))
#endif
			fl6.flowi6_oif = ndev->ifindex;
		dst = ipv6_stub->ipv6_dst_lookup_flow(dev_net(ndev), mnet->sock6->sk, &fl6, NULL);
		if (IS_ERR(dst)) {
			metaroce_count(mdev, METAROCE_CNT_TX_DROP_NOROUTE);
			goto drop;
		}
		if (dc)
			dst_cache_set_ip6(dc, dst, &fl6.saddr);
	}
	metaroce_count_tx(mdev, skb);
	/*
	 * No tunnel device: ndev is the physical netdev, whose per-CPU stats
	 * are not the tunnel kind that iptunnel_xmit_stats() updates (a
	 * virtio-net device warned there).  Our counters are above.
	 */
	udp_tunnel6_xmit_skb(dst, mnet->sock6->sk, skb, NULL, saddr, daddr, tos,
			     ip6_dst_hoplimit(dst), label, htons(sport), htons(metaroce_udp_port),
			     false);
	rcu_read_unlock();
	return;
drop:
	rcu_read_unlock();
#endif
	kfree_skb(skb);
}

/*
 * The flow hash of a packet with these addresses and ports, set before it leaves:
 * what a connected UDP socket's sk_txhash gives its packets.  Without one, whatever
 * hashes the packet on this host (ECMP routes, RPS, a bond, a multiqueue device)
 * dissects it and hashes the keys per packet: on the bench's fabric, whose router
 * sits in the sender guest, that was 1,000 instructions a packet (tcgprof), where TCP
 * has its socket's.  It follows the source port, as the 5-tuple hash it stands in
 * for does: a path that re-rolls its entropy ([MR-PATH-2]) is hashed anew.  Never 0.
 */
u32 metaroce_flow_hash(const struct in6_addr *saddr, const struct in6_addr *daddr, u16 sport)
{
	static u32 seed __read_mostly;
	u32 hash;

	net_get_random_once(&seed, sizeof(seed));
	hash = jhash_3words(ipv6_addr_hash(saddr), ipv6_addr_hash(daddr),
			    (u32)sport << 16 | metaroce_udp_port, seed);
	return hash ?: 1;
}

/*
 * Send one MetaRoCE packet (skb->data at our header) from the device's netdev,
 * over IPv4 for v4-mapped addresses and IPv6 otherwise; sport is the path's
 * entropy.  dc, if not NULL, caches the route of exactly these addresses and
 * port (a path's); tos is the IPv4 TOS byte or IPv6 traffic class
 * (metaroce_tos()); hash is metaroce_flow_hash() of the addresses and port, or
 * 0 to have it computed here; BH disabled.  Consumes the skb.
 */
void metaroce_net_xmit(struct metaroce_dev *mdev, struct sk_buff *skb, struct in6_addr *saddr,
		       struct in6_addr *daddr, u16 sport, struct dst_cache *dc, u8 tos, u32 hash)
{
	skb_set_hash(skb, hash ?: metaroce_flow_hash(saddr, daddr, sport), PKT_HASH_TYPE_L4);
	if (ipv6_addr_v4mapped(daddr))
		metaroce_net_xmit4(mdev, skb, saddr->s6_addr32[3], daddr->s6_addr32[3], sport,
				   dc, tos);
	else
		metaroce_net_xmit6(mdev, skb, saddr, daddr, sport, dc, tos);
}
