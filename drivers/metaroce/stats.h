/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Per-device counters, shown by `rdma statistic` as port hw counters. */
#ifndef METAROCE_STATS_H
#define METAROCE_STATS_H

#include <linux/percpu.h>

enum metaroce_counter {
	METAROCE_CNT_RX_PACKETS,
	METAROCE_CNT_RX_BYTES,
	METAROCE_CNT_RX_DROP_MALFORMED,		/* failed a check of [MR-WIRE-12] */
	METAROCE_CNT_RX_DROP_UNKNOWN_CONN,	/* [MR-CONN-3] */
	METAROCE_CNT_RX_DROP_NOMEM,
	METAROCE_CNT_RX_ECN_CE,			/* congestion experienced marks seen */
	METAROCE_CNT_TX_PACKETS,
	METAROCE_CNT_TX_BYTES,
	METAROCE_CNT_TX_DROP_NOMEM,
	METAROCE_CNT_TX_DROP_NOROUTE,
	METAROCE_CNT_PLACE_ERRORS,		/* local SGE unusable for placement */
	METAROCE_CNT_STREAM_OPEN_ERRORS,
	METAROCE_CNT_CONN_FAILURES,
	METAROCE_CNT_RX_DROP_UNKNOWN_QP,	/* UD_SEND to no UD QP ready to receive */
	METAROCE_CNT_RX_DROP_QKEY,		/* UD_SEND with a qkey not the QP's */
	METAROCE_CNT_RX_DROP_NO_RECV,		/* UD_SEND and no receive WQE posted */
	METAROCE_CNT_UD_SEND_ERRORS,		/* UD WR completed with an error */
	METAROCE_CNT_READ_RESP_ABORTS,		/* Read source gone while responding */
	METAROCE_CNT_USER_WQE_ERRORS,		/* bad WQEs or indices in a user ring */
	METAROCE_CNT_USER_AH_ERRORS,		/* UD WQEs naming no AH of the QP's PD */
	METAROCE_CNT_TIMER_PAST,		/* a deadline the engine could not act on */
	METAROCE_CNT_CONN_LIMIT_DROPS,		/* [MR-SEC-4] CONNECT_REQ over max_conns */
	METAROCE_CNT_LOCAL_ACCESS_ERRORS,	/* a write into an MR without LOCAL_WRITE refused */
	METAROCE_CNT_RX_DROP_WRONG_ADDR,	/* [MR-SEC-3] our conn_id from other addresses */
	METAROCE_CNT_RESTART_CHALLENGES,	/* [MR-CONN-7] restart claims not (yet) believed */
	METAROCE_CNT_TX_RUNS,			/* runs of a connection's transmit work */
	METAROCE_CNT_TX_RUN_DATA,		/* data packets those runs built */
	METAROCE_CNT_TX_GSO_SKBS,		/* UDP GSO skbs, each a path's burst */
	METAROCE_CNT_CONN_RENEWALS,		/* [MR-CONN-14] ended by the peer, begun anew */
	METAROCE_CNT_RX_GSO_SKBS,		/* packets merged by GRO, taken as one skb */
	METAROCE_NR_COUNTERS,

	/* The engines' own event counters, summed over the device's connections. */
	METAROCE_ENG_RETRANSMITS = METAROCE_NR_COUNTERS,
	METAROCE_ENG_RTOS,
	METAROCE_ENG_SPURIOUS_RTOS,
	METAROCE_ENG_RTOS_HELD,
	METAROCE_ENG_SACK_LOSSES,
	METAROCE_ENG_TAIL_PROBES,
	METAROCE_ENG_MSG_PROBES,
	METAROCE_ENG_PATH_FAILURES,
	METAROCE_ENG_PATH_REBALANCES,
	METAROCE_ENG_RX_DUPLICATES,
	METAROCE_ENG_RX_DROPPED,
	METAROCE_ENG_NAKS_SENT,
	METAROCE_ENG_NAKS_RECEIVED,
	METAROCE_ENG_ECN_ECHOES,
	METAROCE_ENG_RX_BAD_RSNS,
	METAROCE_ENG_ACKS_SENT,
	METAROCE_ENG_ACKS_RECEIVED,
	METAROCE_ENG_PACER_BLOCKED,		/* asked for a packet before its pacing slot */
	METAROCE_ENG_WINDOW_FULL,		/* asked for a packet with the window full */
	METAROCE_ENG_ACK_INFLIGHT_SUM,		/* per ACK, its path's outstanding PSNs, summed */
	METAROCE_ENG_INFLIGHT_MAX,		/* the most one path had outstanding (a maximum) */
	METAROCE_ENG_END,

	/* Not a counter: the receive capacity the rate hints share out now (Mbit/s). */
	METAROCE_STAT_CAPACITY_MBPS = METAROCE_ENG_END,
	METAROCE_NR_STATS
};

#define METAROCE_NR_ENG_COUNTERS	(METAROCE_ENG_END - METAROCE_NR_COUNTERS)

struct metaroce_dev;

void metaroce_count_add(struct metaroce_dev *mdev, enum metaroce_counter c, u64 n);

static inline void metaroce_count(struct metaroce_dev *mdev, enum metaroce_counter c)
{
	metaroce_count_add(mdev, c, 1);
}

int metaroce_stats_init(struct metaroce_dev *mdev);
void metaroce_stats_free(struct metaroce_dev *mdev);
struct rdma_hw_stats *metaroce_stats_alloc(void);
void metaroce_stats_sum(struct metaroce_dev *mdev, u64 *v);

#endif /* METAROCE_STATS_H */
