/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* MetaRoCE provider: the objects libibverbs allocates through us. */
#ifndef __METAROCE_H__
#define __METAROCE_H__

#include <pthread.h>
#include <stdint.h>
#include <infiniband/driver.h>
#include <rdma/metaroce-abi.h>

struct metaroce_device {
	struct verbs_device ibv_dev;
};

struct metaroce_context {
	struct verbs_context ibv_ctx;
};

/* One ring mapped from the kernel: header page, then n entries of esize bytes. */
struct metaroce_ring {
	void *map;
	size_t map_size;
	struct metaroce_ring_hdr *hdr;
	uint8_t *entries;
	uint32_t n;
	uint32_t esize;
	uint32_t index;		/* our prod (SQ, RQ) or cons (CQ) */
};

struct metaroce_cq {
	struct verbs_cq vcq;		/* ibv_cq, or ibv_cq_ex from create_cq_ex */
	pthread_spinlock_t lock;
	struct metaroce_ring ring;
	/* ibv_cq_ex polling: the entry read_*() look at, between start and end_poll */
	struct metaroce_user_cqe *cur;
};

struct metaroce_wq {
	pthread_spinlock_t lock;
	struct metaroce_ring ring;
	uint32_t max_wr;
	uint32_t max_sge;
};

/* An AH; UD send WQEs name it by the number the kernel gave it. */
struct metaroce_ah {
	struct ibv_ah ibv_ah;
	uint32_t handle;
};

struct metaroce_qp {
	struct verbs_qp vqp;		/* ibv_qp, or ibv_qp_ex from create_qp_ex */
	struct metaroce_wq sq;
	struct metaroce_wq rq;
	uint32_t max_inline;
	/* ibv_qp_ex builders: between wr_start and wr_complete or wr_abort */
	uint32_t wr_first;		/* sq.ring.index at wr_start */
	int wr_err;			/* the first builder error, reported by wr_complete */
	struct metaroce_user_sqe *wr_cur;	/* the WQE being built, or NULL */
};

/* A shared receive queue: one receive ring, posted to like a QP's RQ. */
struct metaroce_srq {
	struct ibv_srq ibv_srq;
	struct metaroce_wq rq;
};

static inline struct metaroce_device *to_mdev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct metaroce_device, ibv_dev.device);
}

static inline struct metaroce_context *to_mctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct metaroce_context, ibv_ctx.context);
}

static inline struct metaroce_cq *to_mcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct metaroce_cq, vcq.cq);
}

static inline struct metaroce_cq *to_mcq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct metaroce_cq, vcq.cq_ex);
}

static inline struct metaroce_qp *to_mqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct metaroce_qp, vqp.qp);
}

static inline struct metaroce_qp *to_mqp_ex(struct ibv_qp_ex *ibqp)
{
	return container_of(ibqp, struct metaroce_qp, vqp.qp_ex);
}

static inline struct metaroce_ah *to_mah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct metaroce_ah, ibv_ah);
}

static inline struct metaroce_srq *to_msrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct metaroce_srq, ibv_srq);
}

/*
 * The kernel reads and writes the ring indices concurrently; these are the
 * orderings the ABI header describes.
 */
static inline uint32_t ring_load_acquire(uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void ring_store_release(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline void *ring_slot(struct metaroce_ring *r, uint32_t index)
{
	return r->entries + (size_t)(index & (r->n - 1)) * r->esize;
}

/* Room for one more WQE: the kernel publishes how many it has completed. */
static inline int wq_full(struct metaroce_wq *wq)
{
	return wq->ring.index - ring_load_acquire(&wq->ring.hdr->done) >=
	       wq->max_wr;
}

/*
 * Tell libibverbs that a QP has the ibv_qp_ex builders (ibv_qp_to_qp_ex()).
 * It reads the flag in verbs_qp.comp_mask, which follows struct ibv_qp_ex:
 * the struct of the libibverbs we load into, which may be shorter than this
 * tree's (bookworm's libibverbs 44 has no wr_flush, so its comp_mask is where
 * this tree has wr_flush, a builder we leave unset).  The build passes the
 * system's size in; built within its own rdma-core, the two are the same.
 */
#ifndef METAROCE_SYS_QP_EX_SIZE
#define METAROCE_SYS_QP_EX_SIZE sizeof(struct ibv_qp_ex)
#endif
static inline void verbs_qp_mark_ex(struct verbs_qp *vqp)
{
	uint32_t *comp_mask = (uint32_t *)((uint8_t *)vqp + METAROCE_SYS_QP_EX_SIZE);

	_Static_assert(METAROCE_SYS_QP_EX_SIZE <= sizeof(struct ibv_qp_ex) &&
		       METAROCE_SYS_QP_EX_SIZE % 8 == 0,
		       "the system's ibv_qp_ex must be a prefix of this tree's");
	*comp_mask |= VERBS_QP_EX;
}

/* verbs.c: CQs, QPs, posting and polling on the mmapped rings */
struct ibv_cq *metaroce_create_cq(struct ibv_context *context, int cqe,
				  struct ibv_comp_channel *channel,
				  int comp_vector);
int metaroce_resize_cq(struct ibv_cq *ibcq, int cqe);
int metaroce_destroy_cq(struct ibv_cq *ibcq);
int metaroce_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc);
int metaroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
struct ibv_qp *metaroce_create_qp(struct ibv_pd *pd,
				  struct ibv_qp_init_attr *attr);
int metaroce_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_qp_init_attr *init_attr);
int metaroce_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		       int attr_mask);
int metaroce_destroy_qp(struct ibv_qp *ibqp);
int metaroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad_wr);
int metaroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
int metaroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		     struct ibv_mw_bind *mw_bind);
struct ibv_srq *metaroce_create_srq(struct ibv_pd *pd,
				    struct ibv_srq_init_attr *attr);
int metaroce_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			int attr_mask);
int metaroce_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int metaroce_destroy_srq(struct ibv_srq *ibsrq);
int metaroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr);
struct ibv_cq_ex *metaroce_create_cq_ex(struct ibv_context *context,
					struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *metaroce_create_qp_ex(struct ibv_context *context,
				     struct ibv_qp_init_attr_ex *attr);
void metaroce_sq_publish(struct metaroce_qp *qp, uint32_t start);

/* ex.c: the extended API, ibv_cq_ex polling and ibv_qp_ex work-request builders */
int metaroce_cq_ex_check(const struct ibv_cq_init_attr_ex *attr);
void metaroce_cq_ex_init(struct metaroce_cq *cq);
int metaroce_qp_ex_check(const struct ibv_qp_init_attr_ex *attr);
void metaroce_qp_ex_init(struct metaroce_qp *qp, uint64_t send_ops_flags);

#endif /* __METAROCE_H__ */
