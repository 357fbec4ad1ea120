// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows, type 1 and type 2B, for user QPs: allocation, binding
 * (a BIND_MW WQE on the send ring; ibv_bind_mw() of a type 1 window posts
 * one too) and local invalidation (LOCAL_INV).  A window is an rkey for a
 * range of one user MR with its own remote access; mr.c resolves and checks
 * window keys with the MRs' (metaroce_rkey_check), and remote invalidation
 * of a type 2 window is mr.c's metaroce_invalidate().
 *
 * Like REG_MR, a bind or a local invalidation takes effect when the kernel
 * takes the WQE from the ring, not after the WQEs before it have completed;
 * it completes in queue order.
 */

#include <linux/random.h>

#include "metaroce.h"

#define METAROCE_MW_ACCESS	(IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_ATOMIC)

int metaroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct metaroce_mw *mw = container_of(ibmw, struct metaroce_mw, ibmw);
	struct metaroce_dev *mdev = to_mdev(ibmw->device);
	u32 index;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	/* No driver data is defined: what a process sends must be zeros. */
	if (udata && udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	/* Readers find the window once it is in the table: its key first. */
	err = xa_alloc_cyclic(&mdev->mrs, &index, NULL, XA_LIMIT(1, METAROCE_MAX_MR),
			      &mdev->next_mr_index, GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	ibmw->rkey = index << 8 | get_random_u8();
	xa_store(&mdev->mrs, index, xa_tag_pointer(mw, METAROCE_KEY_MW), GFP_KERNEL);
	return 0;
}

int metaroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct metaroce_mw *mw = container_of(ibmw, struct metaroce_mw, ibmw);
	struct metaroce_dev *mdev = to_mdev(ibmw->device);

	/* Out of the table first: a bind that comes later finds no window. */
	xa_erase(&mdev->mrs, ibmw->rkey >> 8);
	metaroce_mw_unbind(mdev, mw);
	/* The receive path may hold the window under RCU; the core frees it next. */
	synchronize_rcu();
	return 0;
}

/*
 * Bind the window at mw_key's index to [va, va + length) of the MR that
 * mr_lkey names, with access (IB_ACCESS_REMOTE_*), under new_key (same
 * index, the consumer's key byte).  A zero length unbinds a type 1 window.
 * Everything named must belong to the QP's PD.  Returns the completion
 * status: IB_WC_MW_BIND_ERR for any refusal (and the caller moves the QP to
 * Error, as for any local error).
 */
enum ib_wc_status metaroce_bind_mw(struct metaroce_qp *qp, u32 mw_key, u32 new_key,
				   u32 mr_lkey, u64 va, u64 length, u32 access)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct ib_pd *pd = qp->ibqp.pd;
	enum ib_wc_status st = IB_WC_MW_BIND_ERR;
	struct metaroce_mw *mw;
	struct metaroce_mr *mr = NULL;

	if (qp->ibqp.qp_type != IB_QPT_RC || access & ~METAROCE_MW_ACCESS ||
	    (new_key >> 8) != (mw_key >> 8))
		return st;
	/*
	 * Under the lock that dereg and rereg take too: the window is not
	 * deallocated (dealloc erases it, then unbinds under this lock), the
	 * MR neither goes nor changes its access while it is checked.
	 */
	spin_lock_bh(&mdev->mw_lock);
	mw = metaroce_index_mw(mdev, mw_key);
	if (!mw || mw->ibmw.pd != pd)
		goto out;
	/* A type 2 window is bound once, then invalidated before it is bound again. */
	if (mw->ibmw.type == IB_MW_TYPE_2 && mw->valid)
		goto out;
	if (length || mw->ibmw.type == IB_MW_TYPE_2) {
		mr = metaroce_key_mr(mdev, mr_lkey);
		/*
		 * A user MR of the PD that allows binding, the window inside it;
		 * remote write or atomic access needs the MR's local write (the
		 * pages were pinned writable only then).
		 */
		if (!mr || !mr->umem || mr->ibmr.pd != pd || !(mr->access & IB_ACCESS_MW_BIND) ||
		    (access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC) &&
		     !(mr->access & IB_ACCESS_LOCAL_WRITE)) ||
		    !metaroce_mr_covers(mr, va, length))
			goto out;
	}
	metaroce_mw_release_locked(mw);
	WRITE_ONCE(mw->ibmw.rkey, new_key);
	if (mr) {
		WRITE_ONCE(mw->va, va);
		WRITE_ONCE(mw->length, length);
		WRITE_ONCE(mw->access, access);
		WRITE_ONCE(mw->mr, mr);
		mr->bound_mws++;
		if (mw->ibmw.type == IB_MW_TYPE_2) {
			WRITE_ONCE(mw->qp, qp);
			qp->bound_mws++;
		}
		/* Pairs with the receive path's acquire: the window before valid. */
		smp_store_release(&mw->valid, true);
	}
	st = IB_WC_SUCCESS;
out:
	spin_unlock_bh(&mdev->mw_lock);
	return st;
}

/* LOCAL_INV of a window: a valid type 2 window of the QP's PD. */
enum ib_wc_status metaroce_local_inv_mw(struct metaroce_qp *qp, u32 rkey)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_mw *mw = metaroce_key_mw(mdev, rkey);
	enum ib_wc_status st = IB_WC_MW_BIND_ERR;

	if (!mw || mw->ibmw.type != IB_MW_TYPE_2 || mw->ibmw.pd != qp->ibqp.pd)
		return st;
	spin_lock_bh(&mdev->mw_lock);
	if (mw->valid && mw->ibmw.rkey == rkey) {
		metaroce_mw_release_locked(mw);
		st = IB_WC_SUCCESS;
	}
	spin_unlock_bh(&mdev->mw_lock);
	return st;
}
