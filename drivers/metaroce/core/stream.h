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
	u32 n_lost;		/* bits set in lost: the sender looks for them only if any */
	u32 rsn;
	u32 rkey;
	u16 last_flags;		/* SOLICITED, IMM, INV: carried by the LAST packet */
	u32 imm;
	u32 inv_rkey;
	u64 va;
	u64 cookie;
	u64 all_acked_ns;	/* when the last packet was acknowledged, for message probes */
	u8 round;		/* bumped when RNR restarts the message: older PSNs are stale */
	u8 rnr_count;
	u8 probe_path;		/* path of the last acknowledgment: its RTO times the probe */
	bool fence;		/* [MR-VERBS-5] */
	u64 rnr_until_ns;	/* [MR-NAK-4] not before this time */
	u64 swap_add;		/* atomics */
	u64 compare;
	u64 orig;		/* ATOMIC_RESP: the value before the operation */
	/* Requester of a Read or atomic: response packets placed, [MR-REL-7] window. */
	u32 resp_npkts;
	u32 resp_base;
	u32 resp_received;
	u32 resp_bits[MR_SACK_WORDS];
};

struct mr_tx_stream {
	bool in_use;
	u32 dest;		/* the peer's stream id (its QPN) */
	u32 next_msn;
	u32 msn_acked;		/* from MSGACK */
	u32 msn_polled;		/* completions handed to the caller */
	u32 next_rsn;
	bool err;		/* [MR-VERBS-8] error state from err_msn on */
	u8 err_status;		/* enum mr_wc_status of the WQE at err_msn */
	u8 rnr_retry;		/* 7: infinite */
	u32 err_msn;
	u32 min_rnr_us;
	u32 rd_atomic_max;	/* [MR-VERBS-16] Reads and atomics in flight, 1..64 */
	u32 rd_atomic_open;	/* Reads and atomics posted and not yet completed */
	/*
	 * The sender's scan for a packet to send: the messages from msn_acked to scan_msn
	 * had none to send, resend or probe at scan_now, and have none while nothing else
	 * is called on the connection (its tx_events still scan_events): the scan of the
	 * next packet of that transmit run starts at scan_msn.
	 */
	u64 scan_now;
	u32 scan_events;
	u32 scan_msn;
	struct mr_tx_msg msg[MR_STREAM_MAX_MSGS];
	/*
	 * Responder: READ_RESP and ATOMIC_RESP by msn % MR_STREAM_MAX_MSGS; also the
	 * replay cache.  resp_open has bit i set while resp[i] is MR_MSG_OPEN, so the
	 * sender visits only the responses it still owes.
	 */
	struct mr_tx_msg resp[MR_STREAM_MAX_MSGS];
	u64 resp_open;
};

MR_STATIC_ASSERT(MR_STREAM_MAX_MSGS == 64, "resp_open is one bit per response slot");

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
	union {
		u32 bits[MR_SACK_WORDS];	/* data: packets received after base */
		struct {			/* READ_REQ and atomics: one packet */
			u64 va;
			u64 swap_add;
			u64 compare;
			u32 rkey;
			u32 length;
		} req;
	};
	u32 rsn;		/* SEND: from MSGH */
	u32 imm;
	u32 inv_rkey;
};

struct mr_rx_stream {
	bool in_use;
	bool touched;		/* a MSGACK for this stream is due, [MR-ACK-6] */
	u8 msgack_repeats;	/* [MR-ACK-9] ACKs after the next that carry it too */
	u32 id;			/* local stream id (our QPN) */
	u32 msn_cum;		/* every MSN before it is complete */
	u32 msn_reported;	/* completions handed to the caller; what MSGACK reports */
	u32 next_rsn;		/* receive WQEs consumed by completions, [MR-VERBS-12] */
	bool err;		/* [MR-NAK-2] [MR-VERBS-8] error state from err_msn on */
	bool err_reported;
	bool nak_pending;	/* [MR-NAK-3] send the NAK below */
	u8 nak_code;
	u32 nak_msn;
	u32 nak_info;
	u32 err_msn;
	struct mr_rx_msg msg[MR_STREAM_MAX_MSGS];
};

u32 mr_msg_npkts(u32 len, u32 pmtu);

/* Sender. */
void mr_tx_stream_init(struct mr_tx_stream *st, u32 dest);
bool mr_tx_stream_can_post(const struct mr_tx_stream *st);

static inline struct mr_tx_msg *mr_tx_stream_msg(struct mr_tx_stream *st, u32 msn)
{
	return &st->msg[msn % MR_STREAM_MAX_MSGS];
}

/* Next packet index to send: lost ones first; returns false if none is allowed now. */
bool mr_tx_msg_next_index(const struct mr_tx_msg *m, u32 *idx, bool *is_retx);
void mr_tx_msg_on_sent(struct mr_tx_msg *m, u32 idx);
/* Returns true if this was the message's last unacknowledged packet. */
bool mr_tx_msg_on_delivered(struct mr_tx_msg *m, u32 idx, u64 now);
void mr_tx_msg_on_lost(struct mr_tx_msg *m, u32 idx);

static inline bool mr_tx_msg_is_acked(const struct mr_tx_msg *m, u32 idx)
{
	return idx < m->base || mr_bits_test(m->acked, idx - m->base);
}

/* [MR-REL-9] apply a MSGACK; false if it is out of range. */
bool mr_tx_stream_on_msgack(struct mr_tx_stream *st, u32 msn_cum);
/* [MR-VERBS-8] enter the error state at msn (the earliest failure wins). */
void mr_tx_stream_error(struct mr_tx_stream *st, u32 msn, u8 status);

static inline bool mr_tx_stream_in_error(const struct mr_tx_stream *st, u32 msn)
{
	return st->err && !mr_seq_before(msn, st->err_msn);
}

/* Reads and atomics wait for a response. */
bool mr_opcode_is_request(u8 opcode);
/* Requester: all of the response placed. */
bool mr_tx_msg_resp_done(const struct mr_tx_msg *m);
/* [MR-NAK-4] start the message again from offset 0 after wait_ns. */
void mr_tx_msg_restart(struct mr_tx_msg *m, u64 not_before_ns);
/*
 * Never sent and not restarted: as new data goes out in MSN order, no later message of
 * the stream has been sent either.
 */
static inline bool mr_tx_msg_untouched(const struct mr_tx_msg *m)
{
	return !m->next_new && !m->round && !m->rnr_until_ns;
}

/* Responder: the response slot for msn, and the only way to change a response's state. */
static inline struct mr_tx_msg *mr_tx_stream_resp(struct mr_tx_stream *st, u32 msn)
{
	return &st->resp[msn % MR_STREAM_MAX_MSGS];
}

void mr_tx_resp_set_state(struct mr_tx_stream *st, struct mr_tx_msg *r, u8 state);

/* Receiver. */
enum mr_rx_verdict {
	MR_RX_NEW,		/* place it */
	MR_RX_DUP,		/* acknowledge, place nothing */
	MR_RX_BEYOND,		/* outside the stream window: drop, no ACK */
	MR_RX_INVALID,		/* inconsistent with the open message or the PMTU */
	MR_RX_BAD_RSN,		/* a Send naming a receive it cannot have: NAK, [MR-SEC-2] */
};

void mr_rx_stream_init(struct mr_rx_stream *st, u32 id);
/* Classify a data packet without changing state. */
enum mr_rx_verdict mr_rx_stream_classify(const struct mr_rx_stream *st, const struct mr_pkt *pkt,
					 u32 pmtu);
/* Account a packet classified MR_RX_NEW; the caller then advances msn_cum. */
void mr_rx_stream_accept(struct mr_rx_stream *st, const struct mr_pkt *pkt, u32 pmtu);
/* Every packet of the message at msn has arrived (it may still wait for earlier ones). */
bool mr_rx_stream_msg_complete(const struct mr_rx_stream *st, u32 msn);
/* The message at msn_cum if it is complete and may pass, else NULL. [MR-VERBS-2] */
struct mr_rx_msg *mr_rx_stream_head_done(struct mr_rx_stream *st);
/* [MR-NAK-2] enter the error state at msn and NAK with code. */
void mr_rx_stream_error(struct mr_rx_stream *st, u32 msn, u8 code);

#endif /* MR_STREAM_H */
