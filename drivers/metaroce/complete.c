// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completions of RC work: the engine's completions mapped to IB work
 * completions, flushes, and a QP or a whole connection moved to Error.
 */

#include "metaroce.h"
#include "connection.h"

static const enum ib_wc_status metaroce_wc_status[] = {
	[MR_WC_SUCCESS] = IB_WC_SUCCESS,
	[MR_WC_RETRY_EXC_ERR] = IB_WC_RETRY_EXC_ERR,
	[MR_WC_RNR_RETRY_EXC_ERR] = IB_WC_RNR_RETRY_EXC_ERR,
	[MR_WC_REM_INV_REQ_ERR] = IB_WC_REM_INV_REQ_ERR,
	[MR_WC_REM_ACCESS_ERR] = IB_WC_REM_ACCESS_ERR,
	[MR_WC_REM_OP_ERR] = IB_WC_REM_OP_ERR,
	[MR_WC_WR_FLUSH_ERR] = IB_WC_WR_FLUSH_ERR,
};

static enum ib_wc_opcode metaroce_wc_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_WC_SEND;
	}
}

void metaroce_complete_send(struct metaroce_qp *qp, struct metaroce_send_wqe *wqe,
			    enum ib_wc_status status)
{
	struct ib_wc wc = {
		.wr_id = wqe->wr_id,
		.status = status,
		.opcode = metaroce_wc_opcode(wqe->opcode),
		.byte_len = wqe->len,
		.qp = &qp->ibqp,
	};

	if (status != IB_WC_SUCCESS || qp->sq_sig_type == IB_SIGNAL_ALL_WR ||
	    wqe->send_flags & IB_SEND_SIGNALED)
		metaroce_cq_push(to_mcq(qp->ibqp.send_cq), &wc, false);
}

/* REG_MR and LOCAL_INV took effect when posted; they complete in queue order. */
void metaroce_sq_complete_local(struct metaroce_qp *qp)
{
	struct metaroce_send_wqe *wqe;

	while (qp->sq.head != qp->sq.posted) {
		wqe = metaroce_sq_wqe(&qp->sq, qp->sq.head);
		if (!wqe->local)
			break;
		qp->sq.head++;
		metaroce_complete_send(qp, wqe, IB_WC_SUCCESS);
	}
}

/* Everything still on the send queue completes with a flush error, [MR-VERBS-8]. */
static void metaroce_sq_flush(struct metaroce_qp *qp)
{
	while (qp->sq.head != qp->sq.tail)
		metaroce_complete_send(qp, metaroce_sq_wqe(&qp->sq, qp->sq.head++),
				       IB_WC_WR_FLUSH_ERR);
	qp->sq.posted = qp->sq.tail;
}

/*
 * The QP goes to Error (c->lock held when attached): its WQEs complete
 * flushed, and its stream in the engine stops, so that no retransmission
 * reads a flushed send buffer and nothing arriving later is placed into a
 * flushed receive or Read buffer (for kernel consumers: freed pages).  The
 * peer's messages for it are refused with a NAK.
 */
void metaroce_qp_to_error(struct metaroce_qp *qp)
{
	struct metaroce_conn *c = qp->conn;

	WRITE_ONCE(qp->state, IB_QPS_ERR);
	if (c && c->established && qp->slot >= 0)
		mr_conn_error_stream(c->eng, qp->slot, MR_NAK_REMOTE_OP_ERROR);
	metaroce_sq_flush(qp);
	metaroce_rq_flush(qp);
}

void metaroce_complete(struct metaroce_conn *c, const struct mr_completion *cm)
{
	struct metaroce_qp *qp = c->stream_qp[cm->stream_slot];
	enum ib_wc_status status = metaroce_wc_status[min_t(u8, cm->status, MR_WC_WR_FLUSH_ERR)];
	struct metaroce_send_wqe *swqe;
	struct metaroce_recv_wqe *rwqe;
	struct ib_wc wc = {};

	if (!qp)
		return;
	switch (cm->kind) {
	case MR_COMPL_SEND:
		metaroce_sq_complete_local(qp);
		/* The user may have flushed it already (QP moved to Error). */
		if ((u32)cm->cookie != qp->sq.head)
			return;
		swqe = metaroce_sq_wqe(&qp->sq, qp->sq.head++);
		if (status == IB_WC_SUCCESS && (swqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
						swqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) &&
		    !metaroce_sge_copy(qp, swqe->sge, swqe->num_sge, 0, (void *)&cm->orig,
				       sizeof(cm->orig), true))
			status = IB_WC_LOC_PROT_ERR;
		if (status == IB_WC_SUCCESS && swqe->place_failed)
			status = IB_WC_LOC_PROT_ERR;
		metaroce_complete_send(qp, swqe, status);
		if (status != IB_WC_SUCCESS)
			metaroce_qp_to_error(qp);
		metaroce_sq_complete_local(qp);
		break;
	case MR_COMPL_RECV:
		spin_lock(&qp->rq.lock);
		if (qp->rq.head == qp->rq.tail)
			metaroce_rq_refill(qp, qp->rq.head);
		if (qp->rq.head == qp->rq.tail) {
			spin_unlock(&qp->rq.lock);
			return;
		}
		rwqe = metaroce_rq_wqe(&qp->rq, qp->rq.head++);
		wc.wr_id = rwqe->wr_id;
		spin_unlock(&qp->rq.lock);
		wc.status = status;
		wc.opcode = cm->opcode == MR_OP_WRITE ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV;
		wc.byte_len = cm->len;
		wc.qp = &qp->ibqp;
		wc.src_qp = qp->attr.dest_qp_num;
		if (cm->flags & MR_COMPL_F_IMM) {
			wc.wc_flags |= IB_WC_WITH_IMM;
			wc.ex.imm_data = cpu_to_be32(cm->imm);
		} else if (cm->flags & MR_COMPL_F_INV) {
			/* [MR-WIRE-9] the sender asked us to invalidate one of our MRs. */
			if (!metaroce_invalidate(c->mdev, qp, cm->inv_rkey))
				wc.status = IB_WC_REM_INV_REQ_ERR;
			wc.wc_flags |= IB_WC_WITH_INVALIDATE;
			wc.ex.invalidate_rkey = cm->inv_rkey;
		}
		metaroce_cq_push(to_mcq(qp->ibqp.recv_cq), &wc,
				 cm->flags & MR_COMPL_F_SOLICITED);
		break;
	case MR_COMPL_STREAM_ERROR:
		/*
		 * Refused for its receive buffer (MR_NAK_REMOTE_OP_ERROR, from
		 * check_place): that WQE, the next one, fails with a protection
		 * error; the rest are flushed.
		 */
		if (cm->nak_code == MR_NAK_REMOTE_OP_ERROR) {
			spin_lock(&qp->rq.lock);
			if (qp->rq.head != qp->rq.tail) {
				rwqe = metaroce_rq_wqe(&qp->rq, qp->rq.head++);
				wc.wr_id = rwqe->wr_id;
				wc.status = IB_WC_LOC_PROT_ERR;
				wc.opcode = IB_WC_RECV;
				wc.qp = &qp->ibqp;
				metaroce_cq_push(to_mcq(qp->ibqp.recv_cq), &wc, false);
			}
			spin_unlock(&qp->rq.lock);
		}
		metaroce_qp_to_error(qp);
		break;
	}
}

/* Counted and logged (rate-limited): the connection failed QPs, and why. */
static void metaroce_conn_warn(struct metaroce_conn *c, const char *why)
{
	metaroce_count(c->mdev, METAROCE_CNT_CONN_FAILURES);
	if (ipv6_addr_v4mapped(&c->raddr))
		pr_warn_ratelimited("%s: connection to %pI4 failed its QPs: %s\n",
				    dev_name(&c->mdev->ibdev.dev), &c->raddr.s6_addr32[3], why);
	else
		pr_warn_ratelimited("%s: connection to %pI6c failed its QPs: %s\n",
				    dev_name(&c->mdev->ibdev.dev), &c->raddr, why);
}

/* A QP of a connection that ended: its oldest WQE fails with RETRY_EXC_ERR, then Error. */
static void metaroce_qp_fail_locked(struct metaroce_qp *qp)
{
	if (qp->sq.head != qp->sq.tail)
		metaroce_complete_send(qp, metaroce_sq_wqe(&qp->sq, qp->sq.head++),
				       IB_WC_RETRY_EXC_ERR);
	metaroce_qp_to_error(qp);
}

/* [MR-CONN-14] a QP whose stream on c has neither sent nor received. */
static bool metaroce_qp_unused_locked(struct metaroce_conn *c, struct metaroce_qp *qp)
{
	return c->established && qp->slot >= 0 && READ_ONCE(qp->state) != IB_QPS_ERR &&
	       mr_conn_stream_unused(c->eng, qp->slot);
}

/* The connection is gone (failed, closed, peer restarted): its QPs go to Error. */
void metaroce_conn_fail_locked(struct metaroce_conn *c, const char *why)
{
	struct metaroce_qp *qp;

	if (c->dead)
		return;
	c->dead = true;
	if (!list_empty(&c->qps))
		metaroce_conn_warn(c, why);
	list_for_each_entry(qp, &c->qps, conn_node)
		metaroce_qp_fail_locked(qp);
}

/*
 * The peer ended the connection: its CLOSE (req NULL), or its restart or
 * replacement proven by the CONNECT_REQ req.  [MR-CONN-14] QPs whose streams
 * never sent nor received lose nothing when the peer may still bring their
 * partners: true when there are such QPs, and the engine is ended for
 * metaroce_conn_renew() to start the connection over for them; the other QPs
 * fail.  False: the connection failed as a whole.
 */
bool metaroce_conn_end_locked(struct metaroce_conn *c, const struct mr_pkt *req, const char *why)
{
	struct metaroce_qp *qp;
	bool used = false, unused = false;

	if (c->dead)
		return false;
	if (!mr_hs_renewable(&c->hs, req)) {
		metaroce_conn_fail_locked(c, why);
		return false;
	}
	list_for_each_entry(qp, &c->qps, conn_node) {
		if (metaroce_qp_unused_locked(c, qp))
			unused = true;
		else
			used = true;
	}
	if (!unused) {
		metaroce_conn_fail_locked(c, why);
		return false;
	}
	if (used)
		metaroce_conn_warn(c, why);
	list_for_each_entry(qp, &c->qps, conn_node)
		if (!metaroce_qp_unused_locked(c, qp))
			metaroce_qp_fail_locked(qp);
	mr_conn_end(c->eng);
	return true;
}
