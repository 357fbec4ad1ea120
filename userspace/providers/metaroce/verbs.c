// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* MetaRoCE provider: CQs, QPs and SRQs on rings mmapped from the kernel, posted and polled without system calls. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "metaroce.h"
#include "metaroce-abi.h"

static int ring_map(struct ibv_context *context, struct metaroce_ring *r,
		    const struct metaroce_ring_info *info, size_t min_esize)
{
	if (!info->entries || (info->entries & (info->entries - 1)) ||
	    info->entry_size < min_esize ||
	    info->mmap_size < METAROCE_RING_HDR_BYTES +
			      (uint64_t)info->entries * info->entry_size)
		return EINVAL;
	r->map = mmap(NULL, info->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      context->cmd_fd, info->mmap_offset);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return errno;
	}
	r->map_size = info->mmap_size;
	r->hdr = r->map;
	r->entries = (uint8_t *)r->map + METAROCE_RING_HDR_BYTES;
	r->n = info->entries;
	r->esize = info->entry_size;
	r->index = 0;
	return 0;
}

static void ring_unmap(struct metaroce_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_size);
	r->map = NULL;
}

/* ---- completion queues ---- */

static struct metaroce_cq *cq_alloc(void)
{
	struct metaroce_cq *cq;

	cq = calloc(1, sizeof(*cq));
	if (cq)
		pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return cq;
}

/* After the create command: map the ring, or undo the command. */
static int cq_map(struct ibv_context *context, struct metaroce_cq *cq,
		  const struct metaroce_ring_info *info)
{
	int ret;

	ret = ring_map(context, &cq->ring, info,
		       sizeof(struct metaroce_user_cqe));
	if (ret)
		ibv_cmd_destroy_cq(&cq->vcq.cq);
	return ret;
}

static void cq_free(struct metaroce_cq *cq, int err)
{
	pthread_spin_destroy(&cq->lock);
	free(cq);
	errno = err;
}

struct ibv_cq *metaroce_create_cq(struct ibv_context *context, int cqe,
				  struct ibv_comp_channel *channel,
				  int comp_vector)
{
	struct umetaroce_create_cq_resp resp = {};
	struct ibv_create_cq cmd;
	struct metaroce_cq *cq;
	int ret;

	cq = cq_alloc();
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (!ret)
		ret = cq_map(context, cq, &resp.cq);
	if (ret) {
		cq_free(cq, ret);
		return NULL;
	}
	return &cq->vcq.cq;
}

/* ibv_create_cq_ex: the same ring, polled through ex.c's callbacks as well. */
struct ibv_cq_ex *metaroce_create_cq_ex(struct ibv_context *context,
					struct ibv_cq_init_attr_ex *attr)
{
	struct umetaroce_create_cq_ex_resp resp = {};
	struct umetaroce_create_cq_ex cmd = {};
	struct metaroce_cq *cq;
	int ret;

	ret = metaroce_cq_ex_check(attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	cq = cq_alloc();
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq_ex(context, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (!ret)
		ret = cq_map(context, cq, &resp.cq);
	if (ret) {
		cq_free(cq, ret);
		return NULL;
	}
	metaroce_cq_ex_init(cq);
	return &cq->vcq.cq_ex;
}

/*
 * The kernel copies the completions we have not consumed into a new ring at
 * the same indices: under our lock (nobody polls meanwhile), map the new
 * ring, keep our index, and let the old mapping go.
 */
int metaroce_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct umetaroce_resize_cq_resp resp = {};
	struct metaroce_cq *cq = to_mcq(ibcq);
	struct ibv_resize_cq cmd;
	struct metaroce_ring old;
	int ret;

	pthread_spin_lock(&cq->lock);
	old = cq->ring;	/* its consumer index as of now: nobody polls meanwhile */
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (!ret) {
		ret = ring_map(ibcq->context, &cq->ring, &resp.cq,
			       sizeof(struct metaroce_user_cqe));
		if (ret) {
			/* The kernel fills a ring we cannot see: nothing to poll. */
			cq->ring = old;
			ret = EIO;
		} else {
			cq->ring.index = old.index;
			ring_unmap(&old);
		}
	}
	pthread_spin_unlock(&cq->lock);
	return ret;
}

int metaroce_destroy_cq(struct ibv_cq *ibcq)
{
	struct metaroce_cq *cq = to_mcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	ring_unmap(&cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

static void cqe_to_wc(const struct metaroce_user_cqe *e, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e->wr_id;
	wc->status = e->status;
	wc->opcode = e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	if (e->flags & METAROCE_CQE_F_GRH)
		wc->wc_flags |= IBV_WC_GRH;
	if (e->flags & METAROCE_CQE_F_IMM) {
		wc->wc_flags |= IBV_WC_WITH_IMM;
		wc->imm_data = e->imm_inv;	/* network order on both sides */
	} else if (e->flags & METAROCE_CQE_F_INV) {
		wc->wc_flags |= IBV_WC_WITH_INV;
		wc->invalidated_rkey = e->imm_inv;
	}
	wc->pkey_index = e->pkey_index;
	wc->slid = e->slid;
	wc->sl = e->sl;
	wc->dlid_path_bits = e->dlid_path_bits;
}

int metaroce_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct metaroce_cq *cq = to_mcq(ibcq);
	struct metaroce_ring *r = &cq->ring;
	uint32_t prod;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	/* Pairs with the kernel's release: the entries before the index. */
	prod = ring_load_acquire(&r->hdr->prod);
	while (n < ne && r->index != prod) {
		cqe_to_wc(ring_slot(r, r->index), &wc[n++]);
		r->index++;
	}
	/* Our reads of the entries before the kernel may reuse their slots. */
	if (n)
		ring_store_release(&r->hdr->cons, r->index);
	pthread_spin_unlock(&cq->lock);
	return n;
}

int metaroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

/* ---- queue pairs ---- */

static int wq_init(struct ibv_context *context, struct metaroce_wq *wq,
		   const struct metaroce_ring_info *info, uint32_t max_wr,
		   uint32_t max_sge, size_t hdr_size)
{
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	wq->max_wr = max_wr;
	wq->max_sge = max_sge;
	/* The kernel never lets more than max_wr be outstanding; neither do we. */
	if (max_wr > info->entries)
		return EINVAL;
	return ring_map(context, &wq->ring, info,
			hdr_size + max_sge * sizeof(struct metaroce_user_sge));
}

static void wq_cleanup(struct metaroce_wq *wq)
{
	ring_unmap(&wq->ring);
	pthread_spin_destroy(&wq->lock);
}

static struct ibv_qp *qp_create(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct umetaroce_create_qp_resp resp = {};
	struct ibv_create_qp cmd;
	struct metaroce_qp *qp;
	int ret;

	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, attr, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = wq_init(context, &qp->sq, &resp.sq, resp.max_send_wr,
		      resp.max_send_sge, sizeof(struct metaroce_user_sqe));
	if (attr->srq)	/* its receives come from the SRQ's ring */
		pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	else if (!ret)
		ret = wq_init(context, &qp->rq, &resp.rq,
			      resp.max_recv_wr, resp.max_recv_sge,
			      sizeof(struct metaroce_user_rqe));
	if (!ret && resp.sq.entry_size <
			    sizeof(struct metaroce_user_sqe) + resp.max_inline)
		ret = EINVAL;
	if (ret) {
		wq_cleanup(&qp->sq);
		wq_cleanup(&qp->rq);
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		goto err_free;
	}
	qp->max_inline = resp.max_inline;
	attr->cap.max_inline_data = resp.max_inline;
	return &qp->vqp.qp;

err_free:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *metaroce_create_qp(struct ibv_pd *pd,
				  struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *qp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;
	qp = qp_create(pd->context, &attr_ex);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

/* ibv_create_qp_ex: a QP whose WQEs can also be built with ibv_wr_*(). */
struct ibv_qp *metaroce_create_qp_ex(struct ibv_context *context,
				     struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *ibqp;
	int ret;

	ret = metaroce_qp_ex_check(attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	ibqp = qp_create(context, attr);
	if (ibqp && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		metaroce_qp_ex_init(to_mqp(ibqp), attr->send_ops_flags);
	return ibqp;
}

int metaroce_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

/*
 * The doorbells: post_send and post_recv commands without work requests.
 * Their result is not the post's: the WQEs are on the ring already and the
 * kernel takes them on its next look; a dead device shows in completions
 * and async events instead.
 */
static int sq_doorbell(struct ibv_qp *ibqp)
{
	struct ibv_send_wr *bad;

	return ibv_cmd_post_send(ibqp, NULL, &bad);
}

static int rq_doorbell(struct ibv_qp *ibqp)
{
	struct ibv_recv_wr *bad;

	return ibv_cmd_post_recv(ibqp, NULL, &bad);
}

int metaroce_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		       int attr_mask)
{
	struct ibv_modify_qp cmd;
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret || !(attr_mask & IBV_QP_STATE))
		return ret;
	/*
	 * WQEs posted before RTS wait on the ring, and receives posted in
	 * Error are flushed only when the kernel looks: tell it now.
	 */
	if (attr->qp_state == IBV_QPS_RTS || attr->qp_state == IBV_QPS_ERR)
		sq_doorbell(ibqp);
	if (attr->qp_state == IBV_QPS_ERR && !ibqp->srq)
		rq_doorbell(ibqp);
	return 0;
}

int metaroce_destroy_qp(struct ibv_qp *ibqp)
{
	struct metaroce_qp *qp = to_mqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	wq_cleanup(&qp->sq);
	wq_cleanup(&qp->rq);
	free(qp);
	return 0;
}

/*
 * BIND_MW (a type 2 window, or a type 1 one for metaroce_bind_mw) and
 * LOCAL_INV of a type 2 window, on an RC QP: the WQE layout of the ABI header.
 */
static int sqe_fill_local(struct metaroce_qp *qp, struct metaroce_user_sqe *e,
			  const struct ibv_send_wr *wr)
{
	struct metaroce_user_sge *s = (struct metaroce_user_sge *)(e + 1);
	const struct ibv_mw_bind_info *info = &wr->bind_mw.bind_info;

	if (qp->vqp.qp.qp_type != IBV_QPT_RC)
		return EINVAL;
	if (wr->opcode == IBV_WR_LOCAL_INV) {
		e->imm_inv = wr->invalidate_rkey;
		return 0;
	}
	/* Windows are addressed like their MR: no zero-based windows. */
	if (!wr->bind_mw.mw || info->mw_access_flags &
	    ~(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC))
		return EINVAL;
	if (info->length && (!info->mr || info->mr->pd != wr->bind_mw.mw->pd))
		return EINVAL;
	e->imm_inv = wr->bind_mw.mw->rkey;
	e->rkey = wr->bind_mw.rkey;
	e->num_sge = 1;
	s[0].addr = info->addr;
	s[0].length = info->length;
	s[0].lkey = info->mr ? info->mr->lkey : 0;
	e->compare_add = info->mw_access_flags;
	return 0;
}

static int sqe_fill(struct metaroce_qp *qp, struct metaroce_user_sqe *e,
		    const struct ibv_send_wr *wr)
{
	struct metaroce_user_sge *s = (struct metaroce_user_sge *)(e + 1);
	uint8_t *dst = (uint8_t *)(e + 1);
	uint32_t len = 0;
	int i;

	memset(e, 0, sizeof(*e));
	e->wr_id = wr->wr_id;
	e->opcode = wr->opcode;
	e->send_flags = wr->send_flags;
	if (wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV)
		return sqe_fill_local(qp, e, wr);
	if (wr->opcode == IBV_WR_SEND_WITH_INV)
		e->imm_inv = wr->invalidate_rkey;
	else
		e->imm_inv = wr->imm_data;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		e->remote_addr = wr->wr.rdma.remote_addr;
		e->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		e->remote_addr = wr->wr.atomic.remote_addr;
		e->rkey = wr->wr.atomic.rkey;
		e->compare_add = wr->wr.atomic.compare_add;
		e->swap = wr->wr.atomic.swap;
		break;
	default:
		break;
	}
	if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
		if (!wr->wr.ud.ah)
			return EINVAL;
		e->ah_handle = to_mah(wr->wr.ud.ah)->handle;
		e->remote_qpn = wr->wr.ud.remote_qpn;
		e->remote_qkey = wr->wr.ud.remote_qkey;
	}

	if (wr->num_sge < 0)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length > qp->max_inline - len)
				return EINVAL;
			memcpy(dst + len,
			       (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		e->inline_len = len;
		return 0;
	}
	if ((uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	e->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		s[i].addr = wr->sg_list[i].addr;
		s[i].length = wr->sg_list[i].length;
		s[i].lkey = wr->sg_list[i].lkey;
	}
	return 0;
}

int metaroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad_wr)
{
	struct metaroce_qp *qp = to_mqp(ibqp);
	struct metaroce_ring *r = &qp->sq.ring;
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&qp->sq.lock);
	start = r->index;
	for (; wr; wr = wr->next) {
		if (wq_full(&qp->sq)) {
			ret = ENOMEM;
			break;
		}
		ret = sqe_fill(qp, ring_slot(r, r->index), wr);
		if (ret)
			break;
		r->index++;
	}
	if (ret)
		*bad_wr = wr;
	metaroce_sq_publish(qp, start);
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

/* ---- memory windows ---- */

/*
 * ibv_bind_mw() of a type 1 window: a BIND_MW WQE under the window's next
 * key, which mw->rkey says at once (if the bind then completes with an
 * error, the window keeps its old key, as the IB specification has it).
 */
int metaroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {}, *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = metaroce_post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

/*
 * Under the SQ lock: hand the WQEs from start to the ring's index to the
 * kernel, and ring the doorbell unless it is draining the ring anyway.
 */
void metaroce_sq_publish(struct metaroce_qp *qp, uint32_t start)
{
	struct metaroce_ring *r = &qp->sq.ring;

	if (r->index == start)
		return;
	/* Pairs with the kernel's acquire: the WQEs before the index. */
	ring_store_release(&r->hdr->prod, r->index);
	/*
	 * Our store of prod before our read of the flag; the kernel clears
	 * the flag before it reads prod again.  One of us sees the other, so
	 * no WQE is left behind unnoticed.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(&r->hdr->flags, __ATOMIC_RELAXED) &
	      METAROCE_RING_F_DRAINING))
		sq_doorbell(&qp->vqp.qp);
}

/*
 * Receives need no doorbell: the kernel takes them from the ring (a QP's
 * or an SRQ's) when a message needs one.
 */
static int wq_post_recv(struct metaroce_wq *wq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct metaroce_ring *r = &wq->ring;
	struct metaroce_user_rqe *e;
	struct metaroce_user_sge *s;
	uint32_t start;
	int ret = 0, i;

	if (!r->map) {		/* a QP on an SRQ */
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&wq->lock);
	start = r->index;
	for (; wr; wr = wr->next) {
		if (wq_full(wq)) {
			ret = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			ret = EINVAL;
			break;
		}
		e = ring_slot(r, r->index);
		s = (struct metaroce_user_sge *)(e + 1);
		e->wr_id = wr->wr_id;
		e->num_sge = wr->num_sge;
		e->reserved = 0;
		for (i = 0; i < wr->num_sge; i++) {
			s[i].addr = wr->sg_list[i].addr;
			s[i].length = wr->sg_list[i].length;
			s[i].lkey = wr->sg_list[i].lkey;
		}
		r->index++;
	}
	if (ret)
		*bad_wr = wr;
	if (r->index != start)
		ring_store_release(&r->hdr->prod, r->index);
	pthread_spin_unlock(&wq->lock);
	return ret;
}

int metaroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	return wq_post_recv(&to_mqp(ibqp)->rq, wr, bad_wr);
}

/* ---- shared receive queues ---- */

struct ibv_srq *metaroce_create_srq(struct ibv_pd *pd,
				    struct ibv_srq_init_attr *attr)
{
	struct umetaroce_create_srq_resp resp = {};
	struct ibv_create_srq cmd;
	struct metaroce_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = wq_init(pd->context, &srq->rq, &resp.rq, resp.max_wr,
		      resp.max_sge, sizeof(struct metaroce_user_rqe));
	if (ret) {
		wq_cleanup(&srq->rq);
		ibv_cmd_destroy_srq(&srq->ibv_srq);
		goto err_free;
	}
	attr->attr.max_wr = resp.max_wr;
	attr->attr.max_sge = resp.max_sge;
	return &srq->ibv_srq;

err_free:
	free(srq);
	errno = ret;
	return NULL;
}

/*
 * Arming the limit is a command: the kernel checks it when QPs take WQEs.
 * Resizing (IBV_SRQ_MAX_WR): the kernel moves the WQEs it has not taken into
 * a new ring at the same indices; under our lock (nobody posts meanwhile),
 * map the new ring, keep our index, and let the old mapping go.
 */
int metaroce_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			int attr_mask)
{
	struct metaroce_modify_srq_resp resp = {};
	struct umetaroce_modify_srq cmd = {};
	struct metaroce_srq *srq = to_msrq(ibsrq);
	struct metaroce_ring old;
	int ret;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
					  sizeof(cmd.ibv_cmd));
	cmd.resp_addr = (uintptr_t)&resp;
	pthread_spin_lock(&srq->rq.lock);
	old = srq->rq.ring;
	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd, sizeof(cmd));
	if (!ret) {
		ret = ring_map(ibsrq->context, &srq->rq.ring, &resp.rq, old.esize);
		if (ret || resp.max_wr > resp.rq.entries) {
			/* The kernel takes from a ring we cannot post to. */
			if (!ret)
				ring_unmap(&srq->rq.ring);
			srq->rq.ring = old;
			ret = EIO;
		} else {
			srq->rq.ring.index = old.index;
			srq->rq.max_wr = resp.max_wr;
			ring_unmap(&old);
		}
	}
	pthread_spin_unlock(&srq->rq.lock);
	return ret;
}

int metaroce_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int metaroce_destroy_srq(struct ibv_srq *ibsrq)
{
	struct metaroce_srq *srq = to_msrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	wq_cleanup(&srq->rq);
	free(srq);
	return 0;
}

int metaroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	return wq_post_recv(&to_msrq(ibsrq)->rq, wr, bad_wr);
}
