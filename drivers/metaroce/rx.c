// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where our packets come in: the UDP sockets of each network namespace, and in
 * softirq the checks and the demultiplexing of what they take (connections,
 * CONNECT_REQs, UD datagrams), drops counted by reason.
 */

#include <linux/inetdevice.h>
#include <linux/module.h>
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
	unsigned long id;
	u64 interval;
	u32 n = 0, i;

	if (now - READ_ONCE(ss->at_ns) < MR_SHARE_INTERVAL_NS || !spin_trylock(&ss->lock))
		return;
	interval = now - ss->at_ns;
	if (interval < MR_SHARE_INTERVAL_NS)
		goto out;
	WRITE_ONCE(ss->at_ns, now);

	rcu_read_lock();
	xa_for_each(&mdev->conn_ids, id, c) {
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

/* A packet of one of our connections, by conn_id ([MR-CONN-3]). */
static void metaroce_conn_rx(struct metaroce_dev *mdev, struct sk_buff *skb,
			     const struct mr_pkt *pkt, bool ce)
{
	struct in6_addr laddr, raddr;
	struct metaroce_conn *c;
	struct mr_place pl;
	enum mr_hs_event ev;
	bool renew = false;
	u64 now;

	rcu_read_lock();
	c = xa_load(&mdev->conn_ids, pkt->bth.conn_id);
	if (c && !refcount_inc_not_zero(&c->ref))
		c = NULL;
	rcu_read_unlock();
	if (!c) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_UNKNOWN_CONN);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "unknown connection");
		return;
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
	    (ipv6_addr_equal(&raddr, &laddr) && !(skb->dev->flags & IFF_LOOPBACK))) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_WRONG_ADDR);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "connection of other addresses");
		metaroce_conn_put(c);
		return;
	}

	spin_lock(&c->lock);
	now = metaroce_now();
	c->last_rx_ns = now;
	switch (pkt->bth.opcode) {
	case MR_OP_CONNECT_RESP:
	case MR_OP_CLOSE:
	case MR_OP_CLOSE_ACK:
		ev = mr_hs_on_packet(&c->hs, now, pkt);
		if (ev == MR_HS_EV_ESTABLISHED && !c->established)
			metaroce_conn_established(c);
		else if (ev == MR_HS_EV_CLOSED)
			renew = metaroce_conn_end_locked(c, NULL, "closed by the peer");
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
			mr_conn_on_ack(c->eng, now, pkt);
			metaroce_trace_path(c, pkt->bth.path_id);
		} else if (pkt->bth.opcode == MR_OP_NAK) {
			mr_conn_on_nak(c->eng, now, pkt);
		} else if (mr_conn_receive(c->eng, now, pkt, ce, &pl) == MR_RX_RESULT_PLACE) {
			metaroce_place(c, &pl, skb);
		}
		c->share.bytes += pkt->bth.payload_len;
		break;
	}
	spin_unlock(&c->lock);
	metaroce_share_tick(mdev, now);
	metaroce_conn_kick(c);
	/* [MR-CONN-14] after the kick: the renewal waits for the CLOSE_ACK to leave. */
	if (renew)
		mod_delayed_work(system_wq, &mdev->conn_idle_work, 0);
	metaroce_conn_put(c);
}

/*
 * The device over @ndev, found from the socket a packet arrived on: no
 * reference is taken.  Under RCU, as encap_rcv runs; a device leaves the list,
 * and a grace period passes, before its connections go
 * (metaroce_net_unlist_dev()).
 */
static struct metaroce_dev *metaroce_dev_of_netdev_rcu(struct metaroce_net *mnet,
						       const struct net_device *ndev)
{
	struct metaroce_dev *mdev;

	hlist_for_each_entry_rcu(mdev, &mnet->devs, mnet_node)
		if (rcu_access_pointer(mdev->ndev) == ndev)
			return mdev;
	return NULL;
}

/*
 * A packet to one of this host's own addresses comes in over the loopback
 * device, not over the netdev it was sent from: a datagram to the device's
 * own GID, or a packet between two devices of one namespace.  Its device is
 * the one on the netdev that holds the destination address.  Under RCU, as
 * encap_rcv runs.
 */
static struct metaroce_dev *metaroce_dev_of_local_dst(struct metaroce_net *mnet,
						      struct sk_buff *skb)
{
	struct net *net = dev_net(skb->dev);
	struct net_device *ndev = NULL;

	if (skb->protocol == htons(ETH_P_IP))
		ndev = __ip_dev_find(net, ip_hdr(skb)->daddr, false);
#if IS_REACHABLE(CONFIG_IPV6)
	else if (skb->protocol == htons(ETH_P_IPV6))
		ndev = ipv6_dev_find(net, &ipv6_hdr(skb)->daddr, NULL);
#endif
	return ndev ? metaroce_dev_of_netdev_rcu(mnet, ndev) : NULL;
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

/*
 * Called by UDP for every datagram to our port, in softirq context, after the
 * UDP checksum was verified; skb->data points at the UDP header.  Returns 0:
 * the skb is always consumed.
 */
static int metaroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct metaroce_net *mnet = rcu_dereference_sk_user_data(sk);
	enum mr_parse_result res;
	struct metaroce_dev *mdev;
	struct mr_pkt pkt;

	/* The socket is closing (udp_tunnel_sock_release()): nobody to count against. */
	if (unlikely(!mnet))
		goto drop;
	/* Packets count against the device of the netdev they arrived on (or were sent to). */
	mdev = metaroce_dev_of_netdev_rcu(mnet, skb->dev);
	if (!mdev && (skb->dev->flags & IFF_LOOPBACK))
		mdev = metaroce_dev_of_local_dst(mnet, skb);
	if (!mdev)
		goto drop;
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
	res = mr_pkt_parse(skb->data + sizeof(struct udphdr), skb->len - sizeof(struct udphdr),
			   &pkt);
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
		return 0;
	}
	if (pkt.bth.opcode == MR_OP_UD_SEND)
		metaroce_ud_rx(mdev, skb, &pkt);
	else
		metaroce_conn_rx(mdev, skb, &pkt, skb->protocol == htons(ETH_P_IP) ?
				 INET_ECN_is_ce(ip_hdr(skb)->tos) :
				 INET_ECN_is_ce(ipv6_get_dsfield(ipv6_hdr(skb))));
	/* Taken by the transport (its own drops are counted there): not a drop for the stack. */
	consume_skb(skb);
	return 0;
drop:
	kfree_skb(skb);
	return 0;
}

static struct socket *metaroce_udp_open(struct metaroce_net *mnet, bool ipv6)
{
	struct udp_tunnel_sock_cfg tnl = {
		.sk_user_data = mnet,
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
	err = udp_sock_create(mnet->net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(mnet->net, sock, &tnl);
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
 * being handled: encap_rcv runs under RCU.  Under RTNL, so that a second
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
 * The stack tests a static key before it looks for encap_rcv, and each tunnel
 * socket holds it.  Our sockets open with a namespace's first device and close
 * with its last, so without a hold of our own every such rdma link add and
 * delete flips the key: kernel text patched while every CPU receives UDP.  In
 * TCG guests a CPU receiving then took the patch's int3 as an oops
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
