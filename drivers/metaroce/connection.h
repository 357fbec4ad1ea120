/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A connection to a peer ([MR-CONN-1]): the object that the transmit work,
 * the receive path, placement, completions and the QPs share, and the small
 * helpers they all use.  The table of a device's connections is peer.c.
 */
#ifndef METAROCE_CONNECTION_H
#define METAROCE_CONNECTION_H

#include <linux/hrtimer.h>
#include <linux/refcount.h>
#include <linux/workqueue.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ipv6.h>

#include "metaroce.h"
#include "core/conn.h"
#include "core/handshake.h"

struct metaroce_conn {
	struct metaroce_dev *mdev;
	struct list_head node;		/* mdev->conns */
	struct list_head share_node;	/* mdev->share_conns */
	refcount_t ref;
	struct in6_addr laddr, raddr;	/* IPv4 as v4-mapped, like the GIDs */
	u32 id;				/* our src_conn_id, key of mdev->conn_ids */

	spinlock_t lock;		/* everything below */
	struct mr_hs hs;
	struct mr_conn *eng;		/* valid once established */
	bool established;
	bool dead;
	struct list_head qps;		/* attached QPs */
	u64 idle_since;			/* when the last QP went */
	bool retiring;			/* its last QP went: CLOSE after MR_CONN_IDLE */
	u64 ask_at;			/* [MR-CONN-12] the waiting side asks itself then */
	u64 last_rx_ns;			/* [MR-CONN-7] a packet of the peer's last came */
	bool local;			/* made for our QP (nr_local_conns), not accepted */
	struct metaroce_qp *stream_qp[MR_CONN_STREAMS];
	/*
	 * The MR metaroce_check_place() let the Write being received into, for
	 * metaroce_place() of the same packet: under this lock and the receive
	 * path's RCU section, which a deregistration waits out before it frees.
	 */
	struct metaroce_mr *rx_mr;
	struct mr_share share;		/* [MR-CC-9] this sender in our allocation */

	/* Each path's route and flow hash, found once for its source port (0: none yet). */
	struct dst_cache dst[MR_MAX_PATHS];
	u16 dst_sport[MR_MAX_PATHS];
	u32 dst_hash[MR_MAX_PATHS];

	struct hrtimer timer;
	struct work_struct tx_work;
	struct rcu_head rcu;
};

static inline u64 metaroce_now(void)
{
	return ktime_get_ns();
}

static inline void metaroce_conn_free_dst(struct metaroce_conn *c)
{
	u32 p;

	for (p = 0; p < MR_MAX_PATHS; p++)
		if (c->dst[p].cache)
			dst_cache_destroy(&c->dst[p]);
}

/*
 * [MR-CONN-14] the peer ended the connection, which starts over for QPs whose
 * streams carried nothing (metaroce_conn_end_locked() ended its engine).
 * Read without c->lock by the table's walks, which metaroce_conn_renew()
 * confirms under it.
 */
static inline bool metaroce_conn_renewing(const struct metaroce_conn *c)
{
	return !READ_ONCE(c->dead) && READ_ONCE(c->established) && READ_ONCE(c->eng->ended);
}

static inline void metaroce_conn_put(struct metaroce_conn *c)
{
	u32 i;

	if (refcount_dec_and_test(&c->ref)) {
		/* Streams a dead connection never closed: their memory goes with it. */
		for (i = 0; i < MR_CONN_STREAMS; i++)
			kvfree(c->eng->mem[i]);
		kvfree(c->eng);
		metaroce_conn_free_dst(c);
		kfree_rcu(c, rcu);
	}
}

/*
 * Queue the transmit work; a queued work holds a reference, dropped when it has run.
 * A work still pending has not started: it runs after this and sees what the caller
 * did, under c->lock, before it kicked.  That is the common case on receive, a kick
 * for each packet of a burst, and costs no atomic.
 */
static inline void metaroce_conn_kick(struct metaroce_conn *c)
{
	/*
	 * The caller's stores before the test of PENDING, as queue_work()'s
	 * test_and_set_bit() would order them; pairs with the worker's barrier
	 * between clearing PENDING and running the work function.
	 */
	smp_mb();
	if (work_pending(&c->tx_work))
		return;
	refcount_inc(&c->ref);
	if (!queue_work(METAROCE_TX_WQ, &c->tx_work))
		metaroce_conn_put(c);
}

static inline u32 metaroce_rnr_us(u8 timer)
{
	/* IB's min_rnr_timer encoding, coarsely: 0 means 655 ms, n about 10 us * 2^(n/3). */
	return timer ? 10u << min_t(u32, timer / 3, 16) : 655360;
}

/* Our handshake parameters for a connection to raddr (its family decides the pmtu). */
static inline void metaroce_hs_local(struct metaroce_dev *mdev, struct mr_hs_local *l,
				     const struct in6_addr *raddr)
{
	mr_hs_local_defaults(l, mdev->incarnation);
	l->max_paths = clamp_t(u32, metaroce_paths, 1, MR_MAX_PATHS);
	l->link_mbps = metaroce_capacity_mbps(mdev);
	spin_lock_bh(&mdev->port_lock);
	l->pmtu = mdev->wire_pmtu[ipv6_addr_v4mapped(raddr)];
	spin_unlock_bh(&mdev->port_lock);
}

/* The addresses of a received packet, IPv4 as v4-mapped like the GIDs. */
static inline void metaroce_skb_addrs(const struct sk_buff *skb, struct in6_addr *laddr,
				      struct in6_addr *raddr)
{
	if (skb->protocol == htons(ETH_P_IP)) {
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr, laddr);
		ipv6_addr_set_v4mapped(ip_hdr(skb)->saddr, raddr);
	} else {
		*laddr = ipv6_hdr(skb)->daddr;
		*raddr = ipv6_hdr(skb)->saddr;
	}
}

#endif /* METAROCE_CONNECTION_H */
