// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Receive queues: a QP's own ring (post_recv, or a process's mapped ring),
 * shared receive queues, their refill when the transport needs a receive, and
 * their flush.
 *
 * A QP with an SRQ still has a small receive ring of its own: the receive
 * WQEs it has taken from the SRQ for messages that have begun to arrive.
 * The transport asks for receive WQE number rsn of a stream when the first
 * packet of that message arrives, in any order; metaroce_srq_pull() then
 * moves WQEs from the SRQ to the QP's ring, in rsn order, up to that one.
 * Placement, completion in MSN order and the flush of an Error state work
 * on the QP's ring as they do without an SRQ; WQEs still in the SRQ belong
 * to no QP and stay there.
 *
 * A user SRQ's WQEs are posted on a ring mmapped to the process (uring.c),
 * and taken into the SRQ when a QP pulls, so posting needs no system call.
 */

#include "metaroce.h"
#include "trace.h"

/*
 * The QP's ring holds at most the messages of a stream that are open at
 * the receiver ([MR-REL-9]: MR_STREAM_MAX_MSGS), twice over for safety.
 */
#define METAROCE_SRQ_QP_SLOTS	(2 * MR_STREAM_MAX_MSGS)

/* An SRQ's lock nests inside a QP's receive lock: a class of its own for lockdep. */
static struct lock_class_key metaroce_srq_lock_key;

int metaroce_rq_init(struct metaroce_rq *rq, const struct ib_qp_cap *cap)
{
	spin_lock_init(&rq->lock);
	rq->max_wr = cap->max_recv_wr;
	rq->max_sge = cap->max_recv_sge;
	rq->wqe_size = size_add(sizeof(struct metaroce_recv_wqe),
				array_size(rq->max_sge, sizeof(struct ib_sge)));
	if (!rq->max_wr)
		return 0;
	/* A power of two, so free-running indices stay valid across u32 wrap. */
	rq->slots = roundup_pow_of_two(rq->max_wr);
	rq->wqes = kvcalloc(rq->slots, rq->wqe_size, GFP_KERNEL);
	return rq->wqes ? 0 : -ENOMEM;
}

/* One receive WQE onto a QP's or an SRQ's ring; -ENOMEM when it is full. */
static int metaroce_rq_post(struct metaroce_rq *rq, const struct ib_recv_wr *wr)
{
	struct metaroce_recv_wqe *wqe;

	spin_lock_bh(&rq->lock);
	if (rq->tail - rq->head >= rq->max_wr) {
		spin_unlock_bh(&rq->lock);
		return -ENOMEM;
	}
	wqe = metaroce_rq_wqe(rq, rq->tail);
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	memcpy(wqe->sge, wr->sg_list, wr->num_sge * sizeof(*wr->sg_list));
	rq->tail++;
	spin_unlock_bh(&rq->lock);
	return 0;
}

/*
 * Move the receives a process posted on ring r into rq, the kernel's copy,
 * as far as rq has room; rq->lock held.  Their SGEs must name MRs of pd; a
 * bad WQE completes at once with an error on qp's receive CQ.
 */
static void metaroce_uring_pull_recv(struct metaroce_uring *r, void *scratch,
				     struct metaroce_rq *rq, struct ib_pd *pd,
				     struct metaroce_qp *qp)
{
	struct metaroce_user_rqe *e = scratch;
	struct metaroce_user_sge *s = (void *)(e + 1);
	struct metaroce_recv_wqe *w;
	enum ib_wc_status st;
	u32 prod, i;

	/* Pairs with the process's release of prod: its WQEs before the index. */
	prod = smp_load_acquire(&r->hdr->prod);
	if (prod - r->cons > r->n) {
		metaroce_ring_error(qp, qp->ibqp.recv_cq, 0, IB_WC_RECV, IB_WC_LOC_QP_OP_ERR);
		r->cons = prod;
		WRITE_ONCE(r->hdr->cons, prod);
	}
	while (r->cons != prod && rq->tail - rq->head < rq->max_wr) {
		memcpy(e, metaroce_uring_slot(r, r->cons), r->esize);
		WRITE_ONCE(r->hdr->cons, ++r->cons);
		st = IB_WC_SUCCESS;
		if (e->num_sge > rq->max_sge)
			st = IB_WC_LOC_LEN_ERR;
		for (i = 0; st == IB_WC_SUCCESS && i < e->num_sge; i++)
			if (!metaroce_user_sge_in_pd(pd, &s[i], true))
				st = IB_WC_LOC_PROT_ERR;
		if (st != IB_WC_SUCCESS) {
			trace_metaroce_user_wqe_error(dev_name(&pd->device->dev), qp->ibqp.qp_num,
						      false, e->wr_id, st, 0, e->num_sge, 0,
						      e->num_sge ? s : NULL);
			metaroce_ring_error(qp, qp->ibqp.recv_cq, e->wr_id, IB_WC_RECV, st);
			continue;
		}
		w = metaroce_rq_wqe(rq, rq->tail);
		w->wr_id = e->wr_id;
		w->num_sge = e->num_sge;
		for (i = 0; i < e->num_sge; i++) {
			w->sge[i].addr = s[i].addr;
			w->sge[i].length = s[i].length;
			w->sge[i].lkey = s[i].lkey;
		}
		rq->tail++;
	}
}

/*
 * Take posted receives from the process's receive ring into the receive
 * queue, with rq->lock held: the transport calls this when it needs a
 * receive, so posting one needs no system call.
 */
static void metaroce_urq_pull(struct metaroce_qp *qp)
{
	struct metaroce_uqp *u = qp->uqp;

	if (!u || !u->rq.hdr)
		return;
	metaroce_uring_pull_recv(&u->rq, u->rq_scratch, &qp->rq, qp->ibqp.pd, qp);
	WRITE_ONCE(u->rq.hdr->done, qp->rq.head);
}

/*
 * Take what the process posted on its SRQ ring into the SRQ (srq->rq.lock
 * held) for qp, which needs a receive; qp takes the blame for bad WQEs.
 */
static void metaroce_usrq_pull(struct metaroce_srq *srq, struct metaroce_qp *qp)
{
	metaroce_uring_pull_recv(srq->uring, srq->scratch, &srq->rq, srq->ibsrq.pd, qp);
}

/* In the Error state every posted receive completes with a flush error. */
void metaroce_rq_flush(struct metaroce_qp *qp)
{
	struct metaroce_rq *rq = &qp->rq;
	struct metaroce_recv_wqe *wqe;
	u64 wr_id;

	spin_lock_bh(&rq->lock);
	metaroce_urq_pull(qp);
	while (rq->head != rq->tail) {
		wqe = metaroce_rq_wqe(rq, rq->head++);
		wr_id = wqe->wr_id;
		spin_unlock_bh(&rq->lock);
		metaroce_flush_one(qp, qp->ibqp.recv_cq, wr_id, IB_WC_RECV);
		spin_lock_bh(&rq->lock);
	}
	spin_unlock_bh(&rq->lock);
}

static int metaroce_srq_check(const struct ib_srq_attr *attr)
{
	if (!attr->max_wr || attr->max_wr > METAROCE_MAX_QP_WR ||
	    attr->max_sge > METAROCE_MAX_SGE || attr->srq_limit > attr->max_wr)
		return -EINVAL;
	return 0;
}

int metaroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ibsrq->device);
	struct metaroce_srq *srq = to_msrq(ibsrq);
	struct ib_qp_cap cap = {};
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	err = metaroce_srq_check(&init->attr);
	if (err)
		return err;
	if (atomic_inc_return(&mdev->n_srq) > METAROCE_MAX_SRQ) {
		atomic_dec(&mdev->n_srq);
		return -ENOMEM;
	}
	cap.max_recv_wr = init->attr.max_wr;
	cap.max_recv_sge = max(init->attr.max_sge, 1u);
	err = metaroce_rq_init(&srq->rq, &cap);
	if (err) {
		atomic_dec(&mdev->n_srq);
		return err;
	}
	lockdep_set_class(&srq->rq.lock, &metaroce_srq_lock_key);
	srq->limit = init->attr.srq_limit;
	init->attr.max_sge = srq->rq.max_sge;
	if (udata) {
		err = metaroce_usrq_create(srq, udata);
		if (err) {
			kvfree(srq->rq.wqes);
			atomic_dec(&mdev->n_srq);
			return err;
		}
	}
	return 0;
}

/*
 * Resize an SRQ to max_wr: new slots for the WQEs the SRQ holds, copied at
 * the same indices, and for a user SRQ a new ring (uring.c) with what the
 * process posted that was not taken yet.  -EINVAL if the waiting WQEs would
 * not fit; the SRQ is unchanged then.
 */
static int metaroce_srq_resize(struct metaroce_srq *srq, u32 max_wr, struct ib_udata *udata)
{
	struct metaroce_rq *s = &srq->rq;
	struct metaroce_uring *r = NULL, *prev = srq->uring;
	u32 slots = roundup_pow_of_two(max_wr), i;
	void *wqes, *old;
	int err;

	if (!max_wr || max_wr > METAROCE_MAX_QP_WR)
		return -EINVAL;
	wqes = kvcalloc(slots, s->wqe_size, GFP_KERNEL);
	if (!wqes)
		return -ENOMEM;
	if (srq->uring) {
		err = metaroce_usrq_ring_new(srq, udata, slots, max_wr, &r);
		if (err) {
			kvfree(wqes);
			return err;
		}
	}
	spin_lock_bh(&s->lock);
	if (s->tail - s->head > max_wr || (r && !metaroce_usrq_ring_move(srq, r, max_wr))) {
		spin_unlock_bh(&s->lock);
		if (r)
			metaroce_usrq_ring_free(r);
		kvfree(wqes);
		return -EINVAL;
	}
	for (i = s->head; i != s->tail; i++)
		memcpy(wqes + (size_t)(i & (slots - 1)) * s->wqe_size,
		       metaroce_rq_wqe(s, i), s->wqe_size);
	old = s->wqes;
	s->wqes = wqes;
	s->slots = slots;
	s->max_wr = max_wr;
	spin_unlock_bh(&s->lock);
	kvfree(old);
	/* Its memory stays with the process's mapping until it unmaps it. */
	if (r)
		metaroce_usrq_ring_free(prev);
	return 0;
}

int metaroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct metaroce_srq *srq = to_msrq(ibsrq);
	int err;

	if (mask & IB_SRQ_MAX_WR) {
		err = metaroce_srq_resize(srq, attr->max_wr, udata);
		if (err)
			return err;
	}
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->rq.max_wr)
			return -EINVAL;
		/* Arms the limit event: it fires once when fewer WQEs remain. */
		spin_lock_bh(&srq->rq.lock);
		srq->limit = attr->srq_limit;
		spin_unlock_bh(&srq->rq.lock);
	}
	return 0;
}

int metaroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct metaroce_srq *srq = to_msrq(ibsrq);

	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	spin_lock_bh(&srq->rq.lock);
	attr->srq_limit = srq->limit;
	spin_unlock_bh(&srq->rq.lock);
	return 0;
}

int metaroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct metaroce_srq *srq = to_msrq(ibsrq);

	metaroce_usrq_destroy(srq);
	kvfree(srq->rq.wqes);
	atomic_dec(&to_mdev(ibsrq->device)->n_srq);
	return 0;
}

int metaroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad_wr)
{
	struct metaroce_srq *srq = to_msrq(ibsrq);
	struct metaroce_rq *rq = &srq->rq;
	int err = 0;

	if (srq->uring) {	/* a user SRQ's receives are on its ring */
		*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		if (wr->num_sge > rq->max_sge) {
			err = -EINVAL;
			break;
		}
		err = metaroce_rq_post(rq, wr);
		if (err)
			break;
	}
	if (err)
		*bad_wr = wr;
	return err;
}

/* A QP on an SRQ: its own ring, sized for the messages that can be open at once. */
int metaroce_srq_qp_init(struct metaroce_qp *qp, struct ib_srq *ibsrq)
{
	struct ib_qp_cap cap = {
		.max_recv_wr = METAROCE_SRQ_QP_SLOTS,
		.max_recv_sge = to_msrq(ibsrq)->rq.max_sge,
	};

	qp->srq = to_msrq(ibsrq);
	return metaroce_rq_init(&qp->rq, &cap);
}

/*
 * Make the QP's receive WQE number idx exist if the SRQ has WQEs for it and
 * for every number before it; qp->rq.lock held (softirq or process context
 * with BHs off). An SRQ whose armed limit is crossed raises its event once.
 */
static void metaroce_srq_pull(struct metaroce_qp *qp, u32 idx)
{
	struct metaroce_srq *srq = qp->srq;
	struct metaroce_rq *rq = &qp->rq, *s = &srq->rq;
	struct ib_event ev;
	bool event = false;

	/* Never beyond what the QP's ring holds: such a message is refused (RNR). */
	if (idx - rq->head >= rq->slots)
		return;
	spin_lock(&s->lock);
	if (srq->uring)
		metaroce_usrq_pull(srq, qp);
	while ((s32)(idx - rq->tail) >= 0 && s->head != s->tail) {
		struct metaroce_recv_wqe *from = metaroce_rq_wqe(s, s->head++);
		struct metaroce_recv_wqe *to = metaroce_rq_wqe(rq, rq->tail++);

		to->wr_id = from->wr_id;
		to->num_sge = from->num_sge;
		memcpy(to->sge, from->sge, from->num_sge * sizeof(*from->sge));
	}
	if (srq->uring)
		metaroce_usrq_publish_done(srq);
	if (srq->limit && s->tail - s->head < srq->limit) {
		srq->limit = 0;
		event = true;
	}
	spin_unlock(&s->lock);
	if (event && srq->ibsrq.event_handler) {
		ev.device = srq->ibsrq.device;
		ev.element.srq = &srq->ibsrq;
		ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
}

/*
 * The transport needs receive WQE number idx of a QP (rq.lock held): take
 * what was posted since from the SRQ or from the process's ring.
 */
void metaroce_rq_refill(struct metaroce_qp *qp, u32 idx)
{
	if (qp->srq)
		metaroce_srq_pull(qp, idx);
	else
		metaroce_urq_pull(qp);
}

int metaroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct metaroce_qp *qp = to_mqp(ibqp);
	struct metaroce_rq *rq = &qp->rq;
	enum ib_qp_state state;
	int err = 0;

	if (qp->srq) {		/* its receives are posted to the SRQ */
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->uqp) {
		/* Only a doorbell: the receives are on the process's ring. */
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		if (READ_ONCE(qp->state) == IB_QPS_ERR) {
			metaroce_rq_flush(qp);
		} else {
			spin_lock_bh(&rq->lock);
			metaroce_urq_pull(qp);
			spin_unlock_bh(&rq->lock);
		}
		return 0;
	}
	for (; wr; wr = wr->next) {
		state = READ_ONCE(qp->state);
		if (state == IB_QPS_RESET || wr->num_sge > rq->max_sge) {
			err = -EINVAL;
			break;
		}
		if (state == IB_QPS_ERR) {
			metaroce_flush_one(qp, ibqp->recv_cq, wr->wr_id, IB_WC_RECV);
			continue;
		}
		err = metaroce_rq_post(rq, wr);
		if (err)
			break;
	}
	if (err)
		*bad_wr = wr;
	return err;
}
