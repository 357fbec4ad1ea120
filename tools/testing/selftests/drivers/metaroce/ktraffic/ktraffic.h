/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the parts of mr_ktraffic share: the two ends of a run and the ops it tests. */
#ifndef MR_KTRAFFIC_H
#define MR_KTRAFFIC_H

#include <rdma/ib_verbs.h>

/* The first failure of an op or of a connection, for its report line. */
#define MR_KT_WHY_LEN	200

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

struct mr_kt_run {
	struct mr_kt_end a;
	struct mr_kt_end b;
	u32 size;		/* message bytes */
	u32 count;		/* messages per op */
	u32 depth;		/* messages outstanding at most */
	bool ipv6;		/* GIDs of global IPv6 addresses, not IPv4 ones */
	unsigned int timeout_ms;	/* per op */
	u64 salt;		/* makes every load's data differ from the last one's */
	u32 round;		/* ops run so far: makes every op's data differ */
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

int mr_kt_end_open(struct mr_kt_run *run, struct mr_kt_end *end, const char *name);
void mr_kt_end_close(struct mr_kt_run *run, struct mr_kt_end *end);
int mr_kt_connect(struct mr_kt_run *run, char *why);
void mr_kt_disconnect(struct mr_kt_run *run);

#endif /* MR_KTRAFFIC_H */
