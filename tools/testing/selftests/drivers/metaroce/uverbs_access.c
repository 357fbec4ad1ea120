// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The kernel writes into no MR that does not grant IB_ACCESS_LOCAL_WRITE. */

/*
 * usage: uverbs_access DEV_A DEV_B GID_A GID_B RO_FILE
 * On device B, MRs with access 0 are registered over a read-only shared
 * mapping of RO_FILE (a mode-0444 file: pinned without FOLL_WRITE, those are
 * its page-cache pages) and over untouched anonymous memory (the shared zero
 * page).  Then every way the kernel writes into local memory is tried into
 * them: an RC receive, a UD receive, an SRQ receive (the peer on device A
 * sends into each), and the local buffers of an RDMA Read and of an atomic.
 * Each WQE must complete with a protection error, never with success, and
 * neither the file nor the zero page may change: the mapping is compared byte
 * by byte with a copy taken before, and a fresh untouched anonymous page must
 * still read as zeros.  A control run with a writable MR must deliver.
 * Exits 0 when it all holds.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "uverbs_util.h"

#define LEN		4096
#define DEPTH		16
#define UD_QKEY		0x11111111
#define GRH_LEN		40

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int gid;
};

static void side_init(struct side *s, const char *dev, int gid)
{
	s->ctx = open_dev(dev);
	s->gid = gid;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 4 * DEPTH, NULL, NULL, 0) : NULL;
	if (!s->cq)
		die("pd/cq");
}

static struct ibv_qp *rc_qp(struct side *s, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = srq ? 0 : DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				 IBV_QP_ACCESS_FLAGS))
		die("RC QP");
	return qp;
}

static struct ibv_qp *ud_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				 IBV_QP_QKEY))
		die("UD QP");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD RTS");
	return qp;
}

/* One completion of the given wr_id on s->cq (others are dropped); its status, or -1. */
static int wait_status(struct side *s, uint64_t wr_id)
{
	struct ibv_wc wc;
	int tries = 20000;

	while (tries--) {
		if (ibv_poll_cq(s->cq, 1, &wc) == 1) {
			if (wc.wr_id == wr_id)
				return wc.status;
			continue;
		}
		usleep(1000);
	}
	return -1;
}

static void post_recv(struct ibv_qp *qp, struct ibv_srq *srq, struct ibv_mr *mr, void *addr,
		      uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sg, .num_sge = 1 }, *bad;

	if (srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad))
		die("post_recv");
}

static void post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	if (ibv_post_send(qp, wr, &bad))
		die("post_send");
}

static const uint8_t evil[64] = "EVIL EVIL EVIL EVIL EVIL EVIL EVIL EVIL EVIL EVIL EVIL EVIL";

static int all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct side a, b;
	struct ibv_mr *ro_mr, *zero_mr, *ok_mr, *src_mr, *rmt_mr;
	uint8_t *ro, *zero, *okbuf, *src, *rmt, *fresh, copy[LEN];
	struct ibv_qp *qa, *qb;
	struct ibv_srq *srq;
	struct ibv_ah *ah;
	int fd;

	if (argc != 6) {
		fprintf(stderr, "usage: %s DEV_A DEV_B GID_A GID_B RO_FILE\n", argv[0]);
		return 2;
	}
	side_init(&a, argv[1], atoi(argv[3]));
	side_init(&b, argv[2], atoi(argv[4]));

	fd = open(argv[5], O_RDONLY);
	if (fd < 0)
		die("open RO_FILE");
	ro = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
	zero = mmap(NULL, LEN, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fresh = mmap(NULL, LEN, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED || zero == MAP_FAILED || fresh == MAP_FAILED)
		die("mmap");
	memcpy(copy, ro, LEN);
	/* access 0: the pages are pinned for reading only */
	ro_mr = ibv_reg_mr(b.pd, ro, LEN, 0);
	zero_mr = ibv_reg_mr(b.pd, zero, LEN, 0);
	if (!ro_mr || !zero_mr)
		die("ibv_reg_mr with access 0");
	okbuf = aligned_alloc(4096, LEN);
	src = aligned_alloc(4096, LEN);
	rmt = aligned_alloc(4096, LEN);
	if (!okbuf || !src || !rmt)
		die("buffers");
	memset(okbuf, 0, LEN);
	memcpy(src, evil, sizeof(evil));
	memset(rmt, 0x5a, LEN);
	ok_mr = ibv_reg_mr(b.pd, okbuf, LEN, IBV_ACCESS_LOCAL_WRITE);
	src_mr = ibv_reg_mr(a.pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	rmt_mr = ibv_reg_mr(a.pd, rmt, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC);
	if (!ok_mr || !src_mr || !rmt_mr)
		die("ibv_reg_mr");

	struct ibv_sge ssg = { .addr = (uintptr_t)src, .length = sizeof(evil),
			       .lkey = src_mr->lkey };
	struct ibv_send_wr sw = { .wr_id = 100, .sg_list = &ssg, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };

	/* Control: a writable MR receives the Send. */
	qa = rc_qp(&a, NULL);
	qb = rc_qp(&b, NULL);
	connect_pair(qa, a.gid, qb, b.gid);
	post_recv(qb, NULL, ok_mr, okbuf, LEN, 1);
	post_send(qa, &sw);
	expect(wait_status(&b, 1) == IBV_WC_SUCCESS, "control: RC receive into a writable MR");
	expect(wait_status(&a, 100) == IBV_WC_SUCCESS, "control: its Send completes");
	expect(!memcmp(okbuf, evil, sizeof(evil)), "control: the data arrived");

	/* RC receive into the read-only file and into the zero page. */
	post_recv(qb, NULL, ro_mr, ro, LEN, 2);
	post_send(qa, &sw);
	expect(wait_status(&b, 2) == IBV_WC_LOC_PROT_ERR,
	       "RC receive into an access-0 MR: LOC_PROT_ERR");
	/* The Send waits for a receive (RNR) and tries the next one too. */
	post_recv(qb, NULL, zero_mr, zero, LEN, 3);
	expect(wait_status(&b, 3) == IBV_WC_LOC_PROT_ERR,
	       "RC receive into the zero page: LOC_PROT_ERR");
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);

	/* A UD datagram into the read-only file. */
	{
		struct ibv_qp *ua = ud_qp(&a), *ub = ud_qp(&b);
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .hop_limit = 64, .sgid_index = a.gid } };
		struct ibv_send_wr uw = sw;

		if (ibv_query_gid(b.ctx, 1, b.gid, &aa.grh.dgid))
			die("query gid");
		ah = ibv_create_ah(a.pd, &aa);
		if (!ah)
			die("ibv_create_ah");
		post_recv(ub, NULL, ro_mr, ro, GRH_LEN + sizeof(evil), 4);
		uw.wr.ud.ah = ah;
		uw.wr.ud.remote_qpn = ub->qp_num;
		uw.wr.ud.remote_qkey = UD_QKEY;
		post_send(ua, &uw);
		expect(wait_status(&b, 4) == IBV_WC_LOC_PROT_ERR,
		       "UD receive into an access-0 MR: LOC_PROT_ERR");
		post_recv(ub, NULL, ok_mr, okbuf, LEN, 5);
		memset(okbuf, 0, LEN);
		post_send(ua, &uw);
		expect(wait_status(&b, 5) == IBV_WC_SUCCESS &&
		       !memcmp(okbuf + GRH_LEN, evil, sizeof(evil)),
		       "control: a UD receive into a writable MR delivers");
		ibv_destroy_ah(ah);
		ibv_destroy_qp(ua);
		ibv_destroy_qp(ub);
	}

	/* An SRQ receive into the zero page. */
	{
		struct ibv_srq_init_attr sia = { .attr = { .max_wr = DEPTH, .max_sge = 1 } };

		srq = ibv_create_srq(b.pd, &sia);
		if (!srq)
			die("ibv_create_srq");
		qa = rc_qp(&a, NULL);
		qb = rc_qp(&b, srq);
		connect_pair(qa, a.gid, qb, b.gid);
		post_recv(NULL, srq, zero_mr, zero, LEN, 6);
		post_send(qa, &sw);
		expect(wait_status(&b, 6) == IBV_WC_LOC_PROT_ERR,
		       "SRQ receive into the zero page: LOC_PROT_ERR");
		ibv_destroy_qp(qa);
		ibv_destroy_qp(qb);
		ibv_destroy_srq(srq);
	}

	/* B's own Read and atomic with their local buffer in the read-only file. */
	{
		struct ibv_sge lsg = { .addr = (uintptr_t)ro, .length = 64, .lkey = ro_mr->lkey };
		struct ibv_send_wr rw = { .wr_id = 7, .sg_list = &lsg, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED };

		rw.wr.rdma.remote_addr = (uintptr_t)rmt;
		rw.wr.rdma.rkey = rmt_mr->rkey;
		qa = rc_qp(&a, NULL);
		qb = rc_qp(&b, NULL);
		connect_pair(qa, a.gid, qb, b.gid);
		post_send(qb, &rw);
		expect(wait_status(&b, 7) == IBV_WC_LOC_PROT_ERR,
		       "RDMA Read into an access-0 MR: LOC_PROT_ERR");
		ibv_destroy_qp(qb);
		qb = rc_qp(&b, NULL);
		ibv_destroy_qp(qa);
		qa = rc_qp(&a, NULL);
		connect_pair(qa, a.gid, qb, b.gid);
		lsg.length = 8;
		rw.wr_id = 8;
		rw.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		rw.wr.atomic.remote_addr = (uintptr_t)rmt;
		rw.wr.atomic.rkey = rmt_mr->rkey;
		rw.wr.atomic.compare_add = 1;
		post_send(qb, &rw);
		expect(wait_status(&b, 8) == IBV_WC_LOC_PROT_ERR,
		       "atomic result into an access-0 MR: LOC_PROT_ERR");
		ibv_destroy_qp(qa);
		ibv_destroy_qp(qb);
	}

	expect(!memcmp(ro, copy, LEN), "the read-only file's pages are unchanged");
	expect(all_zero(zero, LEN), "the zero-page MR still reads zeros");
	expect(all_zero(fresh, LEN), "a fresh anonymous page still reads zeros");
	ibv_dereg_mr(ro_mr);
	ibv_dereg_mr(zero_mr);
	printf("uverbs_access: %d failures\n", failures);
	return failures ? 1 : 0;
}
