// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The device-under-test control path: a debugfs command file that drives kernel Verbs. */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

/*
 * The conformance tester writes one command line to
 * /sys/kernel/debug/mr_dut/ctl and reads the answer back from the same file.
 * Commands (numbers in C syntax, so 0x... works):
 *   qp PEER_IPV4 PEER_QPN [RD]    RC QP to the peer, moved to RTS: "qp=I qpn=N";
 *                                 RD its max_rd_atomic (default 16)
 *   udqp QKEY                     UD QP with that qkey, moved to RTS: "qp=I qpn=N"
 *   mr QP LEN ACCESS              FRWR MR over a fresh buffer, registered through
 *                                 QP I; ACCESS letters w r a (remote write, read,
 *                                 atomic): "mr=M rkey=K va=V"
 *   recv QP LOFF LEN              post a receive into the QP's local buffer
 *   send QP LOFF LEN [IMM]        post a Send (with immediate when IMM is given)
 *   write QP LOFF LEN VA RKEY [IMM]
 *   read QP LOFF LEN VA RKEY
 *   fadd QP LOFF VA RKEY ADD
 *   cas QP LOFF VA RKEY CMP SWAP  post work; answer "wr=W"; a last word "fence"
 *                                 posts it with IB_SEND_FENCE
 *   poll QP MS                    wait up to MS for a completion, then take all:
 *                                 one line "wc wr=W status=S opcode=O len=L imm=I"
 *                                 each, or "none"
 *   state QP                      "state=S" (enum ib_qp_state)
 *   error QP                      move the QP to the Error state
 *   dereg M                       deregister MR M; its buffer stays, filled with 0xee
 *   destroy QP                    destroy the QP and the MRs registered through it
 *   fill l|m IDX OFF LEN SEED     byte i = SEED + i (mod 256), QP local or MR buffer
 *   dump l|m IDX OFF LEN          the bytes in hex
 *   reset                         destroy everything made so far
 * An error answers "error: ..." and the write returns the errno.
 */

#define MR_DUT_MAX_QPS	64
#define MR_DUT_MAX_MRS	64
#define MR_DUT_BUF_LEN	(512 * 1024)	/* a Write of more than 256 packets of 1 KiB */
#define MR_DUT_OUT_LEN	8192
#define MR_DUT_CQE	256

static char *ibdev = "mr0";
module_param(ibdev, charp, 0444);
MODULE_PARM_DESC(ibdev, "RDMA device under test (default mr0)");

struct mr_dut_buf {
	void *cpu;
	u64 dma;
	size_t len;
};

struct mr_dut_qp {
	struct ib_qp *qp;
	struct ib_cq *cq;
	struct mr_dut_buf local;
};

struct mr_dut_mr {
	struct ib_mr *mr;
	int qp;		/* registered through this QP, freed with it */
	struct mr_dut_buf buf;
};

static struct {
	struct mutex lock;	/* everything below */
	struct ib_device *dev;
	const struct ib_gid_attr *gid;
	struct ib_pd *pd;
	struct mr_dut_qp qps[MR_DUT_MAX_QPS];
	struct mr_dut_mr mrs[MR_DUT_MAX_MRS];
	u64 next_wr_id;
	char out[MR_DUT_OUT_LEN];
	size_t out_len;
	struct dentry *dir;
} dut;

static __printf(1, 2) void mr_dut_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dut.out_len += vscnprintf(dut.out + dut.out_len, sizeof(dut.out) - dut.out_len, fmt, ap);
	va_end(ap);
}

static int mr_dut_buf_alloc(struct mr_dut_buf *buf, size_t len)
{
	buf->cpu = kzalloc(len, GFP_KERNEL | __GFP_NOWARN);
	if (!buf->cpu)
		return -ENOMEM;
	buf->dma = ib_dma_map_single(dut.dev, buf->cpu, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dut.dev, buf->dma)) {
		kfree(buf->cpu);
		buf->cpu = NULL;
		return -ENOMEM;
	}
	buf->len = len;
	return 0;
}

static void mr_dut_buf_free(struct mr_dut_buf *buf)
{
	if (!buf->cpu)
		return;
	ib_dma_unmap_single(dut.dev, buf->dma, buf->len, DMA_BIDIRECTIONAL);
	kfree(buf->cpu);
	buf->cpu = NULL;
}

static void mr_dut_destroy(int i)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct mr_dut_qp *q = &dut.qps[i];
	int m;

	for (m = 0; m < MR_DUT_MAX_MRS; m++) {
		if (!dut.mrs[m].buf.cpu || dut.mrs[m].qp != i)
			continue;
		if (dut.mrs[m].mr)
			ib_dereg_mr(dut.mrs[m].mr);
		dut.mrs[m].mr = NULL;
		mr_dut_buf_free(&dut.mrs[m].buf);
	}
	if (q->qp) {
		ib_modify_qp(q->qp, &attr, IB_QP_STATE);
		ib_destroy_qp(q->qp);
	}
	q->qp = NULL;
	if (q->cq)
		ib_free_cq(q->cq);
	q->cq = NULL;
	mr_dut_buf_free(&q->local);
}

static void mr_dut_reset(void)
{
	int i;

	for (i = 0; i < MR_DUT_MAX_QPS; i++)
		mr_dut_destroy(i);
}

/* The device, its IPv4 RoCE v2 GID and a PD: taken on the first command. */
static int mr_dut_open(void)
{
	const struct ib_gid_attr *attr;
	struct ib_port_attr pattr;
	int i, err;

	if (dut.pd)
		return 0;
	dut.dev = ib_device_get_by_name(ibdev, RDMA_DRIVER_UNKNOWN);
	if (!dut.dev) {
		mr_dut_say("error: no RDMA device %s\n", ibdev);
		return -ENODEV;
	}
	err = ib_query_port(dut.dev, 1, &pattr);
	if (err)
		goto err_put;
	for (i = 0; i < pattr.gid_tbl_len && !dut.gid; i++) {
		attr = rdma_get_gid_attr(dut.dev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw))
			dut.gid = attr;
		else
			rdma_put_gid_attr(attr);
	}
	err = -EADDRNOTAVAIL;
	if (!dut.gid)
		goto err_put;
	dut.pd = ib_alloc_pd(dut.dev, 0);
	if (IS_ERR(dut.pd)) {
		err = PTR_ERR(dut.pd);
		dut.pd = NULL;
		goto err_gid;
	}
	return 0;

err_gid:
	rdma_put_gid_attr(dut.gid);
	dut.gid = NULL;
err_put:
	ib_device_put(dut.dev);
	dut.dev = NULL;
	mr_dut_say("error: cannot open %s: %d\n", ibdev, err);
	return err;
}

static void mr_dut_close(void)
{
	mr_dut_reset();
	if (dut.pd)
		ib_dealloc_pd(dut.pd);
	dut.pd = NULL;
	if (dut.gid)
		rdma_put_gid_attr(dut.gid);
	dut.gid = NULL;
	if (dut.dev)
		ib_device_put(dut.dev);
	dut.dev = NULL;
}

struct mr_dut_resolve {
	struct completion done;
	int status;
};

static void mr_dut_resolved(int status, struct sockaddr *src, struct rdma_dev_addr *addr,
			    void *context)
{
	struct mr_dut_resolve *r = context;

	r->status = status;
	complete(&r->done);
}

/* Kernel users bring a resolved address vector: route and neighbour lookup. */
static int mr_dut_resolve_dmac(__be32 peer, struct rdma_ah_attr *ah)
{
	struct rdma_dev_addr dev_addr = { .net = &init_net, .sgid_attr = dut.gid };
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = peer };
	struct mr_dut_resolve r;
	int err;

	memcpy(&src.sin_addr.s_addr, dut.gid->gid.raw + 12, 4);
	init_completion(&r.done);
	err = rdma_resolve_ip((struct sockaddr *)&src, (struct sockaddr *)&dst, &dev_addr,
			      2000, mr_dut_resolved, true, &r);
	if (err)
		return err;
	wait_for_completion(&r.done);
	if (r.status)
		return r.status;
	ether_addr_copy(ah->roce.dmac, dev_addr.dst_dev_addr);
	return 0;
}

static int mr_dut_qp_to_rts(struct mr_dut_qp *q, __be32 peer, u32 peer_qpn, u32 psn,
			    u8 rd_atomic)
{
	struct ib_qp_attr attr = {};
	union ib_gid dgid = {};
	int err;

	attr.qp_state = IB_QPS_INIT;
	attr.port_num = 1;
	attr.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			       IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
	err = ib_modify_qp(q->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = peer_qpn;
	attr.rq_psn = psn;
	attr.max_dest_rd_atomic = 16;
	attr.min_rnr_timer = IB_RNR_TIMER_000_64;
	attr.ah_attr.type = rdma_ah_find_type(dut.dev, 1);
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	ipv6_addr_set_v4mapped(peer, (struct in6_addr *)dgid.raw);
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, dut.gid->index, 64, 0);
	err = mr_dut_resolve_dmac(peer, &attr.ah_attr);
	if (err)
		return err;
	err = ib_modify_qp(q->qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			   IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = psn;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = rd_atomic;
	return ib_modify_qp(q->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
}

static int mr_dut_ud_to_rts(struct mr_dut_qp *q, u32 qkey)
{
	struct ib_qp_attr attr = {};
	int err;

	attr.qp_state = IB_QPS_INIT;
	attr.port_num = 1;
	attr.qkey = qkey;
	err = ib_modify_qp(q->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_QKEY);
	if (err)
		return err;
	attr.qp_state = IB_QPS_RTR;
	err = ib_modify_qp(q->qp, &attr, IB_QP_STATE);
	if (err)
		return err;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0;
	return ib_modify_qp(q->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

static int mr_dut_cmd_qp(char **argv, int argc)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 128, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct mr_dut_qp *q = NULL;
	bool ud = !strcmp(argv[0], "udqp");
	__be32 peer = 0;
	u32 peer_qpn = 0, qkey = 0;
	u8 rd_atomic = 16;
	int i, err;

	if (ud) {
		if (argc != 2 || kstrtou32(argv[1], 0, &qkey))
			return -EINVAL;
		init.qp_type = IB_QPT_UD;
	} else if ((argc != 3 && argc != 4) || !in4_pton(argv[1], -1, (u8 *)&peer, -1, NULL) ||
		   kstrtou32(argv[2], 0, &peer_qpn) ||
		   (argc == 4 && kstrtou8(argv[3], 0, &rd_atomic))) {
		return -EINVAL;
	}
	for (i = 0; i < MR_DUT_MAX_QPS && !q; i++)
		if (!dut.qps[i].qp)
			q = &dut.qps[i];
	if (!q)
		return -ENOSPC;
	i = q - dut.qps;
	err = mr_dut_buf_alloc(&q->local, MR_DUT_BUF_LEN);
	if (err)
		return err;
	q->cq = ib_alloc_cq(dut.dev, NULL, MR_DUT_CQE, 0, IB_POLL_DIRECT);
	if (IS_ERR(q->cq)) {
		err = PTR_ERR(q->cq);
		q->cq = NULL;
		goto err;
	}
	init.send_cq = q->cq;
	init.recv_cq = q->cq;
	q->qp = ib_create_qp(dut.pd, &init);
	if (IS_ERR(q->qp)) {
		err = PTR_ERR(q->qp);
		q->qp = NULL;
		goto err;
	}
	err = ud ? mr_dut_ud_to_rts(q, qkey) : mr_dut_qp_to_rts(q, peer, peer_qpn, 0, rd_atomic);
	if (err)
		goto err;
	mr_dut_say("qp=%d qpn=%u\n", i, q->qp->qp_num);
	return 0;

err:
	if (q->qp)
		ib_destroy_qp(q->qp);
	q->qp = NULL;
	if (q->cq)
		ib_free_cq(q->cq);
	q->cq = NULL;
	mr_dut_buf_free(&q->local);
	return err;
}

static struct mr_dut_qp *mr_dut_qp_arg(const char *s)
{
	u32 i;

	if (kstrtou32(s, 0, &i) || i >= MR_DUT_MAX_QPS || !dut.qps[i].qp)
		return NULL;
	return &dut.qps[i];
}

static int mr_dut_poll_one(struct mr_dut_qp *q, struct ib_wc *wc, unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	int n;

	for (;;) {
		n = ib_poll_cq(q->cq, 1, wc);
		if (n || time_after(jiffies, end))
			return n;
		usleep_range(100, 200);
	}
}

static int mr_dut_cmd_mr(char **argv, int argc)
{
	struct mr_dut_mr *m = NULL;
	struct ib_reg_wr wr = {};
	struct scatterlist sg;
	struct mr_dut_qp *q;
	struct ib_wc wc;
	int access = IB_ACCESS_LOCAL_WRITE;
	u32 len;
	int i, n, err;

	q = argc > 1 ? mr_dut_qp_arg(argv[1]) : NULL;
	if (argc != 4 || !q || kstrtou32(argv[2], 0, &len) || !len || len > MR_DUT_BUF_LEN)
		return -EINVAL;
	if (strchr(argv[3], 'w'))
		access |= IB_ACCESS_REMOTE_WRITE;
	if (strchr(argv[3], 'r'))
		access |= IB_ACCESS_REMOTE_READ;
	if (strchr(argv[3], 'a'))
		access |= IB_ACCESS_REMOTE_ATOMIC;
	for (i = 0; i < MR_DUT_MAX_MRS && !m; i++)
		if (!dut.mrs[i].mr)
			m = &dut.mrs[i];
	if (!m)
		return -ENOSPC;
	/* Page-aligned (kmalloc aligns power-of-two sizes), so the page list is exact. */
	mr_dut_buf_free(&m->buf);	/* left by dereg */
	err = mr_dut_buf_alloc(&m->buf, roundup_pow_of_two(max_t(u32, len, PAGE_SIZE)));
	if (err)
		return err;
	m->mr = ib_alloc_mr(dut.pd, IB_MR_TYPE_MEM_REG, DIV_ROUND_UP(len, PAGE_SIZE));
	if (IS_ERR(m->mr)) {
		err = PTR_ERR(m->mr);
		m->mr = NULL;
		goto err;
	}
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = m->buf.dma;
	sg_dma_len(&sg) = len;
	n = ib_map_mr_sg(m->mr, &sg, 1, NULL, PAGE_SIZE);
	err = n < 0 ? n : -EINVAL;
	if (n != 1)
		goto err;
	ib_update_fast_reg_key(m->mr, ib_inc_rkey(m->mr->rkey));
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_id = dut.next_wr_id++;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = m->mr;
	wr.key = m->mr->rkey;
	wr.access = access;
	err = ib_post_send(q->qp, &wr.wr, NULL);
	if (err)
		goto err;
	err = -ETIMEDOUT;
	if (mr_dut_poll_one(q, &wc, 1000) != 1)
		goto err;
	err = -EIO;
	if (wc.status != IB_WC_SUCCESS || wc.opcode != IB_WC_REG_MR)
		goto err;
	m->qp = q - dut.qps;
	mr_dut_say("mr=%ld rkey=0x%x va=0x%llx\n", (long)(m - dut.mrs), m->mr->rkey,
		   m->mr->iova);
	return 0;

err:
	if (m->mr)
		ib_dereg_mr(m->mr);
	m->mr = NULL;
	mr_dut_buf_free(&m->buf);
	return err;
}

/* Parses argv[first..] as u64 numbers into v[]; all must be there. */
static int mr_dut_nums(char **argv, int argc, int first, u64 *v, int n)
{
	int i;

	if (argc < first + n)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (kstrtou64(argv[first + i], 0, &v[i]))
			return -EINVAL;
	return 0;
}

static int mr_dut_cmd_post(char **argv, int argc)
{
	struct ib_atomic_wr awr = {};
	struct ib_rdma_wr rwr = {};
	struct ib_send_wr *wr = &rwr.wr;
	struct ib_recv_wr recv = {};
	struct ib_sge sge = {};
	struct mr_dut_qp *q;
	const char *op = argv[0];
	bool fence = argc > 1 && !strcmp(argv[argc - 1], "fence");
	u64 v[6] = {};
	int err;

	if (fence)
		argc--;
	q = argc > 1 ? mr_dut_qp_arg(argv[1]) : NULL;
	if (argc < 4 || !q)
		return -EINVAL;
	err = mr_dut_nums(argv, argc, 2, v, 1);
	if (err || v[0] >= MR_DUT_BUF_LEN)
		return -EINVAL;
	sge.addr = q->local.dma + v[0];
	sge.lkey = dut.pd->local_dma_lkey;

	if (!strcmp(op, "recv") || !strcmp(op, "send")) {
		err = mr_dut_nums(argv, argc, 3, v + 1, 1);
		if (err || v[0] + v[1] > MR_DUT_BUF_LEN)
			return -EINVAL;
		sge.length = v[1];
		if (!strcmp(op, "recv")) {
			recv.wr_id = dut.next_wr_id;
			recv.sg_list = &sge;
			recv.num_sge = 1;
			err = ib_post_recv(q->qp, &recv, NULL);
			goto out;
		}
		wr->opcode = IB_WR_SEND;
		if (argc > 4 && !mr_dut_nums(argv, argc, 4, v + 2, 1)) {
			wr->opcode = IB_WR_SEND_WITH_IMM;
			wr->ex.imm_data = cpu_to_be32(v[2]);
		}
	} else if (!strcmp(op, "write") || !strcmp(op, "read")) {
		err = mr_dut_nums(argv, argc, 3, v + 1, 3);
		if (err || v[0] + v[1] > MR_DUT_BUF_LEN)
			return -EINVAL;
		sge.length = v[1];
		rwr.remote_addr = v[2];
		rwr.rkey = v[3];
		wr->opcode = op[0] == 'w' ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ;
		if (op[0] == 'w' && argc > 6 && !mr_dut_nums(argv, argc, 6, v + 4, 1)) {
			wr->opcode = IB_WR_RDMA_WRITE_WITH_IMM;
			wr->ex.imm_data = cpu_to_be32(v[4]);
		}
	} else if (!strcmp(op, "fadd") || !strcmp(op, "cas")) {
		err = mr_dut_nums(argv, argc, 3, v + 1, op[0] == 'f' ? 3 : 4);
		if (err || v[0] + 8 > MR_DUT_BUF_LEN)
			return -EINVAL;
		wr = &awr.wr;
		sge.length = 8;
		awr.remote_addr = v[1];
		awr.rkey = v[2];
		if (op[0] == 'f') {
			wr->opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
			awr.compare_add = v[3];
		} else {
			wr->opcode = IB_WR_ATOMIC_CMP_AND_SWP;
			awr.compare_add = v[3];
			awr.swap = v[4];
		}
	} else {
		return -EINVAL;
	}
	wr->wr_id = dut.next_wr_id;
	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->send_flags = IB_SEND_SIGNALED | (fence ? IB_SEND_FENCE : 0);
	err = ib_post_send(q->qp, wr, NULL);
out:
	if (!err)
		mr_dut_say("wr=%llu\n", dut.next_wr_id++);
	return err;
}

static int mr_dut_cmd_poll(char **argv, int argc)
{
	struct mr_dut_qp *q;
	struct ib_wc wc;
	u32 ms;
	int n = 0;

	q = argc > 1 ? mr_dut_qp_arg(argv[1]) : NULL;
	if (argc != 3 || !q || kstrtou32(argv[2], 0, &ms))
		return -EINVAL;
	while (mr_dut_poll_one(q, &wc, n ? 0 : ms) == 1) {
		mr_dut_say("wc wr=%llu status=%d opcode=%d len=%u imm=0x%x\n", wc.wr_id,
			   wc.status, wc.opcode, wc.byte_len,
			   (wc.wc_flags & IB_WC_WITH_IMM) ? be32_to_cpu(wc.ex.imm_data) : 0);
		n++;
	}
	if (!n)
		mr_dut_say("none\n");
	return 0;
}

/* The MR goes; its buffer is kept (so a late access reads 0xee, not freed memory). */
static int mr_dut_cmd_dereg(char **argv, int argc)
{
	struct mr_dut_mr *m;
	u32 i;

	if (argc != 2 || kstrtou32(argv[1], 0, &i) || i >= MR_DUT_MAX_MRS || !dut.mrs[i].mr)
		return -EINVAL;
	m = &dut.mrs[i];
	ib_dereg_mr(m->mr);
	m->mr = NULL;
	memset(m->buf.cpu, 0xee, m->buf.len);
	mr_dut_say("ok\n");
	return 0;
}

static int mr_dut_cmd_state(char **argv, int argc)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	struct mr_dut_qp *q;
	int err;

	q = argc > 1 ? mr_dut_qp_arg(argv[1]) : NULL;
	if (argc != 2 || !q)
		return -EINVAL;
	err = ib_query_qp(q->qp, &attr, IB_QP_STATE, &init);
	if (!err)
		mr_dut_say("state=%d\n", attr.qp_state);
	return err;
}

/* "error QP": the QP goes to the Error state, as a consumer tearing down does. */
static int mr_dut_cmd_error(char **argv, int argc)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct mr_dut_qp *q;
	int err;

	q = argc > 1 ? mr_dut_qp_arg(argv[1]) : NULL;
	if (argc != 2 || !q)
		return -EINVAL;
	err = ib_modify_qp(q->qp, &attr, IB_QP_STATE);
	if (!err)
		mr_dut_say("ok\n");
	return err;
}

/* The bytes a fill or dump command names: a QP's local buffer or an MR's buffer. */
static u8 *mr_dut_bytes(char **argv, int argc, u64 *len)
{
	u64 v[3];

	if (argc < 5 || mr_dut_nums(argv, argc, 2, v, 3))
		return NULL;
	*len = v[2];
	if (!strcmp(argv[1], "l") && v[0] < MR_DUT_MAX_QPS && dut.qps[v[0]].qp &&
	    v[1] + v[2] <= dut.qps[v[0]].local.len && v[1] + v[2] >= v[1])
		return (u8 *)dut.qps[v[0]].local.cpu + v[1];
	if (!strcmp(argv[1], "m") && v[0] < MR_DUT_MAX_MRS && dut.mrs[v[0]].mr &&
	    v[1] + v[2] <= dut.mrs[v[0]].buf.len && v[1] + v[2] >= v[1])
		return (u8 *)dut.mrs[v[0]].buf.cpu + v[1];
	return NULL;
}

static int mr_dut_cmd_fill(char **argv, int argc)
{
	u64 len, seed, i;
	u8 *p = mr_dut_bytes(argv, argc, &len);

	if (!p || argc != 6 || kstrtou64(argv[5], 0, &seed))
		return -EINVAL;
	for (i = 0; i < len; i++)
		p[i] = seed + i;
	mr_dut_say("ok\n");
	return 0;
}

static int mr_dut_cmd_dump(char **argv, int argc)
{
	u64 len, i;
	u8 *p = mr_dut_bytes(argv, argc, &len);

	if (!p || argc != 5 || 2 * len + 2 > sizeof(dut.out))
		return -EINVAL;
	for (i = 0; i < len; i++)
		mr_dut_say("%02x", p[i]);
	mr_dut_say("\n");
	return 0;
}

static int mr_dut_run(char *line)
{
	char *argv[8];
	int argc = 0;
	char *tok;

	while ((tok = strsep(&line, " \t\n")) && argc < ARRAY_SIZE(argv))
		if (*tok)
			argv[argc++] = tok;
	if (!argc)
		return -EINVAL;
	if (!strcmp(argv[0], "reset")) {
		mr_dut_reset();
		mr_dut_say("ok\n");
		return 0;
	}
	if (mr_dut_open())
		return -ENODEV;
	if (!strcmp(argv[0], "qp") || !strcmp(argv[0], "udqp"))
		return mr_dut_cmd_qp(argv, argc);
	if (!strcmp(argv[0], "mr"))
		return mr_dut_cmd_mr(argv, argc);
	if (!strcmp(argv[0], "poll"))
		return mr_dut_cmd_poll(argv, argc);
	if (!strcmp(argv[0], "state"))
		return mr_dut_cmd_state(argv, argc);
	if (!strcmp(argv[0], "error"))
		return mr_dut_cmd_error(argv, argc);
	if (!strcmp(argv[0], "dereg"))
		return mr_dut_cmd_dereg(argv, argc);
	if (!strcmp(argv[0], "destroy") && argc == 2 && mr_dut_qp_arg(argv[1])) {
		mr_dut_destroy(mr_dut_qp_arg(argv[1]) - dut.qps);
		mr_dut_say("ok\n");
		return 0;
	}
	if (!strcmp(argv[0], "fill"))
		return mr_dut_cmd_fill(argv, argc);
	if (!strcmp(argv[0], "dump"))
		return mr_dut_cmd_dump(argv, argc);
	return mr_dut_cmd_post(argv, argc);
}

static ssize_t mr_dut_write(struct file *f, const char __user *ubuf, size_t len, loff_t *pos)
{
	char line[256];
	int err;

	if (len >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, ubuf, len))
		return -EFAULT;
	line[len] = '\0';
	mutex_lock(&dut.lock);
	dut.out_len = 0;
	dut.out[0] = '\0';
	err = mr_dut_run(line);
	if (err && !dut.out_len)
		mr_dut_say("error: %d\n", err);
	mutex_unlock(&dut.lock);
	return err ? err : len;
}

static ssize_t mr_dut_read(struct file *f, char __user *ubuf, size_t len, loff_t *pos)
{
	ssize_t n;

	mutex_lock(&dut.lock);
	n = simple_read_from_buffer(ubuf, len, pos, dut.out, dut.out_len);
	mutex_unlock(&dut.lock);
	return n;
}

static const struct file_operations mr_dut_fops = {
	.owner = THIS_MODULE,
	.write = mr_dut_write,
	.read = mr_dut_read,
	.llseek = default_llseek,
};

static int __init mr_dut_init(void)
{
	mutex_init(&dut.lock);
	dut.dir = debugfs_create_dir("mr_dut", NULL);
	debugfs_create_file("ctl", 0600, dut.dir, NULL, &mr_dut_fops);
	return 0;
}

static void __exit mr_dut_exit(void)
{
	debugfs_remove_recursive(dut.dir);
	mutex_lock(&dut.lock);
	mr_dut_close();
	mutex_unlock(&dut.lock);
}

module_init(mr_dut_init);
module_exit(mr_dut_exit);
MODULE_DESCRIPTION("MetaRoCE conformance suite: control path into the device under test");
MODULE_LICENSE("Dual BSD/GPL");
