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
	struct ibv_cq ibv_cq;
	pthread_spinlock_t lock;
	struct metaroce_ring ring;
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
	struct verbs_qp vqp;
	struct metaroce_wq sq;
	struct metaroce_wq rq;
	uint32_t max_inline;
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
	return container_of(ibcq, struct metaroce_cq, ibv_cq);
}

static inline struct metaroce_qp *to_mqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct metaroce_qp, vqp.qp);
}

static inline struct metaroce_ah *to_mah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct metaroce_ah, ibv_ah);
}

static inline struct metaroce_srq *to_msrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct metaroce_srq, ibv_srq);
}

/* verbs.c: CQs, QPs, posting and polling on the mmapped rings */
struct ibv_cq *metaroce_create_cq(struct ibv_context *context, int cqe,
				  struct ibv_comp_channel *channel,
				  int comp_vector);
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
struct ibv_srq *metaroce_create_srq(struct ibv_pd *pd,
				    struct ibv_srq_init_attr *attr);
int metaroce_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			int attr_mask);
int metaroce_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int metaroce_destroy_srq(struct ibv_srq *ibsrq);
int metaroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr);

#endif /* __METAROCE_H__ */
