// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-device counters kept per CPU on the packet path, summed for `rdma statistic`. */

#include "metaroce.h"

struct metaroce_counters {
	u64 c[METAROCE_NR_COUNTERS];
};

static const struct rdma_stat_desc metaroce_counter_descs[] = {
	[METAROCE_CNT_RX_PACKETS].name = "rx_packets",
	[METAROCE_CNT_RX_BYTES].name = "rx_bytes",
	[METAROCE_CNT_RX_DROP_MALFORMED].name = "rx_drop_malformed",
	[METAROCE_CNT_RX_DROP_UNKNOWN_CONN].name = "rx_drop_unknown_conn",
	[METAROCE_CNT_RX_DROP_NOMEM].name = "rx_drop_nomem",
	[METAROCE_CNT_RX_ECN_CE].name = "rx_ecn_ce",
	[METAROCE_CNT_TX_PACKETS].name = "tx_packets",
	[METAROCE_CNT_TX_BYTES].name = "tx_bytes",
	[METAROCE_CNT_TX_DROP_NOMEM].name = "tx_drop_nomem",
	[METAROCE_CNT_TX_DROP_NOROUTE].name = "tx_drop_noroute",
	[METAROCE_CNT_PLACE_ERRORS].name = "place_errors",
	[METAROCE_CNT_STREAM_OPEN_ERRORS].name = "stream_open_errors",
	[METAROCE_CNT_CONN_FAILURES].name = "conn_failures",
	[METAROCE_CNT_RX_DROP_UNKNOWN_QP].name = "rx_drop_unknown_qp",
	[METAROCE_CNT_RX_DROP_QKEY].name = "rx_drop_qkey",
	[METAROCE_CNT_RX_DROP_NO_RECV].name = "rx_drop_no_recv",
	[METAROCE_CNT_UD_SEND_ERRORS].name = "ud_send_errors",
	[METAROCE_CNT_READ_RESP_ABORTS].name = "read_resp_aborts",
	[METAROCE_CNT_USER_WQE_ERRORS].name = "user_wqe_errors",
	[METAROCE_CNT_USER_AH_ERRORS].name = "user_ah_errors",
	[METAROCE_CNT_TIMER_PAST].name = "timer_past_deadlines",
	[METAROCE_CNT_CONN_LIMIT_DROPS].name = "conn_limit_drops",
	[METAROCE_CNT_LOCAL_ACCESS_ERRORS].name = "local_access_errors",
	[METAROCE_CNT_RX_DROP_WRONG_ADDR].name = "rx_drop_wrong_addr",
	[METAROCE_CNT_RESTART_CHALLENGES].name = "restart_challenges",
	[METAROCE_CNT_TX_RUNS].name = "tx_runs",
	[METAROCE_CNT_TX_RUN_DATA].name = "tx_run_data_packets",
	[METAROCE_CNT_TX_GSO_SKBS].name = "tx_gso_skbs",
	[METAROCE_CNT_CONN_RENEWALS].name = "conn_renewals",
	[METAROCE_CNT_RX_GSO_SKBS].name = "rx_gso_skbs",
	[METAROCE_ENG_RETRANSMITS].name = "retransmits",
	[METAROCE_ENG_RTOS].name = "rtos",
	[METAROCE_ENG_SPURIOUS_RTOS].name = "spurious_rtos",
	[METAROCE_ENG_RTOS_HELD].name = "rtos_held",
	[METAROCE_ENG_SACK_LOSSES].name = "sack_losses",
	[METAROCE_ENG_TAIL_PROBES].name = "tail_probes",
	[METAROCE_ENG_MSG_PROBES].name = "msg_probes",
	[METAROCE_ENG_PATH_FAILURES].name = "path_failures",
	[METAROCE_ENG_PATH_REBALANCES].name = "path_rebalances",
	[METAROCE_ENG_RX_DUPLICATES].name = "rx_duplicates",
	[METAROCE_ENG_RX_DROPPED].name = "rx_engine_drops",
	[METAROCE_ENG_NAKS_SENT].name = "naks_sent",
	[METAROCE_ENG_NAKS_RECEIVED].name = "naks_received",
	[METAROCE_ENG_ECN_ECHOES].name = "ecn_echoes",
	[METAROCE_ENG_RX_BAD_RSNS].name = "rx_bad_rsns",
	[METAROCE_ENG_ACKS_SENT].name = "acks_sent",
	[METAROCE_ENG_ACKS_RECEIVED].name = "acks_received",
	[METAROCE_ENG_PACER_BLOCKED].name = "pacer_blocked",
	[METAROCE_ENG_WINDOW_FULL].name = "window_full",
	[METAROCE_ENG_ACK_INFLIGHT_SUM].name = "ack_path_inflight_sum",
	[METAROCE_ENG_INFLIGHT_MAX].name = "path_inflight_max",
	[METAROCE_STAT_CAPACITY_MBPS].name = "rx_capacity_mbps",
};

static_assert(ARRAY_SIZE(metaroce_counter_descs) == METAROCE_NR_STATS);

void metaroce_count_add(struct metaroce_dev *mdev, enum metaroce_counter c, u64 n)
{
	this_cpu_add(mdev->counters->c[c], n);
}

int metaroce_stats_init(struct metaroce_dev *mdev)
{
	mdev->counters = alloc_percpu(struct metaroce_counters);
	return mdev->counters ? 0 : -ENOMEM;
}

void metaroce_stats_free(struct metaroce_dev *mdev)
{
	free_percpu(mdev->counters);
	mdev->counters = NULL;
}

/* The counters' names, for the RDMA core's hw_counters (rdma statistic). */
struct rdma_hw_stats *metaroce_stats_alloc(void)
{
	return rdma_alloc_hw_stats_struct(metaroce_counter_descs, METAROCE_NR_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* The device's own counters (METAROCE_CNT_*), summed over the CPUs, into v. */
void metaroce_stats_sum(struct metaroce_dev *mdev, u64 *v)
{
	int cpu, i;

	for (i = 0; i < METAROCE_NR_COUNTERS; i++) {
		u64 sum = 0;

		for_each_possible_cpu(cpu)
			sum += READ_ONCE(per_cpu_ptr(mdev->counters, cpu)->c[i]);
		v[i] = sum;
	}
}
