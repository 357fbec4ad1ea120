// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions: the one place that resolves a key (lkey or rkey) to an MR
 * and checks it (PD, access rights, bounds) before the kernel reads or writes
 * through it; copies between SGE lists and MRs; DMA, user-registered and fast
 * registered MRs (REG_MR, LOCAL_INV); and the memory windows' side of it:
 * an rkey may name a window (mw.c binds them), which resolves to its MR.
 */

#include <linux/highmem.h>
#include <linux/mm.h>
#include <rdma/ib_umem.h>

#include "metaroce.h"
#include "core/wire.h"

/* The MR at a key's index, whatever its key byte and state; never a window. */
static struct metaroce_mr *metaroce_mr_at(struct metaroce_dev *mdev, u32 key)
{
	void *entry = xa_load(&mdev->mrs, key >> 8);

	return xa_pointer_tag(entry) ? NULL : entry;
}

/* Whether key is the MR's current key (index and key byte). */
static bool metaroce_mr_keyed(struct metaroce_mr *mr, u32 key)
{
#ifdef METAROCE_MUTATION_ACCEPT_BAD_RKEY
	/* Test-only mutation (make conformance-mutations): the key byte is not checked. */
	key = READ_ONCE(mr->ibmr.lkey);
#endif
	return READ_ONCE(mr->ibmr.lkey) == key;
}

/* The MR that a key (lkey or rkey) names exactly, in whatever state; never a window. */
static struct metaroce_mr *metaroce_mr_of_key(struct metaroce_dev *mdev, u32 key)
{
	struct metaroce_mr *mr = metaroce_mr_at(mdev, key);

	return mr && metaroce_mr_keyed(mr, key) ? mr : NULL;
}

/*
 * Whether an MR is what key names now: not being deregistered, the same key
 * (a fast registration or an invalidation changes it), and, if fast
 * registered, valid.  metaroce_key_mr() asks it of the MR it looks up; the
 * placement asks it again of an MR that metaroce_rkey_check() passed, in the
 * same RCU read section, instead of looking the key up twice.
 */
bool metaroce_mr_still(struct metaroce_mr *mr, u32 key)
{
	if (READ_ONCE(mr->dead) || !metaroce_mr_keyed(mr, key))
		return false;
	/* Pairs with REG_MR's release: a valid MR's pages and bounds are visible. */
	return !mr->frwr || smp_load_acquire(&mr->valid);
}

/* The MR behind a key (lkey or rkey), if it is ours, current and registered. */
struct metaroce_mr *metaroce_key_mr(struct metaroce_dev *mdev, u32 key)
{
	struct metaroce_mr *mr = metaroce_mr_at(mdev, key);

	return mr && metaroce_mr_still(mr, key) ? mr : NULL;
}

/*
 * The memory window at a key's index, whatever its key byte: a process binds
 * a type 2 window under keys of its choosing, and libibverbs keeps the key of
 * its allocation in struct ibv_mw (mw.c checks the PD).
 */
struct metaroce_mw *metaroce_index_mw(struct metaroce_dev *mdev, u32 key)
{
	void *entry = xa_load(&mdev->mrs, key >> 8);

	return xa_pointer_tag(entry) == METAROCE_KEY_MW ? xa_untag_pointer(entry) : NULL;
}

/* The memory window a key names exactly (its index and its current key byte). */
struct metaroce_mw *metaroce_key_mw(struct metaroce_dev *mdev, u32 key)
{
	struct metaroce_mw *mw = metaroce_index_mw(mdev, key);

	return mw && READ_ONCE(mw->ibmw.rkey) == key ? mw : NULL;
}

/* Whether [va, va + len) lies inside [start, start + length), without overflow. */
static bool metaroce_range_in(u64 va, u64 len, u64 start, u64 length)
{
	return va + len >= va && va >= start && len <= length && va - start <= length - len;
}

/* Whether [va, va + len) lies inside a user or fast-registered MR. */
bool metaroce_mr_covers(struct metaroce_mr *mr, u64 va, u64 len)
{
	return metaroce_range_in(va, len, mr->ibmr.iova, mr->ibmr.length);
}

/*
 * The MR behind a bound, valid window that covers [va, va + len); the
 * window's own checks (PD, QP, access) are metaroce_rkey_check()'s.
 */
static struct metaroce_mr *metaroce_mw_mr(struct metaroce_mw *mw, u64 va, u64 len)
{
	/* Pairs with the bind's release: range, access and MR before valid. */
	if (!smp_load_acquire(&mw->valid) ||
	    !metaroce_range_in(va, len, READ_ONCE(mw->va), READ_ONCE(mw->length)))
		return NULL;
	return READ_ONCE(mw->mr);
}

/*
 * The MR an rkey names for placing or reading [va, va + len) again, after
 * metaroce_rkey_check() let the operation in: the key must still name that
 * kind of memory (an MR, or a window still bound over the range).
 */
struct metaroce_mr *metaroce_rkey_mr(struct metaroce_dev *mdev, u32 rkey, u64 va, u64 len)
{
	struct metaroce_mr *mr = metaroce_key_mr(mdev, rkey);
	struct metaroce_mw *mw;

	if (mr)
		return mr;
	mw = metaroce_key_mw(mdev, rkey);
	return mw ? metaroce_mw_mr(mw, va, len) : NULL;
}

/* A window lets go of its MR (mdev->mw_lock held); it names no memory after. */
void metaroce_mw_release_locked(struct metaroce_mw *mw)
{
	WRITE_ONCE(mw->valid, false);
	if (mw->mr)
		mw->mr->bound_mws--;
	WRITE_ONCE(mw->mr, NULL);
	if (mw->qp)
		mw->qp->bound_mws--;
	WRITE_ONCE(mw->qp, NULL);
}

/* A QP goes: the type 2 windows bound to it end with it. */
void metaroce_mw_release_qp(struct metaroce_dev *mdev, struct metaroce_qp *qp)
{
	struct metaroce_mw *mw;
	unsigned long index;
	void *entry;

	spin_lock_bh(&mdev->mw_lock);
	if (qp->bound_mws) {
		xa_for_each(&mdev->mrs, index, entry) {
			if (xa_pointer_tag(entry) != METAROCE_KEY_MW)
				continue;
			mw = xa_untag_pointer(entry);
			if (mw->qp == qp)
				metaroce_mw_release_locked(mw);
		}
	}
	spin_unlock_bh(&mdev->mw_lock);
}

void metaroce_mw_unbind(struct metaroce_dev *mdev, struct metaroce_mw *mw)
{
	spin_lock_bh(&mdev->mw_lock);
	metaroce_mw_release_locked(mw);
	spin_unlock_bh(&mdev->mw_lock);
}

/*
 * The MR an lkey names for one of qp's SGEs: of the QP's PD, and granting
 * IB_ACCESS_LOCAL_WRITE when the kernel is to write into it.  An MR without
 * it may be pinned without FOLL_WRITE (a read-only file's page cache, the
 * shared zero page): writing there would change memory its owner only lent
 * us to read.  A refusal is counted.
 */
static struct metaroce_mr *metaroce_lkey_mr(struct metaroce_qp *qp, u32 lkey, bool write)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_mr *mr = metaroce_key_mr(mdev, lkey);

	if (!mr || mr->ibmr.pd != qp->ibqp.pd)
		return NULL;
	if (write && !(READ_ONCE(mr->access) & IB_ACCESS_LOCAL_WRITE)) {
		metaroce_count(mdev, METAROCE_CNT_LOCAL_ACCESS_ERRORS);
		return NULL;
	}
	return mr;
}

bool metaroce_lkey_ok(struct metaroce_qp *qp, const struct ib_sge *sge, bool write)
{
	if (sge->lkey == qp->ibqp.device->local_dma_lkey)
		return true;
	return metaroce_lkey_mr(qp, sge->lkey, write);
}

/*
 * Move n bytes between memory at p and b, and step b past them.  A received
 * skb's bytes are read where they lie (its head, its pages), into memory only.
 */
static bool metaroce_buf_move(struct metaroce_buf *b, void *p, u32 n, bool to_mem)
{
	if (b->skb) {
		if (!to_mem || skb_copy_bits(b->skb, b->off, p, n))
			return false;
		b->off += n;
		return true;
	}
	if (to_mem)
		memcpy(p, b->p, n);
	else
		memcpy(b->p, p, n);
	b->p += n;
	return true;
}

/*
 * Move between b and an SGE list at a byte offset; false if out of range or
 * refused by a key (to_sge: the MRs must be locally writable).  With b NULL
 * nothing is moved: the range is only checked.
 */
bool metaroce_sge_xfer(struct metaroce_qp *qp, const struct ib_sge *sge, u32 nsge,
		       u32 off, struct metaroce_buf *b, u32 len, bool to_sge)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_mr *mr;
	u32 i, n;

	for (i = 0; i < nsge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		if (sge[i].lkey == mdev->ibdev.local_dma_lkey) {
			if (b && !metaroce_buf_move(b, (void *)(uintptr_t)(sge[i].addr + off), n,
						    to_sge))
				return false;
		} else {
			/*
			 * Looked up again at every copy: the key must still name
			 * an MR of the QP's PD, never one that took a freed key,
			 * and still grant the access (REG_MR may have changed it).
			 */
			mr = metaroce_lkey_mr(qp, sge[i].lkey, to_sge);
			if (!mr || !metaroce_mr_xfer(mr, sge[i].addr + off, b, n, to_sge))
				return false;
		}
		len -= n;
		off = 0;
	}
	return len == 0;
}

/*
 * Remote invalidation (SEND_WITH_INV): a fast-registered MR of the QP's PD,
 * or a valid type 2 window bound to this very QP (a type 1 window is never
 * invalidated: only a bind or its deallocation ends it).
 */
bool metaroce_invalidate(struct metaroce_dev *mdev, struct metaroce_qp *qp, u32 rkey)
{
	struct metaroce_mr *mr = metaroce_key_mr(mdev, rkey);
	struct metaroce_mw *mw;
	bool ok = false;

	if (mr) {
		if (!mr->frwr || mr->ibmr.pd != qp->ibqp.pd)
			return false;
		WRITE_ONCE(mr->valid, false);
		return true;
	}
	mw = metaroce_key_mw(mdev, rkey);
	if (!mw || mw->ibmw.type != IB_MW_TYPE_2 || mw->ibmw.pd != qp->ibqp.pd)
		return false;
	spin_lock_bh(&mdev->mw_lock);
	if (mw->valid && mw->qp == qp && mw->ibmw.rkey == rkey) {
		metaroce_mw_release_locked(mw);
		ok = true;
	}
	spin_unlock_bh(&mdev->mw_lock);
	return ok;
}

/*
 * [MR-SEC-1] the remote key, access and bounds check before any placement or
 * read; *mrp is the MR that passed, for the caller to use (and not look up
 * again: the key may name another MR or none by then).  Zero bytes name no
 * memory: only the QP's access right counts, and *mrp is NULL (IB C9-88).
 */
u8 metaroce_rkey_check(struct metaroce_qp *qp, u32 rkey, u64 va, u64 len, int access,
		       struct metaroce_mr **mrp)
{
	struct metaroce_mw *mw;
	struct metaroce_mr *mr;

	*mrp = NULL;
	if (!(qp->attr.qp_access_flags & access))
		return MR_NAK_ACCESS;
	if (!len)
		return 0;
	mr = metaroce_key_mr(to_mdev(qp->ibqp.device), rkey);
	mw = mr ? NULL : metaroce_key_mw(to_mdev(qp->ibqp.device), rkey);
	if (mw) {
		/* A window: of the QP's PD, a type 2 one bound to this QP. */
		if (mw->ibmw.pd != qp->ibqp.pd || !smp_load_acquire(&mw->valid) ||
		    (mw->ibmw.type == IB_MW_TYPE_2 && READ_ONCE(mw->qp) != qp))
			return MR_NAK_BAD_RKEY;
		if (!(READ_ONCE(mw->access) & access))
			return MR_NAK_ACCESS;
		mr = metaroce_mw_mr(mw, va, len);
		if (!mr)
			return MR_NAK_BOUNDS;
		/* The bind checked the window against the MR; the copy checks again. */
		*mrp = mr;
		return 0;
	}
	if (!mr || mr->ibmr.pd != qp->ibqp.pd)
		return MR_NAK_BAD_RKEY;
	if (!(READ_ONCE(mr->access) & access))
		return MR_NAK_ACCESS;
	*mrp = mr;
	if (va + len < va)
		return MR_NAK_BOUNDS;
	/* A DMA MR spans the kernel's address space; the others their pages. */
	if ((mr->frwr || mr->umem) &&
	    (va < mr->ibmr.iova || len > mr->ibmr.length ||
	     va - mr->ibmr.iova > mr->ibmr.length - len))
		return MR_NAK_BOUNDS;
	return 0;
}

/* Gives a filled-in MR its keys and makes it findable by them (DMA and user MRs). */
int metaroce_mr_publish(struct metaroce_dev *mdev, struct metaroce_mr *mr)
{
	u32 index;
	int err;

	err = xa_alloc_cyclic(&mdev->mrs, &index, mr, XA_LIMIT(1, METAROCE_MAX_MR),
			      &mdev->next_mr_index, GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	/* Index in the upper 24 bits, a random key byte against stale-key reuse. */
	mr->ibmr.lkey = index << 8 | get_random_u8();
	mr->ibmr.rkey = mr->ibmr.lkey;
	return 0;
}

struct ib_mr *metaroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct metaroce_mr *mr;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->access = access;
	err = metaroce_mr_publish(to_mdev(ibpd->device), mr);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

int metaroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct metaroce_mr *mr = container_of(ibmr, struct metaroce_mr, ibmr);
	struct metaroce_dev *mdev = to_mdev(ibmr->device);

	/* Not while a window is bound to it (the window would name freed pages). */
	spin_lock_bh(&mdev->mw_lock);
	if (mr->bound_mws) {
		spin_unlock_bh(&mdev->mw_lock);
		return -EBUSY;
	}
	/* A Write checked against it before, and not yet placed, is refused too. */
	WRITE_ONCE(mr->dead, true);
	xa_erase(&mdev->mrs, ibmr->lkey >> 8);
	spin_unlock_bh(&mdev->mw_lock);
	/*
	 * Readers find MRs under RCU (softirq, BH-off sections, the UD
	 * doorbell's rcu_read_lock): only when they are done may the pages
	 * go back to their owner.
	 */
	synchronize_rcu();
	ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kfree(mr);
	return 0;
}

struct ib_mr *metaroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_sg)
{
	struct metaroce_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_sg || max_sg > METAROCE_MAX_FRWR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pages = kvcalloc(max_sg, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->frwr = true;
	mr->max_pages = max_sg;
	err = metaroce_mr_publish(to_mdev(ibpd->device), mr);
	if (err) {
		kvfree(mr->pages);
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int metaroce_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct metaroce_mr *mr = container_of(ibmr, struct metaroce_mr, ibmr);

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = addr;
	return 0;
}

int metaroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		       unsigned int *sg_offset)
{
	struct metaroce_mr *mr = container_of(ibmr, struct metaroce_mr, ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, metaroce_set_page);
}

/*
 * Where va lies in a fast-registered or user MR: page index and offset in it;
 * false if outside.  A user MR's first page starts at the page of the user
 * address it was registered at, whatever iova the user chose.
 */
static bool metaroce_mr_locate(struct metaroce_mr *mr, u64 va, u32 len, u32 *page, u32 *off)
{
	u64 psize = mr->ibmr.page_size, first = mr->ibmr.iova & ~(psize - 1), pos;

	if ((mr->frwr && !mr->valid) || va < mr->ibmr.iova || len > mr->ibmr.length ||
	    va - mr->ibmr.iova > mr->ibmr.length - len)
		return false;
	if (mr->umem)
		first = mr->ibmr.iova - ib_umem_offset(mr->umem);
	pos = va - first;
	*page = div64_u64(pos, psize);
	*off = pos - (u64)*page * psize;
	return *page < mr->npages;
}

void *metaroce_mr_ptr(struct metaroce_mr *mr, u64 va, u32 len)
{
	u32 page, off;
	void *p;

	if (!mr->frwr && !mr->umem)
		return (void *)(uintptr_t)va;
	if (!metaroce_mr_locate(mr, va, len, &page, &off) || off + len > mr->ibmr.page_size)
		return NULL;
	p = (void *)(uintptr_t)(mr->pages[page] + off);
	/* An atomic's target must be aligned where the CPU sees it, too. */
	return IS_ALIGNED((uintptr_t)p, len == 8 ? 8 : 1) ? p : NULL;
}

bool metaroce_mr_xfer(struct metaroce_mr *mr, u64 va, struct metaroce_buf *b, u32 len,
		      bool to_mr)
{
	u32 page, off, n;

	if (!mr->frwr && !mr->umem)
		return !b || metaroce_buf_move(b, (void *)(uintptr_t)va, len, to_mr);
	if (!metaroce_mr_locate(mr, va, len, &page, &off))
		return false;
	while (len) {
		if (page >= mr->npages)
			return false;
		n = min_t(u32, len, mr->ibmr.page_size - off);
		if (b && !metaroce_buf_move(b, (void *)(uintptr_t)(mr->pages[page] + off), n,
					    to_mr))
			return false;
		len -= n;
		off = 0;
		page++;
	}
	return true;
}

/* IB_WR_REG_MR and IB_WR_LOCAL_INV: change the MR now, under the QP's PD. */
int metaroce_local_wr(struct metaroce_qp *qp, const struct ib_send_wr *wr)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_mr *mr;
	u32 key;

	if (wr->opcode == IB_WR_REG_MR) {
		mr = container_of(reg_wr(wr)->mr, struct metaroce_mr, ibmr);
		key = reg_wr(wr)->key;
		if (!mr->frwr || mr->ibmr.pd != qp->ibqp.pd || (key >> 8) != (mr->ibmr.lkey >> 8))
			return -EINVAL;
		mr->access = reg_wr(wr)->access;
		mr->ibmr.lkey = key;
		mr->ibmr.rkey = key;
		/* Pairs with the receive path's acquire: keys and pages before valid. */
		smp_store_release(&mr->valid, true);
		return 0;
	}
	/* A fast-registered MR's lkey and rkey are one key (REG_MR sets both). */
	mr = metaroce_mr_of_key(mdev, wr->ex.invalidate_rkey);
	if (!mr || !mr->frwr || mr->ibmr.pd != qp->ibqp.pd)
		return -EINVAL;
	WRITE_ONCE(mr->valid, false);
	return 0;
}

/*
 * An SGE a process wrote: it must name one of its own user MRs (same PD) and
 * lie inside it, and if the kernel is to write into it (receives, Read data,
 * atomic results) the MR must grant IB_ACCESS_LOCAL_WRITE.  The local DMA
 * lkey means kernel memory and is never accepted from a ring.
 */
bool metaroce_user_sge_in_pd(struct ib_pd *pd, const struct metaroce_user_sge *s,
			     bool write)
{
	struct metaroce_dev *mdev = to_mdev(pd->device);
	struct metaroce_mr *mr;

	if (s->lkey == mdev->ibdev.local_dma_lkey)
		return false;
	mr = metaroce_key_mr(mdev, s->lkey);
	if (!mr || !mr->umem || mr->ibmr.pd != pd)
		return false;
	if (write && !(READ_ONCE(mr->access) & IB_ACCESS_LOCAL_WRITE)) {
		metaroce_count(mdev, METAROCE_CNT_LOCAL_ACCESS_ERRORS);
		return false;
	}
	return s->addr >= mr->ibmr.iova && s->length <= mr->ibmr.length &&
	       s->addr - mr->ibmr.iova <= mr->ibmr.length - s->length;
}
