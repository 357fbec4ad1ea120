/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Per-stream message tracking: packet windows, duplicates and MSN-ordered completion. */
#ifndef MR_STREAM_H
#define MR_STREAM_H

#include "sack.h"

enum mr_msg_state {
	MR_MSG_FREE,
	MR_MSG_OPEN,		/* packets outstanding (tx) or missing (rx) */
	MR_MSG_DONE,		/* rx: all placed; tx: acknowledged by MSGACK */
};

/* A message as its sender tracks it: [MR-REL-8] 256-packet window from base. */
struct mr_tx_msg {
	u8 state;
	u8 opcode;
	u32 msn;
	u32 len;
	u32 npkts;
	u32 next_new;		/* lowest index never sent */
	u32 base;		/* lowest index not acknowledged */
	u32 acked_count;
	u32 acked[MR_SACK_WORDS];	/* bit i: index base + i acknowledged */
	u32 lost[MR_SACK_WORDS];	/* bit i: index base + i needs retransmission */
	u32 rsn;
	u32 rkey;
	u64 va;
	u64 cookie;
	u64 all_acked_ns;	/* when the last packet was acknowledged, for message probes */
};

struct mr_tx_stream {
	bool in_use;
	u32 dest;		/* the peer's stream id (its QPN) */
	u32 next_msn;
	u32 msn_acked;		/* from MSGACK */
	u32 msn_polled;		/* completions handed to the caller */
	u32 next_rsn;
	struct mr_tx_msg msg[MR_STREAM_MAX_MSGS];
};

/* A message as its receiver tracks it: [MR-REL-7]. */
struct mr_rx_msg {
	u8 state;
	u8 opcode;
	u16 flags;		/* flags of the LAST packet: IMM, INV, SOLICITED */
	u32 msn;
	u32 len;
	u32 npkts;
	u32 base;
	u32 received;
	u32 bits[MR_SACK_WORDS];
	u32 rsn;
	u32 imm;
};

struct mr_rx_stream {
	bool in_use;
	bool touched;		/* a MSGACK for this stream is due, [MR-ACK-6] */
	u32 id;			/* local stream id (our QPN) */
	u32 msn_cum;		/* every MSN before it is complete */
	u32 msn_reported;	/* completions handed to the caller; what MSGACK reports */
	struct mr_rx_msg msg[MR_STREAM_MAX_MSGS];
};

u32 mr_msg_npkts(u32 len, u32 pmtu);

/* Sender. */
void mr_tx_stream_init(struct mr_tx_stream *st, u32 dest);
bool mr_tx_stream_can_post(const struct mr_tx_stream *st);
struct mr_tx_msg *mr_tx_stream_msg(struct mr_tx_stream *st, u32 msn);
/* Next packet index to send: lost ones first; returns false if none is allowed now. */
bool mr_tx_msg_next_index(const struct mr_tx_msg *m, u32 *idx, bool *is_retx);
void mr_tx_msg_on_sent(struct mr_tx_msg *m, u32 idx);
/* Returns true if this was the message's last unacknowledged packet. */
bool mr_tx_msg_on_delivered(struct mr_tx_msg *m, u32 idx, u64 now);
void mr_tx_msg_on_lost(struct mr_tx_msg *m, u32 idx);
bool mr_tx_msg_is_acked(const struct mr_tx_msg *m, u32 idx);
/* [MR-REL-9] apply a MSGACK; false if it is out of range. */
bool mr_tx_stream_on_msgack(struct mr_tx_stream *st, u32 msn_cum);

/* Receiver. */
enum mr_rx_verdict {
	MR_RX_NEW,		/* place it */
	MR_RX_DUP,		/* acknowledge, place nothing */
	MR_RX_BEYOND,		/* outside the stream window: drop, no ACK */
	MR_RX_INVALID,		/* inconsistent with the open message or the PMTU */
};

void mr_rx_stream_init(struct mr_rx_stream *st, u32 id);
/* Classify a data packet without changing state. */
enum mr_rx_verdict mr_rx_stream_classify(const struct mr_rx_stream *st, const struct mr_pkt *pkt,
					 u32 pmtu);
/* Account a packet classified MR_RX_NEW; completes messages in MSN order. */
void mr_rx_stream_accept(struct mr_rx_stream *st, const struct mr_pkt *pkt, u32 pmtu);

#endif /* MR_STREAM_H */
