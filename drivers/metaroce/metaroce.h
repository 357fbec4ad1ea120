/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Types shared by the metaroce kernel glue: device, port, Verbs objects, netns state. */
#ifndef METAROCE_H
#define METAROCE_H

#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <net/inet_ecn.h>
#include <rdma/ib_verbs.h>
#include <rdma/metaroce-abi.h>

#include "compat.h"
#include "stats.h"
#include "core/cc.h"
#include "core/wire.h"

#define METAROCE_VENDOR_ID		0xffffff	/* no IEEE OUI: software device */
#define METAROCE_VENDOR_PART_ID		METAROCE_DRIVER_ID
#define METAROCE_HW_VER			1

/* Limits we report in query_device and enforce when objects are created. */
#define METAROCE_MAX_QP			0x10000
#define METAROCE_MAX_QP_WR		0x4000
#define METAROCE_MAX_SGE		32
#define METAROCE_MAX_CQ			0x10000
#define METAROCE_MAX_CQE		0x3fffff
#define METAROCE_MAX_PD			0x10000
#define METAROCE_MAX_MR			0x10000
#define METAROCE_MAX_AH			0x10000
#define METAROCE_MAX_SRQ		0x10000
#define METAROCE_MAX_INLINE		256
#define METAROCE_MAX_RD_ATOM		MR_STREAM_MAX_MSGS
#define METAROCE_MAX_FRWR_PAGES		512
#define METAROCE_GID_TABLE_LEN		128
#define METAROCE_MAX_MSG_SIZE		0x80000000u

/*
 * Bytes of every frame that are not payload in the worst case: IPv6 (40) +
 * UDP (8) + the largest MetaRoCE header stack (64).  The IB MTU we report is
 * the largest one that fits into the netdev MTU after this overhead.  The
 * payload our connections offer is the largest multiple of MR_PMTU_ALIGN that
 * fits after the overhead of the connection's address family ([MR-CONN-6]:
 * 1408 bytes in a 1500-byte frame over IPv4, 1344 over IPv6, where the IB MTU
 * is 1024), at most METAROCE_MAX_WIRE_PMTU (one page per packet at most).
 */
#define METAROCE_MAX_OVERHEAD		112
static_assert(sizeof(struct ipv6hdr) + MR_UDP_HDR_LEN + MR_MAX_HDR_STACK == METAROCE_MAX_OVERHEAD,
	      "the overhead is the terms mr_pmtu_offer() adds, for IPv6");
#define METAROCE_MAX_WIRE_PMTU		4096

/* Room for IP, UDP and link headers in front of ours in every skb we build. */
#define METAROCE_TX_HEADROOM	(LL_MAX_HEADER + sizeof(struct ipv6hdr) + sizeof(struct udphdr))

/* [MR-ENC-6] DSCP of every packet: AF31, as commonly provisioned for RDMA. */
#define METAROCE_DSCP			26

/* First QPN handed out to ordinary QPs; 0 and 1 are SMI and GSI. */
#define METAROCE_FIRST_QPN		16
#define METAROCE_MAX_QPN		0xffffff

/*
 * One pair of sockets per namespace, opened by the first device whose netdev
 * lives there and closed by the last one, so namespaces without devices cost
 * nothing.  Kernel sockets hold no reference on their namespace: devices let go
 * of them synchronously when their netdev leaves (metaroce_dev_detach()).
 */
struct metaroce_net {
	struct net *net;
	struct mutex lock;	/* users, sock4, sock6 */
	unsigned int users;
	struct socket *sock4;
	struct socket *sock6;
	/* Devices whose packets these sockets receive: RCU readers, RTNL writers. */
	struct hlist_head devs;
};

struct metaroce_conn;
struct mr_stream;

/* Senders one device shares its receive capacity among; more get no hint. */
#define METAROCE_SHARE_MAX		64

/* [MR-CC-9] the receiver's fair-share allocation, recomputed from softirq. */
struct metaroce_share_state {
	spinlock_t lock;		/* one computation at a time (trylock) */
	u64 at_ns;			/* last computation */
	struct mr_share s[METAROCE_SHARE_MAX];
	struct metaroce_conn *conns[METAROCE_SHARE_MAX];
};

struct metaroce_dev {
	struct ib_device ibdev;

	/*
	 * The netdev we run over.  Held from newlink until the netdev is
	 * unregistered (or leaves our namespace), when metaroce_dev_detach()
	 * drops it synchronously so that the netdev never waits for us.
	 */
	struct net_device __rcu *ndev;
	netdevice_tracker ndev_tracker;
	struct metaroce_net *mnet;	/* UDP sockets of ndev's netns */
	unsigned long flags;
#define METAROCE_DEV_DETACHED	0
	struct hlist_node mnet_node;	/* on mnet->devs; unhashed when not */

	spinlock_t port_lock;		/* port_state, active_mtu, wire_pmtu[] */
	enum ib_port_state port_state;
	enum ib_mtu active_mtu;
	/* The payload bytes per packet we offer, [MR-CONN-6]: over IPv6 [0] and IPv4 [1]. */
	u32 wire_pmtu[2];
	u32 link_mbps;			/* the netdev's speed, 0: none reported (device.c) */

	struct xarray qps;		/* qpn -> metaroce_qp, for receive lookup */
	u32 next_qpn;
	struct xarray mrs;		/* key index -> metaroce_mr, or a tagged metaroce_mw */
	u32 next_mr_index;
	spinlock_t mw_lock;		/* binding windows against MR dereg and rereg */
	atomic_t n_pd, n_cq, n_qp, n_mr, n_ah, n_srq;
	struct metaroce_counters __percpu *counters;

	/* Connections, one per peer address ([MR-CONN-1]). */
	struct mutex conn_mutex;	/* conns list, creation and teardown */
	struct list_head conns;
	struct list_head share_conns;	/* the same, RCU: for the fair-share tick */
	unsigned int nr_conns;		/* on conns; under conn_mutex */
	unsigned int nr_local_conns;	/* of them, made for our own QPs */
	u64 eng_retired[METAROCE_NR_ENG_COUNTERS];	/* of removed connections */
	struct xarray conn_ids;		/* our src_conn_id -> conn, RCU for receive */
	u64 incarnation;		/* [MR-CONN-7] */
	struct sk_buff_head connect_reqs;	/* CONNECT_REQs for the accept work */
	struct metaroce_share_state share;
	struct work_struct accept_work;
	struct delayed_work conn_idle_work;	/* [MR-CONN-9] closes idle connections */
};

static inline struct metaroce_dev *to_mdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct metaroce_dev, ibdev);
}

struct metaroce_pd {
	struct ib_pd ibpd;
};

struct metaroce_ucontext;

struct metaroce_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;
	struct in6_addr saddr;		/* of the source GID, copied when created */
	struct metaroce_ucontext *uc;	/* a user AH: its number is in uc->ahs */
	u32 handle;
};

/* Where one datagram goes: the addresses of its AH and the WR's QPN and Q_Key. */
struct metaroce_ud_dest {
	struct in6_addr saddr, daddr;
	u32 qpn;
	u32 qkey;
	u8 tclass;			/* the AH's traffic class ([MR-ENC-6]) */
};

/* A ring mapped into a process (uring.c): header page, then n entries of esize bytes. */
struct metaroce_uring {
	struct rdma_user_mmap_entry *entry;
	struct metaroce_ring_hdr *hdr;
	void *entries;
	u32 n;
	u32 esize;
	u32 cons;		/* the kernel's own consumer index (SQ, RQ) */
};

/* What a user QP has beyond a kernel one: its rings and room to copy WQEs out of them. */
struct metaroce_uqp {
	struct metaroce_uring sq, rq;
	/*
	 * One WQE of each ring, copied out before it is checked: one buffer
	 * per ring, because the send side (doorbell, transmit) and the
	 * receive side (softirq, under the RQ's lock) copy at the same time.
	 */
	void *sq_scratch;
	void *rq_scratch;
	struct ib_sge *sgl;	/* the SGEs of that WQE as metaroce_post_send takes them */
	void *inline_buf;	/* max_inline bytes per send queue slot */
	struct metaroce_ucontext *uc;
	struct mutex ud_lock;	/* a UD QP's send ring is taken by one doorbell at a time */
	u32 ud_done;		/* a UD QP's send WQEs completed (ud_txq.lock) */
};

/* A completion queue: a ring of work completions under one lock. */
struct metaroce_cq {
	struct ib_cq ibcq;
	spinlock_t lock;	/* ring, head, tail, notify, overflowed */
	struct ib_wc *ring;
	u32 size;		/* ring entries, a power of two */
	u32 head;		/* next to poll */
	u32 tail;		/* next to fill */
	u32 notify;		/* IB_CQ_SOLICITED / IB_CQ_NEXT_COMP armed flags */
	bool overflowed;
	struct metaroce_uring *uring;	/* a user CQ's ring instead of ring[] */
};

static inline struct metaroce_cq *to_mcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct metaroce_cq, ibcq);
}

/* A posted receive: what the transport needs to deliver and complete it. */
struct metaroce_recv_wqe {
	u64 wr_id;
	u32 num_sge;
	struct ib_sge sge[];
};

struct metaroce_rq {
	spinlock_t lock;	/* head, tail and the slots between them */
	u32 max_wr;
	u32 max_sge;
	u32 slots;		/* max_wr rounded up to a power of two */
	u32 head, tail;		/* free-running indices, tail - head = posted */
	size_t wqe_size;
	void *wqes;
};

/* A posted send: the work request as the engine and the copy loops need it. */
struct metaroce_send_wqe {
	u64 wr_id;
	enum ib_wr_opcode opcode;
	int send_flags;
	u64 remote_addr;
	u32 rkey;
	u64 compare_add;
	u64 swap;
	u32 imm_inv;		/* immediate data (host order) or the rkey to invalidate */
	u32 len;		/* sum of the SGEs */
	bool local;		/* REG_MR or LOCAL_INV: done when posted, completes in order */
	bool inline_data;	/* IB_SEND_INLINE: len bytes copied at sge, num_sge 0 */
	bool place_failed;	/* a Read response could not be written into sge */
	u32 num_sge;
	struct ib_sge sge[];
};

/* The bytes of an inline send WQE. */
static inline u8 *metaroce_wqe_inline(struct metaroce_send_wqe *wqe)
{
	return (u8 *)wqe->sge;
}

/*
 * Send queue: [head, posted) handed to the engine and not yet complete,
 * [posted, tail) waiting for the connection or for window space.
 */
struct metaroce_sq {
	u32 max_wr;
	u32 max_sge;
	u32 slots;
	u32 head, posted, tail;
	size_t wqe_size;
	void *wqes;
};

/* Queue slots: free-running indices over a power-of-two ring. */
static inline struct metaroce_recv_wqe *metaroce_rq_wqe(struct metaroce_rq *rq, u32 index)
{
	return rq->wqes + (size_t)(index & (rq->slots - 1)) * rq->wqe_size;
}

static inline struct metaroce_send_wqe *metaroce_sq_wqe(struct metaroce_sq *sq, u32 index)
{
	return sq->wqes + (size_t)(index & (sq->slots - 1)) * sq->wqe_size;
}

struct metaroce_qp {
	struct ib_qp ibqp;
	struct mutex state_lock;	/* modify_qp against itself */
	u32 bound_mws;			/* type 2 windows bound to it (mdev->mw_lock) */
	enum ib_qp_state state;
	struct ib_qp_attr attr;		/* what modify_qp last accepted */
	u32 max_send_wr;
	u32 max_send_sge;
	u32 max_inline;
	enum ib_sig_type sq_sig_type;
	struct metaroce_rq rq;

	/* RC transport, under conn->lock once attached. */
	struct metaroce_sq sq;
	struct metaroce_conn *conn;	/* set in RTR, held until destroy */
	struct list_head conn_node;	/* conn->qps */
	int slot;			/* engine stream slot, -1 until opened */
	u8 tclass;			/* the AV's traffic class ([MR-ENC-6]) */
	struct mr_stream *stream_mem;	/* the stream's state until the engine takes it */
	u32 rq_base;			/* RQ index of the stream's first receive */

	/* UD and GSI: built datagrams waiting for the transmit work. */
	struct sk_buff_head ud_txq;
	struct work_struct ud_work;
	struct metaroce_uqp *uqp;	/* a user QP's rings */
	struct metaroce_srq *srq;	/* receives come from it (rq.c) */
};

static inline struct metaroce_qp *to_mqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct metaroce_qp, ibqp);
}

struct metaroce_srq {
	struct ib_srq ibsrq;
	struct metaroce_rq rq;	/* rq.lock also guards limit */
	u32 limit;		/* armed limit event; 0: disarmed */
	struct metaroce_uring *uring;	/* a user SRQ's ring (uring.c) */
	void *scratch;		/* one WQE, copied out of that ring before it is checked */
};

static inline struct metaroce_srq *to_msrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct metaroce_srq, ibsrq);
}

struct metaroce_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;	/* pinned user pages; NULL for a DMA MR */
	int access;
	struct rcu_head rcu;	/* the receive path looks MRs up under RCU */

	/* Fast registration (alloc_mr, map_mr_sg, REG_MR, LOCAL_INV). */
	bool frwr;
	bool valid;		/* registered by REG_MR and not invalidated */
	bool dead;		/* deregistering: off the key table, for nothing new */
	u32 max_pages;
	u32 npages;
	u64 *pages;		/* page addresses (kernel virtual: software DMA) */

	u32 bound_mws;		/* memory windows bound to this MR (mdev->mw_lock) */
};

/*
 * A memory window (mw.c): a remote key for part of a user MR, bound and
 * invalidated by WQEs of the process's QPs.  Its key has the MR keys' index
 * space (an entry of mdev->mrs tagged METAROCE_KEY_MW); the receive path
 * reads it under RCU, so a bind publishes the range and access before valid.
 */
struct metaroce_mw {
	struct ib_mw ibmw;
	struct metaroce_mr *mr;	/* bound to, or NULL (mdev->mw_lock) */
	u64 va, length;		/* the window: in the MR's iova space */
	int access;		/* IB_ACCESS_REMOTE_* */
	struct metaroce_qp *qp;	/* type 2: bound to, the only QP it serves (compared, never used) */
	bool valid;
};

#define METAROCE_KEY_MW		1	/* xa_tag_pointer() tag of a window in mdev->mrs */

/* One more object against a device limit; -ENOMEM when it is reached. */
static inline int metaroce_count_get(atomic_t *count, int max)
{
	if (atomic_inc_return(count) > max) {
		atomic_dec(count);
		return -ENOMEM;
	}
	return 0;
}

/* Bytes described by an SGE list. */
static inline u32 metaroce_sge_len(const struct ib_sge *sge, u32 nsge)
{
	u32 i, len = 0;

	for (i = 0; i < nsge; i++)
		len += sge[i].length;
	return len;
}

struct metaroce_ucontext {
	struct ib_ucontext ibuc;
	struct xarray ahs;	/* AH number -> metaroce_ah, for UD send WQEs */
};

/*
 * The glue's files, each under a line that says what it does.  They call each
 * other downwards only, in this order from the bottom: params, stats, mr, mw,
 * net, uring, uverbs, cq, rq, complete, sq, ud, place, tx, peer, qp, rx,
 * verbs, device, main (connection.h: the connection object tx, rx, place,
 * complete, sq, peer and qp share).
 */

/* params.c: the module's parameters */
extern unsigned short metaroce_udp_port;
extern unsigned int metaroce_paths;
extern unsigned int metaroce_rto_min_us;
extern unsigned int metaroce_rto_max_us;
extern unsigned int metaroce_max_conns;
extern unsigned int metaroce_max_local_conns;
extern unsigned int metaroce_link_mbps;
extern unsigned int metaroce_dscp;
extern bool metaroce_tx_gso;

/* mr.c: keys resolved and checked against MRs; copies through them */
struct metaroce_user_sge;
struct metaroce_mr *metaroce_key_mr(struct metaroce_dev *mdev, u32 key);
bool metaroce_lkey_ok(struct metaroce_qp *qp, const struct ib_sge *sge, bool write);
bool metaroce_user_sge_in_pd(struct ib_pd *pd, const struct metaroce_user_sge *s, bool write);
u8 metaroce_rkey_check(struct metaroce_qp *qp, u32 rkey, u64 va, u64 len, int access,
		       struct metaroce_mr **mrp);
bool metaroce_invalidate(struct metaroce_dev *mdev, struct metaroce_qp *qp, u32 rkey);
struct metaroce_mr *metaroce_rkey_mr(struct metaroce_dev *mdev, u32 rkey, u64 va, u64 len);
bool metaroce_mr_still(struct metaroce_mr *mr, u32 key);
struct metaroce_mw *metaroce_index_mw(struct metaroce_dev *mdev, u32 key);
struct metaroce_mw *metaroce_key_mw(struct metaroce_dev *mdev, u32 key);
void metaroce_mw_release_locked(struct metaroce_mw *mw);
bool metaroce_mr_covers(struct metaroce_mr *mr, u64 va, u64 len);
void metaroce_mw_unbind(struct metaroce_dev *mdev, struct metaroce_mw *mw);
void metaroce_mw_release_qp(struct metaroce_dev *mdev, struct metaroce_qp *qp);

/* mw.c: memory windows, allocated by the process, bound and invalidated by its WQEs */
int metaroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int metaroce_dealloc_mw(struct ib_mw *ibmw);
enum ib_wc_status metaroce_bind_mw(struct metaroce_qp *qp, u32 mw_key, u32 new_key,
				   u32 mr_lkey, u64 va, u64 length, u32 access);
enum ib_wc_status metaroce_local_inv_mw(struct metaroce_qp *qp, u32 rkey);
/* Kernel address of len bytes at va of an MR, if they lie in one page (or a DMA MR). */
void *metaroce_mr_ptr(struct metaroce_mr *mr, u64 va, u32 len);
/*
 * The other side of a copy to or from memory: a flat buffer at p, or (into
 * memory only) a received skb's bytes from off (relative to skb->data), read
 * where they lie, so that a packet's payload is copied once, [MR-SEC-1].
 */
struct metaroce_buf {
	u8 *p;
	const struct sk_buff *skb;
	u32 off;
};

/*
 * Move len bytes between an MR at va and b (NULL: only check), stepping b past
 * them; false if not all inside the MR (or an skb short of them).
 */
bool metaroce_mr_xfer(struct metaroce_mr *mr, u64 va, struct metaroce_buf *b, u32 len,
		      bool to_mr);
/*
 * The same between b and a QP's SGE list at a byte offset; false if out of range
 * or key, or (to_sge) an MR without IB_ACCESS_LOCAL_WRITE.
 */
bool metaroce_sge_xfer(struct metaroce_qp *qp, const struct ib_sge *sge, u32 nsge,
		       u32 off, struct metaroce_buf *b, u32 len, bool to_sge);

/* The two for a flat buffer (NULL: only check). */
static inline bool metaroce_mr_copy(struct metaroce_mr *mr, u64 va, void *buf, u32 len,
				    bool to_mr)
{
	struct metaroce_buf b = { .p = buf };

	return metaroce_mr_xfer(mr, va, buf ? &b : NULL, len, to_mr);
}

static inline bool metaroce_sge_copy(struct metaroce_qp *qp, const struct ib_sge *sge, u32 nsge,
				     u32 off, void *buf, u32 len, bool to_sge)
{
	struct metaroce_buf b = { .p = buf };

	return metaroce_sge_xfer(qp, sge, nsge, off, buf ? &b : NULL, len, to_sge);
}

/* Posted REG_MR and LOCAL_INV run at once; they complete in queue order (complete.c). */
int metaroce_local_wr(struct metaroce_qp *qp, const struct ib_send_wr *wr);
int metaroce_mr_publish(struct metaroce_dev *mdev, struct metaroce_mr *mr);
struct ib_mr *metaroce_get_dma_mr(struct ib_pd *ibpd, int access);
int metaroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *metaroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_sg);
int metaroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		       unsigned int *sg_offset);

/* net.c: our packets onto the wire */
struct dst_cache;
u32 metaroce_flow_hash(const struct in6_addr *saddr, const struct in6_addr *daddr, u16 sport);
void metaroce_net_xmit(struct metaroce_dev *mdev, struct sk_buff *skb, struct in6_addr *saddr,
		       struct in6_addr *daddr, u16 sport, struct dst_cache *dc, u8 tos, u32 hash);

/* Receive capacity where neither link_mbps nor the netdev says one (Mbit/s). */
#define METAROCE_LINK_MBPS_DEFAULT	10000

/*
 * [MR-CC-9] The receive capacity the rate hints share out: the link_mbps
 * parameter if set, else the netdev's link speed, else 10 Gbit/s.
 */
static inline u32 metaroce_capacity_mbps(struct metaroce_dev *mdev)
{
	return READ_ONCE(metaroce_link_mbps) ?: READ_ONCE(mdev->link_mbps) ?:
	       METAROCE_LINK_MBPS_DEFAULT;
}

/*
 * [MR-ENC-6] The IP TOS byte of a packet: the DSCP of the traffic class its QP's
 * AV or its AH names, or the module's when that names none (and for ACKs,
 * NAKs and connection management: tclass 0); [MR-ENC-4] always ECT(0), the
 * traffic class's own ECN bits are not ours to send.
 */
static inline u8 metaroce_tos(u8 tclass)
{
	u8 dscp = tclass >> 2;

	if (!dscp)
		dscp = READ_ONCE(metaroce_dscp);
	return dscp << 2 | INET_ECN_ECT_0;
}

/* uring.c: rings mapped into a process */
int metaroce_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void metaroce_mmap_free(struct rdma_user_mmap_entry *e);
void *metaroce_uring_slot(struct metaroce_uring *r, u32 index);
int metaroce_ucq_create(struct metaroce_cq *cq, u32 size, struct ib_udata *udata);
void metaroce_ucq_destroy(struct metaroce_cq *cq);
int metaroce_ucq_resize(struct metaroce_cq *cq, u32 size, struct ib_udata *udata);
u32 metaroce_ucq_used(struct metaroce_cq *cq);
void metaroce_ucq_write(struct metaroce_cq *cq, const struct ib_wc *wc);
int metaroce_uqp_create(struct metaroce_qp *qp, struct ib_udata *udata);
void metaroce_uqp_destroy(struct metaroce_qp *qp);
void metaroce_ud_usq_done(struct metaroce_qp *qp);
int metaroce_usrq_create(struct metaroce_srq *srq, struct ib_udata *udata);
void metaroce_usrq_destroy(struct metaroce_srq *srq);
void metaroce_usrq_publish_done(struct metaroce_srq *srq);
int metaroce_usrq_ring_new(struct metaroce_srq *srq, struct ib_udata *udata, u32 n,
			   u32 max_wr, struct metaroce_uring **out);
void metaroce_usrq_ring_free(struct metaroce_uring *r);
bool metaroce_usrq_ring_move(struct metaroce_srq *srq, struct metaroce_uring *r, u32 max_wr);

/* uverbs.c: what only processes use */
extern const struct ib_device_ops metaroce_uverbs_ops;
void metaroce_uverbs_cmds(struct ib_device *ibdev);
int metaroce_uah_publish(struct metaroce_ah *ah, struct ib_udata *udata);
void metaroce_uah_unpublish(struct metaroce_ah *ah);
enum ib_wc_status metaroce_uah_dest(struct metaroce_qp *qp, u32 handle,
				    struct metaroce_ud_dest *dest);

/* cq.c: completion queues */
void metaroce_cq_push(struct metaroce_cq *cq, const struct ib_wc *wc, bool solicited);
void metaroce_ring_error(struct metaroce_qp *qp, struct ib_cq *cq, u64 wr_id,
			 enum ib_wc_opcode opcode, enum ib_wc_status status);
void metaroce_flush_one(struct metaroce_qp *qp, struct ib_cq *ibcq, u64 wr_id,
			enum ib_wc_opcode opcode);
int metaroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       METAROCE_CREATE_CQ_ARG *arg);
int metaroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int metaroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int metaroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int metaroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* rq.c: receive queues and shared receive queues */
int metaroce_rq_init(struct metaroce_rq *rq, const struct ib_qp_cap *cap);
void metaroce_rq_flush(struct metaroce_qp *qp);
/*
 * The transport needs receive WQE number idx of a QP (rq.lock held): take
 * what was posted since from the SRQ or from the process's ring.
 */
void metaroce_rq_refill(struct metaroce_qp *qp, u32 idx);
int metaroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
int metaroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata);
int metaroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata);
int metaroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int metaroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int metaroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad_wr);
int metaroce_srq_qp_init(struct metaroce_qp *qp, struct ib_srq *ibsrq);

/* complete.c: completions of RC work, flushes, QPs and connections to Error */
struct metaroce_send_wqe;
struct mr_completion;
struct mr_pkt;
void metaroce_complete_send(struct metaroce_qp *qp, struct metaroce_send_wqe *wqe,
			    enum ib_wc_status status);
void metaroce_sq_complete_local(struct metaroce_qp *qp);
void metaroce_qp_to_error(struct metaroce_qp *qp);
void metaroce_complete(struct metaroce_conn *c, const struct mr_completion *cm);
void metaroce_conn_fail_locked(struct metaroce_conn *c, const char *why);
bool metaroce_conn_end_locked(struct metaroce_conn *c, const struct mr_pkt *req, const char *why);

/* sq.c: send queues, from kernel WRs or a process's ring to the engine */
int metaroce_post_send_locked(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr);
int metaroce_post_send_flush(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			     const struct ib_send_wr **bad_wr);
void metaroce_trace_sqe_error(struct metaroce_qp *qp, const struct metaroce_user_sqe *e,
			      enum ib_wc_status st);
enum ib_wc_status metaroce_sqe_to_wr(struct metaroce_qp *qp, struct ib_atomic_wr *aw,
				     struct ib_rdma_wr *rw, struct ib_sge *sgl,
				     struct ib_send_wr **out);
bool metaroce_usq_drain(struct metaroce_qp *qp);
void metaroce_sq_push(struct metaroce_conn *c, struct metaroce_qp *qp);

/* ud.c: UD QPs, datagrams out and in */
struct mr_pkt;
void metaroce_ud_init(struct metaroce_qp *qp);
void metaroce_ud_destroy(struct metaroce_qp *qp);
void metaroce_ud_flush(struct metaroce_qp *qp);
int metaroce_ud_post_send(struct metaroce_qp *qp, const struct ib_send_wr *wr,
			  const struct ib_send_wr **bad_wr);
void metaroce_ud_usq_drain(struct metaroce_qp *qp);
void metaroce_ud_rx(struct metaroce_dev *mdev, struct sk_buff *skb, const struct mr_pkt *pkt);

/* place.c: the responder's checks, placement and atomics (the engine's ops) */
struct mr_place;
extern const struct mr_conn_ops metaroce_engine_ops;
/* Data the engine accepted (pl->data points into skb, maybe past its head). */
void metaroce_place(struct metaroce_conn *c, const struct mr_place *pl, const struct sk_buff *skb,
		    const u8 *hdr, u32 off);

/* tx.c: a connection's transmit work and its timer */
void metaroce_conn_tx_work(struct work_struct *work);
enum hrtimer_restart metaroce_conn_timer(struct hrtimer *t);

/* peer.c: the connection table */
int metaroce_conn_dev_init(struct metaroce_dev *mdev);
void metaroce_conn_dev_close_all(struct metaroce_dev *mdev);
void metaroce_conn_dev_cleanup(struct metaroce_dev *mdev);
/* The engine counters (METAROCE_ENG_*), live connections plus those already gone. */
void metaroce_conn_eng_stats(struct metaroce_dev *mdev, u64 *v);
struct metaroce_conn *metaroce_conn_alloc(struct metaroce_dev *mdev,
					  const struct in6_addr *laddr,
					  const struct in6_addr *raddr, bool local);
struct metaroce_conn *metaroce_conn_find(struct metaroce_dev *mdev,
					 const struct in6_addr *laddr,
					 const struct in6_addr *raddr);
void metaroce_conn_remove(struct metaroce_conn *c);
struct mr_hs_local;
void metaroce_conn_begin_locked(struct metaroce_conn *c, const struct mr_hs_local *l);
void metaroce_conn_established(struct metaroce_conn *c);
void metaroce_open_stream(struct metaroce_conn *c, struct metaroce_qp *qp);
/* c->lock held: the QP's RNR and max_rd_atomic attributes to its open stream */
void metaroce_stream_set_limits(struct metaroce_conn *c, struct metaroce_qp *qp);
void metaroce_conn_rx_connect_req(struct metaroce_dev *mdev, struct sk_buff *skb);

/* qp.c: queue pairs and their connection */
int metaroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata);
int metaroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		       struct ib_udata *udata);
int metaroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		      struct ib_qp_init_attr *init);
int metaroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int metaroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad_wr);

/* rx.c: the UDP sockets and what arrives on them */
int metaroce_rx_init(void);
void metaroce_rx_exit(void);
struct metaroce_net *metaroce_net_get(struct net *net);
void metaroce_net_put(struct metaroce_net *mnet);
void metaroce_net_list_dev(struct metaroce_dev *mdev);
void metaroce_net_unlist_dev(struct metaroce_dev *mdev);

/* verbs.c: PDs, AHs and the device's verbs table */
extern const struct ib_device_ops metaroce_verbs_ops;

/* device.c: the ib_device over a netdev */
int metaroce_dev_add(const char *name, struct net_device *ndev);
int metaroce_dev_notifier_init(void);
void metaroce_dev_notifier_exit(void);

/* The device of a netdev, with a reference (ib_device_put()), or NULL. */
static inline struct metaroce_dev *metaroce_dev_from_netdev(struct net_device *ndev)
{
	struct ib_device *ibdev = ib_device_get_by_netdev(ndev, METAROCE_DRIVER_ID);

	return ibdev ? to_mdev(ibdev) : NULL;
}

#endif /* METAROCE_H */
