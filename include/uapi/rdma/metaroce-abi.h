/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/* User ABI shared by the metaroce kernel module and its rdma-core provider. */
#ifndef METAROCE_ABI_USER_H
#define METAROCE_ABI_USER_H

#include <linux/types.h>

/*
 * Driver id reported by a MetaRoCE ib_device (RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID).
 *
 * enum rdma_driver_id has no private range, and reusing another driver's id
 * would make that driver's provider claim our devices (and its
 * ib_unregister_driver() remove them).  Device names are chosen freely by the
 * user, so the provider cannot match on a name prefix either.  We therefore use
 * one value far above the upstream enum ("MR" in ASCII); the provider matches it
 * with VERBS_DRIVER_ID(METAROCE_DRIVER_ID).
 */
#define METAROCE_DRIVER_ID		0x4d52

/* Default UDP destination port; RoCEv2 owns 4791, so rxe can run beside us. */
#define METAROCE_UDP_PORT_DEFAULT	64791

/* ABI version of the structures below; bumped on any incompatible change. */
#define METAROCE_UVERBS_ABI_VERSION	1

/*
 * The data path: rings mmapped from the kernel (create_cq and create_qp
 * return where).  Each ring is one mapping: a header page with the indices,
 * then a power-of-two number of fixed-size entries.  Indices are free-running
 * u32 counters; an entry's slot is its index modulo the entry count.
 *
 *   CQ: the kernel produces completions (prod), the process consumes (cons).
 *   SQ, RQ: the process produces WQEs (prod), the kernel takes them (cons)
 *           and publishes how many it has completed (done).  The process may
 *           have at most max_wr WQEs between done and prod.
 *
 * The kernel copies every WQE out of the ring before looking at it and
 * trusts nothing in it; a bad WQE completes with an error status.
 */
#define METAROCE_RING_HDR_BYTES		4096

/* Kernel-written SQ flag: it will look at the ring again without a doorbell. */
#define METAROCE_RING_F_DRAINING	(1U << 0)

struct metaroce_ring_hdr {
	__u32 prod;
	__u32 rsvd0[15];	/* producer and consumer on their own cache lines */
	__u32 cons;
	__u32 rsvd1[15];
	__u32 flags;		/* METAROCE_RING_F_* */
	__u32 done;
	__u32 rsvd2[14];
};

struct metaroce_user_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * A send WQE; num_sge SGEs or inline_len bytes of inline data follow it.
 * IB_UVERBS_WR_BIND_MW (RC): imm_inv is the window's current rkey, rkey its
 * new one (same index), one SGE the window (addr, length, lkey of its MR)
 * and compare_add the window's IB_UVERBS_ACCESS_REMOTE_* flags.
 * IB_UVERBS_WR_LOCAL_INV (RC): imm_inv is the type 2 window's rkey.
 */
struct metaroce_user_sqe {
	__aligned_u64 wr_id;
	__u32 opcode;		/* enum ib_uverbs_wr_opcode */
	__u32 send_flags;	/* enum ib_uverbs_send_flags */
	__u32 num_sge;
	__u32 inline_len;
	__u32 imm_inv;		/* immediate data (network order) or rkey to invalidate */
	__u32 rkey;
	__aligned_u64 remote_addr;
	__aligned_u64 compare_add;
	__aligned_u64 swap;
	/* UD: the AH's number (from create_ah), remote QPN and Q_Key. */
	__u32 ah_handle;
	__u32 remote_qpn;
	__u32 remote_qkey;
	__u32 reserved;
};

/* A receive WQE; num_sge SGEs follow it. */
struct metaroce_user_rqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

#define METAROCE_CQE_F_IMM	(1U << 0)	/* imm_inv holds immediate data */
#define METAROCE_CQE_F_INV	(1U << 1)	/* imm_inv holds the invalidated rkey */
#define METAROCE_CQE_F_GRH	(1U << 2)	/* UD receive: a 40-byte GRH precedes the data */

/*
 * sl of a UD receive: RoCE has no service level, so it carries the packet's
 * kind as mlx5 reports it, which UCX's UD transport reads to find the
 * destination address in the GRH area: bit 3 set for a UDP-encapsulated
 * (RoCE v2) packet, bits 2..0 the network header.
 */
#define METAROCE_CQE_SL_ROCE_V2	0x8
#define METAROCE_CQE_SL_IPV6	0x1
#define METAROCE_CQE_SL_IPV4	0x2

struct metaroce_user_cqe {
	__aligned_u64 wr_id;
	__u32 status;		/* enum ib_wc_status (the uverbs values) */
	__u32 opcode;		/* enum ib_uverbs_wc_opcode */
	__u32 vendor_err;
	__u32 byte_len;
	__u32 imm_inv;		/* immediate (network order) or invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u32 flags;		/* METAROCE_CQE_F_* */
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;		/* UD receives: METAROCE_CQE_SL_* */
	__u8 dlid_path_bits;
	__u8 reserved[2];
};

/* Where one ring is: the mmap offset and length for the ucontext's fd. */
struct metaroce_ring_info {
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
	__u32 entries;		/* a power of two */
	__u32 entry_size;	/* bytes; entries start at METAROCE_RING_HDR_BYTES */
};

/*
 * create_ah: the number a UD send WQE names the AH by (never 0).  Numbers are
 * per user context; a WQE naming no AH of its QP's context and PD completes
 * with an error.
 */
struct metaroce_create_ah_resp {
	__u32 ah_handle;
	__u32 reserved;
};

struct metaroce_create_cq_resp {
	struct metaroce_ring_info cq;
};

/*
 * resize_cq: the CQ's new ring.  The kernel moves the completions the process
 * has not consumed (from cons to prod) into it at the same free-running
 * indices and publishes it with the same cons and prod; the process must not
 * poll the CQ while the command runs, then maps the new ring and unmaps the
 * old one.
 */
struct metaroce_resize_cq_resp {
	struct metaroce_ring_info cq;
};

struct metaroce_create_qp_resp {
	struct metaroce_ring_info sq;
	struct metaroce_ring_info rq;
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline;
	__u32 reserved;
};

/*
 * A shared receive queue is one ring of struct metaroce_user_rqe entries,
 * like a QP's RQ.  The kernel copies WQEs out of it when a QP on the SRQ
 * needs a receive (cons), so posting needs no doorbell, and publishes in
 * done how many WQEs have left the SRQ (taken by QPs, or failed): the
 * process may have at most max_wr WQEs between done and prod.  A bad WQE
 * completes with an error status on the receive CQ of the QP that took it.
 * A QP created on an SRQ has no RQ ring: its create_qp response's rq is all
 * zero.
 */
struct metaroce_create_srq_resp {
	struct metaroce_ring_info rq;
	__u32 max_wr;
	__u32 max_sge;
};

/*
 * modify_srq with IB_SRQ_MAX_WR (resize) on a user SRQ.  The command has no
 * response, so it carries the address of a struct metaroce_modify_srq_resp
 * that the kernel fills with the SRQ's new ring.  The kernel moves the WQEs
 * it has not taken yet (from cons to prod) into the new ring at the same
 * free-running indices, with the same cons, prod and done; the process must
 * not post to the SRQ while the command runs, then maps the new ring and
 * unmaps the old one.  Resizing fails (EINVAL) if the WQEs waiting in the SRQ
 * would not fit.
 */
struct metaroce_modify_srq_cmd {
	__aligned_u64 resp_addr;
};

struct metaroce_modify_srq_resp {
	struct metaroce_ring_info rq;
	__u32 max_wr;
	__u32 reserved;
};

#endif /* METAROCE_ABI_USER_H */
