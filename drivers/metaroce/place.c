// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The responder's memory side: whether a request may be placed or executed
 * (QP state, rkey and access, receive buffers: [MR-SEC-1], [MR-SEC-2]), the
 * placement of accepted data, and atomics.  The engine calls these through
 * metaroce_engine_ops, under the connection's lock, in softirq.
 */

#include "metaroce.h"
#include "connection.h"

/* Whether the QP may still take data: not flushed (Error) or reset. */
static bool metaroce_qp_live(const struct metaroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	return state == IB_QPS_RTR || state == IB_QPS_RTS || state == IB_QPS_SQD;
}

static u8 metaroce_check_place(void *ctx, const struct mr_place *pl, u32 *info)
{
	struct metaroce_conn *c = ctx;
	struct metaroce_qp *qp = c->stream_qp[pl->stream_slot];
	struct metaroce_recv_wqe *wqe;
	struct metaroce_mr *mr;
	u32 idx, i, room = 0;
	u8 code = 0;

	if (!qp || !metaroce_qp_live(qp))
		return MR_NAK_INVALID_REQUEST;
	if (pl->opcode == MR_OP_WRITE) {
		code = metaroce_rkey_check(qp, pl->rkey, pl->va + pl->offset, pl->len,
					   IB_ACCESS_REMOTE_WRITE, &mr);
		/* An MR the key names itself; a window's MR is looked up again. */
		c->rx_mr = !code && mr && READ_ONCE(mr->ibmr.lkey) == pl->rkey ? mr : NULL;
		return code;
	}
	if (pl->opcode != MR_OP_SEND)
		return 0;

	idx = qp->rq_base + pl->rsn;
	/* The lock orders our reads after post_recv's writes of the WQE. */
	spin_lock(&qp->rq.lock);
	/* [MR-SEC-2] never a receive that has completed (or been flushed) already. */
	if ((s32)(idx - qp->rq.head) < 0) {
		spin_unlock(&qp->rq.lock);
		return MR_NAK_INVALID_REQUEST;
	}
	if ((s32)(idx - qp->rq.tail) >= 0)
		metaroce_rq_refill(qp, idx);
	if ((s32)(idx - qp->rq.tail) >= 0) {
		spin_unlock(&qp->rq.lock);
		*info = metaroce_rnr_us(qp->attr.min_rnr_timer);
		return MR_NAK_RNR;
	}
	wqe = metaroce_rq_wqe(&qp->rq, idx);
	for (i = 0; i < wqe->num_sge; i++)
		room += wqe->sge[i].length;
	if ((u64)pl->offset + pl->len > room)
		code = MR_NAK_INVALID_REQUEST;
	/*
	 * A receive buffer we may not write (no LOCAL_WRITE, a stale or
	 * foreign key): the WQE fails with a local protection error and the
	 * sender learns of a remote operational error, as on InfiniBand.
	 */
	else if (!metaroce_sge_copy(qp, wqe->sge, wqe->num_sge, pl->offset, NULL, pl->len, true))
		code = MR_NAK_REMOTE_OP_ERROR;
	spin_unlock(&qp->rq.lock);
	return code;
}

static u8 metaroce_execute(void *ctx, struct mr_exec *ex)
{
	struct metaroce_conn *c = ctx;
	struct metaroce_qp *qp = c->stream_qp[ex->stream_slot];
	struct metaroce_mr *mr;
	u64 *p, old;
	u8 code;

	if (!qp || !metaroce_qp_live(qp))
		return MR_NAK_INVALID_REQUEST;
	if (ex->opcode == MR_OP_READ_REQ)
		return metaroce_rkey_check(qp, ex->rkey, ex->va, ex->len,
					   IB_ACCESS_REMOTE_READ, &mr);
	code = metaroce_rkey_check(qp, ex->rkey, ex->va, 8,
				   IB_ACCESS_REMOTE_ATOMIC, &mr);
	if (code)
		return code;
	if (ex->va & 7)
		return MR_NAK_INVALID_REQUEST;
	p = metaroce_mr_ptr(mr, ex->va, 8);
	if (!p)
		return MR_NAK_BOUNDS;
	if (ex->opcode == MR_OP_ATOMIC_CAS) {
		ex->orig = cmpxchg64(p, ex->compare, ex->swap_add);
		return 0;
	}
	do {
		old = READ_ONCE(*p);
	} while (cmpxchg64(p, old, old + ex->swap_add) != old);
	ex->orig = old;
	return 0;
}

const struct mr_conn_ops metaroce_engine_ops = {
	.check_place = metaroce_check_place,
	.execute = metaroce_execute,
};

/*
 * Data the engine accepted: into a receive buffer, a Write target or a Read's
 * buffer, copied straight from where the packet's payload lies in skb (its
 * head or its pages: the receive path does not make it linear first).  The
 * packet was parsed from hdr, a copy of (or a pointer to) its first bytes,
 * which are at offset off of skb; with skb NULL, hdr holds all of the packet
 * and pl->data points into it.
 */
void metaroce_place(struct metaroce_conn *c, const struct mr_place *pl, const struct sk_buff *skb,
		    const u8 *hdr, u32 off)
{
	struct metaroce_buf b = { .skb = skb, .off = off + (pl->data ? pl->data - hdr : 0) };
	struct metaroce_qp *qp = c->stream_qp[pl->stream_slot];
	struct metaroce_send_wqe *swqe;
	struct metaroce_recv_wqe *rwqe;
	struct metaroce_mr *mr;
	bool ok = true;

	if (!skb)	/* only read: metaroce_buf_move() never writes to a packet */
		b.p = (u8 *)pl->data;
	/* A flushed or reset QP's buffers are its consumer's again (or freed). */
	if (!qp || !metaroce_qp_live(qp)) {
		metaroce_count(c->mdev, METAROCE_CNT_PLACE_ERRORS);
		return;
	}
	switch (pl->opcode) {
	case MR_OP_SEND:
		rwqe = metaroce_rq_wqe(&qp->rq, qp->rq_base + pl->rsn);
		ok = metaroce_sge_xfer(qp, rwqe->sge, rwqe->num_sge, pl->offset, &b, pl->len,
				       true);
		break;
	case MR_OP_WRITE:
		if (!pl->len)
			break;	/* names no memory, [MR-SEC-1] */
		/* The MR the check passed, if it still is the key's; a window is looked up anew. */
		mr = c->rx_mr;
		c->rx_mr = NULL;	/* never kept past the packet it was checked for */
		if (!mr)
			mr = metaroce_rkey_mr(c->mdev, pl->rkey, pl->va + pl->offset, pl->len);
		else if (!metaroce_mr_still(mr, pl->rkey))
			mr = NULL;
		ok = mr && metaroce_mr_xfer(mr, pl->va + pl->offset, &b, pl->len, true);
		break;
	case MR_OP_READ_RESP:
		/* Only a WQE still in flight: a completed or flushed one is gone. */
		if ((s32)((u32)pl->cookie - qp->sq.head) < 0 ||
		    (s32)((u32)pl->cookie - qp->sq.posted) >= 0) {
			ok = false;
			break;
		}
		swqe = metaroce_sq_wqe(&qp->sq, (u32)pl->cookie);
		ok = metaroce_sge_xfer(qp, swqe->sge, swqe->num_sge, pl->offset, &b, pl->len,
				       true);
		if (!ok)
			swqe->place_failed = true;	/* it completes with LOC_PROT_ERR */
		break;
	default:
		break;
	}
	if (!ok)
		metaroce_count(c->mdev, METAROCE_CNT_PLACE_ERRORS);
}
