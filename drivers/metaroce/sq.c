// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Send queues: work requests checked and queued (from kernel consumers and
 * from a process's send ring), and handed to the engine while its window has
 * room.
 */

#include <linux/string.h>

#include "metaroce.h"
#include "trace.h"
#include "connection.h"

static u8 metaroce_mr_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
		return MR_OP_SEND;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return MR_OP_WRITE;
	case IB_WR_RDMA_READ:
		return MR_OP_READ_REQ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return MR_OP_ATOMIC_CAS;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return MR_OP_ATOMIC_FADD;
	default:
		return 0;
	}
}

/*
 * Hand waiting send WQEs to the engine while its window has room (and while
 * the peer has not ended the connection, [MR-CONN-14]: they wait for the next).
 */
void metaroce_sq_push(struct metaroce_conn *c, struct metaroce_qp *qp)
{
	struct metaroce_send_wqe *wqe;
	struct mr_wr wr;

	while (qp->slot >= 0 && qp->sq.posted != qp->sq.tail) {
		wqe = metaroce_sq_wqe(&qp->sq, qp->sq.posted);
		if (wqe->local) {
			qp->sq.posted++;
			continue;
		}
		memset(&wr, 0, sizeof(wr));
		wr.opcode = metaroce_mr_opcode(wqe->opcode);
		wr.flags = wqe->send_flags & IB_SEND_FENCE ? MR_WR_FENCE : 0;
		if (wqe->send_flags & IB_SEND_SOLICITED)
			wr.flags |= MR_WR_SOLICITED;
		if (wqe->opcode == IB_WR_SEND_WITH_IMM ||
		    wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM) {
			wr.flags |= MR_WR_IMM;
			wr.imm = wqe->imm_inv;
		} else if (wqe->opcode == IB_WR_SEND_WITH_INV) {
			wr.flags |= MR_WR_INV;
			wr.inv_rkey = wqe->imm_inv;
		}
		wr.len = wqe->len;
		wr.va = wqe->remote_addr;
		wr.rkey = wqe->rkey;
		wr.compare = wqe->compare_add;
		wr.swap_add = wqe->compare_add;
		if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP)
			wr.swap_add = wqe->swap;
		if (wr.opcode == MR_OP_ATOMIC_CAS || wr.opcode == MR_OP_ATOMIC_FADD)
			wr.len = 8;
		wr.cookie = qp->sq.posted;
		if (mr_conn_post_wr(c->eng, qp->slot, &wr) < 0)
			break;
		qp->sq.posted++;
	}
	metaroce_sq_complete_local(qp);
}

/* Queue a chain of work requests on an attached RC QP; c->lock held. */
int metaroce_post_send_locked(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr)
{
	struct metaroce_send_wqe *wqe;
	bool local, write;
	int err = 0;
	u32 i;

	for (; wr; wr = wr->next) {
		if (READ_ONCE(qp->state) == IB_QPS_ERR) {
			struct metaroce_send_wqe flush = { .wr_id = wr->wr_id,
							   .opcode = wr->opcode };

			metaroce_complete_send(qp, &flush, IB_WC_WR_FLUSH_ERR);
			continue;
		}
		local = wr->opcode == IB_WR_REG_MR || wr->opcode == IB_WR_LOCAL_INV;
		if (READ_ONCE(qp->state) != IB_QPS_RTS ||
		    !(local || metaroce_mr_opcode(wr->opcode)) ||
		    wr->num_sge > qp->sq.max_sge) {
			err = local || metaroce_mr_opcode(wr->opcode) ? -EINVAL : -EOPNOTSUPP;
			break;
		}
		if (wr->send_flags & IB_SEND_INLINE && !local &&
		    ((metaroce_mr_opcode(wr->opcode) != MR_OP_SEND &&
		      metaroce_mr_opcode(wr->opcode) != MR_OP_WRITE) ||
		     metaroce_sge_len(wr->sg_list, wr->num_sge) > qp->max_inline)) {
			err = -EINVAL;	/* inline is for Sends and Writes that fit */
			break;
		}
		if (qp->sq.tail - qp->sq.head >= qp->sq.max_wr) {
			err = -ENOMEM;
			break;
		}
		wqe = metaroce_sq_wqe(&qp->sq, qp->sq.tail);
		wqe->wr_id = wr->wr_id;
		wqe->opcode = wr->opcode;
		wqe->send_flags = wr->send_flags;
		wqe->local = local;
		wqe->inline_data = false;
		wqe->place_failed = false;
		wqe->num_sge = local ? 0 : wr->num_sge;
		wqe->len = 0;
		if (local) {
			err = metaroce_local_wr(qp, wr);
			if (err)
				break;
			qp->sq.tail++;
			continue;
		}
		if (wr->send_flags & IB_SEND_INLINE) {
			/* The data is copied now; the lkeys are not looked at. */
			wqe->inline_data = true;
			wqe->num_sge = 0;
			for (i = 0; i < wr->num_sge; i++) {
				memcpy(metaroce_wqe_inline(wqe) + wqe->len,
				       (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				wqe->len += wr->sg_list[i].length;
			}
		}
		/* A Read's data and an atomic's result are written into its SGEs. */
		write = wr->opcode == IB_WR_RDMA_READ ||
			metaroce_mr_opcode(wr->opcode) == MR_OP_ATOMIC_CAS ||
			metaroce_mr_opcode(wr->opcode) == MR_OP_ATOMIC_FADD;
		for (i = 0; i < wqe->num_sge; i++) {
			wqe->sge[i] = wr->sg_list[i];
			wqe->len += wr->sg_list[i].length;
			if (!metaroce_lkey_ok(qp, &wr->sg_list[i], write))
				err = -EINVAL;
		}
		if (err)
			break;
		if (wr->opcode == IB_WR_SEND_WITH_IMM || wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
			wqe->imm_inv = be32_to_cpu(wr->ex.imm_data);
		else if (wr->opcode == IB_WR_SEND_WITH_INV)
			wqe->imm_inv = wr->ex.invalidate_rkey;
		if (wr->opcode == IB_WR_RDMA_WRITE || wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
		    wr->opcode == IB_WR_RDMA_READ) {
			wqe->remote_addr = rdma_wr(wr)->remote_addr;
			wqe->rkey = rdma_wr(wr)->rkey;
		} else if (metaroce_mr_opcode(wr->opcode) != MR_OP_SEND) {
			wqe->remote_addr = atomic_wr(wr)->remote_addr;
			wqe->rkey = atomic_wr(wr)->rkey;
			wqe->compare_add = atomic_wr(wr)->compare_add;
			wqe->swap = atomic_wr(wr)->swap;
			if (wqe->len < 8) {
				err = -EINVAL;
				break;
			}
		}
		qp->sq.tail++;
	}
	if (err)
		*bad_wr = wr;
	return err;
}

/* A refused user send WQE, for the metaroce_user_wqe_error tracepoint. */
void metaroce_trace_sqe_error(struct metaroce_qp *qp, const struct metaroce_user_sqe *e,
			      enum ib_wc_status st)
{
	const struct metaroce_user_sge *s = (const void *)(e + 1);
	bool sges = e->num_sge && !(e->send_flags & IB_SEND_INLINE);

	trace_metaroce_user_wqe_error(dev_name(&qp->ibqp.device->dev), qp->ibqp.qp_num, true,
				      e->wr_id, st, e->opcode, e->num_sge, e->inline_len,
				      sges ? s : NULL);
}

static bool metaroce_user_opcode_ok(u32 op)
{
	switch (op) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return true;
	default:
		return false;
	}
}

#define METAROCE_USER_SEND_FLAGS	(IB_SEND_FENCE | IB_SEND_SIGNALED | IB_SEND_SOLICITED | \
					 IB_SEND_INLINE)

/*
 * Turn the send WQE in u->sq_scratch into the work request metaroce_post_send
 * takes, checking everything; returns the completion status of a bad one.
 */
enum ib_wc_status metaroce_sqe_to_wr(struct metaroce_qp *qp, struct ib_atomic_wr *aw,
				     struct ib_rdma_wr *rw, struct ib_sge *sgl,
				     struct ib_send_wr **out)
{
	struct metaroce_uqp *u = qp->uqp;
	struct metaroce_user_sqe *e = u->sq_scratch;
	struct metaroce_user_sge *s = (void *)(e + 1);
	struct ib_send_wr *wr;
	u64 total = 0;
	bool write;
	void *ibuf;
	u32 i;

	if (!metaroce_user_opcode_ok(e->opcode) || e->send_flags & ~METAROCE_USER_SEND_FLAGS)
		return IB_WC_LOC_QP_OP_ERR;
	/* A Read's data and an atomic's result are written into the SGEs. */
	write = e->opcode == IB_WR_RDMA_READ || e->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		e->opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
	if (e->opcode == IB_WR_ATOMIC_CMP_AND_SWP || e->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
		wr = &aw->wr;
		aw->remote_addr = e->remote_addr;
		aw->rkey = e->rkey;
		aw->compare_add = e->compare_add;
		aw->swap = e->swap;
	} else {
		wr = &rw->wr;
		rw->remote_addr = e->remote_addr;
		rw->rkey = e->rkey;
	}
	wr->wr_id = e->wr_id;
	wr->opcode = e->opcode;
	wr->send_flags = e->send_flags & ~IB_SEND_INLINE;
	wr->sg_list = sgl;
	if (e->opcode == IB_WR_SEND_WITH_INV)
		wr->ex.invalidate_rkey = e->imm_inv;
	else
		wr->ex.imm_data = (__force __be32)e->imm_inv;

	if (e->send_flags & IB_SEND_INLINE) {
		/* Inline data is copied now: the ring slot is the process's again. */
		if (e->inline_len > qp->max_inline)
			return IB_WC_LOC_LEN_ERR;
		if (e->opcode == IB_WR_RDMA_READ || e->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		    e->opcode == IB_WR_ATOMIC_FETCH_AND_ADD)
			return IB_WC_LOC_QP_OP_ERR;
		ibuf = u->inline_buf + (size_t)(qp->sq.tail & (qp->sq.slots - 1)) * qp->max_inline;
		memcpy(ibuf, s, e->inline_len);
		sgl[0].addr = (uintptr_t)ibuf;
		sgl[0].length = e->inline_len;
		sgl[0].lkey = qp->ibqp.device->local_dma_lkey;
		wr->num_sge = e->inline_len ? 1 : 0;
		*out = wr;
		return IB_WC_SUCCESS;
	}
	if (e->num_sge > qp->sq.max_sge)
		return IB_WC_LOC_LEN_ERR;
	for (i = 0; i < e->num_sge; i++) {
		if (!metaroce_user_sge_in_pd(qp->ibqp.pd, &s[i], write))
			return IB_WC_LOC_PROT_ERR;
		sgl[i].addr = s[i].addr;
		sgl[i].length = s[i].length;
		sgl[i].lkey = s[i].lkey;
		total += s[i].length;
	}
	if (total > METAROCE_MAX_MSG_SIZE)
		return IB_WC_LOC_LEN_ERR;
	if (wr != &rw->wr && total < 8)
		return IB_WC_LOC_LEN_ERR;
	wr->num_sge = e->num_sge;
	*out = wr;
	return IB_WC_SUCCESS;
}

/* The opcode of a user send WQE's error completion: Send but for the local ones. */
static enum ib_wc_opcode metaroce_local_wc_opcode(u32 op)
{
	if (op == IB_WR_BIND_MW)
		return IB_WC_BIND_MW;
	return op == IB_WR_LOCAL_INV ? IB_WC_LOCAL_INV : IB_WC_SEND;
}

/*
 * A user BIND_MW or LOCAL_INV WQE (in u->sq_scratch), done now and queued to
 * complete in order behind the WQEs before it (room checked by the caller).
 * BIND_MW: the window is the one imm_inv names, its new key is rkey, the one
 * SGE is the range of the MR it is bound to, compare_add its IB_ACCESS_REMOTE_*
 * bits.  LOCAL_INV: imm_inv is the type 2 window's key.
 */
static enum ib_wc_status metaroce_usqe_local(struct metaroce_qp *qp)
{
	struct metaroce_user_sqe *e = qp->uqp->sq_scratch;
	struct metaroce_user_sge *s = (void *)(e + 1);
	struct metaroce_send_wqe *wqe;
	enum ib_wc_status st;

	if (e->send_flags & ~(IB_SEND_SIGNALED | IB_SEND_FENCE))
		return IB_WC_LOC_QP_OP_ERR;
	if (e->opcode == IB_WR_BIND_MW) {
		if (e->num_sge != 1 || e->compare_add > U32_MAX)
			return IB_WC_MW_BIND_ERR;
		st = metaroce_bind_mw(qp, e->imm_inv, e->rkey, s->lkey, s->addr, s->length,
				      e->compare_add);
	} else {
		st = metaroce_local_inv_mw(qp, e->imm_inv);
	}
	if (st != IB_WC_SUCCESS)
		return st;
	wqe = metaroce_sq_wqe(&qp->sq, qp->sq.tail);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = e->wr_id;
	wqe->opcode = e->opcode;
	wqe->send_flags = e->send_flags;
	wqe->local = true;
	qp->sq.tail++;
	return IB_WC_SUCCESS;
}

/* Whether WQEs of this QP are in flight, so that a completion will drain the ring again. */
static bool metaroce_usq_busy(struct metaroce_qp *qp)
{
	return READ_ONCE(qp->state) == IB_QPS_RTS && qp->sq.head != qp->sq.tail;
}

/*
 * Take what the process posted on its send ring into the send queue, under
 * the connection's lock (doorbell and transmit work).  While WQEs are in
 * flight the ring says so (METAROCE_RING_F_DRAINING) and the process rings
 * no doorbell: the completion's transmit work comes back here.  Clearing the
 * flag and re-reading prod are ordered by a full barrier against the
 * process's store of prod and its read of the flag, so a WQE posted while
 * the flag goes down is seen by one side or the other.
 *
 * One call takes at most a ring's worth of WQEs: it runs with BH off and the
 * connection's lock held, and another thread of the process can keep moving
 * prod.  True when it stopped there with WQEs left (the flag stays up, so
 * the process rings no doorbell): the caller runs the transmit work again.
 */
bool metaroce_usq_drain(struct metaroce_qp *qp)
{
	struct metaroce_uqp *u = qp->uqp;
	struct metaroce_ring_hdr *h;
	const struct ib_send_wr *bad;
	struct ib_atomic_wr aw;
	struct ib_rdma_wr rw;
	struct metaroce_user_sqe *e;
	struct ib_send_wr *wr;
	enum ib_wc_status st;
	u32 prod, budget;

	if (!u)
		return false;
	h = u->sq.hdr;
	budget = u->sq.n;
again:
	/* Pairs with the process's release of prod: its WQEs before the index. */
	prod = smp_load_acquire(&h->prod);
	if (prod - u->sq.cons > u->sq.n) {
		/* An index no honest producer writes: the QP is broken for good. */
		metaroce_ring_error(qp, qp->ibqp.send_cq, 0, IB_WC_SEND, IB_WC_LOC_QP_OP_ERR);
		metaroce_qp_to_error(qp);
		u->sq.cons = prod;
		WRITE_ONCE(h->cons, prod);
	}
	while (u->sq.cons != prod && READ_ONCE(qp->state) >= IB_QPS_RTS) {
		/* Room in the send queue; a full one resumes on completion. */
		if (READ_ONCE(qp->state) == IB_QPS_RTS &&
		    qp->sq.tail - qp->sq.head >= qp->sq.max_wr)
			break;
		if (!budget--) {
			WRITE_ONCE(h->done, qp->sq.head);
			WRITE_ONCE(h->flags, METAROCE_RING_F_DRAINING);
			return true;
		}
		memcpy(u->sq_scratch, metaroce_uring_slot(&u->sq, u->sq.cons), u->sq.esize);
		WRITE_ONCE(h->cons, ++u->sq.cons);
		e = u->sq_scratch;
		if (e->opcode == IB_WR_BIND_MW || e->opcode == IB_WR_LOCAL_INV) {
			if (READ_ONCE(qp->state) == IB_QPS_ERR) {
				metaroce_flush_one(qp, qp->ibqp.send_cq, e->wr_id,
						   metaroce_local_wc_opcode(e->opcode));
				continue;
			}
			st = READ_ONCE(qp->state) == IB_QPS_RTS ? metaroce_usqe_local(qp) :
								  IB_WC_LOC_QP_OP_ERR;
		} else {
			memset(&aw, 0, sizeof(aw));
			memset(&rw, 0, sizeof(rw));
			st = metaroce_sqe_to_wr(qp, &aw, &rw, u->sgl, &wr);
			if (st == IB_WC_SUCCESS && metaroce_post_send_locked(qp, wr, &bad))
				st = IB_WC_LOC_QP_OP_ERR;
		}
		if (st != IB_WC_SUCCESS) {
			metaroce_trace_sqe_error(qp, e, st);
			/* IB's rule for a local error: the WQE fails, the QP goes to Error. */
			metaroce_ring_error(qp, qp->ibqp.send_cq, e->wr_id,
					    metaroce_local_wc_opcode(e->opcode), st);
			metaroce_qp_to_error(qp);
		}
	}
	WRITE_ONCE(h->done, qp->sq.head);
	if (metaroce_usq_busy(qp)) {
		WRITE_ONCE(h->flags, METAROCE_RING_F_DRAINING);
		return false;
	}
	WRITE_ONCE(h->flags, 0);
	smp_mb();	/* the flag down before prod is read again */
	if (READ_ONCE(h->prod) != u->sq.cons && READ_ONCE(qp->state) >= IB_QPS_RTS)
		goto again;
	return false;
}

/* Sends posted to a QP in the Error state complete at once, flushed. */
int metaroce_post_send_flush(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			     const struct ib_send_wr **bad_wr)
{
	for (; wr; wr = wr->next)
		metaroce_flush_one(qp, qp->ibqp.send_cq, wr->wr_id, IB_WC_SEND);
	return 0;
}
