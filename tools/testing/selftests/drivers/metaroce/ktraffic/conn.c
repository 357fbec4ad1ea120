// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The two ends of a run: devices, PDs, GIDs, buffers, and the RC QP pair between them. */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "ktraffic.h"

/* Memory that remote access reaches through the DMA MR must be in the linear map. */
static int mr_kt_buf_alloc(struct ib_device *dev, struct mr_kt_buf *buf, size_t len)
{
	/* A failed large allocation is a test result, not a reason for a splat. */
	buf->cpu = kmalloc(len, GFP_KERNEL | __GFP_NOWARN);
	if (!buf->cpu)
		return -ENOMEM;
	buf->dma = ib_dma_map_single(dev, buf->cpu, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, buf->dma)) {
		kfree(buf->cpu);
		buf->cpu = NULL;
		return -ENOMEM;
	}
	buf->len = len;
	return 0;
}

static void mr_kt_buf_free(struct ib_device *dev, struct mr_kt_buf *buf)
{
	if (!buf->cpu)
		return;
	ib_dma_unmap_single(dev, buf->dma, buf->len, DMA_BIDIRECTIONAL);
	kfree(buf->cpu);
	buf->cpu = NULL;
}

/* The RoCE v2 GID of the netdev's IPv4 address, or with ipv6 its global IPv6 address. */
static const struct ib_gid_attr *mr_kt_find_gid(struct mr_kt_end *end, bool ipv6)
{
	const struct ib_gid_attr *attr;
	const struct in6_addr *a;
	int i;

	for (i = 0; i < end->port_attr.gid_tbl_len; i++) {
		attr = rdma_get_gid_attr(end->dev, end->port, i);
		if (IS_ERR(attr))	/* an empty entry */
			continue;
		a = (const struct in6_addr *)attr->gid.raw;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    (ipv6 ? !ipv6_addr_v4mapped(a) && !(ipv6_addr_type(a) & IPV6_ADDR_LINKLOCAL) :
			    ipv6_addr_v4mapped(a)))
			return attr;
		rdma_put_gid_attr(attr);
	}
	return NULL;
}

/*
 * Holds the device until mr_kt_end_close(): unregistering it (rdma link
 * delete, its netdev going away) waits for the run, which is bounded by the
 * op timeouts, instead of pulling objects from under it.
 */
int mr_kt_end_open(struct mr_kt_run *run, struct mr_kt_end *end, const char *name)
{
	size_t len = max_t(size_t, run->size, sizeof(u64));
	u32 i;
	int err;

	end->dev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (!end->dev) {
		pr_err("%s: no RDMA device '%s'\n", end->role, name);
		return -ENODEV;
	}
	end->port = rdma_start_port(end->dev);
	err = ib_query_port(end->dev, end->port, &end->port_attr);
	if (err) {
		pr_err("%s: %s: query port %u: %pe\n", end->role, name, end->port, ERR_PTR(err));
		return err;
	}
	if (end->port_attr.state != IB_PORT_ACTIVE) {
		pr_err("%s: %s port %u is not active (state %d)\n", end->role, name, end->port,
		       end->port_attr.state);
		return -ENETDOWN;
	}
	if (run->depth >= end->dev->attrs.max_qp_wr || 2 * run->depth >= end->dev->attrs.max_cqe) {
		pr_err("%s: %s: depth %u exceeds max_qp_wr %d or max_cqe %d\n", end->role, name,
		       run->depth, end->dev->attrs.max_qp_wr, end->dev->attrs.max_cqe);
		return -EINVAL;
	}
	end->gid = mr_kt_find_gid(end, run->ipv6);
	if (!end->gid) {
		pr_err("%s: %s port %u has no RoCE v2 GID of an %s address\n", end->role, name,
		       end->port, run->ipv6 ? "IPv6 global" : "IPv4");
		return -EADDRNOTAVAIL;
	}

	end->pd = ib_alloc_pd(end->dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(end->pd)) {
		err = PTR_ERR(end->pd);
		end->pd = NULL;
		pr_err("%s: %s: alloc PD: %pe\n", end->role, name, ERR_PTR(err));
		return err;
	}

	end->slots = kcalloc(run->depth, sizeof(*end->slots), GFP_KERNEL);
	if (!end->slots)
		return -ENOMEM;
	for (i = 0; i < run->depth; i++) {
		err = mr_kt_buf_alloc(end->dev, &end->slots[i], len);
		if (err)
			goto err_mem;
	}
	/* Page-aligned (kmalloc aligns power-of-two sizes): one page to register. */
	err = mr_kt_buf_alloc(end->dev, &end->target, PAGE_SIZE);
	if (err)
		goto err_mem;
	return 0;

err_mem:
	pr_err("%s: %s: cannot allocate %u buffers of %zu bytes\n", end->role, name, run->depth,
	       len);
	return err;
}

/* Undoes mr_kt_end_open(), also a partial one. */
void mr_kt_end_close(struct mr_kt_run *run, struct mr_kt_end *end)
{
	u32 i;

	if (end->slots) {
		for (i = 0; i < run->depth; i++)
			mr_kt_buf_free(end->dev, &end->slots[i]);
		kfree(end->slots);
		end->slots = NULL;
	}
	mr_kt_buf_free(end->dev, &end->target);
	if (end->pd)
		ib_dealloc_pd(end->pd);
	end->pd = NULL;
	if (end->gid)
		rdma_put_gid_attr(end->gid);
	end->gid = NULL;
	if (end->dev)
		ib_device_put(end->dev);
	end->dev = NULL;
}

struct mr_kt_resolve {
	struct completion done;
	int status;
};

static void mr_kt_resolved(int status, struct sockaddr *src, struct rdma_dev_addr *addr,
			   void *context)
{
	struct mr_kt_resolve *resolve = context;

	resolve->status = status;
	complete(&resolve->done);
}

/*
 * The core resolves the peer's MAC for user QPs only; kernel users bring a
 * resolved address vector.  This is what the core does for user QPs: a route
 * and a neighbour lookup in the namespace of the source GID's netdev.
 */
static int mr_kt_resolve_dmac(struct mr_kt_run *run, struct mr_kt_end *me,
			      const union ib_gid *dgid, struct rdma_ah_attr *ah)
{
	union {
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
	} src, dst;
	struct rdma_dev_addr dev_addr = {
		.net = &init_net,	/* replaced by the GID's namespace */
		.sgid_attr = me->gid,
	};
	struct mr_kt_resolve resolve;
	int err;

	rdma_gid2ip((struct sockaddr *)&src, &me->gid->gid);
	rdma_gid2ip((struct sockaddr *)&dst, dgid);
	init_completion(&resolve.done);
	err = rdma_resolve_ip((struct sockaddr *)&src, (struct sockaddr *)&dst, &dev_addr,
			      run->timeout_ms, mr_kt_resolved, true, &resolve);
	if (err)
		return err;
	/* The resolver always calls back, at the latest when its timeout expires. */
	wait_for_completion(&resolve.done);
	if (resolve.status)
		return resolve.status;
	ether_addr_copy(ah->roce.dmac, dev_addr.dst_dev_addr);
	ah->grh.hop_limit = dev_addr.hoplimit;
	return 0;
}

static void mr_kt_cq_event(struct ib_cq *cq, void *ctx)
{
	struct mr_kt_run *run = ctx;

	atomic_inc(&run->cq_events);
	wake_up(&run->cq_wait);
}

/*
 * Sleep until a completion comes to x's or y's CQ (y may be NULL), or max_ms
 * pass: arm the CQs, and return at once if one holds completions already,
 * as a kernel consumer does.  An idle run then costs its host no wakeups:
 * polling with 20-100 us sleeps woke an idle guest ten thousand times a
 * second, and under TCG each wake costs the host more than the guest sees,
 * most for the transport that leaves its guest the most idle.
 */
void mr_kt_cq_wait(struct mr_kt_run *run, struct mr_kt_end *x, struct mr_kt_end *y,
		   unsigned int max_ms)
{
	int seen = atomic_read(&run->cq_events);
	const enum ib_cq_notify_flags arm = IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS;

	if (ib_req_notify_cq(x->cq, arm) > 0 || (y && ib_req_notify_cq(y->cq, arm) > 0))
		return;
	wait_event_interruptible_timeout(run->cq_wait, atomic_read(&run->cq_events) != seen,
					 msecs_to_jiffies(max_ms));
}

int mr_kt_qp_create(struct mr_kt_run *run, struct mr_kt_end *end, char *why)
{
	struct ib_cq_init_attr cq_attr = {
		.cqe = run->resize_cq ? 1 : 2 * run->depth + 1,
	};
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = {
			.max_send_wr = run->depth + 1,	/* B: + the target's registration */
			.max_recv_wr = run->depth,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = run->inline_max,
		},
	};
	int err;

	/*
	 * Polled by hand, so a completion is checked before it is believed; its
	 * event only wakes the polling thread (mr_kt_cq_wait).  No other
	 * thread waits yet: the run's copy (a flow's) gets its own queue here.
	 */
	init_waitqueue_head(&run->cq_wait);
	atomic_set(&run->cq_events, 0);
	end->cq = ib_create_cq(end->dev, mr_kt_cq_event, NULL, run, &cq_attr);
	if (IS_ERR(end->cq)) {
		err = PTR_ERR(end->cq);
		end->cq = NULL;
		snprintf(why, MR_KT_WHY_LEN, "%s: alloc CQ: %pe", end->role, ERR_PTR(err));
		return err;
	}
	if (run->resize_cq) {
		err = ib_resize_cq(end->cq, 2 * run->depth + 1);
		if (!err && end->cq->cqe < 2 * run->depth + 1)
			err = -ENOSPC;
		if (err) {
			snprintf(why, MR_KT_WHY_LEN, "%s: resize CQ to %u: %pe", end->role,
				 2 * run->depth + 1, ERR_PTR(err));
			return err;
		}
	}
	init.send_cq = end->cq;
	init.recv_cq = end->cq;
	end->qp = ib_create_qp(end->pd, &init);
	if (IS_ERR(end->qp)) {
		err = PTR_ERR(end->qp);
		end->qp = NULL;
		snprintf(why, MR_KT_WHY_LEN, "%s: create RC QP: %pe", end->role, ERR_PTR(err));
		return err;
	}
	return 0;
}

static int mr_kt_qp_modify(struct mr_kt_end *end, struct ib_qp_attr *attr, int mask,
			   const char *state, char *why)
{
	int err = ib_modify_qp(end->qp, attr, mask);

	if (err)
		snprintf(why, MR_KT_WHY_LEN, "%s: modify QP to %s: %pe", end->role, state,
			 ERR_PTR(err));
	return err;
}

/* INIT, then RTR with an address vector pointing at the peer, then RTS. */
int mr_kt_qp_ready(struct mr_kt_run *run, struct mr_kt_end *me, const struct mr_kt_peer *peer,
		   u32 my_psn, char *why)
{
	struct ib_device_attr *caps = &me->dev->attrs;
	union ib_gid dgid = peer->gid;
	struct ib_qp_attr attr = {};
	int err;

	attr.qp_state = IB_QPS_INIT;
	attr.port_num = me->port;
	attr.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			       IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
	err = mr_kt_qp_modify(me, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			      IB_QP_ACCESS_FLAGS, "INIT", why);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = min(me->port_attr.active_mtu, peer->mtu);
	attr.dest_qp_num = peer->qpn;
	attr.rq_psn = peer->psn;
	attr.max_dest_rd_atomic = min3(run->depth, (u32)max(caps->max_qp_rd_atom, 0), 255U);
	attr.min_rnr_timer = IB_RNR_TIMER_000_64;
	attr.ah_attr.type = rdma_ah_find_type(me->dev, me->port);
	rdma_ah_set_port_num(&attr.ah_attr, me->port);
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, me->gid->index, 64, 0);
	err = mr_kt_resolve_dmac(run, me, &dgid, &attr.ah_attr);
	if (err) {
		snprintf(why, MR_KT_WHY_LEN, "%s: resolve the MAC of %pI4: %pe", me->role,
			 dgid.raw + 12, ERR_PTR(err));
		return err;
	}
	err = mr_kt_qp_modify(me, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			      IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			      IB_QP_MIN_RNR_TIMER, "RTR", why);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = my_psn;
	attr.timeout = 14;	/* 67 ms */
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;	/* for ever: B may be slow to post a receive */
	attr.max_rd_atomic = min3(run->depth, (u32)max(caps->max_qp_init_rd_atom, 0), 255U);
	return mr_kt_qp_modify(me, &attr, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
			       IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC,
			       "RTS", why);
}

/* A fresh CQ and RC QP on each end, connected to each other. */
int mr_kt_connect(struct mr_kt_run *run, char *why)
{
	u32 psn_a = get_random_u32() & 0xffffff;
	u32 psn_b = get_random_u32() & 0xffffff;
	struct mr_kt_peer peer_a, peer_b;
	int err;

	err = mr_kt_qp_create(run, &run->a, why);
	if (!err)
		err = mr_kt_qp_create(run, &run->b, why);
	if (!err) {
		mr_kt_peer_of(&run->a, psn_a, &peer_a);
		mr_kt_peer_of(&run->b, psn_b, &peer_b);
	}
	if (!err)
		err = mr_kt_qp_ready(run, &run->a, &peer_b, psn_a, why);
	if (!err)
		err = mr_kt_qp_ready(run, &run->b, &peer_a, psn_b, why);
	return err;
}

/* What the other end of a QP pair must know of this one. */
void mr_kt_peer_of(const struct mr_kt_end *end, u32 psn, struct mr_kt_peer *peer)
{
	peer->qpn = end->qp->qp_num;
	peer->psn = psn;
	peer->gid = end->gid->gid;
	peer->mtu = end->port_attr.active_mtu;
}

void mr_kt_end_disconnect(struct mr_kt_end *end)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	if (end->qp) {
		/* Stops the QP from touching our buffers; failure changes nothing here. */
		ib_modify_qp(end->qp, &attr, IB_QP_STATE);
		ib_destroy_qp(end->qp);
		end->qp = NULL;
	}
	if (end->cq)
		ib_destroy_cq(end->cq);
	end->cq = NULL;
}

/* Undoes mr_kt_connect(), also a partial one. */
void mr_kt_disconnect(struct mr_kt_run *run)
{
	mr_kt_end_disconnect(&run->a);
	mr_kt_end_disconnect(&run->b);
}
