// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Userspace rings: the memory of the mmapped CQ, SQ, RQ and SRQ rings of user objects. */

#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/vmalloc.h>

#include "metaroce.h"

/*
 * One mapping handed to a process: the ring's memory lives as long as the
 * entry, and is charged to the process that made it for as long.
 */
struct metaroce_mmap {
	struct rdma_user_mmap_entry rdma;
	void *buf;
	struct mm_struct *mm;	/* charged: pages in its pinned_vm */
	unsigned long pages;
};

static struct metaroce_mmap *to_mmap(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct metaroce_mmap, rdma);
}

/*
 * A ring's pages are memory the process holds in the kernel, as pinned as an
 * MR's: charged to its pinned_vm against RLIMIT_MEMLOCK as ib_umem_get()
 * charges MRs (CAP_IPC_LOCK lifts the limit), so max_cq rings of max_cqe
 * entries are not free for any local user.  -ENOMEM over the limit.
 */
static int metaroce_mmap_charge(struct metaroce_mmap *m, size_t size)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	struct mm_struct *mm = current->mm;

	m->pages = size >> PAGE_SHIFT;
	if (atomic64_add_return(m->pages, &mm->pinned_vm) > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(m->pages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	m->mm = mm;
	return 0;
}

static void metaroce_mmap_uncharge(struct metaroce_mmap *m)
{
	atomic64_sub(m->pages, &m->mm->pinned_vm);
	mmdrop(m->mm);
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
	metaroce_mmap_uncharge(m);
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
	err = metaroce_mmap_charge(m, size);
	if (err) {
		kfree(m);
		return err;
	}
	m->buf = vmalloc_user(size);
	if (!m->buf) {
		metaroce_mmap_uncharge(m);
		kfree(m);
		return -ENOMEM;
	}
	err = rdma_user_mmap_entry_insert(&uc->ibuc, &m->rdma, size);
	if (err) {
		vfree(m->buf);
		metaroce_mmap_uncharge(m);
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

void *metaroce_uring_slot(struct metaroce_uring *r, u32 index)
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

/*
 * Resize a user CQ: a new ring (and mapping) of size entries, the completions
 * the process has not consumed copied over at the same indices, the old ring
 * left to the process's mapping until it unmaps it.  -EINVAL if they do not
 * fit; the CQ is unchanged then.
 */
int metaroce_ucq_resize(struct metaroce_cq *cq, u32 size, struct ib_udata *udata)
{
	struct metaroce_resize_cq_resp resp = {};
	struct metaroce_uring *r, *old;
	unsigned long flags;
	u32 cons, i;
	int err;

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	err = metaroce_uring_create(udata, r, size, sizeof(struct metaroce_user_cqe), &resp.cq);
	if (err)
		goto err_free;
	/* The process learns of the new ring only if the CQ then uses it. */
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err_destroy;

	spin_lock_irqsave(&cq->lock, flags);
	old = cq->uring;
	cons = READ_ONCE(old->hdr->cons);
	if (cq->tail - cons > cq->size - 1 || cq->tail - cons >= size) {
		/* Would lose completions, or an index no honest consumer wrote. */
		spin_unlock_irqrestore(&cq->lock, flags);
		err = -EINVAL;
		goto err_destroy;
	}
	for (i = cons; i != cq->tail; i++)
		memcpy(metaroce_uring_slot(r, i), metaroce_uring_slot(old, i), r->esize);
	r->hdr->cons = cons;
	r->hdr->prod = cq->tail;
	cq->uring = r;
	cq->size = size;
	cq->ibcq.cqe = size - 1;
	spin_unlock_irqrestore(&cq->lock, flags);
	metaroce_uring_destroy(old);
	kfree(old);
	return 0;

err_destroy:
	metaroce_uring_destroy(r);
err_free:
	kfree(r);
	return err;
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
	/* A UD receive: which network header the GRH area holds (the ABI header). */
	if (wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE)
		e->sl = METAROCE_CQE_SL_ROCE_V2 | (wc->network_hdr_type == RDMA_NETWORK_IPV4 ?
						   METAROCE_CQE_SL_IPV4 : METAROCE_CQE_SL_IPV6);
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
	u->sq_scratch = kmalloc(u->sq.esize, GFP_KERNEL);
	if (!qp->srq)
		u->rq_scratch = kmalloc(u->rq.esize, GFP_KERNEL);
	u->sgl = kcalloc(max(qp->sq.max_sge, 1u), sizeof(*u->sgl), GFP_KERNEL);
	if (!u->sq_scratch || (!qp->srq && !u->rq_scratch) || !u->sgl)
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
	kfree(u->rq_scratch);
	kfree(u->sq_scratch);
	mutex_destroy(&u->ud_lock);
	kfree(u);
	qp->uqp = NULL;
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
 * How many WQEs have left the SRQ, taken by QPs or failed (srq->rq.lock
 * held): what the ring gave minus what the SRQ still holds.  The process
 * may post that many again.
 */
void metaroce_usrq_publish_done(struct metaroce_srq *srq)
{
	WRITE_ONCE(srq->uring->hdr->done, srq->uring->cons - (srq->rq.tail - srq->rq.head));
}

/*
 * The new ring of a user SRQ being resized to n slots: made, and described in
 * the process's response at resp_addr, before the SRQ uses it.
 */
int metaroce_usrq_ring_new(struct metaroce_srq *srq, struct ib_udata *udata, u32 n,
			   u32 max_wr, struct metaroce_uring **out)
{
	struct metaroce_modify_srq_resp resp = { .max_wr = max_wr };
	struct metaroce_modify_srq_cmd cmd;
	struct metaroce_uring *r;
	int err;

	if (udata->inlen < sizeof(cmd))
		return -EINVAL;
	err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
	if (err)
		return err;
	if (udata->inlen > sizeof(cmd) &&
	    !ib_is_udata_cleared(udata, sizeof(cmd), udata->inlen - sizeof(cmd)))
		return -EINVAL;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	err = metaroce_uring_create(udata, r, n, srq->uring->esize, &resp.rq);
	if (err) {
		kfree(r);
		return err;
	}
	if (copy_to_user(u64_to_user_ptr(cmd.resp_addr), &resp, sizeof(resp))) {
		metaroce_usrq_ring_free(r);
		return -EFAULT;
	}
	*out = r;
	return 0;
}

void metaroce_usrq_ring_free(struct metaroce_uring *r)
{
	metaroce_uring_destroy(r);
	kfree(r);
}

/*
 * Move what the process posted and the SRQ has not taken yet from the SRQ's
 * ring into r, at the same indices (srq->rq.lock held); false, and nothing
 * moved, if it does not fit in max_wr beside the held WQEs or the producer
 * index is one no honest process writes.
 */
bool metaroce_usrq_ring_move(struct metaroce_srq *srq, struct metaroce_uring *r, u32 max_wr)
{
	struct metaroce_uring *old = srq->uring;
	u32 prod, i;

	/* Pairs with the process's release of prod: its WQEs before the index. */
	prod = smp_load_acquire(&old->hdr->prod);
	if (prod - old->cons > old->n ||
	    (u64)(prod - old->cons) + (srq->rq.tail - srq->rq.head) > max_wr)
		return false;
	for (i = old->cons; i != prod; i++)
		memcpy(metaroce_uring_slot(r, i), metaroce_uring_slot(old, i), r->esize);
	r->cons = old->cons;
	r->hdr->cons = old->cons;
	r->hdr->done = READ_ONCE(old->hdr->done);
	/* The process reads the new ring only after the command returns. */
	r->hdr->prod = prod;
	srq->uring = r;
	return true;
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
