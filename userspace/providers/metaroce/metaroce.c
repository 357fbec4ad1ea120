// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* MetaRoCE provider: device matching, context and the control-path verbs. */

#include <errno.h>
#include <stdlib.h>

#include <rdma/metaroce-abi.h>

#include "metaroce.h"
#include "metaroce-abi.h"

/*
 * The control path and AHs are here; CQs, RC and UD QPs, SRQs and their
 * mmapped rings are in verbs.c, the extended CQ and QP API in ex.c.  Every
 * verb left out of metaroce_ctx_ops falls through to libibverbs' defaults,
 * which fail with EOPNOTSUPP.
 */

static int metaroce_query_device(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	struct verbs_device *vdev = verbs_get_device(context->device);
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	/*
	 * A software device has no firmware; report the string the kernel
	 * shows in sysfs and in "rdma dev", so every tool agrees.
	 */
	if (ibv_read_ibdev_sysfs_file(attr->orig_attr.fw_ver,
				      sizeof(attr->orig_attr.fw_ver),
				      vdev->sysfs, "fw_ver") <= 0)
		attr->orig_attr.fw_ver[0] = '\0';
	return 0;
}

static int metaroce_query_port(struct ibv_context *context, uint8_t port,
			       struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *metaroce_alloc_pd(struct ibv_context *context)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int metaroce_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;
	free(pd);
	return 0;
}

static struct ibv_mr *metaroce_reg_mr(struct ibv_pd *pd, void *addr,
				      size_t length, uint64_t hca_va,
				      int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* New keys when the kernel had to make a new MR; ibv_cmd_rereg_mr takes them. */
static int metaroce_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			     void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

static int metaroce_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

static struct ibv_ah *metaroce_create_ah(struct ibv_pd *pd,
					 struct ibv_ah_attr *attr)
{
	struct umetaroce_create_ah_resp resp = {};
	struct metaroce_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (!ret && !resp.ah_handle) {
		/* A kernel without user AH numbers: no UD send could name it. */
		ibv_cmd_destroy_ah(&ah->ibv_ah);
		ret = EOPNOTSUPP;
	}
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->handle = resp.ah_handle;
	return &ah->ibv_ah;
}

static int metaroce_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_mah(ibah));
	return 0;
}

static void metaroce_free_context(struct ibv_context *ibctx)
{
	struct metaroce_context *ctx = to_mctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

/* Memory windows: bound by WQEs (verbs.c), so only allocated here. */
static struct ibv_mw *metaroce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int metaroce_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (ret)
		return ret;
	free(mw);
	return 0;
}

static const struct verbs_context_ops metaroce_ctx_ops = {
	.alloc_mw = metaroce_alloc_mw,
	.alloc_pd = metaroce_alloc_pd,
	.bind_mw = metaroce_bind_mw,
	.create_ah = metaroce_create_ah,
	.create_cq = metaroce_create_cq,
	.create_cq_ex = metaroce_create_cq_ex,
	.create_qp = metaroce_create_qp,
	.create_qp_ex = metaroce_create_qp_ex,
	.create_srq = metaroce_create_srq,
	.dealloc_mw = metaroce_dealloc_mw,
	.dealloc_pd = metaroce_dealloc_pd,
	.dereg_mr = metaroce_dereg_mr,
	.destroy_ah = metaroce_destroy_ah,
	.destroy_cq = metaroce_destroy_cq,
	.destroy_qp = metaroce_destroy_qp,
	.destroy_srq = metaroce_destroy_srq,
	.free_context = metaroce_free_context,
	.modify_qp = metaroce_modify_qp,
	.modify_srq = metaroce_modify_srq,
	.poll_cq = metaroce_poll_cq,
	.post_recv = metaroce_post_recv,
	.post_send = metaroce_post_send,
	.post_srq_recv = metaroce_post_srq_recv,
	.query_device_ex = metaroce_query_device,
	.query_port = metaroce_query_port,
	.query_qp = metaroce_query_qp,
	.query_srq = metaroce_query_srq,
	.reg_mr = metaroce_reg_mr,
	.rereg_mr = metaroce_rereg_mr,
	.req_notify_cq = metaroce_req_notify_cq,
	.resize_cq = metaroce_resize_cq,
};

static struct verbs_context *metaroce_alloc_context(struct ibv_device *ibdev,
						    int cmd_fd,
						    void *private_data)
{
	struct ib_uverbs_get_context_resp resp;
	struct metaroce_context *ctx;
	struct ibv_get_context cmd;
	int ret;

	/* The driver id goes into every ioctl; the kernel checks it. */
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   METAROCE_DRIVER_ID);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd), &resp,
				  sizeof(resp));
	if (ret) {
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		errno = ret;
		return NULL;
	}

	verbs_set_ops(&ctx->ibv_ctx, &metaroce_ctx_ops);
	return &ctx->ibv_ctx;
}

static struct verbs_device *
metaroce_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct metaroce_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void metaroce_uninit_device(struct verbs_device *vdev)
{
	free(to_mdev(&vdev->device));
}

/*
 * Users name MetaRoCE devices freely ("rdma link add NAME type metaroce"),
 * so the driver id the kernel reports over netlink is the only sound match.
 */
static const struct verbs_match_ent metaroce_match_table[] = {
	VERBS_DRIVER_ID(METAROCE_DRIVER_ID),
	{},
};

static const struct verbs_device_ops metaroce_dev_ops = {
	.name = "metaroce",
	.match_min_abi_version = METAROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = METAROCE_UVERBS_ABI_VERSION,
	.match_table = metaroce_match_table,
	.alloc_device = metaroce_alloc_device,
	.uninit_device = metaroce_uninit_device,
	.alloc_context = metaroce_alloc_context,
};
PROVIDER_DRIVER(metaroce, metaroce_dev_ops);
