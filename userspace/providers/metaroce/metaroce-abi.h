/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* MetaRoCE provider: the uverbs commands that carry our driver data. */
#ifndef __METAROCE_ABI_H__
#define __METAROCE_ABI_H__

#include <infiniband/kern-abi.h>
#include <rdma/metaroce-abi.h>
#include <kernel-abi/metaroce-abi.h>

DECLARE_DRV_CMD(umetaroce_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, metaroce_create_cq_resp);
DECLARE_DRV_CMD(umetaroce_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		empty, metaroce_create_cq_resp);
DECLARE_DRV_CMD(umetaroce_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		empty, metaroce_resize_cq_resp);
DECLARE_DRV_CMD(umetaroce_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		empty, metaroce_create_qp_resp);
DECLARE_DRV_CMD(umetaroce_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, metaroce_create_ah_resp);
DECLARE_DRV_CMD(umetaroce_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		empty, metaroce_create_srq_resp);
DECLARE_DRV_CMD(umetaroce_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		metaroce_modify_srq_cmd, empty);

#endif /* __METAROCE_ABI_H__ */
