// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* UDP tunnel sockets per network namespace and the netdev events we follow. */

#include <linux/module.h>
#include <net/dst_cache.h>
#include <net/inet_ecn.h>
#include <net/ip6_route.h>
#include <net/ipv6_stubs.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>

#include "metaroce.h"

unsigned short metaroce_udp_port = METAROCE_UDP_PORT_DEFAULT;
module_param_named(udp_port, metaroce_udp_port, ushort, 0444);
MODULE_PARM_DESC(udp_port, "UDP port MetaRoCE listens on and sends to (default 4793)");

/*
 * One pair of sockets per namespace, opened by the first device whose netdev
 * lives there and closed by the last one, so namespaces without devices cost
 * nothing.  Kernel sockets hold no reference on their namespace: devices let go
 * of them synchronously when their netdev leaves (metaroce_dev_detach()).
 */
struct metaroce_net {
	struct net *net;
	struct mutex lock;	/* users, sock4, sock6 */
	unsigned int users;
	struct socket *sock4;
	struct socket *sock6;
};

static unsigned int metaroce_net_id __read_mostly;

static struct socket *metaroce_udp_open(struct net *net, bool ipv6)
{
	struct udp_tunnel_sock_cfg tnl = {
		.encap_type = 1,
		.encap_rcv = metaroce_udp_encap_recv,
	};
	struct udp_port_cfg cfg = {
		.local_udp_port = htons(metaroce_udp_port),
	};
	struct socket *sock;
	int err;

	if (ipv6) {
		cfg.family = AF_INET6;
		cfg.local_ip6 = in6addr_any;
		cfg.ipv6_v6only = 1;
	} else {
		cfg.family = AF_INET;
		cfg.local_ip.s_addr = htonl(INADDR_ANY);
	}
	err = udp_sock_create(net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(net, sock, &tnl);
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

	sock = metaroce_udp_open(mnet->net, false);
	if (IS_ERR(sock)) {
		pr_notice("cannot open UDP port %u: %pe\n", metaroce_udp_port, sock);
		return PTR_ERR(sock);
	}
	mnet->sock4 = sock;

	if (!IS_ENABLED(CONFIG_IPV6))
		return 0;
	sock = metaroce_udp_open(mnet->net, true);
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

static int __net_init metaroce_pernet_init(struct net *net)
{
	struct metaroce_net *mnet = net_generic(net, metaroce_net_id);

	mnet->net = net;
	mutex_init(&mnet->lock);
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

/* Packets and bytes sent, a UDP GSO skb counting as the packets it is cut into. */
static void metaroce_count_tx(struct metaroce_dev *mdev, const struct sk_buff *skb)
{
	u32 segs = skb_is_gso(skb) ? skb_shinfo(skb)->gso_segs : 1;

	metaroce_count_add(mdev, METAROCE_CNT_TX_PACKETS, segs);
	metaroce_count_add(mdev, METAROCE_CNT_TX_BYTES, skb->len + segs * sizeof(struct udphdr));
}

/* [MR-ENC-4] ECT(0), so the fabric marks rather than drops; [MR-ENC-6] DSCP. */
#define METAROCE_TOS	(METAROCE_DSCP << 2 | INET_ECN_ECT_0)

static void metaroce_net_xmit4(struct metaroce_dev *mdev, struct sk_buff *skb, __be32 saddr,
			       __be32 daddr, u16 sport, struct dst_cache *dc)
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
	fl4.flowi4_oif = ndev->ifindex;
	fl4.flowi4_proto = IPPROTO_UDP;
	fl4.daddr = daddr;
	fl4.saddr = saddr;
	fl4.fl4_sport = htons(sport);
	fl4.fl4_dport = htons(metaroce_udp_port);
	if (dc)
		rt = dst_cache_get_ip4(dc, &fl4.saddr);
	if (!rt) {
		rt = ip_route_output_key(dev_net(ndev), &fl4);
		if (IS_ERR(rt)) {
			metaroce_count(mdev, METAROCE_CNT_TX_DROP_NOROUTE);
			goto drop;
		}
		if (dc)
			dst_cache_set_ip4(dc, &rt->dst, fl4.saddr);
	}
	metaroce_count_tx(mdev, skb);
	udp_tunnel_xmit_skb(rt, mnet->sock4->sk, skb, fl4.saddr, fl4.daddr, METAROCE_TOS,
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
			       struct dst_cache *dc)
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
	fl6.flowi6_oif = ndev->ifindex;
	fl6.flowi6_proto = IPPROTO_UDP;
	fl6.daddr = *daddr;
	fl6.saddr = *saddr;
	fl6.flowlabel = ip6_make_flowinfo(METAROCE_TOS, label);
	fl6.fl6_sport = htons(sport);
	fl6.fl6_dport = htons(metaroce_udp_port);
	if (dc)
		dst = dst_cache_get_ip6(dc, &fl6.saddr);
	if (!dst) {
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
	udp_tunnel6_xmit_skb(dst, mnet->sock6->sk, skb, NULL, saddr, daddr, METAROCE_TOS,
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
 * Send one MetaRoCE packet (skb->data at our header) from the device's netdev,
 * over IPv4 for v4-mapped addresses and IPv6 otherwise; sport is the path's
 * entropy.  dc, if not NULL, caches the route of exactly these addresses and
 * port (a path's); BH disabled.  Consumes the skb.
 */
void metaroce_net_xmit(struct metaroce_dev *mdev, struct sk_buff *skb, struct in6_addr *saddr,
		       struct in6_addr *daddr, u16 sport, struct dst_cache *dc)
{
	if (ipv6_addr_v4mapped(daddr))
		metaroce_net_xmit4(mdev, skb, saddr->s6_addr32[3], daddr->s6_addr32[3], sport,
				   dc);
	else
		metaroce_net_xmit6(mdev, skb, saddr, daddr, sport, dc);
}

static int metaroce_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct metaroce_dev *mdev;

	mdev = metaroce_dev_from_netdev(ndev);
	if (!mdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:	/* also sent when the netdev changes namespace */
		metaroce_port_update(mdev);
		metaroce_dev_detach(mdev);
		ib_unregister_device_queued(&mdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
	case NETDEV_CHANGEMTU:
		metaroce_port_update(mdev);
		break;
	default:
		break;
	}
	ib_device_put(&mdev->ibdev);
	return NOTIFY_DONE;
}

static struct notifier_block metaroce_netdev_notifier = {
	.notifier_call = metaroce_netdev_event,
};

int metaroce_net_init(void)
{
	int err;

	err = register_pernet_subsys(&metaroce_pernet_ops);
	if (err)
		return err;
	err = register_netdevice_notifier(&metaroce_netdev_notifier);
	if (err)
		unregister_pernet_subsys(&metaroce_pernet_ops);
	return err;
}

void metaroce_net_exit(void)
{
	unregister_netdevice_notifier(&metaroce_netdev_notifier);
	unregister_pernet_subsys(&metaroce_pernet_ops);
}
