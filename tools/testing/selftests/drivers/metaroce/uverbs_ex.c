// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The extended Verbs API through our provider: ibv_cq_ex polling
 * (start/next/end_poll and the read_* accessors) and ibv_qp_ex work-request
 * builders (ibv_wr_*), between QPs of DEV_A and DEV_B (one device is fine:
 * loopback).  Every byte moved is checked, every completion field read.
 *
 *   uverbs_ex DEV_A DEV_B GID_INDEX_A GID_INDEX_B
 *
 * Then ibv_resize_cq of a user CQ with completions waiting in it, and
 * ibv_rereg_mr: a new translation, access changed in place, write access
 * refused over read-only memory, a Write refused once remote access is gone.
 *
 * The one UD datagram goes with traffic class 0xb8 (DSCP 46, [MR-ENC-6]) in its
 * AH, which uverbs_ex.sh counts on the wire; nothing else names a class.
 *
 * Exit status 0 when every check held; each failed check prints "FAIL: ...".
 */

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uverbs_util.h"

#define BUF	8192
#define MAX_INLINE	64
/* More than max_cqe (METAROCE_MAX_CQE is 4194303). */
#define METAROCE_MAX_CQE_TRY	(1 << 22)

struct cqe {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t byte_len, imm, qp_num, src_qp;
	unsigned int wc_flags;
};

/*
 * Polls n completions through start/next/end_poll, up to 20000 sleeps of
 * 1 ms (counted, not timed: a TCG guest's clock jumps).  Returns how many.
 */
static int poll_ex(struct ibv_cq_ex *cq, struct cqe *out, int n)
{
	struct ibv_poll_cq_attr attr = {};
	int got = 0, tries = 20000, ret;

	while (got < n && tries--) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT) {
			usleep(1000);
			continue;
		}
		if (ret) {
			expect(0, "ibv_start_poll: 0 or ENOENT");
			return got;
		}
		do {
			struct cqe *c = &out[got++];

			c->wr_id = cq->wr_id;
			c->status = cq->status;
			c->opcode = ibv_wc_read_opcode(cq);
			c->byte_len = ibv_wc_read_byte_len(cq);
			c->wc_flags = ibv_wc_read_wc_flags(cq);
			c->imm = c->wc_flags & IBV_WC_WITH_IMM ?
				 be32toh(ibv_wc_read_imm_data(cq)) : 0;
			c->qp_num = ibv_wc_read_qp_num(cq);
			c->src_qp = ibv_wc_read_src_qp(cq);
			ret = got < n ? ibv_next_poll(cq) : ENOENT;
		} while (!ret);
		ibv_end_poll(cq);
		if (ret != ENOENT)
			expect(0, "ibv_next_poll: 0 or ENOENT");
	}
	return got;
}

/* Nothing more comes within ~200 ms. */
static int cq_quiet(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr attr = {};
	int i;

	for (i = 0; i < 200; i++) {
		if (ibv_start_poll(cq, &attr) != ENOENT) {
			ibv_end_poll(cq);
			return 0;
		}
		usleep(1000);
	}
	return 1;
}

static void check_cqe(const struct cqe *c, uint64_t wr_id, int opcode,
		      uint32_t len, const char *what)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "%s: wr_id %llu status %d opcode %d len %u", what,
		 (unsigned long long)c->wr_id, c->status, c->opcode, c->byte_len);
	expect(c->wr_id == wr_id && c->status == IBV_WC_SUCCESS &&
	       c->opcode == opcode && (len == (uint32_t)-1 || c->byte_len == len), msg);
}

static struct ibv_cq_ex *cq_ex(struct ibv_context *ctx)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = 256, .wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &a);

	if (!cq)
		die("ibv_create_cq_ex with the standard wc_flags");
	return cq;
}

static struct ibv_qp *qp_ex(struct ibv_context *ctx, struct ibv_pd *pd,
			    struct ibv_cq_ex *cq, enum ibv_qp_type type,
			    uint64_t ops, uint32_t *max_send_wr)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq),
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 1, .max_inline_data = MAX_INLINE },
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);

	if (!qp)
		die("ibv_create_qp_ex");
	if (max_send_wr)
		*max_send_wr = a.cap.max_send_wr;
	expect(a.cap.max_inline_data >= MAX_INLINE, "max_inline_data granted");
	return qp;
}

/* The requests the provider cannot honour fail with EOPNOTSUPP, nothing is made. */
static void refusals(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq_ex *cq)
{
	static const struct { uint64_t wc_flags; uint32_t flags; const char *what; } cqs[] = {
		{ IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, 0, "completion timestamps" },
		{ IBV_WC_EX_WITH_FLOW_TAG, 0, "flow tags" },
		{ 0, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, "ignore overrun" },
	};
	static const struct { enum ibv_qp_type type; uint64_t ops; const char *what; } qps[] = {
		{ IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW, "UD bind MW" },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO, "RC TSO" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, "UD RDMA Write" },
	};
	char msg[128];
	size_t i;

	for (i = 0; i < sizeof(cqs) / sizeof(cqs[0]); i++) {
		struct ibv_cq_init_attr_ex a = {
			.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS | cqs[i].wc_flags,
			.comp_mask = cqs[i].flags ? IBV_CQ_INIT_ATTR_MASK_FLAGS : 0,
			.flags = cqs[i].flags,
		};
		struct ibv_cq_ex *c;

		errno = 0;
		c = ibv_create_cq_ex(ctx, &a);
		snprintf(msg, sizeof(msg), "CQ with %s: EOPNOTSUPP (errno %d)",
			 cqs[i].what, errno);
		expect(!c && errno == EOPNOTSUPP, msg);
		if (c)
			ibv_destroy_cq(ibv_cq_ex_to_cq(c));
	}
	for (i = 0; i < sizeof(qps) / sizeof(qps[0]); i++) {
		struct ibv_qp_init_attr_ex a = {
			.send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq),
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
			.qp_type = qps[i].type,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND | qps[i].ops,
		};
		struct ibv_qp *q;

		errno = 0;
		q = ibv_create_qp_ex(ctx, &a);
		snprintf(msg, sizeof(msg), "QP with %s: EOPNOTSUPP (errno %d)",
			 qps[i].what, errno);
		expect(!q && errno == EOPNOTSUPP, msg);
		if (q)
			ibv_destroy_qp(q);
	}
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, size_t off, uint32_t len,
		      uint64_t wr_id)
{
	struct ibv_sge s = { .addr = (uintptr_t)mr->addr + off, .length = len,
			     .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("post_recv");
}

/* One signaled Write or Read from qp; returns its completion's status. */
static int rdma_op(struct ibv_qp *qp, struct ibv_cq_ex *cq, enum ibv_wr_opcode op,
		   struct ibv_mr *lmr, void *laddr, uint32_t len, uint32_t rkey, void *raddr)
{
	struct ibv_sge s = { .addr = (uintptr_t)laddr, .length = len, .lkey = lmr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 900, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)raddr, .rkey = rkey },
	}, *bad;
	struct cqe c;

	if (ibv_post_send(qp, &wr, &bad))
		die("post_send");
	if (poll_ex(cq, &c, 1) != 1)
		return -1;
	return c.status;
}

/* ibv_rereg_mr on DEV_B's side, driven by Writes and Reads from qa. */
static void rereg_checks(struct ibv_pd *pb, struct ibv_qp *qa, struct ibv_cq_ex *cq,
			 struct ibv_mr *lmr, uint8_t *lbuf)
{
	uint8_t *r1, *r2, *ro;
	struct ibv_mr *m, *mro;
	uint32_t rkey0;
	int st;

	if (posix_memalign((void **)&r1, 4096, 4096) || posix_memalign((void **)&r2, 4096, 4096))
		die("memory");
	memset(r1, 0, 4096);
	memset(r2, 0, 4096);
	m = ibv_reg_mr(pb, r1, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!m)
		die("reg_mr for rereg");
	rkey0 = m->rkey;

	/* A new translation: the MR now covers r2 (new keys), r1 is left alone. */
	expect(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r2, 4096, 0) == 0,
	       "ibv_rereg_mr to another buffer: 0");
	expect(m->addr == r2 && m->length == 4096, "rereg: the MR's address and length follow");
	fill(lbuf, 512, 7);
	st = rdma_op(qa, cq, IBV_WR_RDMA_WRITE, lmr, lbuf, 512, m->rkey, r2);
	expect(st == IBV_WC_SUCCESS, "Write through the re-registered MR");
	expect(!memcmp(r2, lbuf, 512), "  ...landed in the new buffer");
	expect(r1[0] == 0 && !memcmp(r1, r1 + 1, 511), "  ...and not in the old one");
	/* The old MR is gone with its keys (a dead key's Write: as after dereg_mr). */
	expect(m->rkey != rkey0, "  ...under new keys");

	/* Other access in place: remote Read instead of remote Write. */
	expect(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) == 0,
	       "ibv_rereg_mr to remote Read: 0");
	memset(lbuf + 1024, 0, 512);
	st = rdma_op(qa, cq, IBV_WR_RDMA_READ, lmr, lbuf + 1024, 512, m->rkey, r2);
	expect(st == IBV_WC_SUCCESS && !memcmp(lbuf + 1024, r2, 512),
	       "Read through the MR made readable");

	/* Write access over read-only memory is refused, as reg_mr refuses it. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		die("mmap");
	mro = ibv_reg_mr(pb, ro, 4096, IBV_ACCESS_REMOTE_READ);
	if (!mro)
		die("reg_mr over read-only memory");
	expect(ibv_rereg_mr(mro, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) != 0,
	       "ibv_rereg_mr adding write access over read-only memory: refused");
	ibv_dereg_mr(mro);
	munmap(ro, 4096);

	/* The Read-only MR refuses a Write: remote access error (qa is done then). */
	st = rdma_op(qa, cq, IBV_WR_RDMA_WRITE, lmr, lbuf, 8, m->rkey, r2);
	expect(st == IBV_WC_REM_ACCESS_ERR, "Write into the MR without remote Write: REM_ACCESS_ERR");
	ibv_dereg_mr(m);
	free(r1);
	free(r2);
}

static void rc_init(struct ibv_qp *qp);

/* Posts n signaled 64-byte Writes from lbuf to rbuf, wr_ids first..first+n-1. */
static void post_writes(struct ibv_qp *qp, struct ibv_mr *lmr, uint8_t *lbuf,
			struct ibv_mr *rmr, uint8_t *rbuf, int first, int n)
{
	int i;

	for (i = first; i < first + n; i++) {
		struct ibv_sge s = { (uintptr_t)lbuf + i * 64, 64, lmr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)rbuf + i * 64, .rkey = rmr->rkey },
		}, *bad;

		if (ibv_post_send(qp, &wr, &bad))
			die("post_send");
	}
}

/* n completions in wr_id order from first, all successful. */
static void poll_writes(struct ibv_cq *cq, int first, int n, const char *what)
{
	struct ibv_wc wc[64];
	int got, i, bad = 0;

	got = poll_n(cq, wc, n);
	for (i = 0; i < got; i++)
		bad += wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)(first + i);
	expect(got == n && !bad, what);
}

/*
 * ibv_resize_cq of a 15-entry user CQ while Writes' completions wait in it:
 * they survive in order, and 40 more fit after.  Then it shrinks again.
 */
static void resize_checks(struct ibv_context *ca, struct ibv_pd *pa, struct ibv_context *cb,
			  struct ibv_pd *pb, int ga, int gb)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_cq *cq, *cqd;
	struct ibv_qp *qc, *qd;
	struct ibv_mr *lmr, *rmr;
	uint8_t *lbuf, *rbuf;

	if (posix_memalign((void **)&lbuf, 4096, BUF) || posix_memalign((void **)&rbuf, 4096, BUF))
		die("memory");
	fill(lbuf, BUF, 9);
	memset(rbuf, 0, BUF);
	lmr = ibv_reg_mr(pa, lbuf, BUF, access);
	rmr = ibv_reg_mr(pb, rbuf, BUF, access);
	cq = ibv_create_cq(ca, 15, NULL, NULL, 0);
	cqd = ibv_create_cq(cb, 15, NULL, NULL, 0);
	if (!lmr || !rmr || !cq || !cqd)
		die("resize: MRs and CQs");
	qa.send_cq = qa.recv_cq = cq;
	qc = ibv_create_qp(pa, &qa);
	qa.send_cq = qa.recv_cq = cqd;
	qd = ibv_create_qp(pb, &qa);
	if (!qc || !qd)
		die("resize: QPs");
	rc_init(qc);
	rc_init(qd);
	connect_pair(qc, ga, qd, gb);

	expect(cq->cqe == 15, "a CQ of 15 entries");
	post_writes(qc, lmr, lbuf, rmr, rbuf, 0, 12);
	/* Let their completions arrive, unpolled: the resize must keep them. */
	usleep(1000000);
	expect(ibv_resize_cq(cq, METAROCE_MAX_CQE_TRY) != 0, "resize beyond max_cqe: refused");
	expect(ibv_resize_cq(cq, 63) == 0, "ibv_resize_cq to 63 with completions waiting: 0");
	expect(cq->cqe >= 63, "  ...the CQ reports at least 63 entries");
	post_writes(qc, lmr, lbuf, rmr, rbuf, 12, 40);
	poll_writes(cq, 0, 52, "52 completions, in order, through the resized CQ");
	expect(!memcmp(rbuf, lbuf, 52 * 64), "the 52 Writes' data");
	expect(ibv_resize_cq(cq, 4) == 0, "ibv_resize_cq down to 4 once polled: 0");
	post_writes(qc, lmr, lbuf, rmr, rbuf, 52, 3);
	poll_writes(cq, 52, 3, "three completions through the shrunk CQ");

	ibv_destroy_qp(qc);
	ibv_destroy_qp(qd);
	ibv_destroy_cq(cq);
	ibv_destroy_cq(cqd);
	ibv_dereg_mr(lmr);
	ibv_dereg_mr(rmr);
	free(lbuf);
	free(rbuf);
}

/* UD QP to RTS (Q_Key 0x11111111). */
static void ud_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = 0x11111111 };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		die("UD INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD RTS");
}

static void rc_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("RC INIT");
}

int main(int argc, char **argv)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	const uint64_t rc_ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	uint8_t *a_src, *a_dst, *b_buf, *b_rcv, inl[MAX_INLINE + 1], inl2[30];
	static uint8_t ref[BUF], big[MAX_INLINE * 64];
	struct ibv_context *ca, *cb;
	struct ibv_pd *pa, *pb;
	struct ibv_mr *ma_src, *ma_dst, *mb_buf, *mb_rcv;
	struct ibv_cq_ex *qa_cq, *qb_cq;
	struct ibv_qp *qa, *qb, *plain, *ua, *ub;
	struct ibv_qp_ex *x;
	struct ibv_sge sl[2];
	struct ibv_data_buf db[2];
	struct cqe c[16];
	struct ibv_wc wc;
	uint64_t v;
	uint32_t max_wr;
	int ga, gb, i, ret;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV_A DEV_B GID_INDEX_A GID_INDEX_B\n", argv[0]);
		return 2;
	}
	ga = atoi(argv[3]);
	gb = atoi(argv[4]);
	ca = open_dev(argv[1]);
	cb = open_dev(argv[2]);
	pa = ibv_alloc_pd(ca);
	pb = ibv_alloc_pd(cb);
	if (!pa || !pb)
		die("alloc_pd");
	if (posix_memalign((void **)&a_src, 4096, BUF) || posix_memalign((void **)&a_dst, 4096, BUF) ||
	    posix_memalign((void **)&b_buf, 4096, BUF) || posix_memalign((void **)&b_rcv, 4096, BUF))
		die("memory");
	fill(a_src, BUF, 1);
	memset(a_dst, 0, BUF);
	fill(b_buf, BUF, 2);
	memset(b_rcv, 0, BUF);
	v = 0x1111222233334444ULL;
	memcpy(b_buf + 4000, &v, 8);
	v = 1000;
	memcpy(b_buf + 4008, &v, 8);
	ma_src = ibv_reg_mr(pa, a_src, BUF, access);
	ma_dst = ibv_reg_mr(pa, a_dst, BUF, access);
	mb_buf = ibv_reg_mr(pb, b_buf, BUF, access);
	mb_rcv = ibv_reg_mr(pb, b_rcv, BUF, access);
	if (!ma_src || !ma_dst || !mb_buf || !mb_rcv)
		die("reg_mr");

	qa_cq = cq_ex(ca);
	qb_cq = cq_ex(cb);
	expect(ibv_start_poll(qa_cq, &(struct ibv_poll_cq_attr){}) == ENOENT,
	       "start_poll on an empty CQ: ENOENT");
	refusals(ca, pa, qa_cq);

	/* A QP made the old way has no builders. */
	plain = ibv_create_qp(pa, &(struct ibv_qp_init_attr){
		.send_cq = ibv_cq_ex_to_cq(qa_cq), .recv_cq = ibv_cq_ex_to_cq(qa_cq),
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 }, .qp_type = IBV_QPT_RC });
	if (!plain)
		die("ibv_create_qp");
	expect(!ibv_qp_to_qp_ex(plain), "ibv_qp_to_qp_ex of an ibv_create_qp QP: NULL");
	ibv_destroy_qp(plain);

	qa = qp_ex(ca, pa, qa_cq, IBV_QPT_RC, rc_ops, &max_wr);
	qb = qp_ex(cb, pb, qb_cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND, NULL);
	x = ibv_qp_to_qp_ex(qa);
	if (!x)
		die("ibv_qp_to_qp_ex");
	rc_init(qa);
	rc_init(qb);
	connect_pair(qa, ga, qb, gb);

	/* 1. Every RC operation in one batch, with every way to give data. */
	post_recv(qb, mb_rcv, 0, 2048, 101);	/* the Write with immediate */
	post_recv(qb, mb_rcv, 2048, 2048, 102);	/* Send, inline */
	post_recv(qb, mb_rcv, 4096, 2048, 103);	/* Send with immediate, inline list */
	fill(inl, sizeof(inl), 3);
	fill(inl2, sizeof(inl2), 4);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, mb_buf->rkey, (uintptr_t)b_buf);
	ibv_wr_set_sge(x, ma_src->lkey, (uintptr_t)a_src, 1000);
	x->wr_id = 2;
	ibv_wr_rdma_write_imm(x, mb_buf->rkey, (uintptr_t)b_buf + 1024, htobe32(0x1234));
	sl[0] = (struct ibv_sge){ (uintptr_t)a_src + 1000, 24, ma_src->lkey };
	sl[1] = (struct ibv_sge){ (uintptr_t)a_src + 2000, 1000, ma_src->lkey };
	ibv_wr_set_sge_list(x, 2, sl);
	x->wr_id = 3;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, inl, MAX_INLINE);
	x->wr_id = 4;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send_imm(x, htobe32(0xabcd));
	db[0] = (struct ibv_data_buf){ inl2, 10 };
	db[1] = (struct ibv_data_buf){ inl2 + 10, 20 };
	ibv_wr_set_inline_data_list(x, 2, db);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, mb_buf->rkey, (uintptr_t)b_buf + 3000);
	ibv_wr_set_sge(x, ma_dst->lkey, (uintptr_t)a_dst, 900);
	x->wr_id = 6;
	ibv_wr_atomic_cmp_swp(x, mb_buf->rkey, (uintptr_t)b_buf + 4000,
			      0x1111222233334444ULL, 0x5555666677778888ULL);
	ibv_wr_set_sge(x, ma_dst->lkey, (uintptr_t)a_dst + 1024, 8);
	x->wr_id = 7;
	ibv_wr_atomic_fetch_add(x, mb_buf->rkey, (uintptr_t)b_buf + 4008, 5);
	ibv_wr_set_sge(x, ma_dst->lkey, (uintptr_t)a_dst + 1032, 8);
	ret = ibv_wr_complete(x);
	expect(ret == 0, "ibv_wr_complete of seven RC WQEs: 0");

	expect(poll_ex(qa_cq, c, 7) == 7, "seven send completions");
	check_cqe(&c[0], 1, IBV_WC_RDMA_WRITE, (uint32_t)-1, "Write");
	check_cqe(&c[1], 2, IBV_WC_RDMA_WRITE, (uint32_t)-1, "Write with immediate");
	check_cqe(&c[2], 3, IBV_WC_SEND, (uint32_t)-1, "Send inline");
	check_cqe(&c[3], 4, IBV_WC_SEND, (uint32_t)-1, "Send with immediate inline");
	check_cqe(&c[4], 5, IBV_WC_RDMA_READ, 900, "Read");
	check_cqe(&c[5], 6, IBV_WC_COMP_SWAP, 8, "compare and swap");
	check_cqe(&c[6], 7, IBV_WC_FETCH_ADD, 8, "fetch and add");
	for (i = 0; i < 7; i++)
		expect(c[i].qp_num == qa->qp_num, "send completion: qp_num");

	expect(poll_ex(qb_cq, c, 3) == 3, "three receive completions");
	check_cqe(&c[0], 101, IBV_WC_RECV_RDMA_WITH_IMM, 1024, "receive: Write with immediate");
	expect(c[0].wc_flags & IBV_WC_WITH_IMM && c[0].imm == 0x1234,
	       "receive: Write's immediate 0x1234, IBV_WC_WITH_IMM");
	check_cqe(&c[1], 102, IBV_WC_RECV, MAX_INLINE, "receive: inline Send");
	expect(!(c[1].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)), "receive: no flags on a Send");
	check_cqe(&c[2], 103, IBV_WC_RECV, 30, "receive: inline Send with immediate");
	expect(c[2].wc_flags & IBV_WC_WITH_IMM && c[2].imm == 0xabcd,
	       "receive: Send's immediate 0xabcd");
	for (i = 0; i < 3; i++)
		expect(c[i].qp_num == qb->qp_num && c[i].src_qp == qa->qp_num,
		       "receive completion: qp_num and src_qp");

	expect(!memcmp(b_buf, a_src, 1000), "Write: data");
	expect(!memcmp(b_buf + 1024, a_src + 1000, 24) &&
	       !memcmp(b_buf + 1048, a_src + 2000, 1000), "Write with immediate: two SGEs' data");
	expect(!memcmp(b_rcv + 2048, inl, MAX_INLINE), "inline Send: data");
	expect(!memcmp(b_rcv + 4096, inl2, 30), "inline list Send: data");
	/* b_buf's bytes from 3000 on were never written: seed 2's pattern. */
	fill(ref, BUF, 2);
	expect(!memcmp(a_dst, ref + 3000, 900), "Read: data");
	memcpy(&v, a_dst + 1024, 8);
	expect(v == 0x1111222233334444ULL, "compare and swap returned the old value");
	memcpy(&v, b_buf + 4000, 8);
	expect(v == 0x5555666677778888ULL, "compare and swap swapped");
	memcpy(&v, a_dst + 1032, 8);
	expect(v == 1000, "fetch and add returned the old value");
	memcpy(&v, b_buf + 4008, 8);
	expect(v == 1005, "fetch and add added");

	/* 2. wr_abort posts nothing; the next batch goes out from the same slots. */
	post_recv(qb, mb_rcv, 0, 2048, 201);
	ibv_wr_start(x);
	x->wr_id = 10;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, ma_src->lkey, (uintptr_t)a_src, 100);
	x->wr_id = 11;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, ma_src->lkey, (uintptr_t)a_src, 100);
	ibv_wr_abort(x);
	fill(inl, sizeof(inl), 5);
	ibv_wr_start(x);
	x->wr_id = 12;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, inl, 40);
	expect(ibv_wr_complete(x) == 0, "the batch after an abort: 0");
	expect(poll_ex(qa_cq, c, 1) == 1, "one send completion after the abort");
	check_cqe(&c[0], 12, IBV_WC_SEND, (uint32_t)-1, "after the abort: only the new Send");
	expect(poll_ex(qb_cq, c, 1) == 1, "one receive after the abort");
	check_cqe(&c[0], 201, IBV_WC_RECV, 40, "after the abort: the new Send's data");
	expect(!memcmp(b_rcv, inl, 40), "after the abort: data");

	/* 3. A batch with a bad WQE posts none: more than max_send_wr, then too much inline. */
	ibv_wr_start(x);
	for (i = 0; i <= (int)max_wr; i++) {
		x->wr_id = 300 + i;
		ibv_wr_rdma_write(x, mb_buf->rkey, (uintptr_t)b_buf);
		ibv_wr_set_sge(x, ma_src->lkey, (uintptr_t)a_src, 8);
	}
	ret = ibv_wr_complete(x);
	expect(ret == ENOMEM, "max_send_wr + 1 WQEs in one batch: ENOMEM");
	ibv_wr_start(x);
	x->wr_id = 400;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, inl, 40);
	x->wr_id = 401;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, sizeof(big));
	ret = ibv_wr_complete(x);
	expect(ret == EINVAL, "inline data beyond max_inline_data: EINVAL");
	expect(cq_quiet(qa_cq), "failed batches: no send completion");
	expect(cq_quiet(qb_cq), "failed batches: nothing received");

	/* An ex CQ polls with ibv_poll_cq as well. */
	post_recv(qb, mb_rcv, 0, 2048, 501);
	ibv_wr_start(x);
	x->wr_id = 500;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, ma_src->lkey, (uintptr_t)a_src + 500, 256);
	expect(ibv_wr_complete(x) == 0, "a Send after the failed batches: 0");
	expect(poll_n(ibv_cq_ex_to_cq(qb_cq), &wc, 1) == 1 && wc.status == IBV_WC_SUCCESS &&
	       wc.wr_id == 501 && wc.byte_len == 256 && !memcmp(b_rcv, a_src + 500, 256),
	       "ibv_poll_cq on an ex CQ: the Send arrived");
	expect(poll_n(ibv_cq_ex_to_cq(qa_cq), &wc, 1) == 1 && wc.wr_id == 500 &&
	       wc.status == IBV_WC_SUCCESS, "ibv_poll_cq on an ex CQ: its completion");

	/* 4. UD: ibv_wr_send + ibv_wr_set_ud_addr to DEV_B's GID. */
	ua = qp_ex(ca, pa, qa_cq, IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
		   NULL);
	ub = qp_ex(cb, pb, qb_cq, IBV_QPT_UD, IBV_QP_EX_WITH_SEND, NULL);
	ud_up(ua);
	ud_up(ub);
	{
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .hop_limit = 64, .sgid_index = ga,
						   .traffic_class = 0xb8 } };
		struct ibv_ah *ah;

		if (ibv_query_gid(cb, 1, gb, &aa.grh.dgid))
			die("query gid");
		ah = ibv_create_ah(pa, &aa);
		if (!ah)
			die("create_ah");
		post_recv(ub, mb_rcv, 0, 40 + 512, 601);
		x = ibv_qp_to_qp_ex(ua);
		ibv_wr_start(x);
		x->wr_id = 600;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_imm(x, htobe32(0x600d));
		ibv_wr_set_ud_addr(x, ah, ub->qp_num, 0x11111111);
		ibv_wr_set_sge(x, ma_src->lkey, (uintptr_t)a_src + 64, 512);
		expect(ibv_wr_complete(x) == 0, "UD Send with immediate: 0");
		expect(poll_ex(qa_cq, c, 1) == 1, "UD: send completion");
		check_cqe(&c[0], 600, IBV_WC_SEND, (uint32_t)-1, "UD Send");
		expect(poll_ex(qb_cq, c, 1) == 1, "UD: receive completion");
		check_cqe(&c[0], 601, IBV_WC_RECV, 40 + 512, "UD receive");
		expect(c[0].wc_flags & IBV_WC_GRH && c[0].wc_flags & IBV_WC_WITH_IMM &&
		       c[0].imm == 0x600d, "UD receive: GRH and immediate");
		expect(c[0].src_qp == ua->qp_num && c[0].qp_num == ub->qp_num,
		       "UD receive: src_qp and qp_num");
		expect(!memcmp(b_rcv + 40, a_src + 64, 512), "UD: data");
		ibv_destroy_ah(ah);
	}

	resize_checks(ca, pa, cb, pb, ga, gb);
	rereg_checks(pb, qa, qa_cq, ma_src, a_src);

	ibv_destroy_qp(ua);
	ibv_destroy_qp(ub);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(ibv_cq_ex_to_cq(qa_cq));
	ibv_destroy_cq(ibv_cq_ex_to_cq(qb_cq));
	ibv_dereg_mr(ma_src);
	ibv_dereg_mr(ma_dst);
	ibv_dereg_mr(mb_buf);
	ibv_dereg_mr(mb_rcv);
	ibv_dealloc_pd(pa);
	ibv_dealloc_pd(pb);
	ibv_close_device(ca);
	ibv_close_device(cb);
	free(a_src);
	free(a_dst);
	free(b_buf);
	free(b_rcv);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("uverbs_ex: every check held\n");
	return 0;
}
