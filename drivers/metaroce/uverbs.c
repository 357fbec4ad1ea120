// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What userspace Verbs needs beyond the kernel objects: user contexts, user MRs and AH numbers. */

#include <rdma/ib_umem.h>

#include "metaroce.h"

/*
 * Access a user MR may grant.  Flags in the optional range may be ignored by
 * definition.
 */
#define METAROCE_USER_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_MW_BIND | IB_ACCESS_OPTIONAL)

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
	struct metaroce_ucontext *uc = container_of(ibuc, struct metaroce_ucontext, ibuc);

	if (!metaroce_udata_in_ok(udata))
		return -EINVAL;
	xa_init_flags(&uc->ahs, XA_FLAGS_ALLOC1);
	return 0;
}

static void metaroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct metaroce_ucontext *uc = container_of(ibuc, struct metaroce_ucontext, ibuc);

	/* Empty: the core destroys a context's AHs before the context. */
	xa_destroy(&uc->ahs);
}

/*
 * A user AH gets a number for the UD send WQEs that name it, from a table of
 * its own user context: a process can name no other process's AH, whatever
 * it writes into its ring.
 */
int metaroce_uah_publish(struct metaroce_ah *ah, struct ib_udata *udata)
{
	struct metaroce_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct metaroce_ucontext, ibuc);
	struct metaroce_create_ah_resp resp = {};
	int err;

	if (!metaroce_udata_in_ok(udata) || udata->outlen < sizeof(resp))
		return -EINVAL;
	err = xa_alloc(&uc->ahs, &ah->handle, ah, XA_LIMIT(1, METAROCE_MAX_AH), GFP_KERNEL);
	if (err)
		return err == -EBUSY ? -ENOMEM : err;
	ah->uc = uc;
	resp.ah_handle = ah->handle;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		metaroce_uah_unpublish(ah);
	return err;
}

/* After this no WQE finds the AH: the core frees it when destroy_ah returns. */
void metaroce_uah_unpublish(struct metaroce_ah *ah)
{
	if (ah->uc)
		xa_erase(&ah->uc->ahs, ah->handle);
	ah->uc = NULL;
}

/*
 * The destination of a user UD send WQE: its AH number must name an AH of
 * the QP's user context and PD.  The addresses are copied under the table's
 * lock, which destroy_ah takes to remove the AH, so an AH destroyed while
 * WQEs name it is either copied whole or not found.
 */
enum ib_wc_status metaroce_uah_dest(struct metaroce_qp *qp, u32 handle,
				    struct metaroce_ud_dest *dest)
{
	struct xarray *ahs = &qp->uqp->uc->ahs;
	enum ib_wc_status st = IB_WC_LOC_QP_OP_ERR;
	struct metaroce_ah *ah;

	xa_lock(ahs);
	ah = xa_load(ahs, handle);
	if (ah && ah->ibah.pd != qp->ibqp.pd) {
		st = IB_WC_LOC_PROT_ERR;
	} else if (ah) {
		dest->saddr = ah->saddr;
		memcpy(&dest->daddr, ah->attr.grh.dgid.raw, sizeof(dest->daddr));
		dest->tclass = ah->attr.grh.traffic_class;
		st = IB_WC_SUCCESS;
	}
	xa_unlock(ahs);
	return st;
}

/*
 * Having this op lets the core destroy a process's objects when the device
 * goes away (rdma link delete, netdev removal, rmmod) instead of waiting for
 * the process to close the device.  The rings are vmalloc_user() pages that
 * each mapping holds a reference on: once the objects are destroyed the
 * kernel forgets them, and what the process still maps is its own memory,
 * so no mapping has to be zapped.
 */
static void metaroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * The transport places data from softirq: keep the kernel address of every
 * pinned page (a software device's DMA addresses are kernel addresses), so
 * metaroce_mr_copy() walks a user MR like a fast-registered one.
 */
static int metaroce_umem_pages(struct metaroce_mr *mr, u64 start, u64 length, u64 iova)
{
	struct sg_table *sgt = &mr->umem->sgt_append.sgt;
	struct sg_page_iter it;
	u32 n = 0;

	for_each_sgtable_page(sgt, &it, 0)
		n++;
	mr->pages = kvcalloc(n, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(sgt, &it, 0)
		mr->pages[mr->npages++] = (uintptr_t)page_address(sg_page_iter_page(&it));
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mr->ibmr.page_size = PAGE_SIZE;
	return 0;
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
	err = metaroce_umem_pages(mr, start, length, iova);
	if (err)
		goto err_release;

	err = metaroce_mr_publish(to_mdev(ibpd->device), mr);
	if (err)
		goto err_release;
	return &mr->ibmr;

err_release:
	kvfree(mr->pages);
	ib_umem_release(umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * ibv_rereg_mr.  A new translation, or write access for pages that were
 * pinned without it (an MR over read-only memory must not become writable in
 * place), makes a new MR with new keys, which the core puts in the old one's
 * place before it deregisters the old one; another PD or other access that
 * the pinned pages allow changes the MR in place (the core sets the PD).
 * Packets checked against the old access before the change may still be
 * placed, as with any MR the process changes under traffic.
 */
static struct ib_mr *metaroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
					    u64 length, u64 iova, int access,
					    struct ib_pd *pd, struct ib_udata *udata)
{
	struct metaroce_mr *mr = container_of(ibmr, struct metaroce_mr, ibmr);
	struct metaroce_dev *mdev = to_mdev(ibmr->device);

	if (!mr->umem || flags & ~IB_MR_REREG_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if (!(flags & IB_MR_REREG_PD))
		pd = ibmr->pd;
	if (access & ~METAROCE_USER_MR_ACCESS)
		return ERR_PTR(-EOPNOTSUPP);
	/*
	 * Windows bound to it keep it as it is (IB: rereg fails while MWs are
	 * bound); the lock orders this against a bind's check of the access.
	 */
	spin_lock_bh(&mdev->mw_lock);
	if (mr->bound_mws) {
		spin_unlock_bh(&mdev->mw_lock);
		return ERR_PTR(-EBUSY);
	}
	if (!(flags & IB_MR_REREG_TRANS) &&
	    (!ib_access_writable(access) || mr->umem->writable)) {
		WRITE_ONCE(mr->access, access);
		spin_unlock_bh(&mdev->mw_lock);
		return NULL;
	}
	spin_unlock_bh(&mdev->mw_lock);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->umem->length;
		iova = ibmr->iova;
	}
	return metaroce_reg_user_mr(pd, start, length, iova, access, udata);
}

/*
 * The core leaves the data-path commands off by default: ours are the
 * doorbells (post_send and post_recv without work requests) and arming a CQ.
 */
void metaroce_uverbs_cmds(struct ib_device *ibdev)
{
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
}

const struct ib_device_ops metaroce_uverbs_ops = {
	.alloc_ucontext = metaroce_alloc_ucontext,
	.dealloc_ucontext = metaroce_dealloc_ucontext,
	.disassociate_ucontext = metaroce_disassociate_ucontext,
	.mmap = metaroce_mmap,
	.mmap_free = metaroce_mmap_free,
	.reg_user_mr = metaroce_reg_user_mr,
	.rereg_user_mr = metaroce_rereg_user_mr,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, metaroce_ucontext, ibuc),
};
