// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs: create, modify, query, destroy; an RC QP's binding to the
 * connection with its peer (RTR, RESET, Error, destroy), and post_send.
 */

#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "metaroce.h"
#include "connection.h"
#include "core/handshake.h"

static int metaroce_sq_init(struct metaroce_sq *sq, const struct ib_qp_cap *cap)
{
	sq->max_wr = cap->max_send_wr;
	sq->max_sge = cap->max_send_sge;
	/* Inline data is kept where the SGEs would be. */
	sq->wqe_size = size_add(sizeof(struct metaroce_send_wqe),
				max_t(size_t, array_size(sq->max_sge, sizeof(struct ib_sge)),
				      cap->max_inline_data));
	if (!sq->max_wr)
		return 0;
	sq->slots = roundup_pow_of_two(sq->max_wr);
	sq->wqes = kvcalloc(sq->slots, sq->wqe_size, GFP_KERNEL);
	return sq->wqes ? 0 : -ENOMEM;
}

static int metaroce_check_qp_init_attr(struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;

	if (init->create_flags)
		return -EOPNOTSUPP;
	if (init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UD &&
	    init->qp_type != IB_QPT_GSI)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > METAROCE_MAX_QP_WR || cap->max_recv_wr > METAROCE_MAX_QP_WR ||
	    cap->max_send_sge > METAROCE_MAX_SGE || cap->max_recv_sge > METAROCE_MAX_SGE ||
	    cap->max_inline_data > METAROCE_MAX_INLINE)
		return -EINVAL;
	return 0;
}

int metaroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ibqp->device);
	struct metaroce_qp *qp = to_mqp(ibqp);
	u32 qpn;
	int err;

	err = metaroce_check_qp_init_attr(init);
	if (err)
		return err;
	if (udata && init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UD)
		return -EOPNOTSUPP;
	err = metaroce_count_get(&mdev->n_qp, METAROCE_MAX_QP);
	if (err)
		return err;

	mutex_init(&qp->state_lock);
	qp->state = IB_QPS_RESET;
	qp->max_send_wr = init->cap.max_send_wr;
	qp->max_send_sge = init->cap.max_send_sge;
	qp->max_inline = init->cap.max_inline_data;
	qp->sq_sig_type = init->sq_sig_type;
	if (init->srq)
		err = metaroce_srq_qp_init(qp, init->srq);
	else
		err = metaroce_rq_init(&qp->rq, &init->cap);
	if (err)
		goto err_count;
	err = metaroce_sq_init(&qp->sq, &init->cap);
	if (err)
		goto err_rq;
	qp->slot = -1;
	metaroce_ud_init(qp);
	if (udata) {
		err = metaroce_uqp_create(qp, udata);
		if (err)
			goto err_rq;
	}

	if (init->qp_type == IB_QPT_GSI) {
		qpn = 1;
		err = xa_insert_bh(&mdev->qps, qpn, qp, GFP_KERNEL);
	} else {
		err = xa_alloc_cyclic_bh(&mdev->qps, &qpn, qp,
					 XA_LIMIT(METAROCE_FIRST_QPN, METAROCE_MAX_QPN),
					 &mdev->next_qpn, GFP_KERNEL);
		if (err > 0)	/* wrapped: still a valid, free number */
			err = 0;
	}
	if (err)
		goto err_rq;
	ibqp->qp_num = qpn;
	return 0;

err_rq:
	metaroce_uqp_destroy(qp);
	kvfree(qp->sq.wqes);
	kvfree(qp->rq.wqes);
err_count:
	atomic_dec(&mdev->n_qp);
	return err == -EBUSY ? -EEXIST : err;
}

/*
 * RC QP moving to RTR: bind it to the connection with its peer (made on
 * demand, [MR-CONN-2]); its stream opens when the connection is established.
 */
static int metaroce_qp_attach(struct metaroce_qp *qp, const struct ib_qp_attr *attr)
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
		metaroce_hs_local(mdev, &l, raddr);
		spin_lock_bh(&c->lock);
		metaroce_conn_begin_locked(c, &l);
		spin_unlock_bh(&c->lock);
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
 * The RNR retry count and timer and max_rd_atomic come with RTS, but a
 * connection that is up already opens the QP's stream at RTR: hand the engine
 * what modify_qp has accepted since.
 */
static void metaroce_qp_set_limits(struct metaroce_qp *qp)
{
	struct metaroce_conn *c = qp->conn;

	if (!c)
		return;
	spin_lock_bh(&c->lock);
	if (qp->slot >= 0)
		metaroce_stream_set_limits(c, qp);
	spin_unlock_bh(&c->lock);
}

/* QP destroyed: let go of its stream; the last QP of a connection closes it. */
static void metaroce_qp_detach(struct metaroce_qp *qp)
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
	/* [MR-ACK-9] a closed stream's last MSGACK goes at once */
	if (mem)
		metaroce_conn_kick(c);
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
static void metaroce_qp_reset(struct metaroce_qp *qp)
{
	if (qp->ibqp.qp_type == IB_QPT_RC)
		metaroce_qp_detach(qp);
	spin_lock_bh(&qp->rq.lock);
	qp->rq.head = qp->rq.tail;
	spin_unlock_bh(&qp->rq.lock);
	qp->sq.head = qp->sq.tail;
	qp->sq.posted = qp->sq.tail;
}

/* The user moved the QP to Error: complete what the engine still holds as flushed. */
static void metaroce_qp_flush(struct metaroce_qp *qp)
{
	struct metaroce_conn *c = qp->conn;

	if (!c) {
		metaroce_ud_flush(qp);
		metaroce_rq_flush(qp);
		return;
	}
	local_bh_disable();
	spin_lock(&c->lock);
	metaroce_qp_to_error(qp);
	spin_unlock(&c->lock);
	/* Now, as post_send does: the stream's last MSGACK [MR-ACK-9] and its NAK. */
	metaroce_conn_kick(c);
	local_bh_enable();
}

static int metaroce_check_qp_attr(struct metaroce_qp *qp, struct ib_qp_attr *attr, int mask)
{
	if (mask & IB_QP_PORT && attr->port_num != 1)
		return -EINVAL;
	if (mask & IB_QP_PKEY_INDEX && attr->pkey_index != 0)
		return -EINVAL;
	if (mask & IB_QP_PATH_MTU && (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if (mask & IB_QP_AV && attr->ah_attr.type != RDMA_AH_ATTR_TYPE_ROCE)
		return -EINVAL;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC && attr->max_rd_atomic > METAROCE_MAX_RD_ATOM)
		return -EINVAL;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC && attr->max_dest_rd_atomic > METAROCE_MAX_RD_ATOM)
		return -EINVAL;
	if (mask & IB_QP_CAP &&
	    (attr->cap.max_send_wr > qp->max_send_wr || attr->cap.max_recv_wr > qp->rq.max_wr))
		return -EINVAL;
	return 0;
}

int metaroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		       struct ib_udata *udata)
{
	struct metaroce_qp *qp = to_mqp(ibqp);
	enum ib_qp_state cur, next;
	int err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_lock);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	next = mask & IB_QP_STATE ? attr->qp_state : cur;
	err = -EINVAL;
	if (cur != qp->state || !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask))
		goto out;
	err = metaroce_check_qp_attr(qp, attr, mask);
	if (err)
		goto out;

	if (mask & IB_QP_AV) {
		qp->attr.ah_attr = attr->ah_attr;
		qp->attr.ah_attr.grh.sgid_attr = NULL;
		/* Read by the transmit work without the state lock. */
		WRITE_ONCE(qp->tclass, attr->ah_attr.grh.traffic_class);
	}
	if (mask & IB_QP_QKEY)
		WRITE_ONCE(qp->attr.qkey, attr->qkey);
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU)
		qp->attr.path_mtu = attr->path_mtu;
	if (mask & IB_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_RQ_PSN)
		qp->attr.rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		qp->attr.sq_psn = attr->sq_psn;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;

	if (cur == IB_QPS_INIT && next == IB_QPS_RTR && ibqp->qp_type == IB_QPT_RC) {
		/* The caller's AV still holds the source GID's attribute. */
		err = metaroce_qp_attach(qp, attr);
		if (err)
			goto out;
	}
	if (mask & (IB_QP_RNR_RETRY | IB_QP_MIN_RNR_TIMER | IB_QP_MAX_QP_RD_ATOMIC))
		metaroce_qp_set_limits(qp);
	qp->state = next;
	if (next == IB_QPS_ERR)
		metaroce_qp_flush(qp);
	else if (next == IB_QPS_RESET)
		metaroce_qp_reset(qp);
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

int metaroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		      struct ib_qp_init_attr *init)
{
	struct metaroce_qp *qp = to_mqp(ibqp);

	mutex_lock(&qp->state_lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	mutex_unlock(&qp->state_lock);
	attr->port_num = 1;
	attr->cap.max_send_wr = qp->max_send_wr;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_wr = qp->srq ? 0 : qp->rq.max_wr;
	attr->cap.max_recv_sge = qp->srq ? 0 : qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_type;
	return 0;
}

int metaroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct metaroce_dev *mdev = to_mdev(ibqp->device);
	struct metaroce_qp *qp = to_mqp(ibqp);

	xa_erase_bh(&mdev->qps, ibqp->qp_num);
	if (ibqp->qp_type == IB_QPT_UD || ibqp->qp_type == IB_QPT_GSI)
		metaroce_ud_destroy(qp);
	metaroce_qp_detach(qp);
	metaroce_mw_release_qp(mdev, qp);
	metaroce_uqp_destroy(qp);
	kvfree(qp->sq.wqes);
	kvfree(qp->rq.wqes);
	mutex_destroy(&qp->state_lock);
	atomic_dec(&mdev->n_qp);
	return 0;
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

	/*
	 * The transmit work is kicked with bottom halves off, so that it runs
	 * as they come back on, here in the poster's context.  Kicked from
	 * process context it would wake ksoftirqd and wait for a context
	 * switch before the first packet left.
	 */
	local_bh_disable();
	spin_lock(&c->lock);
	if (qp->uqp)
		metaroce_usq_drain(qp);
	else
		err = metaroce_post_send_locked(qp, wr, bad_wr);
	metaroce_sq_push(c, qp);
	spin_unlock(&c->lock);
	metaroce_conn_kick(c);
	local_bh_enable();
	return err;
}
