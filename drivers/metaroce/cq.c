// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues: the kernel's ring of work completions, or a process's
 * mapped ring (uring.c), and the verbs on them.
 */

#include "metaroce.h"

int metaroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       METAROCE_CREATE_CQ_ARG *arg)
{
	struct metaroce_dev *mdev = to_mdev(ibcq->device);
	struct metaroce_cq *cq = to_mcq(ibcq);
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > METAROCE_MAX_CQE)
		return -EINVAL;

	err = metaroce_count_get(&mdev->n_cq, METAROCE_MAX_CQ);
	if (err)
		return err;

	cq->size = roundup_pow_of_two(attr->cqe + 1);
	if (metaroce_cq_udata(arg))	/* a user CQ: the ring is mmapped */
		err = metaroce_ucq_create(cq, cq->size, metaroce_cq_udata(arg));
	else
		cq->ring = kvcalloc(cq->size, sizeof(*cq->ring), GFP_KERNEL);
	if (err || (!cq->uring && !cq->ring)) {
		atomic_dec(&mdev->n_cq);
		return err ?: -ENOMEM;
	}
	spin_lock_init(&cq->lock);
	ibcq->cqe = cq->size - 1;
	return 0;
}

int metaroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct metaroce_cq *cq = to_mcq(ibcq);

	metaroce_ucq_destroy(cq);
	kvfree(cq->ring);
	atomic_dec(&to_mdev(ibcq->device)->n_cq);
	return 0;
}

/* Add one completion; runs in any context. */
void metaroce_cq_push(struct metaroce_cq *cq, const struct ib_wc *wc, bool solicited)
{
	struct ib_cq *ibcq = &cq->ibcq;
	unsigned long flags;
	bool call = false, overflow = false;

	spin_lock_irqsave(&cq->lock, flags);
	if ((cq->uring ? metaroce_ucq_used(cq) : cq->tail - cq->head) >= cq->size - 1) {
		overflow = !cq->overflowed;
		cq->overflowed = true;
	} else {
		if (cq->uring)
			metaroce_ucq_write(cq, wc);
		else
			cq->ring[cq->tail & (cq->size - 1)] = *wc;
		cq->tail++;
		if (cq->notify & IB_CQ_NEXT_COMP ||
		    (cq->notify & IB_CQ_SOLICITED && (solicited || wc->status))) {
			cq->notify = 0;
			call = true;
		}
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow && ibcq->event_handler) {
		struct ib_event ev = {
			.device = ibcq->device,
			.event = IB_EVENT_CQ_ERR,
			.element.cq = ibcq,
		};

		ibcq->event_handler(&ev, ibcq->cq_context);
	}
	if (call && ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

/* Resize a CQ: a new ring, the waiting completions moved over in order. */
int metaroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct metaroce_cq *cq = to_mcq(ibcq);
	struct ib_wc *ring, *old;
	unsigned long flags;
	u32 size, n, i;

	if (cqe < 1 || cqe > METAROCE_MAX_CQE)
		return -EINVAL;
	size = roundup_pow_of_two(cqe + 1);
	if (cq->uring)
		return udata ? metaroce_ucq_resize(cq, size, udata) : -EINVAL;
	if (udata)
		return -EINVAL;
	ring = kvcalloc(size, sizeof(*ring), GFP_KERNEL);
	if (!ring)
		return -ENOMEM;

	spin_lock_irqsave(&cq->lock, flags);
	n = cq->tail - cq->head;
	if (n >= size) {
		/* Completions would be lost: the caller must poll first. */
		spin_unlock_irqrestore(&cq->lock, flags);
		kvfree(ring);
		return -EINVAL;
	}
	for (i = 0; i < n; i++)
		ring[i] = cq->ring[(cq->head + i) & (cq->size - 1)];
	old = cq->ring;
	cq->ring = ring;
	cq->size = size;
	cq->head = 0;
	cq->tail = n;
	ibcq->cqe = size - 1;
	spin_unlock_irqrestore(&cq->lock, flags);
	kvfree(old);
	return 0;
}

int metaroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct metaroce_cq *cq = to_mcq(ibcq);
	unsigned long flags;
	int n = 0;

	if (cq->uring)		/* the process polls its ring itself */
		return 0;
	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && cq->head != cq->tail) {
		wc[n++] = cq->ring[cq->head & (cq->size - 1)];
		cq->head++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int metaroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct metaroce_cq *cq = to_mcq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* NEXT_COMP includes SOLICITED; keep the wider request. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if (flags & IB_CQ_REPORT_MISSED_EVENTS &&
	    (cq->uring ? metaroce_ucq_used(cq) : cq->tail - cq->head))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/* A WQE that never reached the queue completes at once with this status. */
void metaroce_ring_error(struct metaroce_qp *qp, struct ib_cq *cq, u64 wr_id,
			 enum ib_wc_opcode opcode, enum ib_wc_status status)
{
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = status,
		.opcode = opcode,
		.qp = &qp->ibqp,
	};

	metaroce_count(to_mdev(qp->ibqp.device), METAROCE_CNT_USER_WQE_ERRORS);
	metaroce_cq_push(to_mcq(cq), &wc, false);
}

/* A WQE that the QP's Error state took: it completes with a flush error. */
void metaroce_flush_one(struct metaroce_qp *qp, struct ib_cq *ibcq, u64 wr_id,
			enum ib_wc_opcode opcode)
{
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = opcode,
		.qp = &qp->ibqp,
	};

	metaroce_cq_push(to_mcq(ibcq), &wc, false);
}
