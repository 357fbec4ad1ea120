// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The connection table of a device: connections made for our QPs or accepted
 * from peers' CONNECT_REQs ([MR-CONN-2], [MR-CONN-7], [MR-CONN-12]), their
 * establishment, idle CLOSE ([MR-CONN-9]) and removal.
 */

#include <linux/hrtimer.h>
#include <linux/random.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>

#include "metaroce.h"
#include "connection.h"
#include "trace.h"
#include "core/cc.h"
#include "core/codec.h"
#include "core/handshake.h"

void metaroce_open_stream(struct metaroce_conn *c, struct metaroce_qp *qp)
{
	int slot;

	slot = mr_conn_open_stream(c->eng, qp->ibqp.qp_num, qp->attr.dest_qp_num, qp->stream_mem);
	if (slot >= 0)
		qp->stream_mem = NULL;	/* the engine's until the stream closes */
	if (slot < 0) {
		metaroce_count(c->mdev, METAROCE_CNT_STREAM_OPEN_ERRORS);
		metaroce_qp_to_error(qp);
		return;
	}
	qp->slot = slot;
	c->stream_qp[slot] = qp;
	/* The stream's rsn 0 is the first receive not yet taken. */
	spin_lock(&qp->rq.lock);
	qp->rq_base = qp->rq.head;
	spin_unlock(&qp->rq.lock);
	metaroce_stream_set_limits(c, qp);
	metaroce_sq_push(c, qp);
}

/* The QP's attributes that bound its stream: RNR retries and timer, Reads in flight. */
void metaroce_stream_set_limits(struct metaroce_conn *c, struct metaroce_qp *qp)
{
	mr_conn_set_rnr(c->eng, qp->slot, qp->attr.rnr_retry,
			metaroce_rnr_us(qp->attr.min_rnr_timer));
	mr_conn_set_rd_atomic(c->eng, qp->slot, qp->attr.max_rd_atomic);
}

void metaroce_conn_established(struct metaroce_conn *c)
{
	struct mr_conn_cfg cfg;
	struct metaroce_qp *qp;

	mr_conn_cfg_defaults(&cfg);
	mr_hs_conn_cfg(&c->hs, &cfg);
	if (READ_ONCE(metaroce_rto_min_us))
		cfg.rto.min_ns = (u64)READ_ONCE(metaroce_rto_min_us) * NSEC_PER_USEC;
	if (READ_ONCE(metaroce_rto_max_us))
		cfg.rto.max_ns = (u64)READ_ONCE(metaroce_rto_max_us) * NSEC_PER_USEC;
	cfg.rto.max_ns = max(cfg.rto.max_ns, cfg.rto.min_ns);
	cfg.rto.initial_ns = clamp(cfg.rto.initial_ns, cfg.rto.min_ns, cfg.rto.max_ns);
	cfg.seed = get_random_u64();
	mr_conn_init(c->eng, &cfg);
	c->eng->ops = &metaroce_engine_ops;
	c->eng->ops_ctx = c;
	c->established = true;
	/* A QP failed when the connection ended ([MR-CONN-14]) stays without a stream. */
	list_for_each_entry(qp, &c->qps, conn_node)
		if (qp->slot < 0 && READ_ONCE(qp->state) != IB_QPS_ERR)
			metaroce_open_stream(c, qp);
}

/* [MR-CONN-3] a new src_conn_id: random over all 32 bits, nonzero and unique among ours. */
static int metaroce_conn_new_id(struct metaroce_conn *c, u32 *id)
{
	int err, tries;

	for (tries = 0, err = -EBUSY; tries < 16 && err == -EBUSY; tries++) {
		*id = get_random_u32();
		if (*id)
			err = xa_insert(&c->mdev->conn_ids, *id, c, GFP_KERNEL);
	}
	return err;
}

/*
 * Start the handshake of a connection our QPs wait for; c->lock held.
 * [MR-CONN-12] both ends move their QPs to RTR; the one with the lower
 * address asks and the other waits for its CONNECT_REQ, so the handshake
 * never crosses itself.  [MR-CONN-13] a connection to our own address is its
 * own peer, up at once: its packets come back over loopback.
 */
void metaroce_conn_begin_locked(struct metaroce_conn *c, const struct mr_hs_local *l)
{
	if (ipv6_addr_equal(&c->laddr, &c->raddr)) {
		if (mr_hs_loopback(&c->hs, l, c->id, get_random_u32()) == MR_HS_EV_ESTABLISHED)
			metaroce_conn_established(c);
	} else if (mr_hs_we_ask(c->laddr.s6_addr, c->raddr.s6_addr)) {
		mr_hs_connect(&c->hs, l, metaroce_now(), c->id, get_random_u32());
	} else {
		WRITE_ONCE(c->ask_at, metaroce_now() + MR_CONN_WAIT_NS);
	}
}

/*
 * A connection of ours, made for our QP (local) or accepted from a peer.
 * Charged to the memory cgroup of the task that makes it: the process whose
 * QP asked, or the accept worker.
 */
struct metaroce_conn *metaroce_conn_alloc(struct metaroce_dev *mdev,
					  const struct in6_addr *laddr,
					  const struct in6_addr *raddr, bool local)
{
	struct metaroce_conn *c;
	u32 p;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return NULL;
	c->eng = kvzalloc(sizeof(*c->eng), GFP_KERNEL_ACCOUNT);
	for (p = 0; c->eng && p < MR_MAX_PATHS; p++) {
		if (dst_cache_init(&c->dst[p], GFP_KERNEL_ACCOUNT))
			break;
	}
	if (!c->eng || p < MR_MAX_PATHS) {
		metaroce_conn_free_dst(c);
		kvfree(c->eng);
		kfree(c);
		return NULL;
	}
	c->mdev = mdev;
	c->laddr = *laddr;
	c->raddr = *raddr;
	refcount_set(&c->ref, 1);	/* the table's */
	c->idle_since = metaroce_now();	/* an accepted one waits for its first QP */
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->qps);
	hrtimer_init(&c->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	c->timer.function = metaroce_conn_timer;
	INIT_WORK(&c->tx_work, metaroce_conn_tx_work);

	if (metaroce_conn_new_id(c, &c->id)) {
		metaroce_conn_free_dst(c);
		kvfree(c->eng);
		kfree(c);
		return NULL;
	}
	list_add(&c->node, &mdev->conns);
	list_add_rcu(&c->share_node, &mdev->share_conns);
	mdev->nr_conns++;
	c->local = local;
	mdev->nr_local_conns += local;
	/* One accepted from a peer whose QP never comes here must not stay forever. */
	queue_delayed_work(system_wq, &mdev->conn_idle_work, nsecs_to_jiffies(MR_CONN_IDLE_NS) + 1);
	return c;
}

struct metaroce_conn *metaroce_conn_find(struct metaroce_dev *mdev,
					 const struct in6_addr *laddr,
					 const struct in6_addr *raddr)
{
	struct metaroce_conn *c;

	/*
	 * [MR-CONN-2] the rule is the engine's (mr_hs_joinable()).  A
	 * connection of ours made beside a retiring one would leave our new
	 * QP and the peer's on different connections: nvme discover then
	 * connect did that.
	 */
	list_for_each_entry(c, &mdev->conns, node)
		if (ipv6_addr_equal(&c->laddr, laddr) && ipv6_addr_equal(&c->raddr, raddr) &&
		    (mr_hs_joinable(&c->hs, c->dead, c->retiring) || metaroce_conn_renewing(c)))
			return c;
	return NULL;
}

/* Add a connection's engine counters to v (METAROCE_ENG_* order); c->lock held. */
static void metaroce_conn_eng_add_locked(struct metaroce_conn *c, u64 *v)
{
	const struct mr_conn *e = c->eng;

	v[METAROCE_ENG_RETRANSMITS - METAROCE_NR_COUNTERS] += e->retransmits;
	v[METAROCE_ENG_RTOS - METAROCE_NR_COUNTERS] += e->rtos;
	v[METAROCE_ENG_SPURIOUS_RTOS - METAROCE_NR_COUNTERS] += e->spurious_rtos;
	v[METAROCE_ENG_RTOS_HELD - METAROCE_NR_COUNTERS] += e->rtos_held;
	v[METAROCE_ENG_SACK_LOSSES - METAROCE_NR_COUNTERS] += e->sack_losses;
	v[METAROCE_ENG_TAIL_PROBES - METAROCE_NR_COUNTERS] += e->tail_probes;
	v[METAROCE_ENG_MSG_PROBES - METAROCE_NR_COUNTERS] += e->msg_probes;
	v[METAROCE_ENG_PATH_FAILURES - METAROCE_NR_COUNTERS] += e->path_failures;
	v[METAROCE_ENG_PATH_REBALANCES - METAROCE_NR_COUNTERS] += e->path_rebalances;
	v[METAROCE_ENG_RX_DUPLICATES - METAROCE_NR_COUNTERS] += e->rx_duplicates;
	v[METAROCE_ENG_RX_DROPPED - METAROCE_NR_COUNTERS] += e->rx_dropped;
	v[METAROCE_ENG_NAKS_SENT - METAROCE_NR_COUNTERS] += e->naks_sent;
	v[METAROCE_ENG_NAKS_RECEIVED - METAROCE_NR_COUNTERS] += e->naks_received;
	v[METAROCE_ENG_ECN_ECHOES - METAROCE_NR_COUNTERS] += e->ecn_echoes;
	v[METAROCE_ENG_RX_BAD_RSNS - METAROCE_NR_COUNTERS] += e->rx_bad_rsns;
	v[METAROCE_ENG_ACKS_SENT - METAROCE_NR_COUNTERS] += e->acks_sent;
	v[METAROCE_ENG_ACKS_RECEIVED - METAROCE_NR_COUNTERS] += e->acks_received;
	v[METAROCE_ENG_PACER_BLOCKED - METAROCE_NR_COUNTERS] += e->pacer_blocked;
	v[METAROCE_ENG_WINDOW_FULL - METAROCE_NR_COUNTERS] += e->window_full;
	v[METAROCE_ENG_ACK_INFLIGHT_SUM - METAROCE_NR_COUNTERS] += e->ack_inflight_sum;
	/* A maximum over the device's connections, the removed ones included. */
	v[METAROCE_ENG_INFLIGHT_MAX - METAROCE_NR_COUNTERS] =
		max_t(u64, v[METAROCE_ENG_INFLIGHT_MAX - METAROCE_NR_COUNTERS], e->inflight_max);
}

static void metaroce_conn_eng_add(struct metaroce_conn *c, u64 *v)
{
	spin_lock_bh(&c->lock);
	metaroce_conn_eng_add_locked(c, v);
	spin_unlock_bh(&c->lock);
}

void metaroce_conn_eng_stats(struct metaroce_dev *mdev, u64 *v)
{
	struct metaroce_conn *c;

	mutex_lock(&mdev->conn_mutex);
	memcpy(v, mdev->eng_retired, sizeof(mdev->eng_retired));
	list_for_each_entry(c, &mdev->conns, node)
		metaroce_conn_eng_add(c, v);
	mutex_unlock(&mdev->conn_mutex);
}

/* Take a connection out of the table and stop it; conn_mutex held. */
void metaroce_conn_remove(struct metaroce_conn *c)
{
	spin_lock_bh(&c->lock);
	c->dead = true;
	spin_unlock_bh(&c->lock);
	xa_erase(&c->mdev->conn_ids, c->id);
	list_del_init(&c->node);
	list_del_rcu(&c->share_node);	/* readers hold a reference or RCU: kfree_rcu() */
	c->mdev->nr_conns--;
	c->mdev->nr_local_conns -= c->local;
	metaroce_conn_eng_add(c, c->mdev->eng_retired);
	/* dead is set: neither a running work nor the receive path re-arms the timer. */
	hrtimer_cancel(&c->timer);
	if (cancel_work_sync(&c->tx_work))
		metaroce_conn_put(c);	/* the queued work's reference */
	metaroce_conn_put(c);		/* the table's */
}

/*
 * [MR-CONN-14] the peer ended the connection, but some of its QPs' streams
 * never sent nor received: the connection starts over for them, the same
 * object with a new conn_id and engine, so that the QPs keep it.  req: the
 * peer's CONNECT_REQ that replaced it, answered into it; NULL after a CLOSE,
 * when it begins as if its QPs had just moved to RTR.  conn_mutex held.
 */
static void metaroce_conn_renew(struct metaroce_conn *c, const struct mr_pkt *req)
{
	struct metaroce_dev *mdev = c->mdev;
	struct metaroce_qp *qp;
	struct mr_hs_local l;
	u32 old_id = c->id, id;
	bool live = false;

	/* The CLOSE_ACK the old connection owes leaves first. */
	flush_work(&c->tx_work);
	if (metaroce_conn_new_id(c, &id)) {
		spin_lock_bh(&c->lock);
		metaroce_conn_fail_locked(c, "no conn_id to start over");
		spin_unlock_bh(&c->lock);
		return;
	}
	metaroce_hs_local(mdev, &l, &c->raddr);
	spin_lock_bh(&c->lock);
	list_for_each_entry(qp, &c->qps, conn_node)
		live |= READ_ONCE(qp->state) != IB_QPS_ERR;
	/*
	 * Failed since ([MR-CONN-10]), or the QPs it was kept for went or
	 * failed: it just ends, its QPs (all in Error) counted once already.
	 */
	if (!live)
		c->dead = true;
	if (!metaroce_conn_renewing(c)) {
		spin_unlock_bh(&c->lock);
		xa_erase(&mdev->conn_ids, id);
		return;
	}
	/* Every stream gives its memory back to its QP; only the unused ones reopen. */
	list_for_each_entry(qp, &c->qps, conn_node) {
		if (qp->slot < 0)
			continue;
		c->stream_qp[qp->slot] = NULL;
		qp->stream_mem = mr_conn_close_stream(c->eng, qp->slot);
		qp->slot = -1;
	}
	metaroce_conn_eng_add_locked(c, mdev->eng_retired);
	memset(c->eng, 0, sizeof(*c->eng));	/* as new: mr_conn_init() at establishment */
	memset(&c->hs, 0, sizeof(c->hs));
	c->established = false;
	c->id = id;
	if (!req)
		metaroce_conn_begin_locked(c, &l);
	else if (mr_hs_accept(&c->hs, &l, req, c->id, get_random_u32()) == MR_HS_EV_ESTABLISHED)
		metaroce_conn_established(c);
	else	/* [MR-CONN-4] no agreement: nothing can carry the QPs' streams */
		metaroce_conn_fail_locked(c, "no agreement with the peer's new connection");
	spin_unlock_bh(&c->lock);
	xa_erase(&mdev->conn_ids, old_id);
	metaroce_count(mdev, METAROCE_CNT_CONN_RENEWALS);
	metaroce_conn_kick(c);
}

/* Connections without QPs: CLOSE those idle for MR_CONN_IDLE, drop dead ones. */
static void metaroce_conn_idle_work(struct work_struct *work)
{
	struct metaroce_dev *mdev = container_of(to_delayed_work(work), struct metaroce_dev,
						 conn_idle_work);
	struct metaroce_conn *c, *tmp;
	u64 now = metaroce_now(), wait = 0, w;
	enum mr_hs_idle_verdict v;

	mutex_lock(&mdev->conn_mutex);
	list_for_each_entry_safe(c, tmp, &mdev->conns, node) {
		if (metaroce_conn_renewing(c))
			metaroce_conn_renew(c, NULL);	/* [MR-CONN-14] */
		spin_lock_bh(&c->lock);
		/*
		 * [MR-CONN-9] without QPs for MR_CONN_IDLE: an established
		 * connection is closed, a handshake nobody waits for any more
		 * is dropped; a dead connection goes at once.
		 */
		v = mr_hs_idle(&c->hs, !list_empty(&c->qps), c->dead, c->idle_since, now, &w);
		if (v == MR_HS_IDLE_WAIT)
			wait = wait ? min(wait, w) : w;	/* the next one due */
		else if (v == MR_HS_IDLE_CLOSE)
			mr_hs_close(&c->hs, now, MR_CLOSE_IDLE);
		spin_unlock_bh(&c->lock);
		if (v == MR_HS_IDLE_CLOSE) {
			/* Best effort CLOSE, then the connection goes. */
			metaroce_conn_kick(c);
			flush_work(&c->tx_work);
		}
		if (v == MR_HS_IDLE_CLOSE || v == MR_HS_IDLE_DROP)
			metaroce_conn_remove(c);
	}
	mutex_unlock(&mdev->conn_mutex);
	if (wait)
		queue_delayed_work(system_wq, &mdev->conn_idle_work, nsecs_to_jiffies(wait) + 1);
}

/* CONNECT_REQs need memory for a new connection: accept them in process context. */
void metaroce_conn_rx_connect_req(struct metaroce_dev *mdev, struct sk_buff *skb)
{
	if (skb_queue_len(&mdev->connect_reqs) >= 64) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_NOMEM);
		kfree_skb(skb);
		return;
	}
	skb_queue_tail(&mdev->connect_reqs, skb);
	schedule_work(&mdev->accept_work);
}

static void metaroce_accept_one(struct metaroce_dev *mdev, struct sk_buff *skb)
{
	struct in6_addr laddr, raddr;
	struct metaroce_conn *c;
	enum mr_hs_req_action act;
	struct mr_hs_local l;
	struct mr_pkt pkt;
	bool renew;

	if (mr_pkt_parse(skb->data + sizeof(struct udphdr), skb->len - sizeof(struct udphdr),
			 &pkt) != MR_PARSE_OK)
		return;
	metaroce_skb_addrs(skb, &laddr, &raddr);

	metaroce_hs_local(mdev, &l, &raddr);
	c = metaroce_conn_find(mdev, &laddr, &raddr);
	if (c) {
		spin_lock_bh(&c->lock);
		/*
		 * [MR-CONN-7] a claim of a restart is believed only when the
		 * old connection, challenged, stays silent: one spoofed
		 * CONNECT_REQ must not end every QP to the peer.
		 */
		act = mr_hs_on_connect_req(&c->hs, metaroce_now(), READ_ONCE(c->last_rx_ns), &pkt);
		if (act == MR_HS_ACT_ACCEPT &&
		    mr_hs_accept(&c->hs, &l, &pkt, c->id, get_random_u32()) == MR_HS_EV_ESTABLISHED)
			metaroce_conn_established(c);	/* our QP waited for it */
		else if (act == MR_HS_ACT_ESTABLISHED && !c->established)
			metaroce_conn_established(c);
		else if (act == MR_HS_ACT_CHALLENGE && c->established)
			mr_conn_challenge(c->eng);
		spin_unlock_bh(&c->lock);
		if (act == MR_HS_ACT_CHALLENGE || act == MR_HS_ACT_WAIT)
			metaroce_count(mdev, METAROCE_CNT_RESTART_CHALLENGES);
		if (act != MR_HS_ACT_REPLACE) {
			metaroce_conn_kick(c);
			return;
		}
		/*
		 * A restarted or replaced peer, proven: the old connection
		 * ends.  [MR-CONN-14] when QPs whose streams never carried
		 * anything are on it, the request starts it over for them.
		 */
		spin_lock_bh(&c->lock);
		renew = metaroce_conn_end_locked(c, &pkt, "the peer restarted [MR-CONN-7]");
		spin_unlock_bh(&c->lock);
		if (renew) {
			metaroce_conn_renew(c, &pkt);
			return;
		}
		metaroce_conn_remove(c);
	}
	if (mdev->nr_conns >= READ_ONCE(metaroce_max_conns)) {
		/* [MR-SEC-4] silently: an answer would serve a flood. */
		metaroce_count(mdev, METAROCE_CNT_CONN_LIMIT_DROPS);
		return;
	}
	c = metaroce_conn_alloc(mdev, &laddr, &raddr, false);
	if (!c) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_NOMEM);
		return;
	}
	spin_lock_bh(&c->lock);
	if (mr_hs_accept(&c->hs, &l, &pkt, c->id, get_random_u32()) == MR_HS_EV_ESTABLISHED)
		metaroce_conn_established(c);
	spin_unlock_bh(&c->lock);
	metaroce_conn_kick(c);
}

static void metaroce_accept_work(struct work_struct *work)
{
	struct metaroce_dev *mdev = container_of(work, struct metaroce_dev, accept_work);
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&mdev->connect_reqs))) {
		mutex_lock(&mdev->conn_mutex);
		metaroce_accept_one(mdev, skb);
		mutex_unlock(&mdev->conn_mutex);
		consume_skb(skb);
	}
}

int metaroce_conn_dev_init(struct metaroce_dev *mdev)
{
	mutex_init(&mdev->conn_mutex);
	INIT_LIST_HEAD(&mdev->conns);
	INIT_LIST_HEAD(&mdev->share_conns);
	xa_init(&mdev->conn_ids);
	skb_queue_head_init(&mdev->connect_reqs);
	INIT_WORK(&mdev->accept_work, metaroce_accept_work);
	INIT_DELAYED_WORK(&mdev->conn_idle_work, metaroce_conn_idle_work);
	mdev->incarnation = get_random_u64() | 1;
	spin_lock_init(&mdev->share.lock);
	return 0;
}

/*
 * [MR-CONN-9] Device going away, its netdev still attached: every QP is
 * destroyed by now.  Tell each established peer with one best-effort CLOSE,
 * so that its QPs to us fail now and its next QP asks our next incarnation,
 * instead of joining a connection whose other end is gone.
 */
void metaroce_conn_dev_close_all(struct metaroce_dev *mdev)
{
	struct metaroce_conn *c;
	bool close;

	/* The accept work makes connections, which arm the idle work: stop it first. */
	cancel_work_sync(&mdev->accept_work);
	skb_queue_purge(&mdev->connect_reqs);
	cancel_delayed_work_sync(&mdev->conn_idle_work);
	mutex_lock(&mdev->conn_mutex);
	list_for_each_entry(c, &mdev->conns, node) {
		spin_lock_bh(&c->lock);
		close = !c->dead && c->hs.state == MR_HS_ESTABLISHED;
		if (close)
			mr_hs_close(&c->hs, metaroce_now(), MR_CLOSE_NORMAL);
		spin_unlock_bh(&c->lock);
		if (close) {
			metaroce_conn_kick(c);
			flush_work(&c->tx_work);
		}
	}
	mutex_unlock(&mdev->conn_mutex);
}

/* Device going away: every QP is destroyed by now; drop what connections remain. */
void metaroce_conn_dev_cleanup(struct metaroce_dev *mdev)
{
	struct metaroce_conn *c, *tmp;

	cancel_work_sync(&mdev->accept_work);
	skb_queue_purge(&mdev->connect_reqs);
	cancel_delayed_work_sync(&mdev->conn_idle_work);
	mutex_lock(&mdev->conn_mutex);
	list_for_each_entry_safe(c, tmp, &mdev->conns, node)
		metaroce_conn_remove(c);
	mutex_unlock(&mdev->conn_mutex);
	xa_destroy(&mdev->conn_ids);
}
