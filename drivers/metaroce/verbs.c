// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Protection domains, address handles, and the device's table of verbs. */

#include <linux/log2.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/vmalloc.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_umem.h>

#include "metaroce.h"

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

const struct ib_device_ops metaroce_verbs_ops = {
	.alloc_pd = metaroce_alloc_pd,
	.create_ah = metaroce_create_ah,
	.create_cq = metaroce_create_cq,
	.create_qp = metaroce_create_qp,
	.create_srq = metaroce_create_srq,
	.create_user_ah = metaroce_create_ah,
	.dealloc_pd = metaroce_dealloc_pd,
	.alloc_mr = metaroce_alloc_mr,
	.alloc_mw = metaroce_alloc_mw,
	.dealloc_mw = metaroce_dealloc_mw,
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
	INIT_RDMA_OBJ_SIZE(ib_mw, metaroce_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, metaroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, metaroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, metaroce_srq, ibsrq),
};
