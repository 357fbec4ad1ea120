// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows through our provider, type 1 and type 2B.
 *
 * usage: uverbs_mw DEV_T DEV_I GID_T GID_I
 * A target (T) registers a buffer with local write and MW_BIND only: its own
 * rkey grants nothing remote.  An initiator (I) reaches it through windows:
 *  1. the device advertises both window types;
 *  2. type 1 (ibv_bind_mw): a Write and a Read inside the window move data,
 *     checked byte by byte with the bytes around the window unchanged; the
 *     MR's own rkey, the window's key before the bind, and an address of the
 *     MR outside the window are refused (remote access error); the MR cannot
 *     be deregistered while the window is bound; a zero-length bind ends it;
 *  3. type 2 (IBV_WR_BIND_MW, and ibv_wr_bind_mw of an ibv_qp_ex): usable
 *     only through the QP that bound it; binding it again while valid fails
 *     (IBV_WC_MW_BIND_ERR); a Send with Invalidate ends it (the receive says
 *     so), and so do IBV_WR_LOCAL_INV, the destruction of its QP and its
 *     deallocation;
 *  4. binds that must fail do: an MR without MW_BIND, a window past the MR;
 *  5. with the windows deallocated the MR deregisters.
 * Each refused remote access breaks its QPs, so each gets a fresh pair.
 * Exits 0 when it all holds.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "uverbs_util.h"

#define LEN	65536
#define WIN_OFF	4096
#define WIN_LEN	8192
#define DEPTH	16

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid;
};

static struct side t, in;

static void side_init(struct side *s, const char *dev, int gid, int access)
{
	s->ctx = open_dev(dev);
	s->gid = gid;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 4 * DEPTH, NULL, NULL, 0) : NULL;
	s->buf = aligned_alloc(4096, LEN);
	if (!s->cq || !s->buf)
		die("pd/cq/buffer");
	s->mr = ibv_reg_mr(s->pd, s->buf, LEN, access);
	if (!s->mr)
		die("ibv_reg_mr");
}

static struct ibv_qp *rc_qp(struct side *s, int ex)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = s->pd,
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_qp *qp;

	if (ex) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
				    IBV_QP_EX_WITH_RDMA_WRITE;
	}
	qp = ibv_create_qp_ex(s->ctx, &ia);
	if (!qp)
		die("ibv_create_qp_ex");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	return qp;
}

struct pair {
	struct ibv_qp *t, *i;
};

static void drain(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	while (ibv_poll_cq(cq, 1, &wc) > 0)
		;
}

static struct pair new_pair(int ex)
{
	struct pair p = { rc_qp(&t, ex), rc_qp(&in, 0) };

	drain(t.cq);
	drain(in.cq);
	connect_pair(p.t, t.gid, p.i, in.gid);
	return p;
}

static void free_pair(struct pair *p)
{
	ibv_destroy_qp(p->i);
	ibv_destroy_qp(p->t);
	drain(t.cq);
	drain(in.cq);
}

/* One completion from cq: its status, or -1 if none came. */
static int one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return poll_n(cq, wc, 1) == 1 ? (int)wc->status : -1;
}

/* An RDMA op of len bytes between in.buf + off and the target's raddr; its status. */
static int rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)in.buf + off, len, in.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad))
		die("post rdma");
	return one(in.cq, &wc);
}

static uint64_t taddr(uint32_t off)
{
	return (uintptr_t)t.buf + off;
}

/* A type 2 bind posted on qp (ibv_post_send); the status of its completion. */
static int bind2(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr,
		 uint32_t off, uint32_t len, int access)
{
	struct ibv_send_wr wr = {
		.wr_id = 2, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
		.bind_mw = { .mw = mw, .rkey = rkey,
			     .bind_info = { .mr = mr, .addr = taddr(off), .length = len,
					    .mw_access_flags = access } },
	}, *bad;
	struct ibv_wc wc;
	int st;

	if (ibv_post_send(qp, &wr, &bad))
		die("post bind");
	st = one(t.cq, &wc);
	expect(st != IBV_WC_SUCCESS || wc.opcode == IBV_WC_BIND_MW, "bind completes as BIND_MW");
	return st;
}

static void pattern(uint8_t *p, uint32_t len, uint8_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static int window_untouched_outside(void)
{
	uint32_t i;

	for (i = 0; i < LEN; i++)
		if ((i < WIN_OFF || i >= WIN_OFF + WIN_LEN) && t.buf[i] != 0xee)
			return 0;
	return 1;
}

static void type1(void)
{
	struct ibv_mw_bind b = {
		.wr_id = 3, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = t.mr, .addr = taddr(WIN_OFF), .length = WIN_LEN,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ },
	};
	struct pair p = new_pair(0);
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t old;
	int st;

	mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_1);
	if (!mw)
		die("ibv_alloc_mw type 1");
	old = mw->rkey;
	expect(ibv_bind_mw(p.t, mw, &b) == 0, "type 1: ibv_bind_mw posts");
	st = one(t.cq, &wc);
	expect(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 3,
	       "type 1: the bind completes (IBV_WC_BIND_MW)");
	expect(mw->rkey != old && (mw->rkey >> 8) == (old >> 8),
	       "type 1: a new key byte, the same index");

	memset(t.buf, 0xee, LEN);
	pattern(in.buf, WIN_LEN, 11);
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, WIN_LEN, taddr(WIN_OFF), mw->rkey) ==
	       IBV_WC_SUCCESS, "type 1: a Write that fills the window completes");
	expect(!memcmp(t.buf + WIN_OFF, in.buf, WIN_LEN), "type 1: the window holds the data");
	expect(window_untouched_outside(), "type 1: nothing outside the window changed");
	pattern(t.buf + WIN_OFF + 4096, 4096, 99);
	memset(in.buf + 16384, 0, 4096);
	expect(rdma(p.i, IBV_WR_RDMA_READ, 16384, 4096, taddr(WIN_OFF + 4096), mw->rkey) ==
	       IBV_WC_SUCCESS, "type 1: a Read through the window completes");
	expect(!memcmp(in.buf + 16384, t.buf + WIN_OFF + 4096, 4096),
	       "type 1: the Read brought the window's bytes");

	errno = 0;
	expect(ibv_dereg_mr(t.mr) != 0, "the MR does not deregister while a window is bound");

	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), t.mr->rkey) ==
	       IBV_WC_REM_ACCESS_ERR, "the MR's own rkey grants no remote write");
	free_pair(&p);
	p = new_pair(0);
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), old) ==
	       IBV_WC_REM_ACCESS_ERR, "type 1: the key before the bind is refused");
	free_pair(&p);
	p = new_pair(0);
	memset(t.buf, 0xee, LEN);
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF + WIN_LEN), mw->rkey) ==
	       IBV_WC_REM_ACCESS_ERR, "type 1: the MR past the window is refused");
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), mw->rkey) != IBV_WC_SUCCESS,
	       "(the QP is in error after that)");
	expect(window_untouched_outside() && t.buf[WIN_OFF] == 0xee,
	       "type 1: the refused Writes placed nothing");
	free_pair(&p);

	/* A zero-length bind (no MR): the window names nothing after it. */
	p = new_pair(0);
	b.bind_info.mr = NULL;
	b.bind_info.addr = 0;
	b.bind_info.length = 0;
	old = mw->rkey;
	expect(ibv_bind_mw(p.t, mw, &b) == 0 && one(t.cq, &wc) == IBV_WC_SUCCESS,
	       "type 1: a zero-length bind completes");
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), mw->rkey) ==
	       IBV_WC_REM_ACCESS_ERR, "type 1: after it, the window's key is refused");
	free_pair(&p);
	expect(ibv_dealloc_mw(mw) == 0, "type 1: ibv_dealloc_mw");
}

static void type2(void)
{
	struct pair p = new_pair(0), q;
	struct ibv_recv_wr rwr = { .wr_id = 7 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 8, .opcode = IBV_WR_SEND_WITH_INV,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_send_wr lwr = { .wr_id = 9, .opcode = IBV_WR_LOCAL_INV,
				   .send_flags = IBV_SEND_SIGNALED };
	struct ibv_qp_ex *x;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t key;
	int st;

	mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_2);
	if (!mw)
		die("ibv_alloc_mw type 2");
	expect(ibv_bind_mw(p.t, mw, &(struct ibv_mw_bind){ 0 }) == EINVAL,
	       "type 2: ibv_bind_mw (type 1 only) refuses it");
	key = ibv_inc_rkey(mw->rkey);
	expect(bind2(p.t, mw, key, t.mr, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_WRITE) ==
	       IBV_WC_SUCCESS, "type 2: IBV_WR_BIND_MW completes");
	memset(t.buf, 0xee, LEN);
	pattern(in.buf, WIN_LEN, 23);
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, WIN_LEN, taddr(WIN_OFF), key) == IBV_WC_SUCCESS,
	       "type 2: a Write through the window completes");
	expect(!memcmp(t.buf + WIN_OFF, in.buf, WIN_LEN) && window_untouched_outside(),
	       "type 2: the window, and only it, holds the data");

	/* Remote invalidation: the receive reports it, the key is dead after. */
	if (ibv_post_recv(p.t, &rwr, &rbad))
		die("post recv");
	swr.invalidate_rkey = key;
	if (ibv_post_send(p.i, &swr, &sbad))
		die("post send with inv");
	expect(one(in.cq, &wc) == IBV_WC_SUCCESS, "type 2: the Send with Invalidate completes");
	st = one(t.cq, &wc);
	expect(st == IBV_WC_SUCCESS && wc.wc_flags & IBV_WC_WITH_INV &&
	       wc.invalidated_rkey == key, "type 2: the receive says the window was invalidated");
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), key) == IBV_WC_REM_ACCESS_ERR,
	       "type 2: the invalidated key is refused");
	free_pair(&p);

	/* Bound again (ibv_wr_bind_mw this time), then invalidated locally. */
	p = new_pair(1);
	x = ibv_qp_to_qp_ex(p.t);
	expect(x != NULL, "ibv_qp_to_qp_ex");
	key = ibv_inc_rkey(key);
	ibv_wr_start(x);
	x->wr_id = 10;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(x, mw, key, &(struct ibv_mw_bind_info){
		.mr = t.mr, .addr = taddr(WIN_OFF), .length = WIN_LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE });
	expect(ibv_wr_complete(x) == 0, "type 2: ibv_wr_bind_mw batch posts");
	st = one(t.cq, &wc);
	expect(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 10,
	       "type 2: ibv_wr_bind_mw completes");
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), key) == IBV_WC_SUCCESS,
	       "type 2: usable again after the second bind");

	/* Another QP pair of the same PDs may not use a window bound to p.t. */
	q = new_pair(0);
	expect(rdma(q.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), key) == IBV_WC_REM_ACCESS_ERR,
	       "type 2: refused through a QP it is not bound to");
	ibv_destroy_qp(q.i);
	ibv_destroy_qp(q.t);

	lwr.invalidate_rkey = key;
	if (ibv_post_send(p.t, &lwr, &sbad))
		die("post local inv");
	st = one(t.cq, &wc);
	expect(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV,
	       "type 2: IBV_WR_LOCAL_INV completes");
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), key) == IBV_WC_REM_ACCESS_ERR,
	       "type 2: refused after the local invalidation");
	free_pair(&p);

	/* Bound while valid: the bind fails. */
	p = new_pair(0);
	key = ibv_inc_rkey(key);
	expect(bind2(p.t, mw, key, t.mr, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_WRITE) ==
	       IBV_WC_SUCCESS, "type 2: bound a third time");
	expect(bind2(p.t, mw, ibv_inc_rkey(key), t.mr, 0, 64, IBV_ACCESS_REMOTE_WRITE) ==
	       IBV_WC_MW_BIND_ERR, "type 2: a bind while it is valid fails");
	free_pair(&p);

	/* The QP it was bound to is gone, and the window with it: it binds anew. */
	p = new_pair(0);
	key = ibv_inc_rkey(ibv_inc_rkey(key));
	expect(bind2(p.t, mw, key, t.mr, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_WRITE) ==
	       IBV_WC_SUCCESS, "type 2: its QP destroyed, the window binds again");
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), key) == IBV_WC_SUCCESS,
	       "type 2: and serves the new QP");
	expect(ibv_dealloc_mw(mw) == 0, "type 2: ibv_dealloc_mw of a bound window");
	expect(rdma(p.i, IBV_WR_RDMA_WRITE, 0, 64, taddr(WIN_OFF), key) == IBV_WC_REM_ACCESS_ERR,
	       "type 2: its key is refused after the deallocation");
	free_pair(&p);
}

static void bad_binds(void)
{
	struct ibv_mr *nobind = ibv_reg_mr(t.pd, t.buf, LEN, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mw *mw = ibv_alloc_mw(t.pd, IBV_MW_TYPE_2);
	struct pair p;

	if (!nobind || !mw)
		die("MR without MW_BIND, window");
	p = new_pair(0);
	expect(bind2(p.t, mw, ibv_inc_rkey(mw->rkey), nobind, 0, 64, IBV_ACCESS_REMOTE_READ) ==
	       IBV_WC_MW_BIND_ERR, "a bind to an MR without MW_BIND fails");
	free_pair(&p);
	p = new_pair(0);
	expect(bind2(p.t, mw, ibv_inc_rkey(mw->rkey), t.mr, LEN - 4096, 8192,
		     IBV_ACCESS_REMOTE_READ) == IBV_WC_MW_BIND_ERR,
	       "a window past the end of its MR fails");
	free_pair(&p);
	expect(ibv_dealloc_mw(mw) == 0, "dealloc the unbound window");
	expect(ibv_dereg_mr(nobind) == 0, "dereg the MR without MW_BIND");
}

int main(int argc, char **argv)
{
	struct ibv_device_attr attr;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV_T DEV_I GID_T GID_I\n", argv[0]);
		return 2;
	}
	side_init(&t, argv[1], atoi(argv[3]), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	side_init(&in, argv[2], atoi(argv[4]), IBV_ACCESS_LOCAL_WRITE);
	if (ibv_query_device(t.ctx, &attr))
		die("ibv_query_device");
	expect(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW &&
	       attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B && attr.max_mw > 0,
	       "the device advertises memory windows of type 1 and 2B");

	type1();
	type2();
	bad_binds();
	expect(ibv_dereg_mr(t.mr) == 0, "the MR deregisters once its windows are gone");
	printf("uverbs_mw: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
