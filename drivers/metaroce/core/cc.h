/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Congestion control: per-path ECN AIMD, rate-hint encoding and receiver fair shares. */
#ifndef MR_CC_H
#define MR_CC_H

#include "wire.h"

#define MR_Q10			1024U
#define MR_INIT_CWND		16
#define MR_MIN_CWND		1
#define MR_MAX_CWND		256
#define MR_CONN_MAX_WINDOW	1024
#define MR_ECN_G_SHIFT		4	/* g = 1/16 */
#define MR_LOSS_BETA_SHIFT	3	/* beta = 1/8 */
#define MR_LOSS_HEAVY_SHIFT	3	/* losses over 1/8 of the packets ... */
#define MR_LOSS_SAMPLE		16	/* ... counted over at least this many */
#define MR_RTT_TARGET_NS	50000ULL
#define MR_SHARE_INTERVAL_NS	100000ULL
#define MR_SHARE_HEADROOM_SHIFT	4	/* 1/16 of the link is kept free */
#define MR_SHARE_UNLIMITED	0xffffffffU

/* Sender congestion state of one path; windows in Q10 packets, [MR-CC-1]. */
struct mr_cc_path {
	u32 cwnd_q10;
	u32 ssthresh_q10;	/* after an RTO the window grows fast up to this, [MR-CC-4] */
	u32 alpha_q10;
	u32 round_end_psn;	/* the round ends when this PSN is no longer outstanding */
	u32 round_ce;
	u32 round_pkts;
	u64 round_min_excess_ns;	/* the round's smallest RTT excess, [MR-CC-3] */
	u32 round_lost;		/* PSNs the round's ACKs showed lost, [MR-CC-4] */
	u32 sample_lost;	/* lost and received PSNs of the rounds since the last */
	u32 sample_pkts;	/* heavy-loss verdict, [MR-CC-4] */
	bool round_cut;		/* an RTO cut the window in this round */
};

/* mr_cc_on_ack() without an RTT sample. */
#define MR_CC_NO_SAMPLE		(~0ULL)

void mr_cc_init(struct mr_cc_path *cc, u32 cwnd_pkts, u32 next_psn);
/* Whole packets the window allows in flight. */
static inline u32 mr_cc_window(const struct mr_cc_path *cc)
{
	return mr_max_u32(cc->cwnd_q10 / MR_Q10, MR_MIN_CWND);
}

/*
 * An ACK delivered `delivered` PSNs and echoed ce/pkts; excess_ns is how far its RTT
 * sample is above min_rtt + max(MR_RTT_TARGET, 4 RTTVAR), or MR_CC_NO_SAMPLE; una
 * and next_psn delimit the path's rounds.
 */
void mr_cc_on_ack(struct mr_cc_path *cc, u32 delivered, u32 ce, u32 pkts, u64 excess_ns,
		  u32 una, u32 next_psn);
/* An ACK showed `lost` PSNs of the path lost ([MR-SACK-2]); judged at the round's end. */
void mr_cc_on_loss(struct mr_cc_path *cc, u32 lost);
void mr_cc_on_rto(struct mr_cc_path *cc);

/* [MR-CC-10] rate hints in Mbit/s: m << e, rounded down; 0 means no hint. */
u16 mr_rate_hint_encode(u32 mbps);
u32 mr_rate_hint_decode(u16 hint);

/* One sender (connection) in the receiver's fair-share allocation, [MR-CC-9]. */
struct mr_share {
	u64 bytes;		/* delivered in the interval that just ended; the caller adds */
	u32 share_mbps;		/* output: the current share, also the previous one on input */
	u32 demand_mbps;	/* scratch */
	bool active;		/* delivered data in the interval */
	bool fixed;		/* scratch */
};

/* Recompute every share for an interval of interval_ns and clear the byte counters. */
void mr_fairshare_compute(struct mr_share *s, u32 n, u32 link_mbps, u32 interval_ns);

#endif /* MR_CC_H */
