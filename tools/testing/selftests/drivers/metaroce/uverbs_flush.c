// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Nothing is placed into, or sent from, the buffers of a WQE that was flushed. */

/*
 * usage: uverbs_flush DEV_A DEV_B GID_A GID_B
 * The two devices are joined by a link whose B-to-A direction is delayed
 * (netem, set by the script), so answers from B arrive late at A.
 *  1. A late Read response: A posts an RDMA Read into a canary buffer and
 *     moves its QP to Error at once; the Read completes flushed, and when
 *     B's response arrives later the canary must not change.
 *  2. A Send waiting for a receive (B has none posted: RNR) is flushed by
 *     moving A's QP to Error; A then overwrites the send buffer.  When B
 *     posts a receive, nothing may arrive: a retransmission of the flushed
 *     Send would carry the overwritten bytes.
 *  3. A QP that went through Error and RESET connects again (to a new peer
 *     QP) and moves data, checked byte by byte.
 * Exits 0 when it all holds.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "uverbs_util.h"

#define LEN		65536
#define DEPTH		16

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid;
};

static void side_init(struct side *s, const char *dev, int gid)
{
	s->ctx = open_dev(dev);
	s->gid = gid;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 4 * DEPTH, NULL, NULL, 0) : NULL;
	s->buf = aligned_alloc(4096, LEN);
	if (!s->cq || !s->buf)
		die("pd/cq/buffer");
	s->mr = ibv_reg_mr(s->pd, s->buf, LEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!s->mr)
		die("ibv_reg_mr");
}

static struct ibv_qp *rc_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp)
		die("RC QP");
	return qp;
}

static void to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
}

static void to_state(struct ibv_qp *qp, enum ibv_qp_state st, const char *what)
{
	struct ibv_qp_attr a = { .qp_state = st };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die(what);
}

/* Completions on s->cq until one for wr_id; its status, or -1 after ms of nothing. */
static int wait_status(struct side *s, uint64_t wr_id, int ms)
{
	struct ibv_wc wc;

	while (ms-- > 0) {
		if (ibv_poll_cq(s->cq, 1, &wc) == 1) {
			if (wc.wr_id == wr_id)
				return wc.status;
			ms++;
			continue;
		}
		usleep(1000);
	}
	return -1;
}

static void post_recv(struct ibv_qp *qp, struct side *s, uint64_t wr_id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf, .length = LEN, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sg, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("post_recv");
}

static void post(struct ibv_qp *qp, struct side *s, uint64_t wr_id, enum ibv_wr_opcode op,
		 uint32_t len, struct side *remote)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf, .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (remote) {
		wr.wr.rdma.remote_addr = (uintptr_t)remote->buf;
		wr.wr.rdma.rkey = remote->mr->rkey;
	}
	if (ibv_post_send(qp, &wr, &bad))
		die("post_send");
}

static int all_are(const uint8_t *p, size_t n, uint8_t v)
{
	while (n--)
		if (*p++ != v)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct side a, b;
	struct ibv_qp *qa, *qb, *qb2;
	int st;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV_A DEV_B GID_A GID_B\n", argv[0]);
		return 2;
	}
	side_init(&a, argv[1], atoi(argv[3]));
	side_init(&b, argv[2], atoi(argv[4]));

	/* 1. A Read flushed before its response arrives. */
	qa = rc_qp(&a);
	qb = rc_qp(&b);
	to_init(qa);
	to_init(qb);
	connect_pair(qa, a.gid, qb, b.gid);
	memset(b.buf, 0x11, LEN);
	memset(a.buf, 0xcc, LEN);
	post(qa, &a, 1, IBV_WR_RDMA_READ, LEN, &b);
	to_state(qa, IBV_QPS_ERR, "modify ERR");
	st = wait_status(&a, 1, 5000);
	expect(st == IBV_WC_WR_FLUSH_ERR, "the Read completes flushed");
	usleep(1500 * 1000);	/* the response arrives meanwhile (the link's delay) */
	expect(all_are(a.buf, LEN, 0xcc), "a late Read response was placed into a flushed WQE");

	/* 3. The same QP, reset, connects again and moves data. */
	to_state(qa, IBV_QPS_RESET, "modify RESET");
	to_init(qa);
	qb2 = rc_qp(&b);
	to_init(qb2);
	connect_pair(qa, a.gid, qb2, b.gid);
	memset(b.buf, 0, LEN);
	for (int i = 0; i < LEN; i++)
		a.buf[i] = (uint8_t)(i * 7 + 3);
	post_recv(qb2, &b, 2);
	post(qa, &a, 3, IBV_WR_SEND, LEN, NULL);
	expect(wait_status(&a, 3, 20000) == IBV_WC_SUCCESS, "after RESET: the Send completes");
	expect(wait_status(&b, 2, 20000) == IBV_WC_SUCCESS, "after RESET: the receive completes");
	expect(!memcmp(a.buf, b.buf, LEN), "after RESET: the data arrived intact");
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_qp(qb2);

	/* 2. A Send flushed while it waits for a receive (RNR), its buffer then reused. */
	qa = rc_qp(&a);
	qb = rc_qp(&b);
	to_init(qa);
	to_init(qb);
	connect_pair(qa, a.gid, qb, b.gid);
	memset(a.buf, 'A', LEN);
	memset(b.buf, 0, LEN);
	post(qa, &a, 4, IBV_WR_SEND, 4096, NULL);
	usleep(800 * 1000);	/* sent, refused for want of a receive, retried */
	to_state(qa, IBV_QPS_ERR, "modify ERR");
	expect(wait_status(&a, 4, 5000) == IBV_WC_WR_FLUSH_ERR, "the waiting Send completes flushed");
	memset(a.buf, 'Z', LEN);	/* the consumer reuses (or frees) the buffer */
	post_recv(qb, &b, 5);
	st = wait_status(&b, 5, 2500);
	expect(st != IBV_WC_SUCCESS, "a flushed Send was still delivered after its flush");
	expect(all_are(b.buf, LEN, 0), "bytes of a flushed Send's buffer arrived");
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);

	printf("uverbs_flush: %d failures\n", failures);
	return failures ? 1 : 0;
}
