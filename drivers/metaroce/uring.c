// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Userspace rings: mmapped CQ, SQ, RQ and SRQ of user objects, and the WQEs copied out of them. */

#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/vmalloc.h>

#include "metaroce.h"

/* One mapping handed to a process: the ring's memory lives as long as the entry. */
struct metaroce_mmap {
	struct rdma_user_mmap_entry rdma;
	void *buf;
};

static struct metaroce_mmap *to_mmap(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct metaroce_mmap, rdma);
}

int metaroce_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *e;
	int err;

	e = rdma_user_mmap_entry_get(ibuc, vma);
	if (!e)
		return -EINVAL;
	/*
	 * The pages are inserted with a reference each, so they outlive
	 * vfree() while the process keeps them mapped; nothing of the kernel
	 * is ever reachable through a stale mapping.
	 */
	err = remap_vmalloc_range(vma, to_mmap(e)->buf, 0);
	rdma_user_mmap_entry_put(e);
	return err;
}

void metaroce_mmap_free(struct rdma_user_mmap_entry *e)
{
	struct metaroce_mmap *m = to_mmap(e);

	vfree(m->buf);
	kfree(m);
}

/* A ring of n entries (a power of two) of esize bytes behind a header page. */
static int metaroce_uring_create(struct ib_udata *udata, struct metaroce_uring *r, u32 n,
				 u32 esize, struct metaroce_ring_info *info)
{
	struct metaroce_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct metaroce_ucontext, ibuc);
	struct metaroce_mmap *m;
	size_t size;
	int err;

	size = PAGE_ALIGN(size_add(METAROCE_RING_HDR_BYTES, array_size(n, esize)));
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->buf = vmalloc_user(size);
	if (!m->buf) {
		kfree(m);
		return -ENOMEM;
	}
	err = rdma_user_mmap_entry_insert(&uc->ibuc, &m->rdma, size);
	if (err) {
		vfree(m->buf);
		kfree(m);
		return err;
	}
	r->entry = &m->rdma;
	r->hdr = m->buf;
	r->entries = m->buf + METAROCE_RING_HDR_BYTES;
	r->n = n;
	r->esize = esize;
	r->cons = 0;
	info->mmap_offset = rdma_user_mmap_get_offset(&m->rdma);
	info->mmap_size = size;
	info->entries = n;
	info->entry_size = esize;
	return 0;
}

/* The memory goes with the last mapping (metaroce_mmap_free). */
static void metaroce_uring_destroy(struct metaroce_uring *r)
{
	if (r->entry)
		rdma_user_mmap_entry_remove(r->entry);
	r->entry = NULL;
}

static void *metaroce_uring_slot(struct metaroce_uring *r, u32 index)
{
	return r->entries + (size_t)(index & (r->n - 1)) * r->esize;
}

/* ---- completion queues ---- */

int metaroce_ucq_create(struct metaroce_cq *cq, u32 size, struct ib_udata *udata)
{
	struct metaroce_create_cq_resp resp = {};
	int err;

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	cq->uring = kzalloc(sizeof(*cq->uring), GFP_KERNEL);
	if (!cq->uring)
		return -ENOMEM;
	err = metaroce_uring_create(udata, cq->uring, size, sizeof(struct metaroce_user_cqe),
				    &resp.cq);
	if (!err)
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		metaroce_ucq_destroy(cq);
	return err;
}

void metaroce_ucq_destroy(struct metaroce_cq *cq)
{
	if (!cq->uring)
		return;
	metaroce_uring_destroy(cq->uring);
	kfree(cq->uring);
	cq->uring = NULL;
}

/* Completions the process has not consumed; a consumer index it broke reads as full. */
u32 metaroce_ucq_used(struct metaroce_cq *cq)
{
	u32 used = cq->tail - READ_ONCE(cq->uring->hdr->cons);

	return used <= cq->size ? used : cq->size;
}

static void metaroce_uqp_publish_done(const struct ib_wc *wc)
{
	struct metaroce_qp *qp = wc->qp ? to_mqp(wc->qp) : NULL;

	if (!qp || !qp->uqp)
		return;
	if (!(wc->opcode & IB_WC_RECV)) {
		if (qp->ibqp.qp_type == IB_QPT_RC)	/* UD: metaroce_ud_usq_done() */
			WRITE_ONCE(qp->uqp->sq.hdr->done, READ_ONCE(qp->sq.head));
	} else if (qp->uqp->rq.hdr) {		/* none on an SRQ */
		WRITE_ONCE(qp->uqp->rq.hdr->done, READ_ONCE(qp->rq.head));
	}
}

/* Write one completion at cq->tail (cq->lock held, room checked) and publish it. */
void metaroce_ucq_write(struct metaroce_cq *cq, const struct ib_wc *wc)
{
	struct metaroce_user_cqe *e = metaroce_uring_slot(cq->uring, cq->tail);

	/* The slots the WQE used are free before its completion is seen. */
	metaroce_uqp_publish_done(wc);
	memset(e, 0, sizeof(*e));
	e->wr_id = wc->wr_id;
	e->status = wc->status;
	e->opcode = wc->opcode;
	e->vendor_err = wc->vendor_err;
	e->byte_len = wc->byte_len;
	e->qp_num = wc->qp ? wc->qp->qp_num : 0;
	e->src_qp = wc->src_qp;
	if (wc->wc_flags & IB_WC_GRH)
		e->flags |= METAROCE_CQE_F_GRH;
	if (wc->wc_flags & IB_WC_WITH_IMM) {
		e->flags |= METAROCE_CQE_F_IMM;
		e->imm_inv = (__force u32)wc->ex.imm_data;
	} else if (wc->wc_flags & IB_WC_WITH_INVALIDATE) {
		e->flags |= METAROCE_CQE_F_INV;
		e->imm_inv = wc->ex.invalidate_rkey;
	}
	e->pkey_index = wc->pkey_index;
	e->sl = wc->sl;
	/* Pairs with the provider's acquire of prod: the entry before the index. */
	smp_store_release(&cq->uring->hdr->prod, cq->tail + 1);
}

/* ---- queue pairs ---- */

static u32 metaroce_sqe_size(u32 max_sge, u32 max_inline)
{
	u32 body = max(max_sge * (u32)sizeof(struct metaroce_user_sge), max_inline);

	return roundup_pow_of_two(sizeof(struct metaroce_user_sqe) + max(body, 16u));
}

static u32 metaroce_rqe_size(u32 max_sge)
{
	return roundup_pow_of_two(sizeof(struct metaroce_user_rqe) +
				  max(max_sge, 1u) * sizeof(struct metaroce_user_sge));
}

int metaroce_uqp_create(struct metaroce_qp *qp, struct ib_udata *udata)
{
	struct metaroce_create_qp_resp resp = {};
	struct metaroce_uqp *u;
	u32 sq_n, rq_n;
	int err;

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	qp->uqp = u;
	u->uc = rdma_udata_to_drv_context(udata, struct metaroce_ucontext, ibuc);
	mutex_init(&u->ud_lock);
	sq_n = roundup_pow_of_two(max(qp->sq.max_wr, 1u));
	rq_n = roundup_pow_of_two(max(qp->rq.max_wr, 1u));
	err = metaroce_uring_create(udata, &u->sq, sq_n,
				    metaroce_sqe_size(qp->sq.max_sge, qp->max_inline), &resp.sq);
	if (err)
		goto err;
	/* A QP on an SRQ takes its receives from the SRQ's ring. */
	if (!qp->srq)
		err = metaroce_uring_create(udata, &u->rq, rq_n,
					    metaroce_rqe_size(qp->rq.max_sge), &resp.rq);
	if (err)
		goto err;
	err = -ENOMEM;
	u->scratch = kmalloc(max(u->sq.esize, u->rq.esize), GFP_KERNEL);
	u->sgl = kcalloc(max(qp->sq.max_sge, 1u), sizeof(*u->sgl), GFP_KERNEL);
	if (!u->scratch || !u->sgl)
		goto err;
	if (qp->max_inline) {
		/* One inline buffer per send queue slot, held until the WQE completes. */
		u->inline_buf = kvcalloc(qp->sq.slots, qp->max_inline, GFP_KERNEL);
		if (!u->inline_buf)
			goto err;
	}
	resp.max_send_wr = qp->sq.max_wr;
	resp.max_recv_wr = qp->srq ? 0 : qp->rq.max_wr;
	resp.max_send_sge = qp->sq.max_sge;
	resp.max_recv_sge = qp->srq ? 0 : qp->rq.max_sge;
	resp.max_inline = qp->max_inline;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err;
	return 0;
err:
	metaroce_uqp_destroy(qp);
	return err;
}

void metaroce_uqp_destroy(struct metaroce_qp *qp)
{
	struct metaroce_uqp *u = qp->uqp;

	if (!u)
		return;
	metaroce_uring_destroy(&u->sq);
	metaroce_uring_destroy(&u->rq);
	kvfree(u->inline_buf);
	kfree(u->sgl);
	kfree(u->scratch);
	mutex_destroy(&u->ud_lock);
	kfree(u);
	qp->uqp = NULL;
}

/*
 * An SGE a process wrote: it must name one of its own user MRs (same PD) and
 * lie inside it, and if the kernel is to write into it (receives, Read data,
 * atomic results) the MR must grant IB_ACCESS_LOCAL_WRITE.  The local DMA
 * lkey means kernel memory and is never accepted from a ring.
 */
static bool metaroce_user_sge_in_pd(struct ib_pd *pd, const struct metaroce_user_sge *s,
				    bool write)
{
	struct metaroce_dev *mdev = to_mdev(pd->device);
	struct metaroce_mr *mr;

	if (s->lkey == mdev->ibdev.local_dma_lkey)
		return false;
	mr = xa_load(&mdev->mrs, s->lkey >> 8);
	if (!mr || READ_ONCE(mr->ibmr.lkey) != s->lkey || !mr->umem || mr->ibmr.pd != pd)
		return false;
	if (write && !(READ_ONCE(mr->access) & IB_ACCESS_LOCAL_WRITE)) {
		metaroce_count(mdev, METAROCE_CNT_LOCAL_ACCESS_ERRORS);
		return false;
	}
	return s->addr >= mr->ibmr.iova && s->length <= mr->ibmr.length &&
	       s->addr - mr->ibmr.iova <= mr->ibmr.length - s->length;
}

/* A WQE that never reached the queue completes at once with this status. */
static void metaroce_ring_error(struct metaroce_qp *qp, struct ib_cq *cq, u64 wr_id,
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
 * Turn the send WQE in u->scratch into the work request metaroce_post_send
 * takes, checking everything; returns the completion status of a bad one.
 */
static enum ib_wc_status metaroce_sqe_to_wr(struct metaroce_qp *qp, struct ib_atomic_wr *aw,
					    struct ib_rdma_wr *rw, struct ib_sge *sgl,
					    struct ib_send_wr **out)
{
	struct metaroce_uqp *u = qp->uqp;
	struct metaroce_user_sqe *e = u->scratch;
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
		memcpy(u->scratch, metaroce_uring_slot(&u->sq, u->sq.cons), u->sq.esize);
		WRITE_ONCE(h->cons, ++u->sq.cons);
		memset(&aw, 0, sizeof(aw));
		memset(&rw, 0, sizeof(rw));
		st = metaroce_sqe_to_wr(qp, &aw, &rw, u->sgl, &wr);
		if (st == IB_WC_SUCCESS && metaroce_post_send_locked(qp, wr, &bad))
			st = IB_WC_LOC_QP_OP_ERR;
		if (st != IB_WC_SUCCESS) {
			/* IB's rule for a local error: the WQE fails, the QP goes to Error. */
			metaroce_ring_error(qp, qp->ibqp.send_cq,
					    ((struct metaroce_user_sqe *)u->scratch)->wr_id,
					    IB_WC_SEND, st);
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
void metaroce_urq_pull(struct metaroce_qp *qp)
{
	struct metaroce_uqp *u = qp->uqp;

	if (!u || !u->rq.hdr)
		return;
	metaroce_uring_pull_recv(&u->rq, u->scratch, &qp->rq, qp->ibqp.pd, qp);
	WRITE_ONCE(u->rq.hdr->done, qp->rq.head);
}

/* ---- shared receive queues ---- */

int metaroce_usrq_create(struct metaroce_srq *srq, struct ib_udata *udata)
{
	struct metaroce_create_srq_resp resp = {};
	int err;

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	srq->uring = kzalloc(sizeof(*srq->uring), GFP_KERNEL);
	if (!srq->uring)
		return -ENOMEM;
	err = metaroce_uring_create(udata, srq->uring, srq->rq.slots,
				    metaroce_rqe_size(srq->rq.max_sge), &resp.rq);
	if (err)
		goto err;
	err = -ENOMEM;
	srq->scratch = kmalloc(srq->uring->esize, GFP_KERNEL);
	if (!srq->scratch)
		goto err;
	resp.max_wr = srq->rq.max_wr;
	resp.max_sge = srq->rq.max_sge;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err;
	return 0;
err:
	metaroce_usrq_destroy(srq);
	return err;
}

void metaroce_usrq_destroy(struct metaroce_srq *srq)
{
	if (!srq->uring)
		return;
	metaroce_uring_destroy(srq->uring);
	kfree(srq->uring);
	srq->uring = NULL;
	kfree(srq->scratch);
	srq->scratch = NULL;
}

/*
 * Take what the process posted on its SRQ ring into the SRQ (srq->rq.lock
 * held) for qp, which needs a receive; qp takes the blame for bad WQEs.
 */
void metaroce_usrq_pull(struct metaroce_srq *srq, struct metaroce_qp *qp)
{
	metaroce_uring_pull_recv(srq->uring, srq->scratch, &srq->rq, srq->ibsrq.pd, qp);
}

/*
 * How many WQEs have left the SRQ, taken by QPs or failed (srq->rq.lock
 * held): what the ring gave minus what the SRQ still holds.  The process
 * may post that many again.
 */
void metaroce_usrq_publish_done(struct metaroce_srq *srq)
{
	WRITE_ONCE(srq->uring->hdr->done, srq->uring->cons - (srq->rq.tail - srq->rq.head));
}

/* ---- UD send rings ---- */

/* One more of a UD QP's send WQEs completed: its slot is the process's again. */
void metaroce_ud_usq_done(struct metaroce_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->ud_txq.lock, flags);
	WRITE_ONCE(qp->uqp->sq.hdr->done, ++qp->uqp->ud_done);
	spin_unlock_irqrestore(&qp->ud_txq.lock, flags);
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
	struct metaroce_user_sqe *e = u->scratch;
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
			metaroce_count(mdev, METAROCE_CNT_USER_WQE_ERRORS);
			metaroce_ud_post_error(qp, e->wr_id, st);
		}
	}
	mutex_unlock(&u->ud_lock);
	if (kick)
		metaroce_ud_kick(qp);
}
