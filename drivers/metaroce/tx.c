// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A connection's transmit work: its clock (handshake and engine deadlines),
 * completions, the send queues, then ACKs and data packets built into skbs
 * (data in bursts per path, optionally one UDP GSO skb each) and sent.
 */

#include <linux/hrtimer.h>
#include <net/dst_cache.h>
#include <net/udp.h>

#include "metaroce.h"
#include "connection.h"
#include "trace.h"
#include "core/codec.h"
#include "core/handshake.h"

/*
 * How a queued skb leaves: its UDP source port, and its path if it has one.
 * Data packets of one path in a row share one skb ([MR-CC-8] bursts), sent
 * as UDP GSO: each segment is one of our packets, cut at gso_size, so the
 * stack's per-packet work (route, netfilter, qdisc) is done once a burst.
 */
struct metaroce_tx_cb {
	u16 sport;
	u8 path;	/* MR_MAX_PATHS: none (ACKs, NAKs, handshake) */
	u8 segs;	/* packets in the skb's page */
	u16 seg_len;	/* bytes of each packet but the last: the gso_size */
	bool open;	/* a packet of the same path and at most seg_len may follow */
	u8 tos;		/* metaroce_tos() of its packets' QP, one per skb */
	u32 room;	/* bytes the page holds */
};

/* Packets one run of the transmit work sends before it yields the CPU. */
#define METAROCE_TX_BUDGET	64

static struct metaroce_tx_cb *metaroce_tx_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct metaroce_tx_cb) > sizeof(skb->cb));
	return (struct metaroce_tx_cb *)skb->cb;
}

/* Packets one GSO skb carries at most, and the largest page it takes for them. */
#define METAROCE_GSO_SEGS	MR_PATH_BURST

#define METAROCE_GSO_ORDER	3

/*
 * Room for a data packet of len bytes on path at the end of q: after the
 * packets of the same path and TOS in the tail skb, or in a new skb whose
 * page has room for a burst.  The bytes are in a page fragment, so that
 * segmentation cuts the page instead of copying it.  NULL if no memory.
 */
static u8 *metaroce_tx_room(struct sk_buff_head *q, u16 sport, u8 path, u32 len, u8 tos)
{
	struct sk_buff *skb = skb_peek_tail(q);
	struct metaroce_tx_cb *cb = skb ? metaroce_tx_cb(skb) : NULL;
	unsigned int order;
	struct page *page;
	skb_frag_t *f;
	u8 *p;

	if (!cb || !cb->open || cb->path != path || cb->sport != sport || cb->tos != tos ||
	    len > cb->seg_len ||
	    cb->segs >= METAROCE_GSO_SEGS ||
	    skb_frag_size(&skb_shinfo(skb)->frags[0]) + len > cb->room) {
		order = min_t(unsigned int, get_order(METAROCE_GSO_SEGS * len), METAROCE_GSO_ORDER);
		page = alloc_pages(GFP_ATOMIC | __GFP_COMP | __GFP_NOWARN | __GFP_NORETRY, order);
		if (!page && order) {
			order = 0;
			page = alloc_pages(GFP_ATOMIC | __GFP_NOWARN, 0);
		}
		if (!page)
			return NULL;
		skb = alloc_skb(METAROCE_TX_HEADROOM, GFP_ATOMIC);
		if (!skb) {
			__free_pages(page, order);
			return NULL;
		}
		skb_reserve(skb, METAROCE_TX_HEADROOM);
		skb_add_rx_frag(skb, 0, page, 0, 0, PAGE_SIZE << order);
		cb = metaroce_tx_cb(skb);
		memset(cb, 0, sizeof(*cb));
		cb->sport = sport;
		cb->path = path;
		cb->tos = tos;
		cb->seg_len = len;
		cb->room = PAGE_SIZE << order;
		__skb_queue_tail(q, skb);
	}
	f = &skb_shinfo(skb)->frags[0];
	p = skb_frag_address(f) + skb_frag_size(f);
	skb_frag_size_add(f, len);
	skb->len += len;
	skb->data_len += len;
	cb->segs++;
	/* A shorter packet (a message's last) ends the run: segments but the last are equal. */
	cb->open = len == cb->seg_len;
	return p;
}

/* A data packet of len bytes in an skb of its own at the end of q (no GSO). */
static u8 *metaroce_tx_single(struct sk_buff_head *q, u16 sport, u8 path, u32 len, u8 tos)
{
	struct sk_buff *skb = alloc_skb(METAROCE_TX_HEADROOM + len, GFP_ATOMIC);
	struct metaroce_tx_cb *cb;

	if (!skb)
		return NULL;
	skb_reserve(skb, METAROCE_TX_HEADROOM);
	cb = metaroce_tx_cb(skb);
	memset(cb, 0, sizeof(*cb));
	cb->sport = sport;
	cb->path = path;
	cb->tos = tos;
	cb->segs = 1;
	cb->seg_len = len;
	__skb_queue_tail(q, skb);
	return skb_put(skb, len);
}

/* Take back the packet metaroce_tx_room() or metaroce_tx_single() last made room for. */
static void metaroce_tx_unroom(struct sk_buff_head *q, u32 len)
{
	struct sk_buff *skb = skb_peek_tail(q);
	struct metaroce_tx_cb *cb = metaroce_tx_cb(skb);

	if (skb_is_nonlinear(skb)) {
		skb_frag_size_sub(&skb_shinfo(skb)->frags[0], len);
		skb->len -= len;
		skb->data_len -= len;
	} else {
		__skb_trim(skb, skb->len - len);
	}
	cb->open = false;	/* the packet behind takes a new skb: keep this one simple */
	if (--cb->segs)
		return;
	__skb_unlink(skb, q);
	kfree_skb(skb);
}

/* A packet of the engine's without payload (ACK, NAK, handshake) in an skb of its own. */
static void metaroce_queue_pkt(struct metaroce_conn *c, struct sk_buff_head *q,
			       const struct mr_pkt *pkt, u16 sport)
{
	u32 len = mr_pkt_header_len(pkt->bth.opcode, pkt->bth.flags, pkt->ack.n_msg_acks) +
		  pkt->bth.payload_len;
	u8 *buf = metaroce_tx_single(q, sport, MR_MAX_PATHS, len, metaroce_tos(0));

	if (!buf || mr_pkt_build(pkt, buf, len) != len) {
		if (buf)
			metaroce_tx_unroom(q, len);
		metaroce_count(c->mdev, METAROCE_CNT_TX_DROP_NOMEM);
		return;
	}
	trace_metaroce_tx(dev_name(&c->mdev->ibdev.dev), pkt, sport);
}

/*
 * A data packet: its payload comes from the send WQE, or for a Read response
 * from memory. True if the engine has more to send now than it said (a NAK).
 */
static bool metaroce_queue_data(struct metaroce_conn *c, struct sk_buff_head *q,
				const struct mr_tx_desc *d)
{
	const struct mr_pkt *pkt = &d->pkt;
	/* A PROBE carries no stream (slot MR_REC_PROBE): no QP to read from. */
	struct metaroce_qp *qp = d->stream_slot < MR_CONN_STREAMS ?
				 c->stream_qp[d->stream_slot] : NULL;
	u32 hlen = mr_pkt_header_len(pkt->bth.opcode, pkt->bth.flags, 0);
	u32 len = hlen + pkt->bth.payload_len;
	struct metaroce_send_wqe *wqe;
	u8 *buf, *payload, path, tos;
	bool ok = true;

	path = min_t(u32, pkt->bth.path_id, MR_MAX_PATHS);
	/* Requests, responses and probes of a QP in its AV's class; probes in ours. */
	tos = metaroce_tos(qp ? READ_ONCE(qp->tclass) : 0);
	if (READ_ONCE(metaroce_tx_gso))
		buf = metaroce_tx_room(q, d->entropy, path, len, tos);
	else
		buf = metaroce_tx_single(q, d->entropy, path, len, tos);
	if (!buf || mr_pkt_build_header(pkt, buf, len) != len) {
		if (buf)
			metaroce_tx_unroom(q, len);
		metaroce_count(c->mdev, METAROCE_CNT_TX_DROP_NOMEM);
		return false;
	}
	payload = buf + hlen;
	if (pkt->bth.payload_len) {
		if (pkt->bth.opcode == MR_OP_READ_RESP) {
			struct metaroce_mr *mr = metaroce_rkey_mr(c->mdev, d->rkey,
								  d->va + pkt->bth.offset,
								  pkt->bth.payload_len);

			ok = mr && metaroce_mr_copy(mr, d->va + pkt->bth.offset, payload,
						    pkt->bth.payload_len, false);
		} else if (qp) {
			wqe = metaroce_sq_wqe(&qp->sq, (u32)d->cookie);
			if (wqe->inline_data)
				memcpy(payload, metaroce_wqe_inline(wqe) + pkt->bth.offset,
				       pkt->bth.payload_len);
			else
				ok = metaroce_sge_copy(qp, wqe->sge, wqe->num_sge,
						       pkt->bth.offset, payload,
						       pkt->bth.payload_len, false);
		} else {
			ok = false;	/* never send the buffer's stale bytes */
		}
	}
	if (!ok && pkt->bth.opcode == MR_OP_READ_RESP) {
		/*
		 * The MR went away after the Read was checked: typically a
		 * retransmission after the requester had it all and the owner
		 * invalidated the MR. Never send bytes we cannot read; NAK.
		 */
		metaroce_count(c->mdev, METAROCE_CNT_READ_RESP_ABORTS);
		mr_conn_abort_response(c->eng, d->stream_slot, pkt->bth.msn, MR_NAK_ACCESS);
		metaroce_tx_unroom(q, len);
		return true;	/* the NAK goes in the next pass */
	}
	if (!ok) {
		metaroce_count(c->mdev, METAROCE_CNT_PLACE_ERRORS);
		metaroce_tx_unroom(q, len);
		return false;
	}
	trace_metaroce_tx(dev_name(&c->mdev->ibdev.dev), pkt, d->entropy);
	return false;
}

/* Minimum delay of a timer armed for a deadline that has already passed. */
#define METAROCE_PAST_DEADLINE_NS	(50 * NSEC_PER_USEC)

/*
 * Arm the timer for the engine's next deadline, once the transmit work has
 * done everything it could at @now. A deadline not after @now then means
 * the engine has nothing to act on: firing at once would repeat forever and
 * starve the CPU (softirq). Such a deadline is an engine bug; it is counted
 * and put off a little instead. @more: the work runs again anyway.
 */
static void metaroce_conn_arm(struct metaroce_conn *c, u64 now, bool more)
{
	u64 when = mr_hs_next_deadline(&c->hs);

	if (c->dead)	/* metaroce_conn_remove() has cancelled the timer for good */
		return;
	if (c->established)
		when = min(when, mr_conn_next_deadline(c->eng));
	if (c->ask_at && c->hs.state == MR_HS_IDLE)
		when = min(when, c->ask_at);
	if (when == MR_NO_DEADLINE)
		return;
	if (when <= now && !more) {
		metaroce_count(c->mdev, METAROCE_CNT_TIMER_PAST);
		when = now + METAROCE_PAST_DEADLINE_NS;
	}
	hrtimer_start(&c->timer, ns_to_ktime(when), HRTIMER_MODE_ABS_SOFT);
}

void metaroce_conn_tx_work(struct work_struct *work)
{
	struct metaroce_conn *c = container_of(work, struct metaroce_conn, tx_work);
	struct mr_completion cm;
	struct mr_hs_local l;
	struct mr_tx_desc d;
	struct sk_buff_head q;
	struct metaroce_qp *qp;
	struct sk_buff *skb;
	struct mr_pkt pkt;
	bool more = false;
	u64 now, ask_at;
	int n = 0;

	__skb_queue_head_init(&q);
	now = metaroce_now();
	ask_at = READ_ONCE(c->ask_at);
	/* Our handshake parameters only when we are about to ask (port_lock). */
	if (ask_at && now >= ask_at)
		metaroce_hs_local(c->mdev, &l, &c->raddr);
	spin_lock_bh(&c->lock);
	if (c->ask_at && now >= c->ask_at && ask_at) {
		/* No CONNECT_REQ came: ask ourselves; a crossing one is fine, [MR-CONN-11]. */
		if (c->hs.state == MR_HS_IDLE && !c->dead)
			mr_hs_connect(&c->hs, &l, now, c->id, get_random_u32());
		WRITE_ONCE(c->ask_at, 0);
	}
	if (mr_hs_on_timer(&c->hs, now) == MR_HS_EV_FAILED)
		metaroce_conn_fail_locked(c, "no answer to the handshake");
	if (c->established && !c->dead) {
		mr_conn_on_timer(c->eng, now);
		if (c->eng->failed)
			metaroce_conn_fail_locked(c, "the peer went silent [MR-CONN-10]");
	}
	while (mr_hs_next_packet(&c->hs, now, &pkt))
		metaroce_queue_pkt(c, &q, &pkt, pkt.sport);
	if (c->established && !c->dead) {
		while (mr_conn_poll_completion(c->eng, &cm))
			metaroce_complete(c, &cm);
		list_for_each_entry(qp, &c->qps, conn_node) {
			/* After the completions: they make room and decide the ring's flag. */
			more |= metaroce_usq_drain(qp);
			metaroce_sq_push(c, qp);
		}
		while (mr_conn_next_ack(c->eng, now, &pkt))
			metaroce_queue_pkt(c, &q, &pkt, pkt.sport);
		for (n = 0; n < METAROCE_TX_BUDGET; n++) {
			if (!mr_conn_next_packet(c->eng, now, &d))
				break;
			more |= metaroce_queue_data(c, &q, &d);
		}
		more |= n == METAROCE_TX_BUDGET;
	} else {
		list_for_each_entry(qp, &c->qps, conn_node)
			more |= metaroce_usq_drain(qp);
	}
	metaroce_conn_arm(c, now, more);
	spin_unlock_bh(&c->lock);
	metaroce_count(c->mdev, METAROCE_CNT_TX_RUNS);
	if (n)
		metaroce_count_add(c->mdev, METAROCE_CNT_TX_RUN_DATA, n);

	while ((skb = __skb_dequeue(&q))) {
		struct metaroce_tx_cb cb = *metaroce_tx_cb(skb);
		struct dst_cache *dc = NULL;
		u32 hash = 0;

		memset(skb->cb, 0, sizeof(skb->cb));
		if (cb.segs > 1) {
			/*
			 * UDP GSO: the UDP header goes in front of skb->data,
			 * and each segment's checksum is completed when cut.
			 */
			skb_shinfo(skb)->gso_size = cb.seg_len;
			skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
			skb_shinfo(skb)->gso_segs = cb.segs;
			skb->ip_summed = CHECKSUM_PARTIAL;
			skb->csum_start = skb_headroom(skb) - sizeof(struct udphdr);
			skb->csum_offset = offsetof(struct udphdr, check);
			metaroce_count(c->mdev, METAROCE_CNT_TX_GSO_SKBS);
		}
		if (cb.path < MR_MAX_PATHS) {
			/* A path that took a new port (re-rolled) needs a new route and hash. */
			dc = &c->dst[cb.path];
			if (c->dst_sport[cb.path] != cb.sport) {
				dst_cache_reset(dc);
				c->dst_sport[cb.path] = cb.sport;
				c->dst_hash[cb.path] = metaroce_flow_hash(&c->laddr, &c->raddr,
									  cb.sport);
			}
			hash = c->dst_hash[cb.path];
		}
		metaroce_net_xmit(c->mdev, skb, &c->laddr, &c->raddr, cb.sport, dc, cb.tos, hash);
	}
	if (more)
		metaroce_conn_kick(c);
	metaroce_conn_put(c);	/* the reference metaroce_conn_kick() took */
}

/* The timer only wakes the transmit work, which acts on every deadline that passed. */
enum hrtimer_restart metaroce_conn_timer(struct hrtimer *t)
{
	metaroce_conn_kick(container_of(t, struct metaroce_conn, timer));
	return HRTIMER_NORESTART;
}
