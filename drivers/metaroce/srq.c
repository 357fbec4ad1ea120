// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues.
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

/*
 * The QP's ring holds at most the messages of a stream that are open at
 * the receiver ([MR-REL-9]: MR_STREAM_MAX_MSGS), twice over for safety.
 */
#define METAROCE_SRQ_QP_SLOTS	(2 * MR_STREAM_MAX_MSGS)

/* An SRQ's lock nests inside a QP's receive lock: a class of its own for lockdep. */
static struct lock_class_key metaroce_srq_lock_key;

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

int metaroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct metaroce_srq *srq = to_msrq(ibsrq);

	if (mask & IB_SRQ_MAX_WR)	/* no resizing */
		return -EINVAL;
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
void metaroce_srq_pull(struct metaroce_qp *qp, u32 idx)
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
