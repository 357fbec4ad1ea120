// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A user SRQ shared by two QPs: data, a bad WQE, the full ring, the limit event. */

/*
 * usage: uverbs_srq DEV_A DEV_B GID_A GID_B
 * Opens two MetaRoCE devices (linked over a veth pair) and connects two RC
 * QP pairs; B's two QPs take their receives from one SRQ of DEPTH WQEs.
 * The first WQE posted names an lkey that does not exist: it must complete
 * with a protection error on the CQ of the QP that took it, and the message
 * must land in the next WQE.  A post beyond DEPTH must fail with ENOMEM,
 * post_recv on a QP of the SRQ with EINVAL.  With the limit armed at
 * DEPTH / 2, HALF + 1 messages (half on each QP, every byte checked) leave
 * fewer than the limit: IBV_EVENT_SRQ_LIMIT_REACHED must come once, after
 * which query_srq says the limit is disarmed (0).  The SRQ is then refilled
 * and used again until it is empty; Sends that find it empty (RNR) complete
 * once receives are posted.  Last, resizing (IBV_SRQ_MAX_WR): WQEs still
 * on the ring, and WQEs the kernel already took from it, survive growing
 * the SRQ and every one of them receives its message; the new max_wr holds
 * (ENOMEM beyond it); shrinking below the WQEs waiting fails with EINVAL and
 * changes nothing.  Exits 0 when it all holds.
 */

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "uverbs_util.h"

#define DEPTH	16
#define MSG	1000
#define SLOT	1024

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
	s->buf = aligned_alloc(4096, 4 * DEPTH * SLOT);
	if (!s->pd || !s->buf)
		die("pd/buffer");
	memset(s->buf, 0, 4 * DEPTH * SLOT);
	s->mr = ibv_reg_mr(s->pd, s->buf, 4 * DEPTH * SLOT, IBV_ACCESS_LOCAL_WRITE);
	s->cq = ibv_create_cq(s->ctx, 4 * DEPTH, NULL, NULL, 0);
	if (!s->mr || !s->cq)
		die("ibv_reg_mr/ibv_create_cq");
}

static struct ibv_qp *make_qp(struct side *s, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = srq ? 0 : DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	return qp;
}

static uint8_t pattern(uint32_t msg, uint32_t i)
{
	return (uint8_t)(msg * 31 + i * 7 + 1);
}

/* Receive WQE wr_id into slot wr_id of b's buffer. */
static int post_srq(struct ibv_srq *srq, struct side *b, uint64_t wr_id, uint32_t lkey)
{
	struct ibv_sge sg = { (uintptr_t)b->buf + wr_id % (4 * DEPTH) * SLOT, SLOT, lkey };
	struct ibv_recv_wr w = { .wr_id = wr_id, .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &w, &bad);
}

/* Message number msg from a's slot msg: its number in the first 4 bytes. */
static void send_msg(struct side *a, struct ibv_qp *qp, uint32_t msg)
{
	uint8_t *p = a->buf + msg % (4 * DEPTH) * SLOT;
	struct ibv_sge sg = { (uintptr_t)p, MSG, a->mr->lkey };
	struct ibv_send_wr w = { .wr_id = msg, .sg_list = &sg, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	uint32_t i;

	for (i = 0; i < MSG; i++)
		p[i] = pattern(msg, i);
	memcpy(p, &msg, sizeof(msg));
	expect(!ibv_post_send(qp, &w, &bad), "post_send");
}

/*
 * n receives on b's CQ: the successful ones must hold intact messages of
 * [first, first + n) each once; returns how many failed with want_err.
 */
static int check_receives(struct side *b, int n, uint32_t first, enum ibv_wc_status want_err,
			  int nerr)
{
	struct ibv_wc wc[4 * DEPTH];
	uint8_t seen[4 * DEPTH] = {};
	uint32_t msg, i;
	int got, k, errs = 0, ok;
	uint8_t *p;

	got = poll_n(b->cq, wc, n + nerr);
	expect(got == n + nerr, "every receive completes");
	for (k = 0; k < got; k++) {
		if (wc[k].status != IBV_WC_SUCCESS) {
			expect(wc[k].status == want_err, "a bad WQE fails with the expected status");
			printf("srq: wr_id %llu: %s\n", (unsigned long long)wc[k].wr_id,
			       ibv_wc_status_str(wc[k].status));
			errs++;
			continue;
		}
		expect(wc[k].opcode == IBV_WC_RECV && wc[k].byte_len == MSG,
		       "a receive of MSG bytes");
		p = b->buf + wc[k].wr_id % (4 * DEPTH) * SLOT;
		memcpy(&msg, p, sizeof(msg));
		ok = msg - first < (uint32_t)n && !seen[msg - first];
		for (i = sizeof(msg); ok && i < MSG; i++)
			ok = p[i] == pattern(msg, i);
		expect(ok, "a message arrives intact, once");
		if (ok)
			seen[msg - first] = 1;
	}
	return errs;
}

/* n messages numbered from first, sent in rounds the send queues and CQs hold. */
static void send_n(struct side *a, struct ibv_qp *q1, struct ibv_qp *q2, uint32_t first,
		   uint32_t n)
{
	struct ibv_wc wc[DEPTH];
	uint32_t i, k, batch;

	for (i = 0; i < n; i += batch) {
		batch = n - i < DEPTH ? n - i : DEPTH;
		for (k = 0; k < batch; k++)
			send_msg(a, k % 2 ? q2 : q1, first + i + k);
		expect(poll_n(a->cq, wc, batch) == (int)batch, "a round of sends completes");
		for (k = 0; k < batch; k++)
			expect(wc[k].status == IBV_WC_SUCCESS, "a send succeeds");
	}
}

static int srq_resize(struct ibv_srq *srq, uint32_t max_wr)
{
	struct ibv_srq_attr sa = { .max_wr = max_wr };

	return ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR);
}

static void resize(struct side *a, struct side *b, struct ibv_srq *srq, struct ibv_qp *q1,
		   struct ibv_qp *q2)
{
	struct ibv_srq_attr sa;
	uint32_t i;

	/* 12 WQEs on the ring, none taken yet: grow to 3 * DEPTH, fill it. */
	for (i = 0; i < DEPTH - 4; i++)
		expect(!post_srq(srq, b, 300 + i, b->mr->lkey), "post before growing");
	expect(!srq_resize(srq, 3 * DEPTH), "resize the SRQ to 3 * DEPTH");
	expect(!ibv_query_srq(srq, &sa) && sa.max_wr == 3 * DEPTH, "query_srq: the new max_wr");
	for (i = DEPTH - 4; i < 3 * DEPTH; i++)
		expect(!post_srq(srq, b, 300 + i, b->mr->lkey), "post into the grown SRQ");
	expect(post_srq(srq, b, 400, b->mr->lkey) == ENOMEM, "post beyond the new max_wr: ENOMEM");
	send_n(a, q1, q2, 300, 3 * DEPTH);
	expect(check_receives(b, 3 * DEPTH, 300, IBV_WC_SUCCESS, 0) == 0,
	       "3 * DEPTH messages land in the WQEs posted before and after growing");

	/* 10 WQEs, 9 of them taken by the kernel when a message came: shrink. */
	for (i = 0; i < 10; i++)
		expect(!post_srq(srq, b, 500 + i, b->mr->lkey), "post before shrinking");
	send_n(a, q1, q2, 500, 1);
	expect(check_receives(b, 1, 500, IBV_WC_SUCCESS, 0) == 0, "one message arrives");
	expect(srq_resize(srq, 8) == EINVAL, "shrinking below the 9 waiting WQEs: EINVAL");
	expect(!ibv_query_srq(srq, &sa) && sa.max_wr == 3 * DEPTH, "and the SRQ is unchanged");
	expect(!srq_resize(srq, DEPTH), "shrink to DEPTH with 9 waiting");
	expect(!ibv_query_srq(srq, &sa) && sa.max_wr == DEPTH, "query_srq: DEPTH");
	for (i = 10; i < DEPTH + 1; i++)
		expect(!post_srq(srq, b, 500 + i, b->mr->lkey), "post up to the new max_wr");
	expect(post_srq(srq, b, 600, b->mr->lkey) == ENOMEM, "one more: ENOMEM");
	send_n(a, q1, q2, 501, DEPTH);
	expect(check_receives(b, DEPTH, 501, IBV_WC_SUCCESS, 0) == 0,
	       "the WQEs taken before the shrink, and after it, receive");
}

/* The limit event, within 30 s. */
static int wait_limit_event(struct ibv_context *ctx, struct ibv_srq *srq)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int r = 0;

	if (poll(&pfd, 1, 30000) != 1)
		return 0;
	if (ibv_get_async_event(ctx, &ev))
		return 0;
	r = ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq;
	printf("srq: async event %s\n", ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	return r;
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = DEPTH, .max_sge = 1 } };
	struct ibv_srq_attr sa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp_attr qa;
	struct side a, b;
	struct ibv_qp *qa1, *qa2, *qb1, *qb2;
	struct ibv_srq *srq;
	struct ibv_sge sg;
	struct ibv_recv_wr rw, *brw;
	struct ibv_wc wc[4 * DEPTH];
	struct pollfd pfd;
	uint32_t i;
	int n;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV_A DEV_B GID_A GID_B\n", argv[0]);
		return 2;
	}
	side_init(&a, argv[1], atoi(argv[3]));
	side_init(&b, argv[2], atoi(argv[4]));
	srq = ibv_create_srq(b.pd, &sia);
	if (!srq)
		die("ibv_create_srq");
	expect(!ibv_query_srq(srq, &sa) && sa.max_wr >= DEPTH && sa.srq_limit == 0,
	       "query_srq: max_wr as asked, no limit armed");
	qa1 = make_qp(&a, NULL);
	qa2 = make_qp(&a, NULL);
	qb1 = make_qp(&b, srq);
	qb2 = make_qp(&b, srq);
	connect_pair(qa1, a.gid, qb1, b.gid);
	connect_pair(qa2, a.gid, qb2, b.gid);
	expect(!ibv_query_qp(qb1, &qa, IBV_QP_CAP, &qia) && qia.srq == srq,
	       "query_qp names the SRQ");

	sg = (struct ibv_sge){ (uintptr_t)b.buf, SLOT, b.mr->lkey };
	rw = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &sg, .num_sge = 1 };
	expect(ibv_post_recv(qb1, &rw, &brw) == EINVAL, "post_recv on a QP of an SRQ: EINVAL");

	/* A WQE with a made-up lkey first, then DEPTH - 1 good ones: full. */
	expect(!post_srq(srq, &b, 4 * DEPTH - 1, b.mr->lkey ^ 0x5a5a00), "post a bad WQE");
	for (i = 0; i < DEPTH - 1; i++)
		expect(!post_srq(srq, &b, i, b.mr->lkey), "post_srq_recv");
	expect(post_srq(srq, &b, DEPTH, b.mr->lkey) == ENOMEM, "post beyond max_wr: ENOMEM");

	sa.srq_limit = DEPTH / 2;
	expect(!ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), "arm the limit");
	expect(!ibv_query_srq(srq, &sa) && sa.srq_limit == DEPTH / 2, "query_srq: limit armed");

	/* DEPTH / 2 messages leave DEPTH / 2 - 1 WQEs: below the limit. */
	for (i = 0; i < DEPTH / 2; i++)
		send_msg(&a, i % 2 ? qa2 : qa1, i);
	expect(poll_n(a.cq, wc, DEPTH / 2) == DEPTH / 2, "the sends complete");
	for (i = 0; i < DEPTH / 2; i++)
		expect(wc[i].status == IBV_WC_SUCCESS, "a send succeeds");
	expect(check_receives(&b, DEPTH / 2, 0, IBV_WC_LOC_PROT_ERR, 1) == 1,
	       "the bad WQE failed with a protection error, the messages arrived");
	expect(wait_limit_event(b.ctx, srq), "IBV_EVENT_SRQ_LIMIT_REACHED");
	expect(!ibv_query_srq(srq, &sa) && sa.srq_limit == 0, "query_srq: limit disarmed");

	/* Refill: the slots the QPs took are free again; then two rounds more. */
	for (i = 0; i < DEPTH / 2 + 1; i++)
		expect(!post_srq(srq, &b, DEPTH + i, b.mr->lkey), "refill the SRQ");
	for (i = 0; i < DEPTH; i++)
		send_msg(&a, i % 2 ? qa2 : qa1, 100 + i);
	expect(poll_n(a.cq, wc, DEPTH) == DEPTH, "the sends of the second round complete");
	expect(check_receives(&b, DEPTH, 100, IBV_WC_SUCCESS, 0) == 0,
	       "the second round arrived intact");

	/* The SRQ is empty: two Sends wait (RNR) until two receives come. */
	for (i = 0; i < 2; i++)
		send_msg(&a, i % 2 ? qa2 : qa1, 200 + i);
	usleep(300000);
	expect(ibv_poll_cq(b.cq, 1, wc) == 0, "nothing received while the SRQ is empty");
	for (i = 0; i < 2; i++)
		expect(!post_srq(srq, &b, 2 * DEPTH + i, b.mr->lkey), "post after RNR");
	n = poll_n(a.cq, wc, 2);
	for (i = 0; i < (uint32_t)n; i++)
		printf("srq: Send after RNR: %s\n", ibv_wc_status_str(wc[i].status));
	expect(n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
	       "the Sends refused for want of a receive complete");
	expect(check_receives(&b, 2, 200, IBV_WC_SUCCESS, 0) == 0,
	       "and arrive intact");

	/* The limit fired once: no second event is queued. */
	pfd = (struct pollfd){ .fd = b.ctx->async_fd, .events = POLLIN };
	expect(poll(&pfd, 1, 100) == 0, "no second limit event");

	resize(&a, &b, srq, qa1, qa2);

	expect(!ibv_destroy_qp(qb1) && !ibv_destroy_qp(qb2), "destroy the SRQ's QPs");
	expect(!ibv_destroy_srq(srq), "destroy the SRQ");
	expect(!ibv_destroy_qp(qa1) && !ibv_destroy_qp(qa2), "destroy the senders");
	if (failures)
		return 1;
	printf("srq: PASS\n");
	return 0;
}
