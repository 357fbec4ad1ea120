// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A hostile process writes garbage into its mmapped rings; only its own QP may suffer. */

/*
 * usage: uverbs_hostile DEV_A DEV_B GID_A GID_B
 * Opens two MetaRoCE devices (linked over a wire or veth pair) and connects
 * RC QP pairs between them: a well-behaved one and hostile ones.  A hostile
 * QP's send ring, receive ring and CQ ring are found in our own mappings of
 * the uverbs device and filled with garbage (random WQEs, wild indices, a
 * broken CQ consumer index), and the doorbell is rung with a raw uverbs
 * command; then, on a fresh QP each, one well-formed WQE with one bad field
 * (huge num_sge, bad, foreign and local-DMA lkeys, out-of-bounds and huge
 * lengths, long inline data, unknown opcode or flags, a short atomic) must
 * complete with the status IB gives that error.  UD QPs get the same
 * treatment: garbage on a UD send ring, and UD send WQEs naming AH numbers
 * that are not theirs (none, random, a destroyed AH's, an AH of another PD,
 * an AH of another user context) must complete with errors, while an AH
 * destroyed right after posting leaves the datagrams it addressed intact.
 * An SRQ's ring gets garbage WQEs and a wild index while a QP on it
 * receives: valid WQEs before the garbage complete, the garbage only fails.
 * Nothing written as garbage may complete successfully, and the well-behaved
 * pair must move data, checked byte by byte, before and after.  Exits 0 when
 * it all holds.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "uverbs_util.h"
#include <rdma/ib_user_verbs.h>
#include <rdma/metaroce-abi.h>

#define BUF	65536
#define DEPTH	64

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *mr2;	/* mr2: registered in another PD */
	uint8_t *buf, *buf2;
	int gid;
};

static void side_init(struct side *s, const char *dev, int gid)
{
	s->ctx = open_dev(dev);
	s->gid = gid;
	s->pd = ibv_alloc_pd(s->ctx);
	s->pd2 = ibv_alloc_pd(s->ctx);
	s->buf = aligned_alloc(4096, BUF);
	s->buf2 = aligned_alloc(4096, BUF);
	if (!s->pd || !s->pd2 || !s->buf || !s->buf2)
		die("pd/buffers");
	memset(s->buf, 0, BUF);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	s->mr2 = ibv_reg_mr(s->pd2, s->buf2, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr || !s->mr2)
		die("ibv_reg_mr");
}

static struct ibv_qp *make_qp(struct side *s, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 4, .max_recv_sge = 4,
			 .max_inline_data = 64 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	return qp;
}

/* The well-behaved pair: a Write and a Send from a to b, every byte checked. */
static void good_traffic(struct side *a, struct ibv_qp *qa, struct side *b,
			 struct ibv_qp *qb, int round)
{
	struct ibv_sge sa = { (uintptr_t)a->buf, 8192, a->mr->lkey };
	struct ibv_sge sb = { (uintptr_t)b->buf + 32768, 8192, b->mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 7, .sg_list = &sb, .num_sge = 1 }, *brw;
	struct ibv_send_wr w = {
		.wr_id = 1, .sg_list = &sa, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)b->buf, b->mr->rkey },
	}, *bw;
	struct ibv_wc wc[2];
	int i, n;

	for (i = 0; i < 8192; i++)
		a->buf[i] = (uint8_t)(i * 7 + round);
	memset(b->buf, 0, BUF);
	expect(!ibv_post_recv(qb, &rw, &brw), "good: post_recv");
	expect(!ibv_post_send(qa, &w, &bw), "good: post_send write");
	expect(poll_n(a->cq, wc, 1) == 1 && wc[0].status == IBV_WC_SUCCESS &&
	       wc[0].wr_id == 1, "good: Write completes");
	expect(!memcmp(a->buf, b->buf, 8192), "good: Written bytes arrive intact");
	w.wr_id = 2;
	w.opcode = IBV_WR_SEND;
	expect(!ibv_post_send(qa, &w, &bw), "good: post_send send");
	n = poll_n(a->cq, wc, 1);
	expect(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 2,
	       "good: Send completes");
	if (n == 1 && wc[0].status != IBV_WC_SUCCESS)
		fprintf(stderr, "  Send: %s\n", ibv_wc_status_str(wc[0].status));
	n = poll_n(b->cq, wc, 1);
	expect(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 7 &&
	       wc[0].byte_len == 8192, "good: Receive completes");
	if (n == 1 && wc[0].status != IBV_WC_SUCCESS)
		fprintf(stderr, "  Receive: %s\n", ibv_wc_status_str(wc[0].status));
	expect(!memcmp(a->buf, b->buf + 32768, 8192), "good: Sent bytes arrive intact");
}

/* Our mappings of the uverbs device: address, size and offset, from /proc/self/maps. */
struct mapping {
	uint8_t *addr;
	size_t size;
};

static int uverbs_maps(struct mapping *m, int max)
{
	char line[512], path[256];
	unsigned long lo, hi, off;
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!f)
		die("/proc/self/maps");
	while (n < max && fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %255s", &lo, &hi, &off, path) < 3)
			continue;
		if (!strstr(path, "/dev/infiniband/uverbs"))
			continue;
		m[n].addr = (uint8_t *)lo;
		m[n].size = hi - lo;
		n++;
	}
	fclose(f);
	return n;
}

/* The mapping whose ring header reads prod, cons, done; its entry size. */
static struct metaroce_ring_hdr *find_ring(struct mapping *m, int n, uint32_t prod,
					   uint32_t cons, uint32_t done, uint32_t *esize)
{
	struct metaroce_ring_hdr *h;
	int i;

	for (i = 0; i < n; i++) {
		h = (struct metaroce_ring_hdr *)m[i].addr;
		if (h->prod == prod && h->cons == cons && h->done == done) {
			/* DEPTH entries of a power-of-two size behind the header page. */
			*esize = (m[i].size - METAROCE_RING_HDR_BYTES) / DEPTH;
			while (*esize & (*esize - 1))
				*esize &= *esize - 1;
			return h;
		}
	}
	return NULL;
}

/* The doorbell: post_send with no work requests, as the provider rings it. */
static int doorbell(struct ibv_qp *qp, uint32_t command)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req = {};
	struct ib_uverbs_post_send_resp resp;

	req.hdr.command = command;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = qp->handle;
	req.cmd.wqe_size = command == IB_USER_VERBS_CMD_POST_SEND ?
			   sizeof(struct ib_uverbs_send_wr) : sizeof(struct ib_uverbs_recv_wr);
	return write(qp->context->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : -errno;
}

/* post_send with one real work request, which a ring QP must refuse. */
static int raw_post_send(struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
		struct ib_uverbs_send_wr wr;
		struct ib_uverbs_sge sge;
	} req = {};
	struct ib_uverbs_post_send_resp resp;

	req.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = qp->handle;
	req.cmd.wr_count = 1;
	req.cmd.sge_count = 1;
	req.cmd.wqe_size = sizeof(req.wr);
	req.wr.wr_id = wr->wr_id;
	req.wr.num_sge = 1;
	req.wr.opcode = wr->opcode;
	req.sge.addr = wr->sg_list[0].addr;
	req.sge.length = wr->sg_list[0].length;
	req.sge.lkey = wr->sg_list[0].lkey;
	return write(qp->context->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : -errno;
}

static uint32_t rnd(void)
{
	return (uint32_t)random() << 16 ^ (uint32_t)random();
}

static void fill_random(void *p, size_t n)
{
	uint8_t *b = p;

	while (n--)
		*b++ = (uint8_t)random();
}

/* ---- UD QPs and AH numbers ---- */

#define UD_QKEY		0x11111111
#define UD_LEN		64
#define GRH_LEN		40

/*
 * The number our provider's create_ah got from the kernel: it keeps it right
 * behind struct ibv_ah (providers/metaroce/metaroce.h, struct metaroce_ah).
 */
struct provider_ah {
	struct ibv_ah ibv_ah;
	uint32_t handle;
};

static uint32_t ah_number(struct ibv_ah *ah)
{
	return ((struct provider_ah *)ah)->handle;
}

static struct ibv_qp *make_ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp UD");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		die("modify UD INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("modify UD RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify UD RTS");
	return qp;
}

/* An AH on pd (of side s) to the peer's GID. */
static struct ibv_ah *make_ah(struct ibv_pd *pd, struct side *s, struct side *peer)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .hop_limit = 64, .sgid_index = s->gid },
	};
	struct ibv_ah *ah;

	if (ibv_query_gid(peer->ctx, 1, peer->gid, &aa.grh.dgid))
		die("query gid");
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah");
	return ah;
}

/* n receives of GRH_LEN + UD_LEN bytes on a UD QP of side b, from offset 16 KiB on. */
static void ud_post_recvs(struct side *b, struct ibv_qp *qp, int n)
{
	struct ibv_recv_wr r, *br;
	struct ibv_sge sg;
	int i;

	for (i = 0; i < n; i++) {
		sg = (struct ibv_sge){ (uintptr_t)b->buf + 16384 + (i % DEPTH) * 256,
				       GRH_LEN + UD_LEN, b->mr->lkey };
		r = (struct ibv_recv_wr){ .wr_id = 3000 + i, .sg_list = &sg, .num_sge = 1 };
		expect(!ibv_post_recv(qp, &r, &br), "UD: post_recv");
	}
}

/* n datagrams of UD_LEN bytes from a's buffer to (ah, qpn). */
static void ud_send(struct side *a, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
		    int n, uint64_t wr_id)
{
	struct ibv_sge sg = { (uintptr_t)a->buf, UD_LEN, a->mr->lkey };
	struct ibv_send_wr w = {
		.sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = UD_QKEY },
	}, *bw;
	int i;

	for (i = 0; i < n; i++) {
		w.wr_id = wr_id + i;
		expect(!ibv_post_send(qp, &w, &bw), "UD: post_send");
	}
}

/* n datagrams arrived whole at b: GRH first, the sender's QPN, a's bytes. */
static void ud_expect_recvs(struct side *a, struct side *b, struct ibv_cq *cq,
			    uint32_t src_qp, int n, const char *what)
{
	struct ibv_wc wc[DEPTH];
	int got, i, ok = 1;

	got = poll_n(cq, wc, n);
	for (i = 0; i < got; i++) {
		uint8_t *p = b->buf + 16384 + ((wc[i].wr_id - 3000) % DEPTH) * 256;

		ok &= wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV &&
		      (wc[i].wc_flags & IBV_WC_GRH) && wc[i].src_qp == src_qp &&
		      wc[i].byte_len == GRH_LEN + UD_LEN &&
		      !memcmp(p + GRH_LEN, a->buf, UD_LEN);
	}
	if (got != n || !ok)
		fprintf(stderr, "  %s: %d of %d receives, last status %s\n", what, got, n,
			got ? ibv_wc_status_str(wc[got - 1].status) : "-");
	expect(got == n && ok, what);
}

static void ud_section(struct side *a, struct side *b)
{
	struct ibv_cq *acq = ibv_create_cq(a->ctx, 1023, NULL, NULL, 0);
	struct ibv_cq *bcq = ibv_create_cq(b->ctx, 1023, NULL, NULL, 0);
	struct ibv_ah *ah_ok, *ah_pd2, *ah_gone, *ah_tmp, *bah[8];
	struct ibv_qp *ub, *xa;
	struct metaroce_ring_hdr *xsq;
	struct metaroce_user_sqe *e;
	struct metaroce_user_sge *sg;
	struct mapping m[64];
	struct ibv_wc wc[DEPTH];
	uint32_t gone, xesize, i, k, prod;
	int n, got, errors, success;
	char msg[160];

	if (!acq || !bcq)
		die("ibv_create_cq UD");
	for (i = 0; i < UD_LEN; i++)
		a->buf[i] = (uint8_t)(i * 13 + 5);
	ub = make_ud_qp(b->pd, bcq);
	/* One receive ahead, so that ub's receive ring never reads like a send ring. */
	ud_post_recvs(b, ub, 1);
	ah_ok = make_ah(a->pd, a, b);
	ah_pd2 = make_ah(a->pd2, a, b);
	ah_gone = make_ah(a->pd, a, b);
	gone = ah_number(ah_gone);
	expect(!ibv_destroy_ah(ah_gone), "UD: destroy an AH");
	/* Numbers 1..8 in b's context: more than a's context has. */
	for (i = 0; i < 8; i++)
		bah[i] = make_ah(b->pd, b, a);
	printf("hostile: UD AH numbers: ours %u, %u (other PD), %u (destroyed), b's %u\n",
	       ah_number(ah_ok), ah_number(ah_pd2), gone, ah_number(bah[7]));

	/* A good datagram pair first: the GRH, the source QPN and the bytes. */
	xa = make_ud_qp(a->pd, acq);
	ud_post_recvs(b, ub, 8);
	ud_send(a, xa, ah_ok, ub->qp_num, 8, 4000);
	got = poll_n(acq, wc, 8);
	expect(got == 8 && wc[7].status == IBV_WC_SUCCESS, "UD: 8 datagrams sent");
	ud_expect_recvs(a, b, bcq, xa->qp_num, 8, "UD: 8 datagrams arrive whole, GRH first");

	/* An AH destroyed as soon as its sends are posted: they were addressed already. */
	ah_tmp = make_ah(a->pd, a, b);
	ud_post_recvs(b, ub, 16);
	ud_send(a, xa, ah_tmp, ub->qp_num, 16, 4100);
	expect(!ibv_destroy_ah(ah_tmp), "UD: destroy the AH its 16 posted sends name");
	got = poll_n(acq, wc, 16);
	for (i = 0, success = 0; i < (uint32_t)got; i++)
		success += wc[i].status == IBV_WC_SUCCESS;
	expect(got == 16 && success == 16, "UD: sends to a destroyed AH posted before complete");
	ud_expect_recvs(a, b, bcq, xa->qp_num, 16, "UD: and arrive whole");

	/* Garbage on a UD send ring: errors only. */
	ud_post_recvs(b, ub, 3);
	ud_send(a, xa, ah_ok, ub->qp_num, 3, 4200);
	expect(poll_n(acq, wc, 3) == 3, "UD: marker sends complete");
	expect(poll_n(bcq, wc, 3) == 3, "UD: marker sends arrive");
	n = uverbs_maps(m, 64);
	xsq = find_ring(m, n, 8 + 16 + 3, 8 + 16 + 3, 8 + 16 + 3, &xesize);
	if (!xsq) {
		fprintf(stderr, "FAIL: cannot find the UD QP's send ring\n");
		failures++;
		return;
	}
	prod = xsq->prod;
	for (i = 0; i < 16; i++)
		fill_random((uint8_t *)xsq + METAROCE_RING_HDR_BYTES +
			    ((prod + i) & (DEPTH - 1)) * xesize, xesize);
	__atomic_store_n(&xsq->prod, prod + 16, __ATOMIC_RELEASE);
	expect(!doorbell(xa, IB_USER_VERBS_CMD_POST_SEND), "UD: doorbell after random WQEs");
	__atomic_store_n(&xsq->prod, prod + 16 + 100000, __ATOMIC_RELEASE);
	expect(!doorbell(xa, IB_USER_VERBS_CMD_POST_SEND), "UD: doorbell after a wild prod");
	got = poll_n(acq, wc, 17);
	for (i = 0, errors = 0, success = 0; i < (uint32_t)got; i++) {
		errors += wc[i].status != IBV_WC_SUCCESS;
		success += wc[i].status == IBV_WC_SUCCESS;
	}
	printf("hostile: UD garbage: %d completions, %d errors, %d successful\n",
	       got, errors, success);
	expect(got == 17 && success == 0, "UD: garbage completes, with errors only");
	expect(!ibv_destroy_qp(xa), "UD: destroy the garbage QP");

	/* One bad AH number (or opcode) per WQE, each on a fresh UD QP. */
	for (k = 0; k < 6; k++) {
		static const enum ibv_wc_status want[6] = {
			IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR,
			IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR,
		};
		static const char *const what[6] = {
			"UD: AH number 0", "UD: a random AH number", "UD: a destroyed AH's number",
			"UD: an AH of another PD", "UD: an AH number of another user context",
			"UD: an RDMA Write",
		};

		xa = make_ud_qp(a->pd, acq);
		/* Five, not three: the good pair's receive ring reads 3, 3, 3 by now. */
		ud_post_recvs(b, ub, 5);
		ud_send(a, xa, ah_ok, ub->qp_num, 5, 5000 + 10 * k);
		got = poll_n(acq, wc, 5);
		expect(got == 5 && wc[4].status == IBV_WC_SUCCESS, "UD: fresh QP: marker sends");
		expect(poll_n(bcq, wc, 5) == 5, "UD: fresh QP: marker sends arrive");
		n = uverbs_maps(m, 64);
		xsq = find_ring(m, n, 5, 5, 5, &xesize);
		if (!xsq) {
			fprintf(stderr, "FAIL: cannot find the fresh UD QP's send ring\n");
			failures++;
			return;
		}
		e = (void *)((uint8_t *)xsq + METAROCE_RING_HDR_BYTES + 5 * xesize);
		sg = (void *)(e + 1);
		memset(e, 0, xesize);
		e->wr_id = 6000 + k;
		e->opcode = IBV_WR_SEND;
		e->send_flags = IBV_SEND_SIGNALED;
		e->num_sge = 1;
		e->remote_qpn = ub->qp_num;
		e->remote_qkey = UD_QKEY;
		sg->addr = (uintptr_t)a->buf;
		sg->length = UD_LEN;
		sg->lkey = a->mr->lkey;
		switch (k) {
		case 0: e->ah_handle = 0; break;
		case 1: e->ah_handle = rnd() | 0x1000000; break;
		case 2: e->ah_handle = gone; break;
		case 3: e->ah_handle = ah_number(ah_pd2); break;
		case 4: e->ah_handle = ah_number(bah[7]); break;
		case 5: e->ah_handle = ah_number(ah_ok); e->opcode = IBV_WR_RDMA_WRITE; break;
		}
		__atomic_store_n(&xsq->prod, 6, __ATOMIC_RELEASE);
		expect(!doorbell(xa, IB_USER_VERBS_CMD_POST_SEND), "UD: doorbell after a bad WQE");
		got = poll_n(acq, wc, 1);
		snprintf(msg, sizeof(msg), "%s completes with %s", what[k],
			 ibv_wc_status_str(want[k]));
		expect(got == 1 && wc[0].wr_id == 6000 + k && wc[0].status == want[k], msg);
		if (got == 1)
			printf("hostile: %s -> %s\n", what[k], ibv_wc_status_str(wc[0].status));
		/*
		 * The queue stopped (SQE): a good WQE after it is flushed and
		 * sends nothing.  Written into the ring too: the provider's
		 * producer index is behind ours now.
		 */
		e = (void *)((uint8_t *)xsq + METAROCE_RING_HDR_BYTES + 6 * xesize);
		sg = (void *)(e + 1);
		memset(e, 0, xesize);
		e->wr_id = 7000 + k;
		e->opcode = IBV_WR_SEND;
		e->send_flags = IBV_SEND_SIGNALED;
		e->num_sge = 1;
		e->ah_handle = ah_number(ah_ok);
		e->remote_qpn = ub->qp_num;
		e->remote_qkey = UD_QKEY;
		sg->addr = (uintptr_t)a->buf;
		sg->length = UD_LEN;
		sg->lkey = a->mr->lkey;
		__atomic_store_n(&xsq->prod, 7, __ATOMIC_RELEASE);
		expect(!doorbell(xa, IB_USER_VERBS_CMD_POST_SEND), "UD: doorbell after it");
		got = poll_n(acq, wc, 1);
		expect(got == 1 && wc[0].wr_id == 7000 + k && wc[0].status == IBV_WC_WR_FLUSH_ERR,
		       "UD: after it, a good send is flushed");
		expect(!ibv_destroy_qp(xa), "UD: destroy the fresh QP");
	}
	got = ibv_poll_cq(bcq, DEPTH, wc);
	expect(got == 0, "UD: nothing arrived from bad or flushed WQEs");

	/* The peer's AHs stay its own; a still works with its good AH. */
	xa = make_ud_qp(a->pd, acq);
	ud_post_recvs(b, ub, 4);
	ud_send(a, xa, ah_ok, ub->qp_num, 4, 8000);
	expect(poll_n(acq, wc, 4) == 4 && wc[3].status == IBV_WC_SUCCESS,
	       "UD: a fresh QP sends again");
	ud_expect_recvs(a, b, bcq, xa->qp_num, 4, "UD: and its datagrams arrive whole");
	expect(!ibv_destroy_qp(xa), "UD: destroy the last UD QP");
	expect(!ibv_destroy_qp(ub), "UD: destroy the receiving UD QP");
	for (i = 0; i < 8; i++)
		expect(!ibv_destroy_ah(bah[i]), "UD: destroy b's AHs");
	expect(!ibv_destroy_ah(ah_ok) && !ibv_destroy_ah(ah_pd2), "UD: destroy a's AHs");
	expect(!ibv_destroy_cq(acq) && !ibv_destroy_cq(bcq), "UD: destroy the CQs");
}

#define VALID	11

/* A QP of b on srq, connected to a new QP of a. */
static struct ibv_qp *srq_qp(struct side *b, struct ibv_cq *bcq, struct ibv_srq *srq,
			     struct side *a, struct ibv_cq *acq, struct ibv_qp **peer)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = bcq, .recv_cq = bcq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_send_sge = 4 },
	};
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp = ibv_create_qp(b->pd, &ia);

	if (!qp || ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				 IBV_QP_ACCESS_FLAGS))
		die("QP on the SRQ");
	*peer = make_qp(a, acq);
	connect_pair(*peer, a->gid, qp, b->gid);
	return qp;
}

static void send64(struct side *a, struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_sge s1 = { (uintptr_t)a->buf, 64, a->mr->lkey };
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = &s1, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bw;

	expect(!ibv_post_send(qp, &w, &bw), "SRQ: post_send to a QP on it");
}

/*
 * VALID receives on an SRQ of b (which marks its ring: prod VALID, cons and
 * done 0), eight garbage WQEs behind them, and VALID Sends from a to a QP on
 * the SRQ: the valid receives complete, the garbage fails.  Then a wild
 * producer index, found by the first message to a second QP on the SRQ,
 * fails too; that message waits for a receive (RNR) until its QP goes.
 */
static void hostile_srq(struct side *a, struct side *b)
{
	struct ibv_cq *acq = ibv_create_cq(a->ctx, 64, NULL, NULL, 0);
	struct ibv_cq *bcq = ibv_create_cq(b->ctx, 64, NULL, NULL, 0);
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = DEPTH, .max_sge = 4 } };
	struct ibv_qp *sa, *sb, *sa2, *sb2;
	struct ibv_recv_wr r, *br;
	struct metaroce_ring_hdr *h;
	struct mapping m[64];
	struct ibv_wc wc[64];
	struct ibv_srq *srq;
	int n, got, k, errors = 0, success = 0;
	uint32_t esize, i, prod;
	struct ibv_sge s1;

	srq = ibv_create_srq(b->pd, &sia);
	if (!acq || !bcq || !srq)
		die("ibv_create_cq/ibv_create_srq");
	sb = srq_qp(b, bcq, srq, a, acq, &sa);
	for (i = 0; i < VALID; i++) {
		s1 = (struct ibv_sge){ (uintptr_t)b->buf + 1024 * i, 1024, b->mr->lkey };
		r = (struct ibv_recv_wr){ .wr_id = 700 + i, .sg_list = &s1, .num_sge = 1 };
		expect(!ibv_post_srq_recv(srq, &r, &br), "SRQ: post_srq_recv");
	}
	n = uverbs_maps(m, 64);
	h = find_ring(m, n, VALID, 0, 0, &esize);
	if (!h) {
		fprintf(stderr, "FAIL: cannot find the SRQ's ring in %d mappings\n", n);
		exit(1);
	}
	printf("hostile: SRQ entries of %u bytes\n", esize);
	prod = h->prod;
	for (i = 0; i < 8; i++)
		fill_random((uint8_t *)h + METAROCE_RING_HDR_BYTES +
			    ((prod + i) & (DEPTH - 1)) * esize, esize);
	__atomic_store_n(&h->prod, prod + 8, __ATOMIC_RELEASE);
	for (i = 0; i < VALID; i++)
		send64(a, sa, 800 + i);
	got = poll_n(bcq, wc, VALID + 8);
	for (k = 0; k < got; k++) {
		if (wc[k].status != IBV_WC_SUCCESS) {
			errors++;
			continue;
		}
		success++;
		expect(wc[k].wr_id >= 700 && wc[k].wr_id < 700 + VALID,
		       "SRQ: only the valid WQEs complete successfully");
	}
	printf("hostile: SRQ: %d successful receives, %d error completions\n", success, errors);
	expect(success == VALID, "SRQ: the valid receives before the garbage complete");
	expect(errors == 8, "SRQ: the garbage fails");

	__atomic_store_n(&h->prod, prod + 8 + 1000000, __ATOMIC_RELEASE);
	sb2 = srq_qp(b, bcq, srq, a, acq, &sa2);
	send64(a, sa2, 900);
	got = poll_n(bcq, wc, 1);
	expect(got == 1 && wc[0].status == IBV_WC_LOC_QP_OP_ERR && wc[0].qp_num == sb2->qp_num,
	       "SRQ: a wild index fails on the QP that found it");
	if (got == 1)
		printf("hostile: SRQ: a wild index -> %s\n", ibv_wc_status_str(wc[0].status));
	expect(!ibv_poll_cq(bcq, 64, wc), "SRQ: nothing else completes");

	expect(!ibv_destroy_qp(sb) && !ibv_destroy_qp(sb2), "destroy the QPs on the garbage SRQ");
	expect(!ibv_destroy_srq(srq), "destroy the garbage SRQ");
	expect(!ibv_destroy_qp(sa) && !ibv_destroy_qp(sa2), "destroy their peers");
	expect(!ibv_destroy_cq(acq) && !ibv_destroy_cq(bcq), "destroy their CQs");
}

int main(int argc, char **argv)
{
	struct side a, b;
	struct ibv_qp *ga, *gb, *ha, *hb;
	struct ibv_cq *hcq, *hbcq;
	struct mapping m[64];
	struct metaroce_ring_hdr *sq, *rq, *cq;
	struct metaroce_user_sqe *e;
	struct metaroce_user_sge *sg;
	struct ibv_wc wc[256];
	uint32_t esize = 0, resize = 0, cesize = 0, i, k, prod;
	int n, got, errors = 0, success = 0;
	struct ibv_sge s1;
	struct ibv_send_wr w, *bw;
	struct ibv_recv_wr r, *br;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV_A DEV_B GID_A GID_B\n", argv[0]);
		return 2;
	}
	srandom(12345);
	side_init(&a, argv[1], atoi(argv[3]));
	side_init(&b, argv[2], atoi(argv[4]));
	a.cq = ibv_create_cq(a.ctx, 256, NULL, NULL, 0);
	b.cq = ibv_create_cq(b.ctx, 256, NULL, NULL, 0);
	hcq = ibv_create_cq(a.ctx, 1023, NULL, NULL, 0);
	hbcq = ibv_create_cq(b.ctx, 1023, NULL, NULL, 0);
	if (!a.cq || !b.cq || !hcq || !hbcq)
		die("ibv_create_cq");
	ga = make_qp(&a, a.cq);
	gb = make_qp(&b, b.cq);
	ha = make_qp(&a, hcq);
	hb = make_qp(&b, hbcq);
	connect_pair(ga, a.gid, gb, b.gid);
	connect_pair(ha, a.gid, hb, b.gid);

	good_traffic(&a, ga, &b, gb, 1);
	if (failures) {
		fprintf(stderr, "FAIL: the well-behaved pair does not work to begin with\n");
		return 1;
	}

	/*
	 * Find the hostile QP's rings: post 3 valid sends and 5 receives on
	 * it (the receives on the peer's side make the sends complete), so
	 * its SQ header says prod == cons == 3 and its RQ header 5.
	 */
	for (i = 0; i < 5; i++) {
		s1 = (struct ibv_sge){ (uintptr_t)a.buf, 64, a.mr->lkey };
		r = (struct ibv_recv_wr){ .wr_id = 100 + i, .sg_list = &s1, .num_sge = 1 };
		expect(!ibv_post_recv(ha, &r, &br), "hostile: post_recv");
		s1 = (struct ibv_sge){ (uintptr_t)b.buf, 64, b.mr->lkey };
		r.sg_list = &s1;
		expect(!ibv_post_recv(hb, &r, &br), "hostile peer: post_recv");
	}
	for (i = 0; i < 3; i++) {
		s1 = (struct ibv_sge){ (uintptr_t)a.buf, 64, a.mr->lkey };
		w = (struct ibv_send_wr){ .wr_id = 200 + i, .sg_list = &s1, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		expect(!ibv_post_send(ha, &w, &bw), "hostile: valid post_send");
	}
	got = poll_n(hcq, wc, 3);
	expect(got == 3, "hostile: its 3 valid sends complete");
	n = uverbs_maps(m, 64);
	/* Its SQ took and completed 3; its RQ was never needed; its CQ gave 3. */
	sq = find_ring(m, n, 3, 3, 3, &esize);
	rq = find_ring(m, n, 5, 0, 0, &resize);
	cq = find_ring(m, n, 3, 3, 0, &cesize);
	if (!sq || !rq || !cq) {
		fprintf(stderr, "FAIL: cannot find the hostile QP's rings in %d mappings\n", n);
		return 1;
	}
	printf("hostile: SQ entries of %u bytes, RQ entries of %u bytes\n", esize, resize);

	/* 1. Random WQEs: every byte garbage. */
	prod = sq->prod;
	for (i = 0; i < 16; i++)
		fill_random((uint8_t *)sq + METAROCE_RING_HDR_BYTES +
			    ((prod + i) & (DEPTH - 1)) * esize, esize);
	__atomic_store_n(&sq->prod, prod + 16, __ATOMIC_RELEASE);
	expect(!doorbell(ha, IB_USER_VERBS_CMD_POST_SEND), "doorbell after random WQEs");
	prod += 16;

	/* 2. Random WQEs again into a broken QP: flushed or refused, nothing runs. */
	for (i = 0; i < 8; i++)
		fill_random((uint8_t *)sq + METAROCE_RING_HDR_BYTES +
			    ((prod + i) & (DEPTH - 1)) * esize, esize);
	__atomic_store_n(&sq->prod, prod + 8, __ATOMIC_RELEASE);
	expect(!doorbell(ha, IB_USER_VERBS_CMD_POST_SEND), "doorbell into a broken QP");
	prod += 8;

	/* 3. Bad indices: prod far ahead, then behind, of what the kernel took. */
	__atomic_store_n(&sq->prod, prod + 100000, __ATOMIC_RELEASE);
	expect(!doorbell(ha, IB_USER_VERBS_CMD_POST_SEND), "doorbell after a wild prod");
	__atomic_store_n(&sq->prod, prod - 5, __ATOMIC_RELEASE);
	expect(!doorbell(ha, IB_USER_VERBS_CMD_POST_SEND), "doorbell after a backward prod");
	sq->cons = rnd();
	sq->done = rnd();
	sq->flags = rnd();

	/* 4. The receive ring: garbage WQEs, then a wild index. */
	prod = rq->prod;
	for (i = 0; i < 8; i++)
		fill_random((uint8_t *)rq + METAROCE_RING_HDR_BYTES +
			    ((prod + i) & (DEPTH - 1)) * resize, resize);
	__atomic_store_n(&rq->prod, prod + 8, __ATOMIC_RELEASE);
	expect(!doorbell(ha, IB_USER_VERBS_CMD_POST_RECV), "receive doorbell after garbage");
	__atomic_store_n(&rq->prod, prod + 1000000, __ATOMIC_RELEASE);
	expect(!doorbell(ha, IB_USER_VERBS_CMD_POST_RECV), "receive doorbell after a wild prod");

	/* 5. Work requests through the uverbs command on a ring QP are refused. */
	s1 = (struct ibv_sge){ (uintptr_t)a.buf, 64, 0 };
	w = (struct ibv_send_wr){ .wr_id = 300, .sg_list = &s1, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	expect(raw_post_send(ha, &w) != 0, "a raw post_send with a WR is refused");

	/* What came back on the hostile CQ: errors only, nothing for garbage succeeded. */
	usleep(500000);
	do {
		got = ibv_poll_cq(hcq, 256, wc);
		for (k = 0; k < (uint32_t)got; k++) {
			if (wc[k].status == IBV_WC_SUCCESS)
				success++;
			else
				errors++;
		}
	} while (got > 0);
	printf("hostile: %d error completions, %d successful\n", errors, success);
	expect(errors > 0, "the garbage produced error completions");
	expect(success == 0, "nothing written as garbage completed successfully");


	/*
	 * One bad field per WQE, each on a fresh QP (a local error moves the
	 * QP to Error, after which everything is flushed unchecked), and the
	 * status IB gives that error.
	 */
	for (k = 0; k < 10; k++) {
		static const enum ibv_wc_status want[10] = {
			IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR,
			IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR,
			IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR,
			IBV_WC_LOC_LEN_ERR,
		};
		static const char *const what[10] = {
			"huge num_sge", "random lkey", "the local DMA lkey (0) on a kernel address",
			"an lkey of another PD", "an SGE past the MR's end", "a 4 GiB SGE length",
			"inline data longer than max_inline", "an unknown opcode",
			"unknown send flags", "an atomic into 4 bytes",
		};
		struct ibv_qp *xa = make_qp(&a, hcq), *xb = make_qp(&b, hbcq);
		struct metaroce_ring_hdr *xsq;
		uint32_t xesize;
		char msg[160];

		connect_pair(xa, a.gid, xb, b.gid);
		/* Three valid Writes mark its SQ: prod == cons == done == 3. */
		s1 = (struct ibv_sge){ (uintptr_t)a.buf, 64, a.mr->lkey };
		w = (struct ibv_send_wr){ .wr_id = 500 + k, .sg_list = &s1, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED,
					  .wr.rdma = { (uintptr_t)b.buf, b.mr->rkey } };
		for (i = 0; i < 3; i++)
			expect(!ibv_post_send(xa, &w, &bw), "fresh QP: valid Write posted");
		got = poll_n(hcq, wc, 3);
		expect(got == 3 && wc[0].status == IBV_WC_SUCCESS && wc[2].status == IBV_WC_SUCCESS &&
		       wc[2].wr_id == 500 + k, "fresh QP: valid Writes complete");
		n = uverbs_maps(m, 64);
		xsq = find_ring(m, n, 3, 3, 3, &xesize);
		if (!xsq) {
			fprintf(stderr, "FAIL: cannot find the fresh QP's send ring\n");
			return 1;
		}
		e = (void *)((uint8_t *)xsq + METAROCE_RING_HDR_BYTES + 3 * xesize);
		sg = (void *)(e + 1);
		memset(e, 0, xesize);
		e->wr_id = 1000 + k;
		e->opcode = IBV_WR_SEND;
		e->send_flags = IBV_SEND_SIGNALED;
		e->num_sge = 1;
		sg->addr = (uintptr_t)a.buf;
		sg->length = 64;
		sg->lkey = a.mr->lkey;
		switch (k) {
		case 0: e->num_sge = 0x7fffffff; break;
		case 1: sg->lkey = (rnd() | 0x100) ^ a.mr->lkey; break;
		case 2: sg->lkey = 0; sg->addr = 0xffffffff81000000ull; break;
		case 3: sg->lkey = a.mr2->lkey; break;
		case 4: sg->addr = (uintptr_t)a.buf + BUF - 8; break;
		case 5: sg->length = 0xffffffff; break;
		case 6: e->send_flags |= IBV_SEND_INLINE; e->inline_len = 0x100000; break;
		case 7: e->opcode = 0xdead; break;
		case 8: e->send_flags = 0xffffffff; break;
		case 9: e->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; sg->length = 4; break;
		}
		__atomic_store_n(&xsq->prod, 4, __ATOMIC_RELEASE);
		expect(!doorbell(xa, IB_USER_VERBS_CMD_POST_SEND), "doorbell after a bad WQE");
		got = poll_n(hcq, wc, 1);
		snprintf(msg, sizeof(msg), "%s completes with %s", what[k],
			 ibv_wc_status_str(want[k]));
		expect(got == 1 && wc[0].wr_id == 1000 + k && wc[0].status == want[k], msg);
		if (got == 1)
			printf("hostile: %s -> %s\n", what[k], ibv_wc_status_str(wc[0].status));
		expect(!ibv_destroy_qp(xa), "destroy the fresh QP");
		expect(!ibv_destroy_qp(xb), "destroy its peer");
	}

	/* 6. A consumer index of the CQ that makes no sense, then more completions. */
	cq->cons = rnd();
	__atomic_store_n(&sq->prod, sq->prod + 3, __ATOMIC_RELEASE);
	expect(!doorbell(ha, IB_USER_VERBS_CMD_POST_SEND), "doorbell with a broken CQ");

	/* 7. An SRQ's ring: garbage after valid WQEs, then a wild index. */
	hostile_srq(&a, &b);

	/* The well-behaved pair still works, every byte checked. */
	good_traffic(&a, ga, &b, gb, 2);
	good_traffic(&a, ga, &b, gb, 3);

	ud_section(&a, &b);
	good_traffic(&a, ga, &b, gb, 4);

	/* Teardown of the broken QP and its rings must work too. */
	expect(!ibv_destroy_qp(ha), "destroy the hostile QP");
	expect(!ibv_destroy_qp(hb), "destroy its peer");
	expect(!ibv_destroy_qp(ga), "destroy good a");
	expect(!ibv_destroy_qp(gb), "destroy good b");
	if (failures)
		return 1;
	printf("hostile: PASS\n");
	return 0;
}
