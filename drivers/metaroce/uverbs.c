// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What userspace Verbs needs beyond the kernel objects: user contexts and user MRs. */

#include <rdma/ib_umem.h>

#include "metaroce.h"

/*
 * Access a user MR may grant.  Remote atomics are only a permission here: the
 * device reports IB_ATOMIC_NONE, so no atomic will ever use it.  Flags in the
 * optional range may be ignored by definition.
 */
#define METAROCE_USER_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_OPTIONAL)

/*
 * No driver-specific request is defined yet.  A newer provider may send a
 * longer one as long as the part we do not know is zero.
 */
static bool metaroce_udata_in_ok(struct ib_udata *udata)
{
	return !udata->inlen || ib_is_udata_cleared(udata, 0, udata->inlen);
}

static int metaroce_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	return metaroce_udata_in_ok(udata) ? 0 : -EINVAL;
}

static void metaroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * Having this op lets the core destroy a process's objects when the device
 * goes away (rdma link delete, netdev removal, rmmod) instead of waiting for
 * the process to close the device.  Nothing of ours is mapped into user
 * memory yet, so there is nothing to zap.
 */
static void metaroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static struct ib_mr *metaroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
					  u64 iova, int access, struct ib_udata *udata)
{
	struct metaroce_mr *mr;
	struct ib_umem *umem;
	int err;

	if (access & ~METAROCE_USER_MR_ACCESS)
		return ERR_PTR(-EOPNOTSUPP);
	if (!metaroce_udata_in_ok(udata))
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	/* Pinned for the MR's life: the transport places data from softirq. */
	umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(umem)) {
		err = PTR_ERR(umem);
		goto err_free;
	}
	mr->umem = umem;
	mr->access = access;

	err = metaroce_mr_publish(to_mdev(ibpd->device), mr);
	if (err)
		goto err_release;
	return &mr->ibmr;

err_release:
	ib_umem_release(umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

const struct ib_device_ops metaroce_uverbs_ops = {
	.alloc_ucontext = metaroce_alloc_ucontext,
	.dealloc_ucontext = metaroce_dealloc_ucontext,
	.disassociate_ucontext = metaroce_disassociate_ucontext,
	.reg_user_mr = metaroce_reg_user_mr,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, metaroce_ucontext, ibuc),
};
