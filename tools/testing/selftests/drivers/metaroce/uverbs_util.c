// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the user-Verbs test programs share: errors, opening a device, connecting QPs. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uverbs_util.h"

int failures;

void expect(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "FAIL: %s\n", what);
		failures++;
	}
}

void die(const char *what)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, strerror(errno));
	exit(1);
}

struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list");
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		die(name);
	return ctx;
}

/* qp (on GID index gid) to RTR and RTS towards pqp (on pgid). */
static void connect_qp(struct ibv_qp *qp, int gid, struct ibv_qp *pqp, int pgid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = pqp->qp_num, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .hop_limit = 1, .sgid_index = gid } },
	};

	struct ibv_device_attr dev;
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

	if (ibv_query_gid(pqp->context, 1, pgid, &a.ah_attr.grh.dgid))
		die("query gid");
	if (ibv_query_device(qp->context, &dev))
		die("query device");
	/* [MR-VERBS-16] more Reads in flight than the device offers: EINVAL */
	a.max_dest_rd_atomic = dev.max_qp_rd_atom + 1;
	errno = ibv_modify_qp(qp, &a, rtr);	/* the errno it failed with, or 0 */
	if (errno != EINVAL)
		die("RTR with max_dest_rd_atomic above max_qp_rd_atom: not EINVAL");
	a.max_dest_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, rtr))
		die("modify RTR");
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = dev.max_qp_init_rd_atom + 1;
	errno = ibv_modify_qp(qp, &a, rts);
	if (errno != EINVAL)
		die("RTS with max_rd_atomic above max_qp_init_rd_atom: not EINVAL");
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, rts))
		die("modify RTS");
}

void connect_pair(struct ibv_qp *qa, int gid_a, struct ibv_qp *qb, int gid_b)
{
	connect_qp(qa, gid_a, qb, gid_b);
	connect_qp(qb, gid_b, qa, gid_a);
}

int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	int got = 0, r, tries = 60000;

	while (got < n && tries--) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return got;
		got += r;
		if (!r)
			usleep(1000);
	}
	return got;
}
