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
	METAROCE_NR_COUNTERS
};

struct metaroce_dev;

void metaroce_count_add(struct metaroce_dev *mdev, enum metaroce_counter c, u64 n);

static inline void metaroce_count(struct metaroce_dev *mdev, enum metaroce_counter c)
{
	metaroce_count_add(mdev, c, 1);
}

int metaroce_stats_init(struct metaroce_dev *mdev);
void metaroce_stats_free(struct metaroce_dev *mdev);
extern const struct ib_device_ops metaroce_stats_ops;

#endif /* METAROCE_STATS_H */
