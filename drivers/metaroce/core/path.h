/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One sending path: entropy, PSN space, outstanding records, RTT/RTO and lifecycle. */
#ifndef MR_PATH_H
#define MR_PATH_H

#include "cc.h"

#define MR_INITIAL_RTO_NS	1000000ULL
#define MR_MIN_RTO_NS		100000ULL
#define MR_MAX_RTO_NS		1000000000ULL
#define MR_PATH_FAIL_RTOS	3
/*
 * [MR-REL-5] the stall floor: a spurious RTO raises every path's RTO floor to 5/4 of
 * the delay it did not wait for, at most MR_STALL_FLOOR_MAX; the floor halves every
 * MR_STALL_FLOOR_HALFLIFE after its last rise.
 */
#define MR_STALL_FLOOR_MAX_NS		100000000ULL
#define MR_STALL_FLOOR_HALFLIFE_NS	1000000000ULL
/*
 * [MR-REL-3] a path idle (nothing outstanding) for more than this many SRTTs has a
 * stale RTT estimate: its next sample restarts the estimators.
 */
#define MR_RTT_STALE_SRTTS	8
/*
 * [MR-PATH-10] every MR_REBALANCE_SRTTS of the slowest path's SRTT the sender compares
 * what its paths delivered; one that delivered less than MR_REBALANCE_SHARE_Q10 / 1024
 * of the best path, while congested, moves to new entropy.  The best path must have
 * delivered at least MR_REBALANCE_MIN_PKTS for the comparison to count.  Each n_paths
 * moves double the epochs in a row a path must be slow before it moves, up to
 * 2^MR_REBALANCE_BACKOFF_MAX.
 */
#define MR_REBALANCE_SRTTS	4
#define MR_REBALANCE_SHARE_Q10	683	/* 2/3 */
#define MR_REBALANCE_MIN_PKTS	16
#define MR_REBALANCE_BACKOFF_MAX	4

/* An echoed timestamp older than this is taken for a wrapped or stale one. */
#define MR_TS_SAMPLE_MAX_US	1000000u

enum mr_path_state {
	MR_PATH_PROBE,
	MR_PATH_ACTIVE,
	MR_PATH_SUSPECT,
	MR_PATH_FAILED,
};

#define MR_REC_PROBE		0xff	/* stream_slot of a PROBE packet's record */

/* What one outstanding PSN carried, [MR-SACK-1]. */
struct mr_tx_rec {
	bool valid;
	bool resp;		/* a READ_RESP or ATOMIC_RESP of the responder */
	u8 round;		/* of the message, see struct mr_tx_msg */
	u8 stream_slot;
	u32 msn;
	u32 pkt_idx;
	u64 sent_ns;
};

struct mr_rtt {
	u64 srtt_ns;
	u64 rttvar_ns;
	u64 min_rtt_ns;
	bool have_sample;
};

struct mr_path_tx {
	u8 state;
	u8 backoff;
	u8 consecutive_rtos;
	u16 entropy;
	u32 next_psn;
	u32 una;		/* oldest PSN that may still be outstanding */
	u32 outstanding;
	u64 rto_start_ns;	/* the RTO runs from here while outstanding > 0 */
	u64 last_send_ns;	/* [MR-REL-6] */
	u64 last_ack_ns;
	bool tlp_done;		/* one tail-loss probe per silence */
	bool rtt_restart;	/* sent after a stale idle: the next sample restarts */
	bool repath;		/* [MR-PATH-10] leaves for new entropy once drained */
	bool epoch_congested;	/* [MR-PATH-10] a CE mark, a queue or an RTO this epoch */
	u32 epoch_delivered;	/* [MR-PATH-10] data packets delivered this epoch */
	u8 slow_epochs;		/* [MR-PATH-10] consecutive epochs it was slow */
	struct mr_rtt rtt;
	struct mr_cc_path cc;
	struct mr_tx_rec rec[MR_SACK_BITS];	/* indexed by psn % 256 */
	/*
	 * [MR-REL-5] RTOs that an ACK may yet show spurious: the PSNs they
	 * declared lost, and the window before the first; 0: none pending.
	 */
	u32 undo_from, undo_to;
	u32 undo_cwnd_q10;
	u64 undo_sent_ns;	/* when the oldest of them was sent */
	u32 undo_rto_us;	/* when the first of those RTOs fired, as in timestamps */
	/* [MR-REL-5] the RTO floor spurious RTOs taught, and when it last rose or halved. */
	u64 stall_floor_ns;
	u64 stall_floor_at_ns;
	u32 failures;
	u32 rerolls;		/* entropy changes: failures and rebalances */
	u32 lost;
	u32 sent;
};

struct mr_rto_cfg {
	u64 initial_ns;
	u64 min_ns;
	u64 max_ns;
};

void mr_path_init(struct mr_path_tx *p, u32 first_psn, u16 entropy, u8 state, u32 cwnd);
/* [MR-SACK-1] [MR-CC-1] [MR-PATH-4] may this path send one more sequenced packet? */
bool mr_path_can_send(const struct mr_path_tx *p);

static inline u32 mr_path_free_window(const struct mr_path_tx *p)
{
	u32 limit, span = p->next_psn - p->una;

	if (p->repath)
		return 0;	/* [MR-PATH-10] draining before it moves */
	switch (p->state) {
	case MR_PATH_ACTIVE:
		limit = mr_cc_window(&p->cc);
		break;
	case MR_PATH_PROBE:
	case MR_PATH_SUSPECT:
		limit = 1;
		break;
	default:
		return 0;
	}
	if (p->outstanding >= limit || span >= MR_SACK_BITS)
		return 0;
	return mr_min_u32(limit - p->outstanding, MR_SACK_BITS - span);
}

bool mr_path_rtt_stale(const struct mr_path_tx *p, u64 now);
void mr_path_rtt_sample(struct mr_path_tx *p, u64 sample_ns);

static inline struct mr_tx_rec *mr_path_rec(struct mr_path_tx *p, u32 psn)
{
	return &p->rec[psn % MR_SACK_BITS];
}

/* Move una past PSNs that are no longer outstanding. */
void mr_path_advance_una(struct mr_path_tx *p);

/* [MR-REL-3] RFC 6298 estimators. */
void mr_rtt_sample(struct mr_rtt *rtt, u64 sample_ns);
/* [MR-REL-3] [MR-REL-4] [MR-REL-5] with the backoff, at least the stall floor. */
u64 mr_path_rto_ns(const struct mr_path_tx *p, const struct mr_rto_cfg *cfg);
/* [MR-REL-5] a spurious RTO showed a delay of delay_ns: raise the floor to cover it. */
void mr_path_stall_floor_raise(struct mr_path_tx *p, u64 now, u64 delay_ns);
/* [MR-REL-5] halve the floor for each half-life that passed since it last changed. */
void mr_path_stall_floor_decay(struct mr_path_tx *p, u64 now);

/*
 * [MR-PATH-2] a random entropy in 49152..65535 different from the n entries of used.
 * Deterministic given *rng.
 */
u16 mr_entropy_pick(u64 *rng, const u16 *used, u32 n);

/* [MR-ENC-2] the port of a packet that belongs to no path: random, drawn anew each time. */
static inline u16 mr_entropy_random(u64 *rng)
{
	return mr_entropy_pick(rng, NULL, 0);
}

/* [MR-REL-4] [MR-PATH-5] [MR-PATH-6]: returns true when the path failed and was re-rolled. */
bool mr_path_on_rto(struct mr_path_tx *p, u8 fail_rtos, u16 new_entropy);
/* [MR-PATH-5] an ACK delivered something: the path is alive. */
void mr_path_on_progress(struct mr_path_tx *p, u64 now);

#endif /* MR_PATH_H */
