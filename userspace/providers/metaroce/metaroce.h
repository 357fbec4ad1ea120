/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* MetaRoCE provider: the objects libibverbs allocates through us. */
#ifndef __METAROCE_H__
#define __METAROCE_H__

#include <infiniband/driver.h>

struct metaroce_device {
	struct verbs_device ibv_dev;
};

struct metaroce_context {
	struct verbs_context ibv_ctx;
};

static inline struct metaroce_device *to_mdev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct metaroce_device, ibv_dev.device);
}

static inline struct metaroce_context *to_mctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct metaroce_context, ibv_ctx.context);
}

#endif /* __METAROCE_H__ */
