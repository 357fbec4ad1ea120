// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Connections to peers: the handshake, the engine's clock and transmit work, completions. */

#include <linux/hrtimer.h>
#include <linux/random.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>

#include "metaroce.h"
#include "trace.h"
#include "core/cc.h"
#include "core/codec.h"
#include "core/handshake.h"

static unsigned int metaroce_paths = 8;
module_param_named(paths, metaroce_paths, uint, 0444);
MODULE_PARM_DESC(paths, "Paths (UDP source ports) per connection, 1..16 (default 8)");

/*
 * [MR-REL-3] RTO bounds; 0 keeps the spec's defaults (100 us .. 1 s).  The
 * minimum is made for datacenter RTTs; virtual machines on busy hosts stall
 * for milliseconds, and a higher minimum saves the RTOs those stalls cost.
 */
static unsigned int metaroce_rto_min_us;
module_param_named(rto_min_us, metaroce_rto_min_us, uint, 0644);
MODULE_PARM_DESC(rto_min_us, "Minimum retransmission timeout in us (0: 100)");
static unsigned int metaroce_rto_max_us;
module_param_named(rto_max_us, metaroce_rto_max_us, uint, 0644);
MODULE_PARM_DESC(rto_max_us, "Maximum retransmission timeout in us (0: 1000000)");

/*
 * [MR-SEC-4] Connections a peer can make us hold: a CONNECT_REQ that needs a
 * new connection is dropped once the device has this many.  Connections that
 * our own QPs ask for are bounded by the QPs and not refused.
 */
static unsigned int metaroce_max_conns = 1024;
module_param_named(max_conns, metaroce_max_conns, uint, 0644);
MODULE_PARM_DESC(max_conns,
		 "Connections per device beyond which peers' CONNECT_REQs are dropped (default 1024)");

/*
 * [MR-SEC-4] Connections our own QPs may make: each QP to a new peer address
 * makes one, so a local user with many GIDs to aim at could otherwise pin
 * memory without bound.  Beyond it, moving a QP to RTR fails with ENOMEM.
 */
static unsigned int metaroce_max_local_conns = 4096;
module_param_named(max_local_conns, metaroce_max_local_conns, uint, 0644);
MODULE_PARM_DESC(max_local_conns,
		 "Connections per device that local QPs may make, beyond which RTR fails (default 4096)");

static unsigned int metaroce_link_mbps = 10000;
module_param_named(link_mbps, metaroce_link_mbps, uint, 0444);
MODULE_PARM_DESC(link_mbps,
		 "Receive capacity in Mbit/s shared out by the rate hints (default 10000)");

/*
 * Experimental, off by default: one guest crashed in the slab allocator (in
 * rdma_rxe, after a MetaRoCE run with it) and that is not yet understood.
 */
static bool metaroce_tx_gso;
module_param_named(tx_gso, metaroce_tx_gso, bool, 0644);
MODULE_PARM_DESC(tx_gso,
		 "Send a path's burst of data packets as one UDP GSO skb (experimental, default 0)");

/* Packets one run of the transmit work sends before it yields the CPU. */
#define METAROCE_TX_BUDGET	64

struct metaroce_conn {
	struct metaroce_dev *mdev;
	struct list_head node;		/* mdev->conns */
	refcount_t ref;
	struct in6_addr laddr, raddr;	/* IPv4 as v4-mapped, like the GIDs */
	u32 id;				/* our src_conn_id, key of mdev->conn_ids */

	spinlock_t lock;		/* everything below */
	struct mr_hs hs;
	struct mr_conn *eng;		/* valid once established */
	bool established;
	bool dead;
	struct list_head qps;		/* attached QPs */
	u64 idle_since;			/* when the last QP went */
	bool retiring;			/* its last QP went: CLOSE after MR_CONN_IDLE */
	u64 ask_at;			/* [MR-CONN-12] the waiting side asks itself then */
	u64 last_rx_ns;			/* [MR-CONN-7] a packet of the peer's last came */
	bool local;			/* made for our QP (nr_local_conns), not accepted */
	struct metaroce_qp *stream_qp[MR_CONN_STREAMS];
	struct mr_share share;		/* [MR-CC-9] this sender in our allocation */

	/* Each path's route, found once for its source port (net.c). */
	struct dst_cache dst[MR_MAX_PATHS];
	u16 dst_sport[MR_MAX_PATHS];

	struct hrtimer timer;
	struct work_struct tx_work;
	struct rcu_head rcu;
};

/*
 * How a queued skb leaves: its UDP source port, and its path if it has one.
 * Data packets of one path in a row share one skb ([MR-CC-8] bursts), sent
 * as UDP GSO: each segment is one of our packets, cut at gso_size, so the
 * stack's per-packet work (route, netfilter, qdisc) is done once a burst.
 */
struct metaroce_tx_cb {
	u16 sport;
	u8 path;	/* MR_MAX_PATHS: none (ACKs, NAKs, handshake) */
	u8 segs;	/* packets in the skb's page */
	u16 seg_len;	/* bytes of each packet but the last: the gso_size */
	bool open;	/* a packet of the same path and at most seg_len may follow */
	u32 room;	/* bytes the page holds */
};

static struct metaroce_tx_cb *metaroce_tx_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct metaroce_tx_cb) > sizeof(skb->cb));
	return (struct metaroce_tx_cb *)skb->cb;
}

static u64 metaroce_now(void)
{
	return ktime_get_ns();
}

static void metaroce_conn_free_dst(struct metaroce_conn *c)
{
	u32 p;

	for (p = 0; p < MR_MAX_PATHS; p++)
		if (c->dst[p].cache)
			dst_cache_destroy(&c->dst[p]);
}

static void metaroce_conn_put(struct metaroce_conn *c)
{
	u32 i;

	if (refcount_dec_and_test(&c->ref)) {
		/* Streams a dead connection never closed: their memory goes with it. */
		for (i = 0; i < MR_CONN_STREAMS; i++)
			kvfree(c->eng->mem[i]);
		kvfree(c->eng);
		metaroce_conn_free_dst(c);
		kfree_rcu(c, rcu);
	}
}

/* Queue the transmit work; a queued work holds a reference, dropped when it has run. */
static void metaroce_conn_kick(struct metaroce_conn *c)
{
	refcount_inc(&c->ref);
	if (!queue_work(METAROCE_TX_WQ, &c->tx_work))
		metaroce_conn_put(c);
}

/* ---- memory: keys, bounds, copies ---- */

/* The MR behind a key (lkey or rkey), if it is ours, current and registered. */
static struct metaroce_mr *metaroce_key_mr(struct metaroce_dev *mdev, u32 key)
{
	struct metaroce_mr *mr = xa_load(&mdev->mrs, key >> 8);

#ifdef METAROCE_MUTATION_ACCEPT_BAD_RKEY
	/* Test-only mutation (make conformance-mutations): the key byte is not checked. */
	key = mr ? READ_ONCE(mr->ibmr.lkey) : key;
#endif
	if (!mr || READ_ONCE(mr->ibmr.lkey) != key)
		return NULL;
	/* Pairs with REG_MR's release: a valid MR's pages and bounds are visible. */
	if (mr->frwr && !smp_load_acquire(&mr->valid))
		return NULL;
	return mr;
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

static bool metaroce_lkey_ok(struct metaroce_qp *qp, const struct ib_sge *sge, bool write)
{
	if (sge->lkey == qp->ibqp.device->local_dma_lkey)
		return true;
	return metaroce_lkey_mr(qp, sge->lkey, write);
}

/*
 * Copy between a flat buffer and an SGE list at a byte offset; false if out
 * of range or refused by a key (to_sge: the MRs must be locally writable).
 * With buf NULL nothing is copied: the range is only checked.
 */
bool metaroce_sge_copy(struct metaroce_qp *qp, const struct ib_sge *sge, u32 nsge,
		       u32 off, void *buf, u32 len, bool to_sge)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_mr *mr;
	u32 i, n;
	void *p;

	for (i = 0; i < nsge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		if (sge[i].lkey == mdev->ibdev.local_dma_lkey) {
			p = (void *)(uintptr_t)(sge[i].addr + off);
			if (buf && to_sge)
				memcpy(p, buf, n);
			else if (buf)
				memcpy(buf, p, n);
		} else {
			/*
			 * Looked up again at every copy: the key must still name
			 * an MR of the QP's PD, never one that took a freed key,
			 * and still grant the access (REG_MR may have changed it).
			 */
			mr = metaroce_lkey_mr(qp, sge[i].lkey, to_sge);
			if (!mr || !metaroce_mr_copy(mr, sge[i].addr + off, buf, n, to_sge))
				return false;
		}
		if (buf)
			buf += n;
		len -= n;
		off = 0;
	}
	return len == 0;
}

/* Remote invalidation (SEND_WITH_INV): only a fast-registered MR of the QP's PD. */
static bool metaroce_invalidate(struct metaroce_dev *mdev, struct metaroce_qp *qp, u32 rkey)
{
	struct metaroce_mr *mr = metaroce_key_mr(mdev, rkey);

	if (!mr || !mr->frwr || mr->ibmr.pd != qp->ibqp.pd)
		return false;
	WRITE_ONCE(mr->valid, false);
	return true;
}

/*
 * [MR-SEC-1] the remote key, access and bounds check before any placement or
 * read; *mrp is the MR that passed, for the caller to use (and not look up
 * again: the key may name another MR or none by then).
 */
static u8 metaroce_rkey_check(struct metaroce_conn *c, u32 slot, u32 rkey, u64 va, u64 len,
			      int access, struct metaroce_mr **mrp)
{
	struct metaroce_qp *qp = c->stream_qp[slot];
	struct metaroce_mr *mr;

	if (!qp)
		return MR_NAK_INVALID_REQUEST;
	if (!(qp->attr.qp_access_flags & access))
		return MR_NAK_ACCESS;
	mr = metaroce_key_mr(c->mdev, rkey);
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

/* Whether the QP may still take data: not flushed (Error) or reset. */
static bool metaroce_qp_live(const struct metaroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	return state == IB_QPS_RTR || state == IB_QPS_RTS || state == IB_QPS_SQD;
}

static u32 metaroce_rnr_us(u8 timer)
{
	/* IB's min_rnr_timer encoding, coarsely: 0 means 655 ms, n about 10 us * 2^(n/3). */
	return timer ? 10u << min_t(u32, timer / 3, 16) : 655360;
}

static u8 metaroce_check_place(void *ctx, const struct mr_place *pl, u32 *info)
{
	struct metaroce_conn *c = ctx;
	struct metaroce_qp *qp = c->stream_qp[pl->stream_slot];
	struct metaroce_recv_wqe *wqe;
	struct metaroce_mr *mr;
	u32 idx, i, room = 0;
	u8 code = 0;

	if (!qp || !metaroce_qp_live(qp))
		return MR_NAK_INVALID_REQUEST;
	if (pl->opcode == MR_OP_WRITE)
		return metaroce_rkey_check(c, pl->stream_slot, pl->rkey, pl->va + pl->offset,
					   pl->len, IB_ACCESS_REMOTE_WRITE, &mr);
	if (pl->opcode != MR_OP_SEND)
		return 0;

	idx = qp->rq_base + pl->rsn;
	/* The lock orders our reads after post_recv's writes of the WQE. */
	spin_lock(&qp->rq.lock);
	/* [MR-SEC-2] never a receive that has completed (or been flushed) already. */
	if ((s32)(idx - qp->rq.head) < 0) {
		spin_unlock(&qp->rq.lock);
		return MR_NAK_INVALID_REQUEST;
	}
	if ((s32)(idx - qp->rq.tail) >= 0)
		metaroce_rq_refill(qp, idx);
	if ((s32)(idx - qp->rq.tail) >= 0) {
		spin_unlock(&qp->rq.lock);
		*info = metaroce_rnr_us(qp->attr.min_rnr_timer);
		return MR_NAK_RNR;
	}
	wqe = metaroce_rq_wqe(&qp->rq, idx);
	for (i = 0; i < wqe->num_sge; i++)
		room += wqe->sge[i].length;
	if ((u64)pl->offset + pl->len > room)
		code = MR_NAK_INVALID_REQUEST;
	/*
	 * A receive buffer we may not write (no LOCAL_WRITE, a stale or
	 * foreign key): the WQE fails with a local protection error and the
	 * sender learns of a remote operational error, as on InfiniBand.
	 */
	else if (!metaroce_sge_copy(qp, wqe->sge, wqe->num_sge, pl->offset, NULL, pl->len, true))
		code = MR_NAK_REMOTE_OP_ERROR;
	spin_unlock(&qp->rq.lock);
	return code;
}

static u8 metaroce_execute(void *ctx, struct mr_exec *ex)
{
	struct metaroce_conn *c = ctx;
	struct metaroce_qp *qp = c->stream_qp[ex->stream_slot];
	struct metaroce_mr *mr;
	u64 *p, old;
	u8 code;

	if (!qp || !metaroce_qp_live(qp))
		return MR_NAK_INVALID_REQUEST;
	if (ex->opcode == MR_OP_READ_REQ)
		return metaroce_rkey_check(c, ex->stream_slot, ex->rkey, ex->va, ex->len,
					   IB_ACCESS_REMOTE_READ, &mr);
	code = metaroce_rkey_check(c, ex->stream_slot, ex->rkey, ex->va, 8,
				   IB_ACCESS_REMOTE_ATOMIC, &mr);
	if (code)
		return code;
	if (ex->va & 7)
		return MR_NAK_INVALID_REQUEST;
	p = metaroce_mr_ptr(mr, ex->va, 8);
	if (!p)
		return MR_NAK_BOUNDS;
	if (ex->opcode == MR_OP_ATOMIC_CAS) {
		ex->orig = cmpxchg64(p, ex->compare, ex->swap_add);
		return 0;
	}
	do {
		old = READ_ONCE(*p);
	} while (cmpxchg64(p, old, old + ex->swap_add) != old);
	ex->orig = old;
	return 0;
}

static const struct mr_conn_ops metaroce_engine_ops = {
	.check_place = metaroce_check_place,
	.execute = metaroce_execute,
};

/* Data the engine accepted: into a receive buffer, a Write target or a Read's buffer. */
static void metaroce_place(struct metaroce_conn *c, const struct mr_place *pl)
{
	struct metaroce_qp *qp = c->stream_qp[pl->stream_slot];
	struct metaroce_send_wqe *swqe;
	struct metaroce_recv_wqe *rwqe;
	struct metaroce_mr *mr;
	bool ok = true;

	/* A flushed or reset QP's buffers are its consumer's again (or freed). */
	if (!qp || !metaroce_qp_live(qp)) {
		metaroce_count(c->mdev, METAROCE_CNT_PLACE_ERRORS);
		return;
	}
	switch (pl->opcode) {
	case MR_OP_SEND:
		rwqe = metaroce_rq_wqe(&qp->rq, qp->rq_base + pl->rsn);
		ok = metaroce_sge_copy(qp, rwqe->sge, rwqe->num_sge, pl->offset,
				       (void *)pl->data, pl->len, true);
		break;
	case MR_OP_WRITE:
		mr = metaroce_key_mr(c->mdev, pl->rkey);
		ok = mr && metaroce_mr_copy(mr, pl->va + pl->offset, (void *)pl->data, pl->len,
					    true);
		break;
	case MR_OP_READ_RESP:
		/* Only a WQE still in flight: a completed or flushed one is gone. */
		if ((s32)((u32)pl->cookie - qp->sq.head) < 0 ||
		    (s32)((u32)pl->cookie - qp->sq.posted) >= 0) {
			ok = false;
			break;
		}
		swqe = metaroce_sq_wqe(&qp->sq, (u32)pl->cookie);
		ok = metaroce_sge_copy(qp, swqe->sge, swqe->num_sge, pl->offset,
				       (void *)pl->data, pl->len, true);
		if (!ok)
			swqe->place_failed = true;	/* it completes with LOC_PROT_ERR */
		break;
	default:
		break;
	}
	if (!ok)
		metaroce_count(c->mdev, METAROCE_CNT_PLACE_ERRORS);
}

/* ---- completions ---- */

static const enum ib_wc_status metaroce_wc_status[] = {
	[MR_WC_SUCCESS] = IB_WC_SUCCESS,
	[MR_WC_RETRY_EXC_ERR] = IB_WC_RETRY_EXC_ERR,
	[MR_WC_RNR_RETRY_EXC_ERR] = IB_WC_RNR_RETRY_EXC_ERR,
	[MR_WC_REM_INV_REQ_ERR] = IB_WC_REM_INV_REQ_ERR,
	[MR_WC_REM_ACCESS_ERR] = IB_WC_REM_ACCESS_ERR,
	[MR_WC_REM_OP_ERR] = IB_WC_REM_OP_ERR,
	[MR_WC_WR_FLUSH_ERR] = IB_WC_WR_FLUSH_ERR,
};

static enum ib_wc_opcode metaroce_wc_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	default:
		return IB_WC_SEND;
	}
}

static void metaroce_complete_send(struct metaroce_qp *qp, struct metaroce_send_wqe *wqe,
				   enum ib_wc_status status)
{
	struct ib_wc wc = {
		.wr_id = wqe->wr_id,
		.status = status,
		.opcode = metaroce_wc_opcode(wqe->opcode),
		.byte_len = wqe->len,
		.qp = &qp->ibqp,
	};

	if (status != IB_WC_SUCCESS || qp->sq_sig_type == IB_SIGNAL_ALL_WR ||
	    wqe->send_flags & IB_SEND_SIGNALED)
		metaroce_cq_push(to_mcq(qp->ibqp.send_cq), &wc, false);
}

/* REG_MR and LOCAL_INV took effect when posted; they complete in queue order. */
static void metaroce_sq_complete_local(struct metaroce_qp *qp)
{
	struct metaroce_send_wqe *wqe;

	while (qp->sq.head != qp->sq.posted) {
		wqe = metaroce_sq_wqe(&qp->sq, qp->sq.head);
		if (!wqe->local)
			break;
		qp->sq.head++;
		metaroce_complete_send(qp, wqe, IB_WC_SUCCESS);
	}
}

/* Everything still on the send queue completes with a flush error, [MR-VERBS-8]. */
static void metaroce_sq_flush(struct metaroce_qp *qp)
{
	while (qp->sq.head != qp->sq.tail)
		metaroce_complete_send(qp, metaroce_sq_wqe(&qp->sq, qp->sq.head++),
				       IB_WC_WR_FLUSH_ERR);
	qp->sq.posted = qp->sq.tail;
}

/*
 * The QP goes to Error (c->lock held when attached): its WQEs complete
 * flushed, and its stream in the engine stops, so that no retransmission
 * reads a flushed send buffer and nothing arriving later is placed into a
 * flushed receive or Read buffer (for kernel consumers: freed pages).  The
 * peer's messages for it are refused with a NAK.
 */
void metaroce_qp_to_error(struct metaroce_qp *qp)
{
	struct metaroce_conn *c = qp->conn;

	WRITE_ONCE(qp->state, IB_QPS_ERR);
	if (c && c->established && qp->slot >= 0)
		mr_conn_error_stream(c->eng, qp->slot, MR_NAK_REMOTE_OP_ERROR);
	metaroce_sq_flush(qp);
	metaroce_rq_flush(qp);
}

static void metaroce_complete(struct metaroce_conn *c, const struct mr_completion *cm)
{
	struct metaroce_qp *qp = c->stream_qp[cm->stream_slot];
	enum ib_wc_status status = metaroce_wc_status[min_t(u8, cm->status, MR_WC_WR_FLUSH_ERR)];
	struct metaroce_send_wqe *swqe;
	struct metaroce_recv_wqe *rwqe;
	struct ib_wc wc = {};

	if (!qp)
		return;
	switch (cm->kind) {
	case MR_COMPL_SEND:
		metaroce_sq_complete_local(qp);
		/* The user may have flushed it already (QP moved to Error). */
		if ((u32)cm->cookie != qp->sq.head)
			return;
		swqe = metaroce_sq_wqe(&qp->sq, qp->sq.head++);
		if (status == IB_WC_SUCCESS && (swqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
						swqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) &&
		    !metaroce_sge_copy(qp, swqe->sge, swqe->num_sge, 0, (void *)&cm->orig,
				       sizeof(cm->orig), true))
			status = IB_WC_LOC_PROT_ERR;
		if (status == IB_WC_SUCCESS && swqe->place_failed)
			status = IB_WC_LOC_PROT_ERR;
		metaroce_complete_send(qp, swqe, status);
		if (status != IB_WC_SUCCESS)
			metaroce_qp_to_error(qp);
		metaroce_sq_complete_local(qp);
		break;
	case MR_COMPL_RECV:
		spin_lock(&qp->rq.lock);
		if (qp->rq.head == qp->rq.tail)
			metaroce_rq_refill(qp, qp->rq.head);
		if (qp->rq.head == qp->rq.tail) {
			spin_unlock(&qp->rq.lock);
			return;
		}
		rwqe = metaroce_rq_wqe(&qp->rq, qp->rq.head++);
		wc.wr_id = rwqe->wr_id;
		spin_unlock(&qp->rq.lock);
		wc.status = status;
		wc.opcode = cm->opcode == MR_OP_WRITE ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV;
		wc.byte_len = cm->len;
		wc.qp = &qp->ibqp;
		wc.src_qp = qp->attr.dest_qp_num;
		if (cm->flags & MR_COMPL_F_IMM) {
			wc.wc_flags |= IB_WC_WITH_IMM;
			wc.ex.imm_data = cpu_to_be32(cm->imm);
		} else if (cm->flags & MR_COMPL_F_INV) {
			/* [MR-WIRE-9] the sender asked us to invalidate one of our MRs. */
			if (!metaroce_invalidate(c->mdev, qp, cm->inv_rkey))
				wc.status = IB_WC_REM_INV_REQ_ERR;
			wc.wc_flags |= IB_WC_WITH_INVALIDATE;
			wc.ex.invalidate_rkey = cm->inv_rkey;
		}
		metaroce_cq_push(to_mcq(qp->ibqp.recv_cq), &wc,
				 cm->flags & MR_COMPL_F_SOLICITED);
		break;
	case MR_COMPL_STREAM_ERROR:
		/*
		 * Refused for its receive buffer (MR_NAK_REMOTE_OP_ERROR, from
		 * check_place): that WQE, the next one, fails with a protection
		 * error; the rest are flushed.
		 */
		if (cm->nak_code == MR_NAK_REMOTE_OP_ERROR) {
			spin_lock(&qp->rq.lock);
			if (qp->rq.head != qp->rq.tail) {
				rwqe = metaroce_rq_wqe(&qp->rq, qp->rq.head++);
				wc.wr_id = rwqe->wr_id;
				wc.status = IB_WC_LOC_PROT_ERR;
				wc.opcode = IB_WC_RECV;
				wc.qp = &qp->ibqp;
				metaroce_cq_push(to_mcq(qp->ibqp.recv_cq), &wc, false);
			}
			spin_unlock(&qp->rq.lock);
		}
		metaroce_qp_to_error(qp);
		break;
	}
}

/* ---- the send side ---- */

static u8 metaroce_mr_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
		return MR_OP_SEND;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return MR_OP_WRITE;
	case IB_WR_RDMA_READ:
		return MR_OP_READ_REQ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return MR_OP_ATOMIC_CAS;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return MR_OP_ATOMIC_FADD;
	default:
		return 0;
	}
}

/* Hand waiting send WQEs to the engine while its window has room. */
static void metaroce_sq_push(struct metaroce_conn *c, struct metaroce_qp *qp)
{
	struct metaroce_send_wqe *wqe;
	struct mr_wr wr;

	while (qp->slot >= 0 && qp->sq.posted != qp->sq.tail) {
		wqe = metaroce_sq_wqe(&qp->sq, qp->sq.posted);
		if (wqe->local) {
			qp->sq.posted++;
			continue;
		}
		memset(&wr, 0, sizeof(wr));
		wr.opcode = metaroce_mr_opcode(wqe->opcode);
		wr.flags = wqe->send_flags & IB_SEND_FENCE ? MR_WR_FENCE : 0;
		if (wqe->send_flags & IB_SEND_SOLICITED)
			wr.flags |= MR_WR_SOLICITED;
		if (wqe->opcode == IB_WR_SEND_WITH_IMM ||
		    wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM) {
			wr.flags |= MR_WR_IMM;
			wr.imm = wqe->imm_inv;
		} else if (wqe->opcode == IB_WR_SEND_WITH_INV) {
			wr.flags |= MR_WR_INV;
			wr.inv_rkey = wqe->imm_inv;
		}
		wr.len = wqe->len;
		wr.va = wqe->remote_addr;
		wr.rkey = wqe->rkey;
		wr.compare = wqe->compare_add;
		wr.swap_add = wqe->compare_add;
		if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP)
			wr.swap_add = wqe->swap;
		if (wr.opcode == MR_OP_ATOMIC_CAS || wr.opcode == MR_OP_ATOMIC_FADD)
			wr.len = 8;
		wr.cookie = qp->sq.posted;
		if (mr_conn_post_wr(c->eng, qp->slot, &wr) < 0)
			break;
		qp->sq.posted++;
	}
	metaroce_sq_complete_local(qp);
}

static void metaroce_open_stream(struct metaroce_conn *c, struct metaroce_qp *qp)
{
	int slot;

	slot = mr_conn_open_stream(c->eng, qp->ibqp.qp_num, qp->attr.dest_qp_num, qp->stream_mem);
	if (slot >= 0)
		qp->stream_mem = NULL;	/* the engine's until the stream closes */
	if (slot < 0) {
		metaroce_count(c->mdev, METAROCE_CNT_STREAM_OPEN_ERRORS);
		metaroce_qp_to_error(qp);
		return;
	}
	qp->slot = slot;
	c->stream_qp[slot] = qp;
	/* The stream's rsn 0 is the first receive not yet taken. */
	spin_lock(&qp->rq.lock);
	qp->rq_base = qp->rq.head;
	spin_unlock(&qp->rq.lock);
	mr_conn_set_rnr(c->eng, slot, qp->attr.rnr_retry, metaroce_rnr_us(qp->attr.min_rnr_timer));
	metaroce_sq_push(c, qp);
}

static void metaroce_conn_established(struct metaroce_conn *c)
{
	struct mr_conn_cfg cfg;
	struct metaroce_qp *qp;

	mr_conn_cfg_defaults(&cfg);
	mr_hs_conn_cfg(&c->hs, &cfg);
	if (READ_ONCE(metaroce_rto_min_us))
		cfg.rto.min_ns = (u64)READ_ONCE(metaroce_rto_min_us) * NSEC_PER_USEC;
	if (READ_ONCE(metaroce_rto_max_us))
		cfg.rto.max_ns = (u64)READ_ONCE(metaroce_rto_max_us) * NSEC_PER_USEC;
	cfg.rto.max_ns = max(cfg.rto.max_ns, cfg.rto.min_ns);
	cfg.rto.initial_ns = clamp(cfg.rto.initial_ns, cfg.rto.min_ns, cfg.rto.max_ns);
	cfg.seed = get_random_u64();
	mr_conn_init(c->eng, &cfg);
	c->eng->ops = &metaroce_engine_ops;
	c->eng->ops_ctx = c;
	c->established = true;
	list_for_each_entry(qp, &c->qps, conn_node)
		if (qp->slot < 0)
			metaroce_open_stream(c, qp);
}

/* The connection is gone (failed, closed, peer restarted): its QPs go to Error. */
static void metaroce_conn_fail_locked(struct metaroce_conn *c)
{
	struct metaroce_qp *qp;

	if (c->dead)
		return;
	c->dead = true;
	if (!list_empty(&c->qps))
		metaroce_count(c->mdev, METAROCE_CNT_CONN_FAILURES);
	list_for_each_entry(qp, &c->qps, conn_node) {
		if (qp->sq.head != qp->sq.tail) {
			metaroce_complete_send(qp, metaroce_sq_wqe(&qp->sq, qp->sq.head++),
					       IB_WC_RETRY_EXC_ERR);
		}
		metaroce_qp_to_error(qp);
	}
}

/* A packet with our header and room for payload_len bytes the caller fills in. */
static struct sk_buff *metaroce_pkt_skb(const struct mr_pkt *pkt, u8 **payload)
{
	u32 hlen = mr_pkt_header_len(pkt->bth.opcode, pkt->bth.flags, pkt->ack.n_msg_acks);
	struct sk_buff *skb;
	u32 len;

	skb = alloc_skb(METAROCE_TX_HEADROOM + hlen + pkt->bth.payload_len, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, METAROCE_TX_HEADROOM);
	len = mr_pkt_build(pkt, skb->data, hlen + pkt->bth.payload_len);
	if (!len) {
		kfree_skb(skb);
		return NULL;
	}
	skb_put(skb, len);
	*payload = skb->data + len - pkt->bth.payload_len;
	return skb;
}

static void metaroce_queue_pkt(struct metaroce_conn *c, struct sk_buff_head *q,
			       const struct mr_pkt *pkt, u16 sport)
{
	struct sk_buff *skb;
	u8 *payload;

	skb = metaroce_pkt_skb(pkt, &payload);
	if (!skb) {
		metaroce_count(c->mdev, METAROCE_CNT_TX_DROP_NOMEM);
		return;
	}
	trace_metaroce_tx(dev_name(&c->mdev->ibdev.dev), pkt, sport);
	memset(metaroce_tx_cb(skb), 0, sizeof(struct metaroce_tx_cb));
	metaroce_tx_cb(skb)->sport = sport;
	metaroce_tx_cb(skb)->path = MR_MAX_PATHS;
	metaroce_tx_cb(skb)->segs = 1;
	__skb_queue_tail(q, skb);
}

/* Packets one GSO skb carries at most, and the largest page it takes for them. */
#define METAROCE_GSO_SEGS	MR_PATH_BURST
#define METAROCE_GSO_ORDER	3

/*
 * Room for a data packet of len bytes on path at the end of q: after the
 * packets of the same path in the tail skb, or in a new skb whose page has
 * room for a burst.  The bytes are in a page fragment, so that segmentation
 * cuts the page instead of copying it.  NULL if no memory.
 */
static u8 *metaroce_tx_room(struct sk_buff_head *q, u16 sport, u8 path, u32 len)
{
	struct sk_buff *skb = skb_peek_tail(q);
	struct metaroce_tx_cb *cb = skb ? metaroce_tx_cb(skb) : NULL;
	unsigned int order;
	struct page *page;
	skb_frag_t *f;
	u8 *p;

	if (!cb || !cb->open || cb->path != path || cb->sport != sport || len > cb->seg_len ||
	    cb->segs >= METAROCE_GSO_SEGS ||
	    skb_frag_size(&skb_shinfo(skb)->frags[0]) + len > cb->room) {
		order = min_t(unsigned int, get_order(METAROCE_GSO_SEGS * len), METAROCE_GSO_ORDER);
		page = alloc_pages(GFP_ATOMIC | __GFP_COMP | __GFP_NOWARN | __GFP_NORETRY, order);
		if (!page && order) {
			order = 0;
			page = alloc_pages(GFP_ATOMIC | __GFP_NOWARN, 0);
		}
		if (!page)
			return NULL;
		skb = alloc_skb(METAROCE_TX_HEADROOM, GFP_ATOMIC);
		if (!skb) {
			__free_pages(page, order);
			return NULL;
		}
		skb_reserve(skb, METAROCE_TX_HEADROOM);
		skb_add_rx_frag(skb, 0, page, 0, 0, PAGE_SIZE << order);
		cb = metaroce_tx_cb(skb);
		memset(cb, 0, sizeof(*cb));
		cb->sport = sport;
		cb->path = path;
		cb->seg_len = len;
		cb->room = PAGE_SIZE << order;
		__skb_queue_tail(q, skb);
	}
	f = &skb_shinfo(skb)->frags[0];
	p = skb_frag_address(f) + skb_frag_size(f);
	skb_frag_size_add(f, len);
	skb->len += len;
	skb->data_len += len;
	cb->segs++;
	/* A shorter packet (a message's last) ends the run: segments but the last are equal. */
	cb->open = len == cb->seg_len;
	return p;
}

/* A data packet of len bytes in an skb of its own at the end of q (no GSO). */
static u8 *metaroce_tx_single(struct sk_buff_head *q, u16 sport, u8 path, u32 len)
{
	struct sk_buff *skb = alloc_skb(METAROCE_TX_HEADROOM + len, GFP_ATOMIC);
	struct metaroce_tx_cb *cb;

	if (!skb)
		return NULL;
	skb_reserve(skb, METAROCE_TX_HEADROOM);
	cb = metaroce_tx_cb(skb);
	memset(cb, 0, sizeof(*cb));
	cb->sport = sport;
	cb->path = path;
	cb->segs = 1;
	cb->seg_len = len;
	__skb_queue_tail(q, skb);
	return skb_put(skb, len);
}

/* Take back the packet metaroce_tx_room() or metaroce_tx_single() last made room for. */
static void metaroce_tx_unroom(struct sk_buff_head *q, u32 len)
{
	struct sk_buff *skb = skb_peek_tail(q);
	struct metaroce_tx_cb *cb = metaroce_tx_cb(skb);

	if (skb_is_nonlinear(skb)) {
		skb_frag_size_sub(&skb_shinfo(skb)->frags[0], len);
		skb->len -= len;
		skb->data_len -= len;
	} else {
		__skb_trim(skb, skb->len - len);
	}
	cb->open = false;	/* the packet behind takes a new skb: keep this one simple */
	if (--cb->segs)
		return;
	__skb_unlink(skb, q);
	kfree_skb(skb);
}

/*
 * A data packet: its payload comes from the send WQE, or for a Read response
 * from memory. True if the engine has more to send now than it said (a NAK).
 */
static bool metaroce_queue_data(struct metaroce_conn *c, struct sk_buff_head *q,
				const struct mr_tx_desc *d)
{
	const struct mr_pkt *pkt = &d->pkt;
	/* A PROBE carries no stream (slot MR_REC_PROBE): no QP to read from. */
	struct metaroce_qp *qp = d->stream_slot < MR_CONN_STREAMS ?
				 c->stream_qp[d->stream_slot] : NULL;
	u32 hlen = mr_pkt_header_len(pkt->bth.opcode, pkt->bth.flags, 0);
	u32 len = hlen + pkt->bth.payload_len;
	struct metaroce_send_wqe *wqe;
	u8 *buf, *payload, path;
	bool ok = true;

	path = min_t(u32, pkt->bth.path_id, MR_MAX_PATHS);
	if (READ_ONCE(metaroce_tx_gso))
		buf = metaroce_tx_room(q, d->entropy, path, len);
	else
		buf = metaroce_tx_single(q, d->entropy, path, len);
	if (!buf || mr_pkt_build_header(pkt, buf, len) != len) {
		if (buf)
			metaroce_tx_unroom(q, len);
		metaroce_count(c->mdev, METAROCE_CNT_TX_DROP_NOMEM);
		return false;
	}
	payload = buf + hlen;
	if (pkt->bth.payload_len) {
		if (pkt->bth.opcode == MR_OP_READ_RESP) {
			struct metaroce_mr *mr = metaroce_key_mr(c->mdev, d->rkey);

			ok = mr && metaroce_mr_copy(mr, d->va + pkt->bth.offset, payload,
						    pkt->bth.payload_len, false);
		} else if (qp) {
			wqe = metaroce_sq_wqe(&qp->sq, (u32)d->cookie);
			if (wqe->inline_data)
				memcpy(payload, metaroce_wqe_inline(wqe) + pkt->bth.offset,
				       pkt->bth.payload_len);
			else
				ok = metaroce_sge_copy(qp, wqe->sge, wqe->num_sge,
						       pkt->bth.offset, payload,
						       pkt->bth.payload_len, false);
		} else {
			ok = false;	/* never send the buffer's stale bytes */
		}
	}
	if (!ok && pkt->bth.opcode == MR_OP_READ_RESP) {
		/*
		 * The MR went away after the Read was checked: typically a
		 * retransmission after the requester had it all and the owner
		 * invalidated the MR. Never send bytes we cannot read; NAK.
		 */
		metaroce_count(c->mdev, METAROCE_CNT_READ_RESP_ABORTS);
		mr_conn_abort_response(c->eng, d->stream_slot, pkt->bth.msn, MR_NAK_ACCESS);
		metaroce_tx_unroom(q, len);
		return true;	/* the NAK goes in the next pass */
	}
	if (!ok) {
		metaroce_count(c->mdev, METAROCE_CNT_PLACE_ERRORS);
		metaroce_tx_unroom(q, len);
		return false;
	}
	trace_metaroce_tx(dev_name(&c->mdev->ibdev.dev), pkt, d->entropy);
	return false;
}

static void metaroce_hs_local(struct metaroce_dev *mdev, struct mr_hs_local *l)
{
	enum ib_mtu mtu;

	mr_hs_local_defaults(l, mdev->incarnation);
	l->max_paths = clamp_t(u32, metaroce_paths, 1, MR_MAX_PATHS);
	spin_lock_bh(&mdev->port_lock);
	mtu = mdev->active_mtu;
	spin_unlock_bh(&mdev->port_lock);
	l->pmtu = ib_mtu_enum_to_int(mtu);
}

/* Minimum delay of a timer armed for a deadline that has already passed. */
#define METAROCE_PAST_DEADLINE_NS	(50 * NSEC_PER_USEC)

/*
 * Arm the timer for the engine's next deadline, once the transmit work has
 * done everything it could at @now. A deadline not after @now then means
 * the engine has nothing to act on: firing at once would repeat forever and
 * starve the CPU (softirq). Such a deadline is an engine bug; it is counted
 * and put off a little instead. @more: the work runs again anyway.
 */
static void metaroce_conn_arm(struct metaroce_conn *c, u64 now, bool more)
{
	u64 when = mr_hs_next_deadline(&c->hs);

	if (c->dead)	/* metaroce_conn_remove() has cancelled the timer for good */
		return;
	if (c->established)
		when = min(when, mr_conn_next_deadline(c->eng));
	if (c->ask_at && c->hs.state == MR_HS_IDLE)
		when = min(when, c->ask_at);
	if (when == MR_NO_DEADLINE)
		return;
	if (when <= now && !more) {
		metaroce_count(c->mdev, METAROCE_CNT_TIMER_PAST);
		when = now + METAROCE_PAST_DEADLINE_NS;
	}
	hrtimer_start(&c->timer, ns_to_ktime(when), HRTIMER_MODE_ABS_SOFT);
}

static void metaroce_conn_tx_work(struct work_struct *work)
{
	struct metaroce_conn *c = container_of(work, struct metaroce_conn, tx_work);
	struct mr_completion cm;
	struct mr_hs_local l;
	struct mr_tx_desc d;
	struct sk_buff_head q;
	struct metaroce_qp *qp;
	struct sk_buff *skb;
	struct mr_pkt pkt;
	bool more = false;
	u64 now, ask_at;
	int n = 0;

	__skb_queue_head_init(&q);
	now = metaroce_now();
	ask_at = READ_ONCE(c->ask_at);
	/* Our handshake parameters only when we are about to ask (port_lock). */
	if (ask_at && now >= ask_at)
		metaroce_hs_local(c->mdev, &l);
	spin_lock_bh(&c->lock);
	if (c->ask_at && now >= c->ask_at && ask_at) {
		/* No CONNECT_REQ came: ask ourselves; a crossing one is fine, [MR-CONN-11]. */
		if (c->hs.state == MR_HS_IDLE && !c->dead)
			mr_hs_connect(&c->hs, &l, now, c->id, get_random_u32());
		WRITE_ONCE(c->ask_at, 0);
	}
	if (mr_hs_on_timer(&c->hs, now) == MR_HS_EV_FAILED)
		metaroce_conn_fail_locked(c);
	if (c->established && !c->dead) {
		mr_conn_on_timer(c->eng, now);
		if (c->eng->failed)
			metaroce_conn_fail_locked(c);
	}
	while (mr_hs_next_packet(&c->hs, now, &pkt))
		metaroce_queue_pkt(c, &q, &pkt, pkt.sport);
	if (c->established && !c->dead) {
		while (mr_conn_poll_completion(c->eng, &cm))
			metaroce_complete(c, &cm);
		list_for_each_entry(qp, &c->qps, conn_node) {
			/* After the completions: they make room and decide the ring's flag. */
			more |= metaroce_usq_drain(qp);
			metaroce_sq_push(c, qp);
		}
		while (mr_conn_next_ack(c->eng, now, &pkt))
			metaroce_queue_pkt(c, &q, &pkt, pkt.sport);
		for (n = 0; n < METAROCE_TX_BUDGET; n++) {
			if (!mr_conn_next_packet(c->eng, now, &d))
				break;
			more |= metaroce_queue_data(c, &q, &d);
		}
		more |= n == METAROCE_TX_BUDGET;
	} else {
		list_for_each_entry(qp, &c->qps, conn_node)
			more |= metaroce_usq_drain(qp);
	}
	metaroce_conn_arm(c, now, more);
	spin_unlock_bh(&c->lock);
	metaroce_count(c->mdev, METAROCE_CNT_TX_RUNS);
	if (n)
		metaroce_count_add(c->mdev, METAROCE_CNT_TX_RUN_DATA, n);

	while ((skb = __skb_dequeue(&q))) {
		struct metaroce_tx_cb cb = *metaroce_tx_cb(skb);
		struct dst_cache *dc = NULL;

		memset(skb->cb, 0, sizeof(skb->cb));
		if (cb.segs > 1) {
			/*
			 * UDP GSO: the UDP header goes in front of skb->data,
			 * and each segment's checksum is completed when cut.
			 */
			skb_shinfo(skb)->gso_size = cb.seg_len;
			skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
			skb_shinfo(skb)->gso_segs = cb.segs;
			skb->ip_summed = CHECKSUM_PARTIAL;
			skb->csum_start = skb_headroom(skb) - sizeof(struct udphdr);
			skb->csum_offset = offsetof(struct udphdr, check);
			metaroce_count(c->mdev, METAROCE_CNT_TX_GSO_SKBS);
		}
		if (cb.path < MR_MAX_PATHS) {
			/* A path that took a new port (re-rolled) needs a new route. */
			dc = &c->dst[cb.path];
			if (c->dst_sport[cb.path] != cb.sport) {
				dst_cache_reset(dc);
				c->dst_sport[cb.path] = cb.sport;
			}
		}
		metaroce_net_xmit(c->mdev, skb, &c->laddr, &c->raddr, cb.sport, dc);
	}
	if (more)
		metaroce_conn_kick(c);
	metaroce_conn_put(c);	/* the reference metaroce_conn_kick() took */
}

/* The timer only wakes the transmit work, which acts on every deadline that passed. */
static enum hrtimer_restart metaroce_conn_timer(struct hrtimer *t)
{
	metaroce_conn_kick(container_of(t, struct metaroce_conn, timer));
	return HRTIMER_NORESTART;
}

/* ---- connection table ---- */

/*
 * A connection of ours, made for our QP (local) or accepted from a peer.
 * Charged to the memory cgroup of the task that makes it: the process whose
 * QP asked, or the accept worker.
 */
static struct metaroce_conn *metaroce_conn_alloc(struct metaroce_dev *mdev,
						 const struct in6_addr *laddr,
						 const struct in6_addr *raddr, bool local)
{
	struct metaroce_conn *c;
	int err, tries;
	u32 p;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return NULL;
	c->eng = kvzalloc(sizeof(*c->eng), GFP_KERNEL_ACCOUNT);
	for (p = 0; c->eng && p < MR_MAX_PATHS; p++) {
		if (dst_cache_init(&c->dst[p], GFP_KERNEL_ACCOUNT))
			break;
	}
	if (!c->eng || p < MR_MAX_PATHS) {
		metaroce_conn_free_dst(c);
		kvfree(c->eng);
		kfree(c);
		return NULL;
	}
	c->mdev = mdev;
	c->laddr = *laddr;
	c->raddr = *raddr;
	refcount_set(&c->ref, 1);	/* the table's */
	c->idle_since = metaroce_now();	/* an accepted one waits for its first QP */
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->qps);
	hrtimer_init(&c->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	c->timer.function = metaroce_conn_timer;
	INIT_WORK(&c->tx_work, metaroce_conn_tx_work);

	/* [MR-CONN-3] random over all 32 bits, nonzero and unique among ours. */
	for (tries = 0, err = -EBUSY; tries < 16 && err == -EBUSY; tries++) {
		c->id = get_random_u32();
		if (c->id)
			err = xa_insert(&mdev->conn_ids, c->id, c, GFP_KERNEL);
	}
	if (err) {
		metaroce_conn_free_dst(c);
		kvfree(c->eng);
		kfree(c);
		return NULL;
	}
	list_add(&c->node, &mdev->conns);
	mdev->nr_conns++;
	c->local = local;
	mdev->nr_local_conns += local;
	/* One accepted from a peer whose QP never comes here must not stay forever. */
	queue_delayed_work(system_wq, &mdev->conn_idle_work, nsecs_to_jiffies(MR_CONN_IDLE_NS) + 1);
	return c;
}

static struct metaroce_conn *metaroce_conn_find(struct metaroce_dev *mdev,
						const struct in6_addr *laddr,
						const struct in6_addr *raddr)
{
	struct metaroce_conn *c;

	/*
	 * A retiring connection (its QPs are gone, the CLOSE waits for
	 * MR_CONN_IDLE) is reused while it is established: the peer may
	 * still have QPs on it, and its new QPs join it, [MR-CONN-2]. (A
	 * connection of ours made beside it would leave our new QP and the
	 * peer's on different connections: nvme discover then connect did
	 * that.) One whose handshake never finished is not: the peer may
	 * have restarted since. If it has, its new incarnation's
	 * CONNECT_REQ ends the old connection and its QPs, [MR-CONN-7].
	 */
	list_for_each_entry(c, &mdev->conns, node)
		if (ipv6_addr_equal(&c->laddr, laddr) && ipv6_addr_equal(&c->raddr, raddr) &&
		    !c->dead && (!c->retiring || c->established))
			return c;
	return NULL;
}

/* Add a connection's engine counters to v (METAROCE_ENG_* order). */
static void metaroce_conn_eng_add(struct metaroce_conn *c, u64 *v)
{
	const struct mr_conn *e = c->eng;

	spin_lock_bh(&c->lock);
	v[METAROCE_ENG_RETRANSMITS - METAROCE_NR_COUNTERS] += e->retransmits;
	v[METAROCE_ENG_RTOS - METAROCE_NR_COUNTERS] += e->rtos;
	v[METAROCE_ENG_SPURIOUS_RTOS - METAROCE_NR_COUNTERS] += e->spurious_rtos;
	v[METAROCE_ENG_SACK_LOSSES - METAROCE_NR_COUNTERS] += e->sack_losses;
	v[METAROCE_ENG_TAIL_PROBES - METAROCE_NR_COUNTERS] += e->tail_probes;
	v[METAROCE_ENG_MSG_PROBES - METAROCE_NR_COUNTERS] += e->msg_probes;
	v[METAROCE_ENG_PATH_FAILURES - METAROCE_NR_COUNTERS] += e->path_failures;
	v[METAROCE_ENG_RX_DUPLICATES - METAROCE_NR_COUNTERS] += e->rx_duplicates;
	v[METAROCE_ENG_RX_DROPPED - METAROCE_NR_COUNTERS] += e->rx_dropped;
	v[METAROCE_ENG_NAKS_SENT - METAROCE_NR_COUNTERS] += e->naks_sent;
	v[METAROCE_ENG_NAKS_RECEIVED - METAROCE_NR_COUNTERS] += e->naks_received;
	v[METAROCE_ENG_ECN_ECHOES - METAROCE_NR_COUNTERS] += e->ecn_echoes;
	v[METAROCE_ENG_RX_BAD_RSNS - METAROCE_NR_COUNTERS] += e->rx_bad_rsns;
	v[METAROCE_ENG_ACKS_SENT - METAROCE_NR_COUNTERS] += e->acks_sent;
	v[METAROCE_ENG_ACKS_RECEIVED - METAROCE_NR_COUNTERS] += e->acks_received;
	v[METAROCE_ENG_PACER_BLOCKED - METAROCE_NR_COUNTERS] += e->pacer_blocked;
	v[METAROCE_ENG_WINDOW_FULL - METAROCE_NR_COUNTERS] += e->window_full;
	spin_unlock_bh(&c->lock);
}

void metaroce_conn_eng_stats(struct metaroce_dev *mdev, u64 *v)
{
	struct metaroce_conn *c;

	mutex_lock(&mdev->conn_mutex);
	memcpy(v, mdev->eng_retired, sizeof(mdev->eng_retired));
	list_for_each_entry(c, &mdev->conns, node)
		metaroce_conn_eng_add(c, v);
	mutex_unlock(&mdev->conn_mutex);
}

/* Take a connection out of the table and stop it; conn_mutex held. */
static void metaroce_conn_remove(struct metaroce_conn *c, bool failed)
{
	spin_lock_bh(&c->lock);
	if (failed)
		metaroce_conn_fail_locked(c);
	c->dead = true;
	spin_unlock_bh(&c->lock);
	xa_erase(&c->mdev->conn_ids, c->id);
	list_del_init(&c->node);
	c->mdev->nr_conns--;
	c->mdev->nr_local_conns -= c->local;
	metaroce_conn_eng_add(c, c->mdev->eng_retired);
	/* dead is set: neither a running work nor the receive path re-arms the timer. */
	hrtimer_cancel(&c->timer);
	if (cancel_work_sync(&c->tx_work))
		metaroce_conn_put(c);	/* the queued work's reference */
	metaroce_conn_put(c);		/* the table's */
}

/*
 * RC QP moving to RTR: bind it to the connection with its peer (made on
 * demand, [MR-CONN-2]); its stream opens when the connection is established.
 */
int metaroce_qp_attach(struct metaroce_qp *qp, const struct ib_qp_attr *attr)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	const struct ib_global_route *grh = rdma_ah_read_grh(&attr->ah_attr);
	const struct in6_addr *laddr, *raddr;
	struct mr_hs_local l;
	struct metaroce_conn *c;

	if (qp->conn)
		return 0;
	if (!grh->sgid_attr)
		return -EINVAL;
	/*
	 * The stream's state, allocated here: the stream opens under the
	 * connection's lock, maybe from softirq once the handshake is done.
	 */
	if (!qp->stream_mem)
		qp->stream_mem = kvzalloc(sizeof(*qp->stream_mem), GFP_KERNEL_ACCOUNT);
	if (!qp->stream_mem)
		return -ENOMEM;
	/* GIDs are the addresses: IPv4-mapped or IPv6, the same family at both ends. */
	raddr = (const struct in6_addr *)grh->dgid.raw;
	laddr = (const struct in6_addr *)grh->sgid_attr->gid.raw;
	if (ipv6_addr_v4mapped(laddr) != ipv6_addr_v4mapped(raddr))
		return -EINVAL;
	/* A connection to ourselves would have to answer its own handshake: not yet. */
	if (ipv6_addr_equal(laddr, raddr))
		return -EOPNOTSUPP;

	mutex_lock(&mdev->conn_mutex);
	c = metaroce_conn_find(mdev, laddr, raddr);
	if (!c) {
		if (mdev->nr_local_conns >= READ_ONCE(metaroce_max_local_conns)) {
			metaroce_count(mdev, METAROCE_CNT_CONN_LIMIT_DROPS);
			mutex_unlock(&mdev->conn_mutex);
			return -ENOMEM;
		}
		c = metaroce_conn_alloc(mdev, laddr, raddr, true);
		if (!c) {
			mutex_unlock(&mdev->conn_mutex);
			return -ENOMEM;
		}
		/*
		 * [MR-CONN-12] both ends move their QPs to RTR; the one with
		 * the lower address asks and the other waits for its
		 * CONNECT_REQ, so the handshake never crosses itself.
		 */
		if (memcmp(laddr, raddr, sizeof(*laddr)) < 0) {
			metaroce_hs_local(mdev, &l);
			spin_lock_bh(&c->lock);
			mr_hs_connect(&c->hs, &l, metaroce_now(), c->id, get_random_u32());
			spin_unlock_bh(&c->lock);
		} else {
			spin_lock_bh(&c->lock);
			WRITE_ONCE(c->ask_at, metaroce_now() + MR_CONN_WAIT_NS);
			spin_unlock_bh(&c->lock);
		}
	}
	refcount_inc(&c->ref);
	spin_lock_bh(&c->lock);
	qp->conn = c;
	qp->slot = -1;
	c->retiring = false;
	list_add_tail(&qp->conn_node, &c->qps);
	if (c->established)
		metaroce_open_stream(c, qp);
	spin_unlock_bh(&c->lock);
	mutex_unlock(&mdev->conn_mutex);
	metaroce_conn_kick(c);
	return 0;
}

/*
 * The RNR retry count and timer come with RTS, but a connection that is up
 * already opens the QP's stream at RTR: hand the engine what modify_qp has
 * accepted since.
 */
void metaroce_qp_set_rnr(struct metaroce_qp *qp)
{
	struct metaroce_conn *c = qp->conn;

	if (!c)
		return;
	spin_lock_bh(&c->lock);
	if (qp->slot >= 0)
		mr_conn_set_rnr(c->eng, qp->slot, qp->attr.rnr_retry,
				metaroce_rnr_us(qp->attr.min_rnr_timer));
	spin_unlock_bh(&c->lock);
}

/* QP destroyed: let go of its stream; the last QP of a connection closes it. */
void metaroce_qp_detach(struct metaroce_qp *qp)
{
	struct metaroce_dev *mdev = to_mdev(qp->ibqp.device);
	struct metaroce_conn *c = qp->conn;
	struct mr_stream *mem = NULL;
	bool last, idle;

	if (!c) {
		kvfree(qp->stream_mem);	/* from an RTR that failed */
		qp->stream_mem = NULL;
		return;
	}
	mutex_lock(&mdev->conn_mutex);
	spin_lock_bh(&c->lock);
	if (qp->slot >= 0) {
		c->stream_qp[qp->slot] = NULL;
		/* A dead connection's engine keeps it: freed with the engine. */
		if (c->established && !c->dead)
			mem = mr_conn_close_stream(c->eng, qp->slot);
		qp->slot = -1;
	}
	list_del(&qp->conn_node);
	qp->conn = NULL;
	last = list_empty(&c->qps);
	idle = last && !c->dead && c->hs.state == MR_HS_ESTABLISHED;
	if (last) {
		c->idle_since = metaroce_now();
		c->retiring = true;
	}
	spin_unlock_bh(&c->lock);
	/* Off the list: the establishment can no longer hand this memory to the engine. */
	kvfree(mem);
	kvfree(qp->stream_mem);
	qp->stream_mem = NULL;
	if (idle) {
		/*
		 * [MR-CONN-9] CLOSE only after MR_CONN_IDLE without streams:
		 * the peer's QPs may still be finishing (its last ACKs, its
		 * receives), and a CLOSE would move them to Error.
		 */
		queue_delayed_work(system_wq, &mdev->conn_idle_work,
				   nsecs_to_jiffies(MR_CONN_IDLE_NS) + 1);
	} else if (last && !list_empty(&c->node)) {
		/*
		 * A dead connection goes too, but from the work: we may be
		 * called from a WQ_MEM_RECLAIM worker (nvmet-rdma frees its
		 * queues from one), which must not wait for the BH workqueue.
		 */
		mod_delayed_work(system_wq, &mdev->conn_idle_work, 0);
	}
	mutex_unlock(&mdev->conn_mutex);
	metaroce_conn_put(c);
}

/*
 * The QP goes to RESET: it leaves its connection (a later RTR joins one
 * afresh, with a new stream), and its queues are emptied without
 * completions, as the IB specification has it.
 */
void metaroce_qp_reset(struct metaroce_qp *qp)
{
	if (qp->ibqp.qp_type == IB_QPT_RC)
		metaroce_qp_detach(qp);
	spin_lock_bh(&qp->rq.lock);
	qp->rq.head = qp->rq.tail;
	spin_unlock_bh(&qp->rq.lock);
	qp->sq.head = qp->sq.tail;
	qp->sq.posted = qp->sq.tail;
}

/* Connections without QPs: CLOSE those idle for MR_CONN_IDLE, drop dead ones. */
static void metaroce_conn_idle_work(struct work_struct *work)
{
	struct metaroce_dev *mdev = container_of(to_delayed_work(work), struct metaroce_dev,
						 conn_idle_work);
	struct metaroce_conn *c, *tmp;
	u64 now = metaroce_now(), wait = 0;
	bool close, drop;

	mutex_lock(&mdev->conn_mutex);
	list_for_each_entry_safe(c, tmp, &mdev->conns, node) {
		spin_lock_bh(&c->lock);
		/*
		 * Without QPs for MR_CONN_IDLE: an established connection is
		 * closed, a handshake nobody waits for any more is dropped;
		 * a dead connection goes at once.
		 */
		close = false;
		drop = list_empty(&c->qps) && c->dead;
		if (list_empty(&c->qps) && !c->dead) {
			if (now - c->idle_since < MR_CONN_IDLE_NS)
				wait = max(wait, MR_CONN_IDLE_NS - (now - c->idle_since));
			else if (c->hs.state == MR_HS_ESTABLISHED)
				close = true;
			else
				drop = true;
		}
		if (close)
			mr_hs_close(&c->hs, now, MR_CLOSE_IDLE);
		spin_unlock_bh(&c->lock);
		if (close) {
			/* Best effort CLOSE, then the connection goes. */
			metaroce_conn_kick(c);
			flush_work(&c->tx_work);
		}
		if (close || drop)
			metaroce_conn_remove(c, false);
	}
	mutex_unlock(&mdev->conn_mutex);
	if (wait)
		queue_delayed_work(system_wq, &mdev->conn_idle_work, nsecs_to_jiffies(wait) + 1);
}

/* The user moved the QP to Error: complete what the engine still holds as flushed. */
void metaroce_qp_flush(struct metaroce_qp *qp)
{
	struct metaroce_conn *c = qp->conn;

	if (!c) {
		metaroce_ud_flush(qp);
		metaroce_rq_flush(qp);
		return;
	}
	spin_lock_bh(&c->lock);
	metaroce_qp_to_error(qp);
	spin_unlock_bh(&c->lock);
}

int metaroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad_wr)
{
	struct metaroce_qp *qp = to_mqp(ibqp);
	struct metaroce_conn *c = qp->conn;
	int err = 0;

	if (qp->uqp && wr) {
		/* A user QP posts on its ring; the command is only its doorbell. */
		*bad_wr = wr;
		return -EINVAL;
	}
	if (ibqp->qp_type == IB_QPT_UD && qp->uqp) {
		metaroce_ud_usq_drain(qp);
		return 0;
	}
	if (ibqp->qp_type == IB_QPT_UD || ibqp->qp_type == IB_QPT_GSI)
		return metaroce_ud_post_send(qp, wr, bad_wr);
	if (!c) {
		/* Before RTR a doorbell finds nothing to do: the WQEs wait on the ring. */
		if (qp->uqp)
			return 0;
		if (READ_ONCE(qp->state) == IB_QPS_ERR)
			return metaroce_post_send_flush(qp, wr, bad_wr);
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}

	spin_lock_bh(&c->lock);
	if (qp->uqp)
		metaroce_usq_drain(qp);
	else
		err = metaroce_post_send_locked(qp, wr, bad_wr);
	metaroce_sq_push(c, qp);
	spin_unlock_bh(&c->lock);
	metaroce_conn_kick(c);
	return err;
}

/* Queue a chain of work requests on an attached RC QP; c->lock held. */
int metaroce_post_send_locked(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr)
{
	struct metaroce_send_wqe *wqe;
	bool local, write;
	int err = 0;
	u32 i;

	for (; wr; wr = wr->next) {
		if (READ_ONCE(qp->state) == IB_QPS_ERR) {
			struct metaroce_send_wqe flush = { .wr_id = wr->wr_id,
							   .opcode = wr->opcode };

			metaroce_complete_send(qp, &flush, IB_WC_WR_FLUSH_ERR);
			continue;
		}
		local = wr->opcode == IB_WR_REG_MR || wr->opcode == IB_WR_LOCAL_INV;
		if (READ_ONCE(qp->state) != IB_QPS_RTS ||
		    !(local || metaroce_mr_opcode(wr->opcode)) ||
		    wr->num_sge > qp->sq.max_sge) {
			err = local || metaroce_mr_opcode(wr->opcode) ? -EINVAL : -EOPNOTSUPP;
			break;
		}
		if (wr->send_flags & IB_SEND_INLINE && !local &&
		    ((metaroce_mr_opcode(wr->opcode) != MR_OP_SEND &&
		      metaroce_mr_opcode(wr->opcode) != MR_OP_WRITE) ||
		     metaroce_sge_len(wr->sg_list, wr->num_sge) > qp->max_inline)) {
			err = -EINVAL;	/* inline is for Sends and Writes that fit */
			break;
		}
		if (qp->sq.tail - qp->sq.head >= qp->sq.max_wr) {
			err = -ENOMEM;
			break;
		}
		wqe = metaroce_sq_wqe(&qp->sq, qp->sq.tail);
		wqe->wr_id = wr->wr_id;
		wqe->opcode = wr->opcode;
		wqe->send_flags = wr->send_flags;
		wqe->local = local;
		wqe->inline_data = false;
		wqe->place_failed = false;
		wqe->num_sge = local ? 0 : wr->num_sge;
		wqe->len = 0;
		if (local) {
			err = metaroce_local_wr(qp, wr);
			if (err)
				break;
			qp->sq.tail++;
			continue;
		}
		if (wr->send_flags & IB_SEND_INLINE) {
			/* The data is copied now; the lkeys are not looked at. */
			wqe->inline_data = true;
			wqe->num_sge = 0;
			for (i = 0; i < wr->num_sge; i++) {
				memcpy(metaroce_wqe_inline(wqe) + wqe->len,
				       (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				wqe->len += wr->sg_list[i].length;
			}
		}
		/* A Read's data and an atomic's result are written into its SGEs. */
		write = wr->opcode == IB_WR_RDMA_READ ||
			metaroce_mr_opcode(wr->opcode) == MR_OP_ATOMIC_CAS ||
			metaroce_mr_opcode(wr->opcode) == MR_OP_ATOMIC_FADD;
		for (i = 0; i < wqe->num_sge; i++) {
			wqe->sge[i] = wr->sg_list[i];
			wqe->len += wr->sg_list[i].length;
			if (!metaroce_lkey_ok(qp, &wr->sg_list[i], write))
				err = -EINVAL;
		}
		if (err)
			break;
		if (wr->opcode == IB_WR_SEND_WITH_IMM || wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
			wqe->imm_inv = be32_to_cpu(wr->ex.imm_data);
		else if (wr->opcode == IB_WR_SEND_WITH_INV)
			wqe->imm_inv = wr->ex.invalidate_rkey;
		if (wr->opcode == IB_WR_RDMA_WRITE || wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
		    wr->opcode == IB_WR_RDMA_READ) {
			wqe->remote_addr = rdma_wr(wr)->remote_addr;
			wqe->rkey = rdma_wr(wr)->rkey;
		} else if (metaroce_mr_opcode(wr->opcode) != MR_OP_SEND) {
			wqe->remote_addr = atomic_wr(wr)->remote_addr;
			wqe->rkey = atomic_wr(wr)->rkey;
			wqe->compare_add = atomic_wr(wr)->compare_add;
			wqe->swap = atomic_wr(wr)->swap;
			if (wqe->len < 8) {
				err = -EINVAL;
				break;
			}
		}
		qp->sq.tail++;
	}
	if (err)
		*bad_wr = wr;
	return err;
}

/* ---- receive side entry points (softirq) ---- */

/*
 * [MR-CC-9] every MR_SHARE_INTERVAL, share our receive capacity out among
 * the connections that delivered data (max-min fair, in the engine), and
 * put each share into the rate hint of that connection's ACKs.  Run
 * lazily from the receive path: hints only matter in ACKs, and ACKs only
 * follow received data.
 */
static void metaroce_share_tick(struct metaroce_dev *mdev, u64 now)
{
	struct metaroce_share_state *ss = &mdev->share;
	struct metaroce_conn *c;
	unsigned long id;
	u64 interval;
	u32 n = 0, i;

	if (now - READ_ONCE(ss->at_ns) < MR_SHARE_INTERVAL_NS || !spin_trylock(&ss->lock))
		return;
	interval = now - ss->at_ns;
	if (interval < MR_SHARE_INTERVAL_NS)
		goto out;
	WRITE_ONCE(ss->at_ns, now);

	rcu_read_lock();
	xa_for_each(&mdev->conn_ids, id, c) {
		if (n == METAROCE_SHARE_MAX)
			break;		/* the rest send no hint (0) */
		if (!refcount_inc_not_zero(&c->ref))
			continue;
		spin_lock(&c->lock);
		if (!c->established || c->dead) {
			spin_unlock(&c->lock);
			metaroce_conn_put(c);
			continue;
		}
		ss->s[n] = c->share;
		ss->s[n].active = c->share.bytes != 0;
		c->share.bytes = 0;
		spin_unlock(&c->lock);
		ss->conns[n++] = c;
	}
	rcu_read_unlock();

	mr_fairshare_compute(ss->s, n, READ_ONCE(metaroce_link_mbps),
			     (u32)min_t(u64, interval, U32_MAX));
	for (i = 0; i < n; i++) {
		c = ss->conns[i];
		spin_lock(&c->lock);
		c->share.share_mbps = ss->s[i].share_mbps;
		c->eng->local_hint = mr_rate_hint_encode(ss->s[i].share_mbps);
		spin_unlock(&c->lock);
		metaroce_conn_put(c);
	}
out:
	spin_unlock(&ss->lock);
}

/* The addresses of a received packet, IPv4 as v4-mapped like the GIDs. */
static void metaroce_skb_addrs(const struct sk_buff *skb, struct in6_addr *laddr,
			       struct in6_addr *raddr)
{
	if (skb->protocol == htons(ETH_P_IP)) {
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr, laddr);
		ipv6_addr_set_v4mapped(ip_hdr(skb)->saddr, raddr);
	} else {
		*laddr = ipv6_hdr(skb)->daddr;
		*raddr = ipv6_hdr(skb)->saddr;
	}
}

void metaroce_conn_rx(struct metaroce_dev *mdev, struct sk_buff *skb, const void *p, bool ce)
{
	const struct mr_pkt *pkt = p;
	struct in6_addr laddr, raddr;
	struct metaroce_conn *c;
	struct mr_place pl;
	enum mr_hs_event ev;
	u64 now;

	rcu_read_lock();
	c = xa_load(&mdev->conn_ids, pkt->bth.conn_id);
	if (c && !refcount_inc_not_zero(&c->ref))
		c = NULL;
	rcu_read_unlock();
	if (!c) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_UNKNOWN_CONN);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "unknown connection");
		return;
	}
	/*
	 * [MR-SEC-3] a connection is its conn_id and its two addresses: a
	 * packet naming our id from elsewhere (or to another of our
	 * addresses) is not the peer's.
	 */
	metaroce_skb_addrs(skb, &laddr, &raddr);
	if (!ipv6_addr_equal(&laddr, &c->laddr) || !ipv6_addr_equal(&raddr, &c->raddr)) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_WRONG_ADDR);
		trace_metaroce_rx_drop(dev_name(&mdev->ibdev.dev), "connection of other addresses");
		metaroce_conn_put(c);
		return;
	}

	spin_lock(&c->lock);
	now = metaroce_now();
	c->last_rx_ns = now;
	switch (pkt->bth.opcode) {
	case MR_OP_CONNECT_RESP:
	case MR_OP_CLOSE:
	case MR_OP_CLOSE_ACK:
		ev = mr_hs_on_packet(&c->hs, now, pkt);
		if (ev == MR_HS_EV_ESTABLISHED && !c->established)
			metaroce_conn_established(c);
		else if (ev == MR_HS_EV_CLOSED || ev == MR_HS_EV_FAILED)
			metaroce_conn_fail_locked(c);
		break;
	default:
		if (!c->established || c->dead) {
			metaroce_count(mdev, METAROCE_CNT_RX_DROP_UNKNOWN_CONN);
			break;
		}
		if (ce)
			metaroce_count(mdev, METAROCE_CNT_RX_ECN_CE);
		if (pkt->bth.opcode == MR_OP_ACK)
			mr_conn_on_ack(c->eng, now, pkt);
		else if (pkt->bth.opcode == MR_OP_NAK)
			mr_conn_on_nak(c->eng, now, pkt);
		else if (mr_conn_receive(c->eng, now, pkt, ce, &pl) == MR_RX_RESULT_PLACE)
			metaroce_place(c, &pl);
		c->share.bytes += pkt->bth.payload_len;
		break;
	}
	spin_unlock(&c->lock);
	metaroce_share_tick(mdev, now);
	metaroce_conn_kick(c);
	metaroce_conn_put(c);
}

/* CONNECT_REQs need memory for a new connection: accept them in process context. */
void metaroce_conn_rx_connect_req(struct metaroce_dev *mdev, struct sk_buff *skb)
{
	if (skb_queue_len(&mdev->connect_reqs) >= 64) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_NOMEM);
		kfree_skb(skb);
		return;
	}
	skb_queue_tail(&mdev->connect_reqs, skb);
	schedule_work(&mdev->accept_work);
}

static void metaroce_accept_one(struct metaroce_dev *mdev, struct sk_buff *skb)
{
	struct in6_addr laddr, raddr;
	struct metaroce_conn *c;
	struct mr_hs_local l;
	enum mr_hs_event ev;
	struct mr_pkt pkt;

	if (mr_pkt_parse(skb->data + sizeof(struct udphdr), skb->len - sizeof(struct udphdr),
			 &pkt) != MR_PARSE_OK)
		return;
	metaroce_skb_addrs(skb, &laddr, &raddr);

	c = metaroce_conn_find(mdev, &laddr, &raddr);
	if (c && c->hs.state == MR_HS_IDLE) {
		/* Our QP is waiting for exactly this request. */
		metaroce_hs_local(mdev, &l);
		spin_lock_bh(&c->lock);
		if (mr_hs_accept(&c->hs, &l, &pkt, c->id, get_random_u32()) ==
		    MR_HS_EV_ESTABLISHED)
			metaroce_conn_established(c);
		spin_unlock_bh(&c->lock);
		metaroce_conn_kick(c);
		return;
	}
	if (c) {
		enum mr_hs_restart restart = MR_HS_RESTART_ACCEPT;
		enum mr_hs_req_verdict verdict;

		spin_lock_bh(&c->lock);
		verdict = mr_hs_classify_req(&c->hs, &pkt);
		if (verdict == MR_HS_REQ_DUPLICATE) {
			mr_hs_on_duplicate_req(&c->hs, metaroce_now());
		} else if (verdict == MR_HS_REQ_YIELD) {
			ev = mr_hs_yield(&c->hs, &pkt);
			if (ev == MR_HS_EV_ESTABLISHED && !c->established)
				metaroce_conn_established(c);
		} else if (verdict == MR_HS_REQ_RESTARTED || verdict == MR_HS_REQ_REPLACED) {
			/*
			 * [MR-CONN-7] believed only when the old connection,
			 * challenged, stays silent: one spoofed CONNECT_REQ
			 * must not end every QP to the peer.
			 */
			restart = mr_hs_restart_check(&c->hs, metaroce_now(),
						      READ_ONCE(c->last_rx_ns));
			if (restart == MR_HS_RESTART_CHALLENGE && c->established)
				mr_conn_challenge(c->eng);
		}
		spin_unlock_bh(&c->lock);
		if (restart != MR_HS_RESTART_ACCEPT)
			metaroce_count(mdev, METAROCE_CNT_RESTART_CHALLENGES);
		if (verdict == MR_HS_REQ_DUPLICATE || verdict == MR_HS_REQ_YIELD ||
		    verdict == MR_HS_REQ_IGNORE || restart != MR_HS_RESTART_ACCEPT) {
			metaroce_conn_kick(c);
			return;
		}
		/* A restarted or replaced peer, proven: the old connection goes. */
		metaroce_conn_remove(c, true);
	}
	if (mdev->nr_conns >= READ_ONCE(metaroce_max_conns)) {
		/* [MR-SEC-4] silently: an answer would serve a flood. */
		metaroce_count(mdev, METAROCE_CNT_CONN_LIMIT_DROPS);
		return;
	}
	c = metaroce_conn_alloc(mdev, &laddr, &raddr, false);
	if (!c) {
		metaroce_count(mdev, METAROCE_CNT_RX_DROP_NOMEM);
		return;
	}
	metaroce_hs_local(mdev, &l);
	spin_lock_bh(&c->lock);
	if (mr_hs_accept(&c->hs, &l, &pkt, c->id, get_random_u32()) == MR_HS_EV_ESTABLISHED)
		metaroce_conn_established(c);
	spin_unlock_bh(&c->lock);
	metaroce_conn_kick(c);
}

static void metaroce_accept_work(struct work_struct *work)
{
	struct metaroce_dev *mdev = container_of(work, struct metaroce_dev, accept_work);
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&mdev->connect_reqs))) {
		mutex_lock(&mdev->conn_mutex);
		metaroce_accept_one(mdev, skb);
		mutex_unlock(&mdev->conn_mutex);
		kfree_skb(skb);
	}
}

int metaroce_conn_dev_init(struct metaroce_dev *mdev)
{
	mutex_init(&mdev->conn_mutex);
	INIT_LIST_HEAD(&mdev->conns);
	xa_init(&mdev->conn_ids);
	skb_queue_head_init(&mdev->connect_reqs);
	INIT_WORK(&mdev->accept_work, metaroce_accept_work);
	INIT_DELAYED_WORK(&mdev->conn_idle_work, metaroce_conn_idle_work);
	mdev->incarnation = get_random_u64() | 1;
	spin_lock_init(&mdev->share.lock);
	return 0;
}

/*
 * [MR-CONN-9] Device going away, its netdev still attached: every QP is
 * destroyed by now.  Tell each established peer with one best-effort CLOSE,
 * so that its QPs to us fail now and its next QP asks our next incarnation,
 * instead of joining a connection whose other end is gone.
 */
void metaroce_conn_dev_close_all(struct metaroce_dev *mdev)
{
	struct metaroce_conn *c;
	bool close;

	/* The accept work makes connections, which arm the idle work: stop it first. */
	cancel_work_sync(&mdev->accept_work);
	skb_queue_purge(&mdev->connect_reqs);
	cancel_delayed_work_sync(&mdev->conn_idle_work);
	mutex_lock(&mdev->conn_mutex);
	list_for_each_entry(c, &mdev->conns, node) {
		spin_lock_bh(&c->lock);
		close = !c->dead && c->hs.state == MR_HS_ESTABLISHED;
		if (close)
			mr_hs_close(&c->hs, metaroce_now(), MR_CLOSE_NORMAL);
		spin_unlock_bh(&c->lock);
		if (close) {
			metaroce_conn_kick(c);
			flush_work(&c->tx_work);
		}
	}
	mutex_unlock(&mdev->conn_mutex);
}

/* Device going away: every QP is destroyed by now; drop what connections remain. */
void metaroce_conn_dev_cleanup(struct metaroce_dev *mdev)
{
	struct metaroce_conn *c, *tmp;

	cancel_work_sync(&mdev->accept_work);
	skb_queue_purge(&mdev->connect_reqs);
	cancel_delayed_work_sync(&mdev->conn_idle_work);
	mutex_lock(&mdev->conn_mutex);
	list_for_each_entry_safe(c, tmp, &mdev->conns, node)
		metaroce_conn_remove(c, false);
	mutex_unlock(&mdev->conn_mutex);
	xa_destroy(&mdev->conn_ids);
}
