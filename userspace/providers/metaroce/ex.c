// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MetaRoCE provider: the extended API.  ibv_cq_ex polling reads the same
 * completion ring as ibv_poll_cq; ibv_qp_ex work-request builders write the
 * same send WQEs as ibv_post_send.  Neither needs anything of the kernel
 * beyond the rings.
 */

#include <errno.h>
#include <string.h>

#include <util/compiler.h>

#include "metaroce.h"

/* ---- ibv_cq_ex ---- */

/* What a completion carries (enum ibv_create_cq_wc_flags). */
#define METAROCE_CQ_EX_WC_FLAGS	IBV_WC_STANDARD_FLAGS

int metaroce_cq_ex_check(const struct ibv_cq_init_attr_ex *attr)
{
	/* A parent domain (IBV_CQ_INIT_ATTR_MASK_PD) is not implemented. */
	if (attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS)
		return EOPNOTSUPP;
	/*
	 * Single-threaded use is allowed (we lock anyway); ignoring overruns
	 * is not: the kernel never overwrites an entry the process has not
	 * consumed.
	 */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	    attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)
		return EOPNOTSUPP;
	/* No timestamps, VLANs, flow tags or tag matching. */
	if (attr->wc_flags & ~(uint64_t)METAROCE_CQ_EX_WC_FLAGS)
		return EOPNOTSUPP;
	return 0;
}

static void cq_ex_load(struct metaroce_cq *cq)
{
	cq->cur = ring_slot(&cq->ring, cq->ring.index);
	cq->vcq.cq_ex.wr_id = cq->cur->wr_id;
	cq->vcq.cq_ex.status = cq->cur->status;
}

/*
 * The lock is held from a successful start_poll to end_poll; the entries
 * read stay ours until end_poll publishes the consumer index.
 */
static int cq_ex_start_poll(struct ibv_cq_ex *ibcq,
			    struct ibv_poll_cq_attr *attr)
{
	struct metaroce_cq *cq = to_mcq_ex(ibcq);

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	/* Pairs with the kernel's release: the entries before the index. */
	if (cq->ring.index == ring_load_acquire(&cq->ring.hdr->prod)) {
		cq->cur = NULL;
		pthread_spin_unlock(&cq->lock);
		return ENOENT;
	}
	cq_ex_load(cq);
	return 0;
}

static int cq_ex_next_poll(struct ibv_cq_ex *ibcq)
{
	struct metaroce_cq *cq = to_mcq_ex(ibcq);

	if (!cq->cur)
		return ENOENT;
	cq->ring.index++;
	if (cq->ring.index == ring_load_acquire(&cq->ring.hdr->prod)) {
		cq->cur = NULL;
		return ENOENT;
	}
	cq_ex_load(cq);
	return 0;
}

static void cq_ex_end_poll(struct ibv_cq_ex *ibcq)
{
	struct metaroce_cq *cq = to_mcq_ex(ibcq);

	if (cq->cur)		/* the last one read is consumed too */
		cq->ring.index++;
	cq->cur = NULL;
	/* Our reads of the entries before the kernel may reuse their slots. */
	ring_store_release(&cq->ring.hdr->cons, cq->ring.index);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode cq_ex_read_opcode(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->opcode;
}

static uint32_t cq_ex_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->vendor_err;
}

static uint32_t cq_ex_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->byte_len;
}

/*
 * Immediate data in network order, or the invalidated rkey, which
 * ibv_wc_read_invalidated_rkey() takes as it is: both as ibv_wc has them.
 */
static __be32 cq_ex_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return (__force __be32)to_mcq_ex(ibcq)->cur->imm_inv;
}

static uint32_t cq_ex_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->qp_num;
}

static uint32_t cq_ex_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->src_qp;
}

static unsigned int cq_ex_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	const struct metaroce_user_cqe *e = to_mcq_ex(ibcq)->cur;
	unsigned int flags = 0;

	if (e->flags & METAROCE_CQE_F_GRH)
		flags |= IBV_WC_GRH;
	if (e->flags & METAROCE_CQE_F_IMM)
		flags |= IBV_WC_WITH_IMM;
	else if (e->flags & METAROCE_CQE_F_INV)
		flags |= IBV_WC_WITH_INV;
	return flags;
}

static uint32_t cq_ex_read_slid(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->slid;
}

static uint8_t cq_ex_read_sl(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->sl;
}

static uint8_t cq_ex_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->dlid_path_bits;
}

void metaroce_cq_ex_init(struct metaroce_cq *cq)
{
	struct ibv_cq_ex *x = &cq->vcq.cq_ex;

	x->start_poll = cq_ex_start_poll;
	x->next_poll = cq_ex_next_poll;
	x->end_poll = cq_ex_end_poll;
	x->read_opcode = cq_ex_read_opcode;
	x->read_vendor_err = cq_ex_read_vendor_err;
	x->read_wc_flags = cq_ex_read_wc_flags;
	/* Cheap to read whether asked for or not: every reader is set. */
	x->read_byte_len = cq_ex_read_byte_len;
	x->read_imm_data = cq_ex_read_imm_data;
	x->read_qp_num = cq_ex_read_qp_num;
	x->read_src_qp = cq_ex_read_src_qp;
	x->read_slid = cq_ex_read_slid;
	x->read_sl = cq_ex_read_sl;
	x->read_dlid_path_bits = cq_ex_read_dlid_path_bits;
}

/* ---- ibv_qp_ex ---- */

/* The operations the kernel takes from a user send ring (sq.c). */
#define METAROCE_QP_EX_RC_OPS						\
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |	\
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |		\
	 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_READ |	\
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |				\
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW |	\
	 IBV_QP_EX_WITH_LOCAL_INV)
#define METAROCE_QP_EX_UD_OPS	\
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

int metaroce_qp_ex_check(const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD))
		return EINVAL;
	/* No XRC, create flags, TSO, RSS or other extensions. */
	if (attr->comp_mask &
	    ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return 0;
	/* TSO, flush, atomic write: no. */
	ops = attr->qp_type == IBV_QPT_UD ? METAROCE_QP_EX_UD_OPS :
					     METAROCE_QP_EX_RC_OPS;
	if (attr->send_ops_flags & ~ops)
		return EOPNOTSUPP;
	return 0;
}

static void wr_start(struct ibv_qp_ex *ibqp)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_first = qp->sq.ring.index;
	qp->wr_err = 0;
	qp->wr_cur = NULL;
}

static void wr_fail(struct metaroce_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
	qp->wr_cur = NULL;
}

/*
 * Claim the next slot for a WQE of this opcode, with the wr_id and flags the
 * caller set in the ibv_qp_ex.  The WQE reaches the kernel at wr_complete;
 * after a failure the rest of the batch is only checked.
 */
static struct metaroce_user_sqe *wr_new(struct ibv_qp_ex *ibqp,
					enum ibv_wr_opcode opcode)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);
	struct metaroce_user_sqe *e;

	qp->wr_cur = NULL;
	if (qp->wr_err)
		return NULL;
	if (wq_full(&qp->sq)) {
		wr_fail(qp, ENOMEM);
		return NULL;
	}
	e = ring_slot(&qp->sq.ring, qp->sq.ring.index++);
	memset(e, 0, sizeof(*e));
	e->wr_id = ibqp->wr_id;
	e->opcode = opcode;
	/* Inline is what wr_set_inline_data*() says, not a flag. */
	e->send_flags = ibqp->wr_flags & ~IBV_SEND_INLINE;
	qp->wr_cur = e;
	return e;
}

static void wr_rdma(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode opcode,
		    uint32_t rkey, uint64_t remote_addr, uint32_t imm_inv)
{
	struct metaroce_user_sqe *e = wr_new(ibqp, opcode);

	if (!e)
		return;
	e->rkey = rkey;
	e->remote_addr = remote_addr;
	e->imm_inv = imm_inv;
}

static void wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
			  uint64_t remote_addr)
{
	wr_rdma(ibqp, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
			      uint64_t remote_addr, __be32 imm_data)
{
	wr_rdma(ibqp, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
		(__force uint32_t)imm_data);
}

static void wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			 uint64_t remote_addr)
{
	wr_rdma(ibqp, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void wr_atomic(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode opcode,
		      uint32_t rkey, uint64_t remote_addr,
		      uint64_t compare_add, uint64_t swap)
{
	struct metaroce_user_sqe *e = wr_new(ibqp, opcode);

	if (!e)
		return;
	e->rkey = rkey;
	e->remote_addr = remote_addr;
	e->compare_add = compare_add;
	e->swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
			      uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	wr_atomic(ibqp, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare,
		  swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				uint64_t remote_addr, uint64_t add)
{
	wr_atomic(ibqp, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void wr_send(struct ibv_qp_ex *ibqp)
{
	wr_new(ibqp, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	struct metaroce_user_sqe *e = wr_new(ibqp, IBV_WR_SEND_WITH_IMM);

	if (e)
		e->imm_inv = (__force uint32_t)imm_data;
}

static void wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct metaroce_user_sqe *e = wr_new(ibqp, IBV_WR_SEND_WITH_INV);

	if (e)
		e->imm_inv = invalidate_rkey;
}

/* A type 2 window bound under rkey (the layout of the ABI header's BIND_MW). */
static void wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);
	struct metaroce_user_sqe *e = wr_new(ibqp, IBV_WR_BIND_MW);
	struct metaroce_user_sge *s;

	if (!e)
		return;
	if (!mw || info->mw_access_flags & ~(IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_ATOMIC) ||
	    (info->length && (!info->mr || info->mr->pd != mw->pd))) {
		wr_fail(qp, EINVAL);
		return;
	}
	s = (struct metaroce_user_sge *)(e + 1);
	e->imm_inv = mw->rkey;
	e->rkey = rkey;
	e->num_sge = 1;
	s[0].addr = info->addr;
	s[0].length = info->length;
	s[0].lkey = info->mr ? info->mr->lkey : 0;
	e->compare_add = info->mw_access_flags;
	/* No SGEs or inline data may follow: the next builder starts anew. */
	qp->wr_cur = NULL;
}

static void wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);
	struct metaroce_user_sqe *e = wr_new(ibqp, IBV_WR_LOCAL_INV);

	if (e)
		e->imm_inv = invalidate_rkey;
	qp->wr_cur = NULL;
}

static void wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);
	struct metaroce_user_sqe *e = qp->wr_cur;

	if (!e)
		return;
	if (ibqp->qp_base.qp_type != IBV_QPT_UD || !ah) {
		wr_fail(qp, EINVAL);
		return;
	}
	e->ah_handle = to_mah(ah)->handle;
	e->remote_qpn = remote_qpn;
	e->remote_qkey = remote_qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);
	struct metaroce_user_sqe *e = qp->wr_cur;
	struct metaroce_user_sge *s;
	size_t i;

	if (!e)
		return;
	if (num_sge > qp->sq.max_sge) {
		wr_fail(qp, EINVAL);
		return;
	}
	s = (struct metaroce_user_sge *)(e + 1);
	for (i = 0; i < num_sge; i++) {
		s[i].addr = sg_list[i].addr;
		s[i].length = sg_list[i].length;
		s[i].lkey = sg_list[i].lkey;
	}
	e->num_sge = num_sge;
	e->inline_len = 0;
	e->send_flags &= ~IBV_SEND_INLINE;
}

static void wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(ibqp, 1, &sge);
}

/* Inline data goes into the WQE now: the buffers are the caller's again. */
static void wr_set_inline_data_list(struct ibv_qp_ex *ibqp, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);
	struct metaroce_user_sqe *e = qp->wr_cur;
	uint8_t *dst;
	size_t len = 0, i;

	if (!e)
		return;
	dst = (uint8_t *)(e + 1);
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->max_inline - len) {
			wr_fail(qp, EINVAL);
			return;
		}
		memcpy(dst + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	e->inline_len = len;
	e->num_sge = 0;
	e->send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
			       size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	wr_set_inline_data_list(ibqp, 1, &buf);
}

/* All or nothing: a batch with a bad WQE posts none of its WQEs. */
static int wr_complete(struct ibv_qp_ex *ibqp)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);
	int err = qp->wr_err;

	if (err)
		qp->sq.ring.index = qp->wr_first;
	else
		metaroce_sq_publish(qp, qp->wr_first);
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void wr_abort(struct ibv_qp_ex *ibqp)
{
	struct metaroce_qp *qp = to_mqp_ex(ibqp);

	qp->sq.ring.index = qp->wr_first;
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

void metaroce_qp_ex_init(struct metaroce_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	verbs_qp_mark_ex(&qp->vqp);
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	/* metaroce_qp_ex_check() let through only what the QP type allows. */
	if (send_ops_flags & IBV_QP_EX_WITH_SEND)
		x->wr_send = wr_send;
	if (send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x->wr_send_imm = wr_send_imm;
	if (send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		x->wr_send_inv = wr_send_inv;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE)
		x->wr_rdma_write = wr_rdma_write;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x->wr_rdma_write_imm = wr_rdma_write_imm;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = wr_rdma_read;
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	if (send_ops_flags & IBV_QP_EX_WITH_BIND_MW)
		x->wr_bind_mw = wr_bind_mw;
	if (send_ops_flags & IBV_QP_EX_WITH_LOCAL_INV)
		x->wr_local_inv = wr_local_inv;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		x->wr_set_ud_addr = wr_set_ud_addr;
}
