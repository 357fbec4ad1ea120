/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the parts of mr_ktraffic share: the two ends of a run and the ops it tests. */
#ifndef MR_KTRAFFIC_H
#define MR_KTRAFFIC_H

#include <rdma/ib_verbs.h>

/* Bounds of the parameters. */
#define MR_KT_MAX_DEPTH		1024
#define MR_KT_MAX_RING		MR_KT_MAX_DEPTH
#define MR_KT_MAX_FLOWS		64
#define MR_KT_MAX_MEMORY	(256UL << 20)	/* message buffers per device */

/* The first failure of an op or of a connection, for its report line. */
#define MR_KT_WHY_LEN	200
/* Longest sleep waiting for a completion: how late a stop or a "done" is seen. */
#define MR_KT_WAIT_MS	2

/* A kmalloc'ed buffer and its mapping for the device. */
struct mr_kt_buf {
	void *cpu;
	u64 dma;
	size_t len;
};

/* One device of a run: A sends, writes, reads and runs atomics on B. */
struct mr_kt_end {
	const char *role;		/* "A" or "B", for messages */
	struct ib_device *dev;
	u32 port;
	struct ib_port_attr port_attr;
	const struct ib_gid_attr *gid;	/* RoCE v2 GID of an IPv4 address of the netdev */
	struct ib_pd *pd;		/* with the unsafe global rkey: no MR per buffer */
	struct mr_kt_buf *slots;	/* depth message buffers */
	struct mr_kt_buf target;	/* one page: the target of B's atomics */
	/* Made for each op, so one failed op leaves the next a fresh connection. */
	struct ib_cq *cq;
	struct ib_qp *qp;
};

/* What one end of a QP pair tells the other: enough to reach RTR. */
struct mr_kt_peer {
	u32 qpn;
	u32 psn;
	union ib_gid gid;
	enum ib_mtu mtu;
};

/* Two-host runs: this kernel holds one end, the peer host the other. */
enum mr_kt_role {
	MR_KT_LOCAL,		/* both devices in this kernel */
	MR_KT_SERVER,		/* B: waits for a client on the control port */
	MR_KT_CLIENT,		/* A: connects to the server, then runs the op */
};

struct mr_kt_run {
	struct mr_kt_end a;
	struct mr_kt_end b;
	/* The ends' CQs say here that a completion came (mr_kt_cq_wait). */
	wait_queue_head_t cq_wait;
	atomic_t cq_events;
	u32 size;		/* message bytes */
	u32 count;		/* messages per op */
	u32 depth;		/* messages outstanding at most */
	bool ipv6;		/* GIDs of global IPv6 addresses, not IPv4 ones */
	unsigned int timeout_ms;	/* per op */
	u32 inline_max;		/* Sends and Writes up to this size go IB_SEND_INLINE */
	bool resize_cq;		/* start with a small CQ and resize it (ib_resize_cq) */
	u64 salt;		/* makes every load's data differ from the last one's */
	u32 round;		/* ops run so far: makes every op's data differ */
	/* Two-host runs only. */
	enum mr_kt_role role;
	const char *dev_name;	/* this host's device (client: a comma-separated list) */
	struct net *net;	/* of the control sockets: the loading process's */
	ktime_t t0;		/* the load: progress lines count from here */
	u32 flows;		/* flows per client device; server: flows to accept */
	const char *tag;	/* "flowN " in a flow's report lines, or "" */
	__be32 peer_ip;		/* client: the server's control address */
	u16 ctl_port;		/* the control TCP port */
	u32 ring;		/* server: message slots (Writes land in slot k % ring) */
	unsigned int duration_ms;	/* client: stop posting after this long (0: count only) */
	unsigned int interval_ms;	/* client: a progress line this often (0: none) */
};

enum mr_kt_kind {
	MR_KT_SEND,		/* data into a receive posted at B */
	MR_KT_WRITE,		/* data into B's memory */
	MR_KT_READ,		/* data from B's memory into A's */
	MR_KT_ATOMIC,		/* 8 bytes at B changed, the old value returned to A */
};

struct mr_kt_op {
	const char *name;
	enum mr_kt_kind kind;
	enum ib_wr_opcode wr_opcode;
	enum ib_wc_opcode wc_opcode;	/* of A's completions */
	bool imm;			/* carries immediate data: B consumes a receive */
};

const struct mr_kt_op *mr_kt_op_find(const char *name);
int mr_kt_op_run(struct mr_kt_run *run, const struct mr_kt_op *op);

void mr_kt_cq_wait(struct mr_kt_run *run, struct mr_kt_end *x, struct mr_kt_end *y,
		   unsigned int max_ms);
int mr_kt_end_open(struct mr_kt_run *run, struct mr_kt_end *end, const char *name);
void mr_kt_end_close(struct mr_kt_run *run, struct mr_kt_end *end);
int mr_kt_connect(struct mr_kt_run *run, char *why);
int mr_kt_qp_create(struct mr_kt_run *run, struct mr_kt_end *end, char *why);
int mr_kt_qp_ready(struct mr_kt_run *run, struct mr_kt_end *me, const struct mr_kt_peer *peer,
		   u32 my_psn, char *why);
void mr_kt_peer_of(const struct mr_kt_end *end, u32 psn, struct mr_kt_peer *peer);
void mr_kt_end_disconnect(struct mr_kt_end *end);

/* The data of message msg of a run: a pattern that differs in every run, round and byte. */
u64 mr_kt_msg_seed(u64 salt, u32 round, u32 msg);
void mr_kt_fill(struct mr_kt_buf *buf, u32 len, u64 seed, u64 flip);
long mr_kt_mismatch(const struct mr_kt_buf *buf, u32 len, u64 seed);
u8 mr_kt_byte(u64 seed, size_t off);

int mr_kt_remote_run(struct mr_kt_run *run, const struct mr_kt_op *op);
void mr_kt_disconnect(struct mr_kt_run *run);

#endif /* MR_KTRAFFIC_H */
