// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Userspace Verbs through the metaroce provider: one check per invocation. */

/*
 * usage: uverbs_basic DEVICE CHECK
 *   open         the device opens and query_device_ex/query_port answer
 *   pd           a PD is allocated and freed
 *   mr           a user buffer is registered (pinned) and deregistered
 *   mr-readonly  a writable MR over read-only memory is refused (EFAULT)
 *   mr-mwbind    an MR with MW_BIND access registers (memory windows: uverbs_mw)
 *   datapath     a CQ, an SRQ, RC QPs (one on the SRQ) and a UD QP (mmapped
 *                rings) are created and destroyed; the UD QP, in RTS, refuses
 *                a modify naming another current state; an extended CQ with
 *                completion timestamps fails with EOPNOTSUPP (uverbs_ex.c
 *                tries the extended API itself)
 *   bigcq        a CQ of 1,000,000 entries: its mmapped ring counts in VmPin
 *                while it exists and not after; prints "bigcq grew=KB
 *                left=KB", or "bigcq: ENOMEM" (exit 3) when RLIMIT_MEMLOCK
 *                refuses it
 *   hold         keeps a PD and an MR open until the device goes away, then
 *                expects IBV_EVENT_DEVICE_FATAL; prints "holding pinned=KB"
 *                when ready and "released pinned=KB" after the event
 * Exits 0 when the check holds; explains itself on stderr otherwise.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>

#define MR_BYTES	(1 << 20)

/* The kB this process has pinned (VmPin), or -1. */
static long pinned_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, strerror(err));
	return 1;
}

static struct ibv_context *open_by_name(const char *name)
{
	struct ibv_device **list, *found = NULL;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list) {
		fail("ibv_get_device_list", errno);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			found = list[i];
	if (!found)
		fprintf(stderr, "FAIL: no device named %s among %d\n", name, n);
	else if (!(ctx = ibv_open_device(found)))
		fail("ibv_open_device", errno);
	ibv_free_device_list(list);
	return ctx;
}

static int check_open(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex attr;
	struct ibv_port_attr port;
	int err;

	err = ibv_query_device_ex(ctx, NULL, &attr);
	if (err)
		return fail("ibv_query_device_ex", err);
	err = ibv_query_port(ctx, 1, &port);
	if (err)
		return fail("ibv_query_port", err);
	if (attr.orig_attr.phys_port_cnt != 1 || port.link_layer != IBV_LINK_LAYER_ETHERNET) {
		fprintf(stderr, "FAIL: ports %u, link layer %u\n",
			attr.orig_attr.phys_port_cnt, port.link_layer);
		return 1;
	}
	printf("max_qp %d max_mr %d port_state %d active_mtu %d\n",
	       attr.orig_attr.max_qp, attr.orig_attr.max_mr, port.state, port.active_mtu);
	return 0;
}

static int check_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	int err;

	if (!pd)
		return fail("ibv_alloc_pd", errno);
	err = ibv_dealloc_pd(pd);
	return err ? fail("ibv_dealloc_pd", err) : 0;
}

/* Registers LEN bytes at BUF with ACCESS; 0 or the errno of the refusal. */
static int try_reg(struct ibv_pd *pd, void *buf, size_t len, int access)
{
	struct ibv_mr *mr;
	int err;

	mr = ibv_reg_mr(pd, buf, len, access);
	if (!mr)
		return errno;
	if (mr->addr != buf || mr->length != len || !mr->lkey || mr->lkey != mr->rkey) {
		fprintf(stderr, "FAIL: MR addr %p length %zu lkey %#x rkey %#x\n",
			mr->addr, mr->length, mr->lkey, mr->rkey);
		ibv_dereg_mr(mr);
		return EPROTO;
	}
	err = ibv_dereg_mr(mr);
	if (err)
		fprintf(stderr, "FAIL: ibv_dereg_mr: %s\n", strerror(err));
	return err;
}

static int check_mr(struct ibv_pd *pd, const char *which)
{
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	void *buf;
	int err;

	buf = mmap(NULL, MR_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return fail("mmap", errno);
	memset(buf, 0x5a, MR_BYTES);

	if (!strcmp(which, "mr")) {
		/* Unaligned start and length: the pin covers the pages around it. */
		err = try_reg(pd, (char *)buf + 100, MR_BYTES - 200, rw);
		if (err)
			return fail("ibv_reg_mr of a user buffer", err);
		return 0;
	}
	if (!strcmp(which, "mr-readonly")) {
		if (mprotect(buf, MR_BYTES, PROT_READ))
			return fail("mprotect", errno);
		err = try_reg(pd, buf, MR_BYTES, rw);
		if (err != EFAULT)
			return fail("writable MR over read-only memory (want EFAULT)", err ? err : 0);
		err = try_reg(pd, buf, MR_BYTES, IBV_ACCESS_REMOTE_READ);
		if (err)
			return fail("read-only MR over read-only memory", err);
		return 0;
	}
	/* mr-mwbind: windows may be bound to it. */
	err = try_reg(pd, buf, MR_BYTES, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (err)
		return fail("MR with IBV_ACCESS_MW_BIND", err);
	return 0;
}

static int want_eopnotsupp(const char *what, const void *obj)
{
	if (obj) {
		fprintf(stderr, "FAIL: %s succeeded; the device cannot do it\n", what);
		return 1;
	}
	if (errno != EOPNOTSUPP)
		return fail(what, errno);
	printf("%s: %s\n", what, strerror(errno));
	return 0;
}

/*
 * IBV_DEVICE_CURR_QP_STATE_MOD: a modify that names the QP's current state
 * (allowed by the IB state table only towards RTS) is checked against it.
 * qp is a UD QP in RESET.
 */
static int check_cur_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 1 };
	int err;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		return fail("UD QP to INIT", errno);
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return fail("UD QP to RTR", errno);
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return fail("UD QP to RTS", errno);
	a.cur_qp_state = IBV_QPS_SQD;	/* it is in RTS */
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE);
	if (!err) {
		fprintf(stderr, "FAIL: RTS -> RTS claiming the QP is in SQD succeeded\n");
		return 1;
	}
	a.cur_qp_state = IBV_QPS_RTS;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE);
	if (err)
		return fail("RTS -> RTS naming RTS as the current state", err);
	return 0;
}

static int check_datapath(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_cq_init_attr_ex cq_ex = {
		.cqe = 16, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_qp_init_attr qp = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_srq_init_attr srq = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct ibv_srq *s;
	struct ibv_qp *rc;
	struct ibv_cq *cq;
	int bad = 0;

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		return fail("ibv_create_cq", errno);
	if (cq->cqe < 16)
		bad += fail("ibv_create_cq reports fewer entries than asked", EINVAL);
	qp.send_cq = cq;
	qp.recv_cq = cq;
	rc = ibv_create_qp(pd, &qp);
	if (!rc)
		bad += fail("ibv_create_qp (RC)", errno);
	else if (ibv_destroy_qp(rc))
		bad += fail("ibv_destroy_qp", errno);
	s = ibv_create_srq(pd, &srq);
	if (!s)
		return bad + fail("ibv_create_srq", errno);
	qp.srq = s;
	rc = ibv_create_qp(pd, &qp);
	if (!rc)
		bad += fail("ibv_create_qp (RC on an SRQ)", errno);
	else if (ibv_destroy_qp(rc))
		bad += fail("ibv_destroy_qp (RC on an SRQ)", errno);
	qp.srq = NULL;
	if (ibv_destroy_srq(s))
		bad += fail("ibv_destroy_srq", errno);
	qp.qp_type = IBV_QPT_UD;
	rc = ibv_create_qp(pd, &qp);
	if (!rc) {
		bad += fail("ibv_create_qp (UD)", errno);
	} else {
		bad += check_cur_state(rc);
		if (ibv_destroy_qp(rc))
			bad += fail("ibv_destroy_qp (UD)", errno);
	}
	if (ibv_destroy_cq(cq))
		bad += fail("ibv_destroy_cq", errno);
	errno = 0;
	bad += want_eopnotsupp("ibv_create_cq_ex with completion timestamps",
			       ibv_create_cq_ex(ctx, &cq_ex));
	return bad;
}

static int check_hold(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_async_event ev;
	struct ibv_mr *mr;
	void *buf;

	buf = malloc(MR_BYTES);
	if (!buf)
		return fail("malloc", errno);
	mr = ibv_reg_mr(pd, buf, MR_BYTES, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return fail("ibv_reg_mr", errno);
	printf("holding pinned=%ld\n", pinned_kb());
	fflush(stdout);

	for (;;) {
		if (ibv_get_async_event(ctx, &ev))
			return fail("ibv_get_async_event", errno);
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			break;
		printf("event %s\n", ibv_event_type_str(ev.event_type));
		fflush(stdout);
	}
	/* The kernel destroyed our objects and unpinned the pages already. */
	printf("released pinned=%ld\n", pinned_kb());
	ibv_dereg_mr(mr);
	free(buf);
	return 0;
}

static int check_bigcq(struct ibv_context *ctx)
{
	long before = pinned_kb(), during, after;
	struct ibv_cq *cq;

	cq = ibv_create_cq(ctx, 1000000, NULL, NULL, 0);
	if (!cq) {
		if (errno != ENOMEM)
			return fail("ibv_create_cq of 1,000,000 entries", errno);
		printf("bigcq: ENOMEM\n");
		return 3;
	}
	during = pinned_kb();
	if (ibv_destroy_cq(cq))
		return fail("ibv_destroy_cq", errno);
	after = pinned_kb();
	printf("bigcq grew=%ld left=%ld\n", during - before, after - before);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	const char *check;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEVICE open|pd|mr|mr-readonly|mr-mwbind|datapath|bigcq|hold\n",
			argv[0]);
		return 2;
	}
	check = argv[2];
	ctx = open_by_name(argv[1]);
	if (!ctx)
		return 1;

	if (strcmp(check, "open") && strcmp(check, "pd")) {
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			return fail("ibv_alloc_pd", errno);
	}

	if (!strcmp(check, "open"))
		ret = check_open(ctx);
	else if (!strcmp(check, "pd"))
		ret = check_pd(ctx);
	else if (!strncmp(check, "mr", 2))
		ret = check_mr(pd, check);
	else if (!strcmp(check, "datapath"))
		ret = check_datapath(ctx, pd);
	else if (!strcmp(check, "hold"))
		ret = check_hold(ctx, pd);
	else if (!strcmp(check, "bigcq"))
		ret = check_bigcq(ctx);
	else
		ret = fail(check, EINVAL);

	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return ret == 3 ? 3 : ret ? 1 : 0;
}
