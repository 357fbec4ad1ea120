/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A unified connection: many streams above, many paths below, driven by events. */
#ifndef MR_CONN_H
#define MR_CONN_H

#include "path.h"
#include "stream.h"

#define MR_CONN_STREAMS		8	/* stream slots per connection in this engine */
#define MR_ACK_FREQ		4
#define MR_ACK_DELAY_NS		10000ULL
#define MR_NO_DEADLINE		((u64)-1)

struct mr_conn_cfg {
	u32 local_conn_id;	/* what the peer puts in packets to us */
	u32 peer_conn_id;	/* what we put in packets to the peer */
	u32 tx_initial_psn;	/* our CONNH initial_psn, [MR-PATH-3] */
	u32 rx_initial_psn;	/* the peer's */
	u32 pmtu;		/* payload bytes per packet, multiple of 256 */
	u8 n_paths;
	u8 fail_rtos;
	u16 ack_freq;
	u32 init_cwnd;
	u32 conn_max_window;
	u64 ack_delay_ns;
	struct mr_rto_cfg rto;
	u64 seed;		/* randomness is an input */
};

struct mr_conn {
	struct mr_conn_cfg cfg;
	u64 rng;
	u32 rr_stream;
	u32 rr_path;
	u32 avoid_path;		/* the path of the last loss, [MR-REL-1] */
	u32 peer_hint_mbps;	/* latest nonzero rate hint from the peer */
	u32 local_hint;		/* encoded hint we return in ACKs (set by the caller) */
	u64 next_send_ns;	/* pacing */
	struct mr_path_tx tx_path[MR_MAX_PATHS];
	struct mr_sack_rx rx_path[MR_MAX_PATHS];
	struct mr_tx_stream tx[MR_CONN_STREAMS];
	struct mr_rx_stream rx[MR_CONN_STREAMS];
	u32 retransmits;
	u32 msg_probes;
	u32 rx_dropped;
	u32 rx_duplicates;
};

/* A packet to send: header fields in pkt; the caller attaches the payload. */
struct mr_tx_desc {
	struct mr_pkt pkt;
	u16 entropy;		/* UDP source port */
	u8 stream_slot;
	u64 cookie;		/* of the message, to find its source buffer */
};

/* Data to place, [MR-WIRE-6] [MR-WIRE-7]. */
struct mr_place {
	u8 stream_slot;
	u8 opcode;
	u32 msn;
	u32 rsn;		/* SEND: receive WQE selector */
	u64 va;			/* WRITE: target address of the message start */
	u32 rkey;
	u32 offset;
	u32 len;
	const u8 *data;
};

enum mr_completion_kind {
	MR_COMPL_SEND,		/* requester: message acknowledged */
	MR_COMPL_RECV,		/* responder: message complete, in MSN order */
};

struct mr_completion {
	u8 kind;
	u8 opcode;
	u8 stream_slot;
	u16 flags;
	u32 msn;
	u32 rsn;
	u32 len;
	u32 imm;
	u64 cookie;
};

enum mr_rx_result {
	MR_RX_RESULT_NONE,	/* consumed, nothing to place */
	MR_RX_RESULT_PLACE,	/* *place filled */
	MR_RX_RESULT_DROP,	/* invalid or unknown: dropped */
};

void mr_conn_cfg_defaults(struct mr_conn_cfg *cfg);
void mr_conn_init(struct mr_conn *c, const struct mr_conn_cfg *cfg);
/* Pair a local stream (our QPN) with the peer's; returns the slot or -1. */
int mr_conn_open_stream(struct mr_conn *c, u32 local_id, u32 peer_id);
/* Queue a SEND or WRITE; returns 0, or -1 when the stream's message window is full. */
int mr_conn_post(struct mr_conn *c, u32 slot, u8 opcode, u32 len, u64 va, u32 rkey, u64 cookie);

/* Sender, sender.c. */
bool mr_conn_next_packet(struct mr_conn *c, u64 now, struct mr_tx_desc *out);
void mr_conn_on_ack(struct mr_conn *c, u64 now, const struct mr_pkt *ack);
void mr_conn_on_timer(struct mr_conn *c, u64 now);

/* Receiver, receiver.c. */
enum mr_rx_result mr_conn_receive(struct mr_conn *c, u64 now, const struct mr_pkt *pkt, bool ce,
				  struct mr_place *place);
bool mr_conn_next_ack(struct mr_conn *c, u64 now, struct mr_pkt *out);

/* Completions in MSN order per stream, conn.c. */
bool mr_conn_poll_completion(struct mr_conn *c, struct mr_completion *out);
/* Earliest time at which on_timer, next_ack or next_packet may have work. */
u64 mr_conn_next_deadline(const struct mr_conn *c);
/* Nothing outstanding, open, unacknowledged or uncompleted on either side. */
bool mr_conn_quiescent(const struct mr_conn *c);

#endif /* MR_CONN_H */
