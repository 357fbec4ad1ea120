// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Verbs objects (PD, AH, CQ, QP, MR) and their limits, state and queues. */

#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/vmalloc.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_umem.h>

#include "metaroce.h"

static int metaroce_count_get(atomic_t *count, int max)
{
	if (atomic_inc_return(count) > max) {
		atomic_dec(count);
		return -ENOMEM;
	}
	return 0;
}

/* ---- protection domains ---- */

static int metaroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return metaroce_count_get(&to_mdev(ibpd->device)->n_pd, METAROCE_MAX_PD);
}

static int metaroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_mdev(ibpd->device)->n_pd);
	return 0;
}

/* ---- address handles ---- */

static int metaroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
			      struct ib_udata *udata)
{
	struct metaroce_ah *ah = container_of(ibah, struct metaroce_ah, ibah);
	struct rdma_ah_attr *attr = init_attr->ah_attr;
	struct metaroce_dev *mdev = to_mdev(ibah->device);
	int err;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE || !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	if (rdma_ah_get_port_num(attr) != 1 || !attr->grh.sgid_attr)
		return -EINVAL;
	ah->attr = *attr;
	/* The GID attribute is owned by the core's copy; we keep the addresses only. */
	memcpy(&ah->saddr, attr->grh.sgid_attr->gid.raw, sizeof(ah->saddr));
	ah->attr.grh.sgid_attr = NULL;
	err = metaroce_count_get(&mdev->n_ah, METAROCE_MAX_AH);
	if (err || !udata)
		return err;
	err = metaroce_uah_publish(ah, udata);
	if (err)
		atomic_dec(&mdev->n_ah);
	return err;
}

static int metaroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	struct metaroce_ah *ah = container_of(ibah, struct metaroce_ah, ibah);

	*attr = ah->attr;
	return 0;
}

static int metaroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	metaroce_uah_unpublish(container_of(ibah, struct metaroce_ah, ibah));
	atomic_dec(&to_mdev(ibah->device)->n_ah);
	return 0;
}

/* ---- completion queues ---- */

static int metaroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
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

static int metaroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
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

/* Resize a kernel CQ: a new ring, the waiting completions moved over in order. */
static int metaroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct metaroce_cq *cq = to_mcq(ibcq);
	struct ib_wc *ring, *old;
	unsigned long flags;
	u32 size, n, i;

	if (udata)
		return -EOPNOTSUPP;
	if (cqe < 1 || cqe > METAROCE_MAX_CQE)
		return -EINVAL;
	size = roundup_pow_of_two(cqe + 1);
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

static int metaroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
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

static int metaroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
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

/* ---- queue pairs ---- */

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

static int metaroce_sq_init(struct metaroce_sq *sq, const struct ib_qp_cap *cap)
{
	sq->max_wr = cap->max_send_wr;
	sq->max_sge = cap->max_send_sge;
	/* Inline data is kept where the SGEs would be. */
	sq->wqe_size = size_add(sizeof(struct metaroce_send_wqe),
				max_t(size_t, array_size(sq->max_sge, sizeof(struct ib_sge)),
				      cap->max_inline_data));
	if (!sq->max_wr)
		return 0;
	sq->slots = roundup_pow_of_two(sq->max_wr);
	sq->wqes = kvcalloc(sq->slots, sq->wqe_size, GFP_KERNEL);
	return sq->wqes ? 0 : -ENOMEM;
}

static void metaroce_flush_one(struct metaroce_qp *qp, struct ib_cq *ibcq, u64 wr_id,
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

static int metaroce_check_qp_init_attr(struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;

	if (init->create_flags)
		return -EOPNOTSUPP;
	if (init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UD &&
	    init->qp_type != IB_QPT_GSI)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > METAROCE_MAX_QP_WR || cap->max_recv_wr > METAROCE_MAX_QP_WR ||
	    cap->max_send_sge > METAROCE_MAX_SGE || cap->max_recv_sge > METAROCE_MAX_SGE ||
	    cap->max_inline_data > METAROCE_MAX_INLINE)
		return -EINVAL;
	return 0;
}

static int metaroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			      struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ibqp->device);
	struct metaroce_qp *qp = to_mqp(ibqp);
	u32 qpn;
	int err;

	err = metaroce_check_qp_init_attr(init);
	if (err)
		return err;
	if (udata && init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UD)
		return -EOPNOTSUPP;
	err = metaroce_count_get(&mdev->n_qp, METAROCE_MAX_QP);
	if (err)
		return err;

	mutex_init(&qp->state_lock);
	qp->state = IB_QPS_RESET;
	qp->max_send_wr = init->cap.max_send_wr;
	qp->max_send_sge = init->cap.max_send_sge;
	qp->max_inline = init->cap.max_inline_data;
	qp->sq_sig_type = init->sq_sig_type;
	if (init->srq)
		err = metaroce_srq_qp_init(qp, init->srq);
	else
		err = metaroce_rq_init(&qp->rq, &init->cap);
	if (err)
		goto err_count;
	err = metaroce_sq_init(&qp->sq, &init->cap);
	if (err)
		goto err_rq;
	qp->slot = -1;
	metaroce_ud_init(qp);
	if (udata) {
		err = metaroce_uqp_create(qp, udata);
		if (err)
			goto err_rq;
	}

	if (init->qp_type == IB_QPT_GSI) {
		qpn = 1;
		err = xa_insert_bh(&mdev->qps, qpn, qp, GFP_KERNEL);
	} else {
		err = xa_alloc_cyclic_bh(&mdev->qps, &qpn, qp,
					 XA_LIMIT(METAROCE_FIRST_QPN, METAROCE_MAX_QPN),
					 &mdev->next_qpn, GFP_KERNEL);
		if (err > 0)	/* wrapped: still a valid, free number */
			err = 0;
	}
	if (err)
		goto err_rq;
	ibqp->qp_num = qpn;
	return 0;

err_rq:
	metaroce_uqp_destroy(qp);
	kvfree(qp->sq.wqes);
	kvfree(qp->rq.wqes);
err_count:
	atomic_dec(&mdev->n_qp);
	return err == -EBUSY ? -EEXIST : err;
}

static int metaroce_check_qp_attr(struct metaroce_qp *qp, struct ib_qp_attr *attr, int mask)
{
	if (mask & IB_QP_PORT && attr->port_num != 1)
		return -EINVAL;
	if (mask & IB_QP_PKEY_INDEX && attr->pkey_index != 0)
		return -EINVAL;
	if (mask & IB_QP_PATH_MTU && (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if (mask & IB_QP_AV && attr->ah_attr.type != RDMA_AH_ATTR_TYPE_ROCE)
		return -EINVAL;
	if (mask & IB_QP_CAP &&
	    (attr->cap.max_send_wr > qp->max_send_wr || attr->cap.max_recv_wr > qp->rq.max_wr))
		return -EINVAL;
	return 0;
}

static int metaroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			      struct ib_udata *udata)
{
	struct metaroce_qp *qp = to_mqp(ibqp);
	enum ib_qp_state cur, next;
	int err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_lock);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	next = mask & IB_QP_STATE ? attr->qp_state : cur;
	err = -EINVAL;
	if (cur != qp->state || !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask))
		goto out;
	err = metaroce_check_qp_attr(qp, attr, mask);
	if (err)
		goto out;

	if (mask & IB_QP_AV) {
		qp->attr.ah_attr = attr->ah_attr;
		qp->attr.ah_attr.grh.sgid_attr = NULL;
	}
	if (mask & IB_QP_QKEY)
		WRITE_ONCE(qp->attr.qkey, attr->qkey);
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU)
		qp->attr.path_mtu = attr->path_mtu;
	if (mask & IB_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_RQ_PSN)
		qp->attr.rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		qp->attr.sq_psn = attr->sq_psn;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;

	if (cur == IB_QPS_INIT && next == IB_QPS_RTR && ibqp->qp_type == IB_QPT_RC) {
		/* The caller's AV still holds the source GID's attribute. */
		err = metaroce_qp_attach(qp, attr);
		if (err)
			goto out;
	}
	if (mask & (IB_QP_RNR_RETRY | IB_QP_MIN_RNR_TIMER))
		metaroce_qp_set_rnr(qp);
	qp->state = next;
	if (next == IB_QPS_ERR)
		metaroce_qp_flush(qp);
	else if (next == IB_QPS_RESET)
		metaroce_qp_reset(qp);
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

static int metaroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			     struct ib_qp_init_attr *init)
{
	struct metaroce_qp *qp = to_mqp(ibqp);

	mutex_lock(&qp->state_lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	mutex_unlock(&qp->state_lock);
	attr->port_num = 1;
	attr->cap.max_send_wr = qp->max_send_wr;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_wr = qp->srq ? 0 : qp->rq.max_wr;
	attr->cap.max_recv_sge = qp->srq ? 0 : qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_type;
	return 0;
}

static int metaroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ibqp->device);
	struct metaroce_qp *qp = to_mqp(ibqp);

	xa_erase_bh(&mdev->qps, ibqp->qp_num);
	if (ibqp->qp_type == IB_QPT_UD || ibqp->qp_type == IB_QPT_GSI)
		metaroce_ud_destroy(qp);
	metaroce_qp_detach(qp);
	metaroce_uqp_destroy(qp);
	kvfree(qp->sq.wqes);
	kvfree(qp->rq.wqes);
	mutex_destroy(&qp->state_lock);
	atomic_dec(&mdev->n_qp);
	return 0;
}

/* One receive WQE onto a QP's or an SRQ's ring; -ENOMEM when it is full. */
int metaroce_rq_post(struct metaroce_rq *rq, const struct ib_recv_wr *wr)
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

static int metaroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
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

/* Sends posted to a QP in the Error state complete at once, flushed. */
int metaroce_post_send_flush(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			     const struct ib_send_wr **bad_wr)
{
	for (; wr; wr = wr->next)
		metaroce_flush_one(qp, qp->ibqp.send_cq, wr->wr_id, IB_WC_SEND);
	return 0;
}

/* ---- memory regions ---- */

/* Gives a filled-in MR its keys and makes it findable by them (DMA and user MRs). */
int metaroce_mr_publish(struct metaroce_dev *mdev, struct metaroce_mr *mr)
{
	u32 index;
	int err;

	err = xa_alloc_cyclic(&mdev->mrs, &index, mr, XA_LIMIT(1, METAROCE_MAX_MR),
			      &mdev->next_mr_index, GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	/* Index in the upper 24 bits, a random key byte against stale-key reuse. */
	mr->ibmr.lkey = index << 8 | get_random_u8();
	mr->ibmr.rkey = mr->ibmr.lkey;
	return 0;
}

static struct ib_mr *metaroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct metaroce_mr *mr;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->access = access;
	err = metaroce_mr_publish(to_mdev(ibpd->device), mr);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int metaroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct metaroce_mr *mr = container_of(ibmr, struct metaroce_mr, ibmr);

	xa_erase(&to_mdev(ibmr->device)->mrs, ibmr->lkey >> 8);
	/*
	 * Readers find MRs under RCU (softirq, BH-off sections, the UD
	 * doorbell's rcu_read_lock): only when they are done may the pages
	 * go back to their owner.
	 */
	synchronize_rcu();
	ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kfree(mr);
	return 0;
}

/* ---- fast registration ---- */

static struct ib_mr *metaroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_sg)
{
	struct metaroce_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_sg || max_sg > METAROCE_MAX_FRWR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pages = kvcalloc(max_sg, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->frwr = true;
	mr->max_pages = max_sg;
	err = metaroce_mr_publish(to_mdev(ibpd->device), mr);
	if (err) {
		kvfree(mr->pages);
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int metaroce_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct metaroce_mr *mr = container_of(ibmr, struct metaroce_mr, ibmr);

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = addr;
	return 0;
}

static int metaroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
			      unsigned int *sg_offset)
{
	struct metaroce_mr *mr = container_of(ibmr, struct metaroce_mr, ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, metaroce_set_page);
}

/*
 * Where va lies in a fast-registered or user MR: page index and offset in it;
 * false if outside.  A user MR's first page starts at the page of the user
 * address it was registered at, whatever iova the user chose.
 */
static bool metaroce_mr_locate(struct metaroce_mr *mr, u64 va, u32 len, u32 *page, u32 *off)
{
	u64 psize = mr->ibmr.page_size, first = mr->ibmr.iova & ~(psize - 1), pos;

	if ((mr->frwr && !mr->valid) || va < mr->ibmr.iova || len > mr->ibmr.length ||
	    va - mr->ibmr.iova > mr->ibmr.length - len)
		return false;
	if (mr->umem)
		first = mr->ibmr.iova - ib_umem_offset(mr->umem);
	pos = va - first;
	*page = div64_u64(pos, psize);
	*off = pos - (u64)*page * psize;
	return *page < mr->npages;
}

void *metaroce_mr_ptr(struct metaroce_mr *mr, u64 va, u32 len)
{
	u32 page, off;
	void *p;

	if (!mr->frwr && !mr->umem)
		return (void *)(uintptr_t)va;
	if (!metaroce_mr_locate(mr, va, len, &page, &off) || off + len > mr->ibmr.page_size)
		return NULL;
	p = (void *)(uintptr_t)(mr->pages[page] + off);
	/* An atomic's target must be aligned where the CPU sees it, too. */
	return IS_ALIGNED((uintptr_t)p, len == 8 ? 8 : 1) ? p : NULL;
}

bool metaroce_mr_copy(struct metaroce_mr *mr, u64 va, void *buf, u32 len, bool to_mr)
{
	u32 page, off, n;
	void *p;

	if (!mr->frwr && !mr->umem) {
		p = (void *)(uintptr_t)va;
		if (buf && to_mr)
			memcpy(p, buf, len);
		else if (buf)
			memcpy(buf, p, len);
		return true;
	}
	if (!metaroce_mr_locate(mr, va, len, &page, &off))
		return false;
	while (len) {
		if (page >= mr->npages)
			return false;
		n = min_t(u32, len, mr->ibmr.page_size - off);
		p = (void *)(uintptr_t)(mr->pages[page] + off);
		if (buf && to_mr)
			memcpy(p, buf, n);
		else if (buf)
			memcpy(buf, p, n);
		if (buf)
			buf += n;
		len -= n;
		off = 0;
		page++;
	}
	return true;
}

/* IB_WR_REG_MR and IB_WR_LOCAL_INV: change the MR now, under the QP's PD. */
int metaroce_local_wr(struct metaroce_qp *qp, const struct ib_send_wr *wr)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_mr *mr;
	u32 key;

	if (wr->opcode == IB_WR_REG_MR) {
		mr = container_of(reg_wr(wr)->mr, struct metaroce_mr, ibmr);
		key = reg_wr(wr)->key;
		if (!mr->frwr || mr->ibmr.pd != qp->ibqp.pd || (key >> 8) != (mr->ibmr.lkey >> 8))
			return -EINVAL;
		mr->access = reg_wr(wr)->access;
		mr->ibmr.lkey = key;
		mr->ibmr.rkey = key;
		/* Pairs with the receive path's acquire: keys and pages before valid. */
		smp_store_release(&mr->valid, true);
		return 0;
	}
	key = wr->ex.invalidate_rkey;
	mr = xa_load(&mdev->mrs, key >> 8);
	if (!mr || mr->ibmr.rkey != key || !mr->frwr || mr->ibmr.pd != qp->ibqp.pd)
		return -EINVAL;
	WRITE_ONCE(mr->valid, false);
	return 0;
}

const struct ib_device_ops metaroce_verbs_ops = {
	.alloc_pd = metaroce_alloc_pd,
	.create_ah = metaroce_create_ah,
	.create_cq = metaroce_create_cq,
	.create_qp = metaroce_create_qp,
	.create_srq = metaroce_create_srq,
	.create_user_ah = metaroce_create_ah,
	.dealloc_pd = metaroce_dealloc_pd,
	.alloc_mr = metaroce_alloc_mr,
	.dereg_mr = metaroce_dereg_mr,
	.map_mr_sg = metaroce_map_mr_sg,
	.destroy_ah = metaroce_destroy_ah,
	.destroy_cq = metaroce_destroy_cq,
	.destroy_qp = metaroce_destroy_qp,
	.destroy_srq = metaroce_destroy_srq,
	.get_dma_mr = metaroce_get_dma_mr,
	.modify_qp = metaroce_modify_qp,
	.modify_srq = metaroce_modify_srq,
	.resize_cq = metaroce_resize_cq,
	.poll_cq = metaroce_poll_cq,
	.post_recv = metaroce_post_recv,
	.post_send = metaroce_post_send,
	.post_srq_recv = metaroce_post_srq_recv,
	.query_ah = metaroce_query_ah,
	.query_qp = metaroce_query_qp,
	.query_srq = metaroce_query_srq,
	.req_notify_cq = metaroce_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, metaroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, metaroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, metaroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, metaroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, metaroce_srq, ibsrq),
};
