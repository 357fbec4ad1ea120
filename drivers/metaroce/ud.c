// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Datagrams: UD QPs and the GSI QP (QP1), which carries the MADs of ib_cm and
 * so rdma_cm.  [MR-VERBS-9] a UD_SEND is one unacknowledged packet, never
 * retransmitted; [MR-VERBS-10] its path entropy is chosen per packet.
 *
 * Posting builds the packet at once (the WR's buffers may be reused as soon
 * as post_send returns) and queues it on the QP; a work item on the transmit
 * workqueue sends it and completes the WR.  Posting never transmits itself
 * because ib_mad posts with interrupts disabled.
 */

#include <linux/random.h>
#include <net/ip.h>
#include <net/ipv6.h>

#include "metaroce.h"
#include "trace.h"
#include "core/codec.h"

/* What the transmit work needs of a queued datagram; lives in skb->cb. */
struct metaroce_ud_cb {
	struct in6_addr saddr, daddr;
	u64 wr_id;
	u16 len;		/* at most the path MTU */
	u16 sport;
	u8 tos;			/* metaroce_tos() of the AH's traffic class */
	bool signaled;
	u8 status;		/* not IB_WC_SUCCESS: a WR that failed when posted */
};

static_assert(sizeof(struct metaroce_ud_cb) <= sizeof_field(struct sk_buff, cb));

static struct metaroce_ud_cb *metaroce_ud_cb(struct sk_buff *skb)
{
	return (struct metaroce_ud_cb *)skb->cb;
}

static void metaroce_ud_complete(struct metaroce_qp *qp, const struct metaroce_ud_cb *cb,
				 enum ib_wc_status status)
{
	struct ib_wc wc = {
		.wr_id = cb->wr_id,
		.status = status,
		.opcode = IB_WC_SEND,
		.byte_len = cb->len,
		.qp = &qp->ibqp,
	};

	/* A user QP's ring slot is free before the process sees the completion. */
	if (qp->uqp)
		metaroce_ud_usq_done(qp);
	if (status != IB_WC_SUCCESS || cb->signaled)
		metaroce_cq_push(to_mcq(qp->ibqp.send_cq), &wc, false);
}

/*
 * A WR that failed stops the send queue (SQE) as on InfiniBand: later WRs
 * flush until the consumer moves the QP back to RTS, as ib_mad does.
 */
static bool metaroce_ud_stopped(struct metaroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	return state == IB_QPS_ERR || state == IB_QPS_SQE;
}

static void metaroce_ud_tx_work(struct work_struct *work)
{
	struct metaroce_qp *qp = container_of(work, struct metaroce_qp, ud_work);
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_ud_cb cb;
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&qp->ud_txq))) {
		cb = *metaroce_ud_cb(skb);
		if (cb.status != IB_WC_SUCCESS && !metaroce_ud_stopped(qp)) {
			/* Its turn: it completes with its error and stops the queue. */
			kfree_skb(skb);
			cmpxchg(&qp->state, IB_QPS_RTS, IB_QPS_SQE);
			metaroce_ud_complete(qp, &cb, cb.status);
			continue;
		}
		if (metaroce_ud_stopped(qp)) {
			kfree_skb(skb);
			metaroce_ud_complete(qp, &cb, IB_WC_WR_FLUSH_ERR);
			continue;
		}
		memset(skb->cb, 0, sizeof(skb->cb));
		metaroce_net_xmit(mdev, skb, &cb.saddr, &cb.daddr, cb.sport, NULL, cb.tos, 0);
		metaroce_ud_complete(qp, &cb, IB_WC_SUCCESS);
	}
}

/* Datagrams queued on a QP that moved to Error complete as flushed, in order. */
void metaroce_ud_flush(struct metaroce_qp *qp)
{
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&qp->ud_txq))) {
		metaroce_ud_complete(qp, metaroce_ud_cb(skb), IB_WC_WR_FLUSH_ERR);
		kfree_skb(skb);
	}
}

void metaroce_ud_init(struct metaroce_qp *qp)
{
	skb_queue_head_init(&qp->ud_txq);
	INIT_WORK(&qp->ud_work, metaroce_ud_tx_work);
}

void metaroce_ud_destroy(struct metaroce_qp *qp)
{
	cancel_work_sync(&qp->ud_work);
	skb_queue_purge(&qp->ud_txq);
	/* The receive path finds UD QPs under RCU; let it finish with this one. */
	synchronize_net();
}

/* Largest datagram payload: the port's active MTU. */
static u32 metaroce_ud_max_len(struct metaroce_dev *mdev)
{
	/* No port_lock: ib_mad posts with interrupts disabled. */
	return ib_mtu_enum_to_int(READ_ONCE(mdev->active_mtu));
}

/* Gather a WR's bytes into buf: inline (kernel addresses) or through lkeys. */
static bool metaroce_ud_gather(struct metaroce_qp *qp, const struct ib_send_wr *wr, u8 *buf)
{
	bool ok;
	int i;

	if (!(wr->send_flags & IB_SEND_INLINE)) {
		/*
		 * The user UD doorbell runs in process context: the MRs it
		 * reads must not be freed under it (dereg waits for RCU).
		 */
		rcu_read_lock();
		ok = metaroce_sge_copy(qp, wr->sg_list, wr->num_sge, 0, buf,
				       metaroce_sge_len(wr->sg_list, wr->num_sge), false);
		rcu_read_unlock();
		return ok;
	}
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(buf, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		buf += wr->sg_list[i].length;
	}
	return true;
}

/* Build one datagram; returns an IB status, with *skbp set on success. */
static enum ib_wc_status metaroce_ud_build(struct metaroce_qp *qp, const struct ib_send_wr *wr,
					   const struct metaroce_ud_dest *dest,
					   struct sk_buff **skbp)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_ud_cb *cb;
	struct mr_pkt pkt = {};
	struct sk_buff *skb;
	u32 len, hlen;

	len = metaroce_sge_len(wr->sg_list, wr->num_sge);
	if (len > metaroce_ud_max_len(mdev))
		return IB_WC_LOC_LEN_ERR;

	pkt.bth.version = MR_VERSION;
	pkt.bth.opcode = MR_OP_UD_SEND;
	pkt.bth.flags = MR_F_LAST;
	pkt.bth.payload_len = len;
	pkt.bth.stream = dest->qpn & MR_STREAM_ID_MASK;
	pkt.bth.timestamp = (u32)div_u64(ktime_get_ns(), NSEC_PER_USEC);
	/* As on InfiniBand, a qkey with the top bit set means "the QP's own". */
	pkt.udh.qkey = dest->qkey & 0x80000000u ? READ_ONCE(qp->attr.qkey) : dest->qkey;
	pkt.udh.src_qpn = qp->ibqp.qp_num;
	if (wr->opcode == IB_WR_SEND_WITH_IMM) {
		pkt.bth.flags |= MR_F_IMM;
		pkt.imm = be32_to_cpu(wr->ex.imm_data);
	}
	if (wr->send_flags & IB_SEND_SOLICITED)
		pkt.bth.flags |= MR_F_SOLICITED;

	hlen = mr_pkt_header_len(pkt.bth.opcode, pkt.bth.flags, 0);
	skb = alloc_skb(METAROCE_TX_HEADROOM + hlen + len, GFP_ATOMIC);
	if (!skb) {
		metaroce_count(mdev, METAROCE_CNT_TX_DROP_NOMEM);
		return IB_WC_LOC_QP_OP_ERR;
	}
	skb_reserve(skb, METAROCE_TX_HEADROOM);
	if (mr_pkt_build(&pkt, skb->data, hlen + len) != hlen + len ||
	    !metaroce_ud_gather(qp, wr, skb->data + hlen)) {
		kfree_skb(skb);
		return IB_WC_LOC_PROT_ERR;
	}
	skb_put(skb, hlen + len);

	cb = metaroce_ud_cb(skb);
	cb->saddr = dest->saddr;
	cb->daddr = dest->daddr;
	cb->wr_id = wr->wr_id;
	cb->len = len;
	cb->tos = metaroce_tos(dest->tclass);
	cb->signaled = qp->sq_sig_type == IB_SIGNAL_ALL_WR || wr->send_flags & IB_SEND_SIGNALED;
	/* [MR-VERBS-10] a datagram belongs to no path: a random port each time */
	cb->sport = MR_ENTROPY_MIN + get_random_u32() % (MR_ENTROPY_MAX - MR_ENTROPY_MIN + 1);
	if (ipv6_addr_v4mapped(&cb->saddr) != ipv6_addr_v4mapped(&cb->daddr)) {
		kfree_skb(skb);
		return IB_WC_LOC_QP_OP_ERR;
	}
	trace_metaroce_tx(dev_name(&mdev->ibdev.dev), &pkt, cb->sport);
	*skbp = skb;
	return IB_WC_SUCCESS;
}

/*
 * A WR that failed when posted completes with its error after the WRs before
 * it, like a hardware QP's would: it takes its place in the queue as an empty
 * skb.
 */
static void metaroce_ud_post_error(struct metaroce_qp *qp, u64 wr_id, enum ib_wc_status status)
{
	struct metaroce_ud_cb failed = { .wr_id = wr_id, .signaled = true, .status = status };
	struct sk_buff *skb = NULL;

	metaroce_count(to_mdev(qp->ibqp.device), METAROCE_CNT_UD_SEND_ERRORS);
	if (skb_queue_len(&qp->ud_txq) < qp->sq.max_wr)
		skb = alloc_skb(0, GFP_ATOMIC);
	if (!skb) {
		cmpxchg(&qp->state, IB_QPS_RTS, IB_QPS_SQE);
		metaroce_ud_complete(qp, &failed, status);
		return;
	}
	*metaroce_ud_cb(skb) = failed;
	skb_queue_tail(&qp->ud_txq, skb);
}

/*
 * Queue one datagram to dest; the caller kicks the transmit work.  An error
 * return means the WR was refused and not queued.
 */
static int metaroce_ud_queue(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			     const struct metaroce_ud_dest *dest)
{
	struct metaroce_ud_cb failed;
	enum ib_wc_status status;
	struct sk_buff *skb;

	if (metaroce_ud_stopped(qp)) {
		failed = (struct metaroce_ud_cb){ .wr_id = wr->wr_id };
		metaroce_ud_complete(qp, &failed, IB_WC_WR_FLUSH_ERR);
		return 0;
	}
	if (READ_ONCE(qp->state) != IB_QPS_RTS || wr->num_sge > qp->sq.max_sge)
		return -EINVAL;
	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EOPNOTSUPP;
	if (skb_queue_len(&qp->ud_txq) >= qp->sq.max_wr)
		return -ENOMEM;
	status = metaroce_ud_build(qp, wr, dest, &skb);
	if (status != IB_WC_SUCCESS) {
		metaroce_ud_post_error(qp, wr->wr_id, status);
		return 0;
	}
	skb_queue_tail(&qp->ud_txq, skb);
	return 0;
}

/* Kick the transmit work after metaroce_ud_queue() or metaroce_ud_post_error(). */
static void metaroce_ud_kick(struct metaroce_qp *qp)
{
	queue_work(METAROCE_TX_WQ, &qp->ud_work);
}

/* post_send of UD and GSI QPs; may run with interrupts disabled. */
int metaroce_ud_post_send(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			  const struct ib_send_wr **bad_wr)
{
	struct metaroce_ud_dest dest;
	struct metaroce_ah *ah;
	int err = 0;
	bool queued = false;

	for (; wr; wr = wr->next) {
		ah = container_of(ud_wr(wr)->ah, struct metaroce_ah, ibah);
		dest.saddr = ah->saddr;
		memcpy(&dest.daddr, ah->attr.grh.dgid.raw, sizeof(dest.daddr));
		dest.qpn = ud_wr(wr)->remote_qpn;
		dest.qkey = ud_wr(wr)->remote_qkey;
		dest.tclass = ah->attr.grh.traffic_class;
		err = metaroce_ud_queue(qp, wr, &dest);
		if (err)
			break;
		queued = true;
	}
	if (queued)
		metaroce_ud_kick(qp);
	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * The GRH area of a UD receive: for IPv4 the IP header sits in its last 20
 * bytes, for IPv6 the IPv6 header is the GRH, as ib_init_ah_attr_from_wc()
 * reads them back.
 */
static enum rdma_network_type metaroce_ud_grh(struct sk_buff *skb, u8 *grh)
{
	memset(grh, 0, sizeof(struct ib_grh));
	if (skb->protocol == htons(ETH_P_IP)) {
		memcpy(grh + sizeof(struct ib_grh) - sizeof(struct iphdr), ip_hdr(skb),
		       sizeof(struct iphdr));
		return RDMA_NETWORK_IPV4;
	}
	memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
	return RDMA_NETWORK_IPV6;
}

/* A UD_SEND arrived (softirq): deliver it to the QP it names, or drop and count. */
void metaroce_ud_rx(struct metaroce_dev *mdev, struct sk_buff *skb, const struct mr_pkt *pkt)
{
	struct metaroce_recv_wqe *rwqe;
	u8 grh[sizeof(struct ib_grh)];
	struct metaroce_qp *qp;
	enum ib_qp_state state;
	struct ib_wc wc = {};
	u32 room;

	rcu_read_lock();
	qp = xa_load(&mdev->qps, pkt->bth.stream);
	if (!qp || (qp->ibqp.qp_type != IB_QPT_UD && qp->ibqp.qp_type != IB_QPT_GSI)) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_UNKNOWN_QP);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "UD: unknown or unready QP");
		goto out;
	}
	state = READ_ONCE(qp->state);
	if (state != IB_QPS_RTR && state != IB_QPS_RTS) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_UNKNOWN_QP);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "UD: unknown or unready QP");
		goto out;
	}
	/* [MR-VERBS-9] the qkey must be the QP's. */
	if (pkt->udh.qkey != READ_ONCE(qp->attr.qkey)) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_QKEY);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "UD: qkey");
		goto out;
	}

	wc.network_hdr_type = metaroce_ud_grh(skb, grh);
	spin_lock(&qp->rq.lock);
	if (qp->rq.head == qp->rq.tail)
		metaroce_rq_refill(qp, qp->rq.head);
	if (qp->rq.head == qp->rq.tail) {
		spin_unlock(&qp->rq.lock);
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_NO_RECV);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "UD: no receive WQE");
		goto out;
	}
	rwqe = metaroce_rq_wqe(&qp->rq, qp->rq.head++);
	wc.wr_id = rwqe->wr_id;
	wc.status = IB_WC_SUCCESS;
	room = metaroce_sge_len(rwqe->sge, rwqe->num_sge);
	/*
	 * One walk per datagram: bytes before an SGE the copy refuses went only
	 * into MRs that allow local writes, and the WQE fails ([MR-SEC-7]).
	 */
	if (room < sizeof(grh) + pkt->bth.payload_len) {
		wc.status = IB_WC_LOC_LEN_ERR;
	} else if (!metaroce_sge_copy(qp, rwqe->sge, rwqe->num_sge, 0, grh, sizeof(grh),
				      true) ||
		   !metaroce_sge_copy(qp, rwqe->sge, rwqe->num_sge, sizeof(grh),
				      (void *)pkt->payload, pkt->bth.payload_len, true)) {
		wc.status = IB_WC_LOC_PROT_ERR;
	}
	if (wc.status != IB_WC_SUCCESS)
		metaroce_count(mdev, METAROCE_CNT_PLACE_ERRORS);
	wc.opcode = IB_WC_RECV;
	wc.byte_len = sizeof(grh) + pkt->bth.payload_len;
	wc.qp = &qp->ibqp;
	wc.src_qp = pkt->udh.src_qpn;
	wc.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
	if (pkt->bth.flags & MR_F_IMM) {
		wc.wc_flags |= IB_WC_WITH_IMM;
		wc.ex.imm_data = cpu_to_be32(pkt->imm);
	}
	wc.pkey_index = 0;
	wc.port_num = 1;
	/* Completions leave in the order the receive WQEs were taken. */
	metaroce_cq_push(to_mcq(qp->ibqp.recv_cq), &wc, pkt->bth.flags & MR_F_SOLICITED);
	spin_unlock(&qp->rq.lock);
out:
	rcu_read_unlock();
}

/*
 * The doorbell of a user UD QP: every WQE on its send ring becomes a
 * datagram at once (data and addresses copied), so the AH it names may go
 * right after.  A WQE the kernel refuses completes with its error in its
 * place in the queue and stops the queue, as a bad WR of a kernel UD QP
 * does.  The ring is never left to the transmit work, so the process rings
 * the doorbell for every post.
 */
void metaroce_ud_usq_drain(struct metaroce_qp *qp)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_uqp *u = qp->uqp;
	struct metaroce_user_sqe *e = u->sq_scratch;
	struct metaroce_ud_dest dest;
	struct ib_atomic_wr aw;
	struct ib_rdma_wr rw;
	struct ib_send_wr *wr;
	enum ib_wc_status st;
	bool kick = false;
	u32 prod;

	mutex_lock(&u->ud_lock);
	/* Pairs with the process's release of prod: its WQEs before the index. */
	prod = smp_load_acquire(&u->sq.hdr->prod);
	if (prod - u->sq.cons > u->sq.n) {
		/* An index no honest producer writes: the queue stops for good. */
		metaroce_count(mdev, METAROCE_CNT_USER_WQE_ERRORS);
		metaroce_ud_post_error(qp, 0, IB_WC_LOC_QP_OP_ERR);
		u->sq.cons = prod;
		WRITE_ONCE(u->sq.hdr->cons, prod);
		kick = true;
	}
	while (u->sq.cons != prod && READ_ONCE(qp->state) >= IB_QPS_RTS) {
		memcpy(e, metaroce_uring_slot(&u->sq, u->sq.cons), u->sq.esize);
		WRITE_ONCE(u->sq.hdr->cons, ++u->sq.cons);
		kick = true;
		memset(&rw, 0, sizeof(rw));
		/* A QP without send WQEs has no inline buffer either. */
		st = qp->sq.max_wr ? metaroce_sqe_to_wr(qp, &aw, &rw, u->sgl, &wr) :
				     IB_WC_LOC_QP_OP_ERR;
		if (st == IB_WC_SUCCESS && wr != &rw.wr)
			st = IB_WC_LOC_QP_OP_ERR;	/* no atomics on UD */
		if (st == IB_WC_SUCCESS) {
			st = metaroce_uah_dest(qp, e->ah_handle, &dest);
			if (st != IB_WC_SUCCESS)
				metaroce_count(mdev, METAROCE_CNT_USER_AH_ERRORS);
		}
		if (st == IB_WC_SUCCESS) {
			dest.qpn = e->remote_qpn;
			dest.qkey = e->remote_qkey;
			if (metaroce_ud_queue(qp, wr, &dest))
				st = IB_WC_LOC_QP_OP_ERR;
		}
		if (st != IB_WC_SUCCESS) {
			metaroce_trace_sqe_error(qp, e, st);
			metaroce_count(mdev, METAROCE_CNT_USER_WQE_ERRORS);
			metaroce_ud_post_error(qp, e->wr_id, st);
		}
	}
	mutex_unlock(&u->ud_lock);
	if (kick)
		metaroce_ud_kick(qp);
}
