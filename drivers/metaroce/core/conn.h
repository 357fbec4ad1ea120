/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A unified connection: many streams above, many paths below, driven by events. */
#ifndef MR_CONN_H
#define MR_CONN_H

#include "path.h"
#include "stream.h"

/*
 * Stream slots per connection: one per QP to the peer. A packet's record names its slot
 * in a byte, 0xff being a PROBE's (MR_REC_PROBE), so 254 at most.
 */
#define MR_CONN_STREAMS		254
#define MR_ACK_FREQ		4
#define MR_ACK_DELAY_NS		10000ULL
#define MR_PACE_BURST		16	/* [MR-CC-7] slots a late sender may catch up */
#define MR_PATH_BURST		16	/* [MR-CC-8] new packets in a row on one path */
#define MR_PACE_GAIN		2	/* [MR-CC-7] pacing runs at this many windows per SRTT */
#define MR_NO_DEADLINE		((u64)-1)
#define MR_CONN_TIMEOUT_NS	2000000000ULL
#define MR_RNR_INFINITE		7
#define MR_CLOSED_STREAMS	64	/* [MR-VERBS-11] closed streams remembered */

/*
 * [MR-VERBS-11] what a closed receive stream had completed: a probe of a message before
 * msn_cum is answered with this MSGACK, since the one sent before the close may be lost;
 * a packet of a later message, which will never complete, with NAK INVALID_REQUEST.
 */
struct mr_rx_closed {
	u32 id;			/* the closed stream's local id */
	u32 msn_cum;		/* its msn_reported when it closed */
	u32 nak_msn;		/* the message the pending NAK names */
	bool valid;
	bool touched;		/* its MSGACK is due, [MR-ACK-6] */
	bool nak_pending;
};

/* Work completion status, as Verbs reports it; [MR-NAK-2] maps NAK codes onto it. */
enum mr_wc_status {
	MR_WC_SUCCESS,
	MR_WC_RETRY_EXC_ERR,
	MR_WC_RNR_RETRY_EXC_ERR,
	MR_WC_REM_INV_REQ_ERR,
	MR_WC_REM_ACCESS_ERR,
	MR_WC_REM_OP_ERR,
	MR_WC_WR_FLUSH_ERR,
};

#define MR_WR_FENCE		0x1	/* [MR-VERBS-5] */
#define MR_WR_IMM		0x2	/* SEND or WRITE with immediate data, [MR-WIRE-9] */
#define MR_WR_INV		0x4	/* SEND with invalidate, [MR-WIRE-9] */
#define MR_WR_SOLICITED		0x8	/* SEND, or WRITE with immediate: solicited event */

/*
 * A work request: SEND, WRITE, READ_REQ, ATOMIC_CAS or ATOMIC_FADD. SEND_WITH_IMM and
 * RDMA_WRITE_WITH_IMM are SEND and WRITE with MR_WR_IMM, SEND_WITH_INV is SEND with
 * MR_WR_INV; a WRITE with MR_WR_IMM consumes a receive WQE, [MR-VERBS-12].
 */
struct mr_wr {
	u8 opcode;
	u8 flags;		/* MR_WR_* */
	u32 len;		/* SEND, WRITE: message bytes; READ_REQ: bytes to read */
	u64 va;			/* remote address */
	u32 rkey;
	u64 swap_add;
	u64 compare;
	u64 cookie;		/* the caller's, returned in the completion */
	u32 imm;		/* MR_WR_IMM: immediate data */
	u32 inv_rkey;		/* MR_WR_INV: the rkey the responder invalidates */
};

struct mr_conn_cfg {
	u32 local_conn_id;	/* what the peer puts in packets to us */
	u32 peer_conn_id;	/* what we put in packets to the peer */
	u32 tx_initial_psn;	/* our CONNH initial_psn, [MR-PATH-3] */
	u32 rx_initial_psn;	/* the peer's */
	u32 pmtu;		/* payload bytes per packet, multiple of MR_PMTU_ALIGN */
	u8 n_paths;
	u8 fail_rtos;
	u16 ack_freq;
	u32 init_cwnd;
	u32 conn_max_window;
	u64 ack_delay_ns;
	struct mr_rto_cfg rto;
	u64 conn_timeout_ns;	/* [MR-CONN-10] */
	u64 seed;		/* randomness is an input */
};

struct mr_place;
struct mr_exec;

/*
 * What the engine asks of its caller while receiving. Both return 0 to go on, or a NAK
 * code (enum mr_nak_code) that the engine then sends, [MR-SEC-1] [MR-NAK-1].
 */
struct mr_conn_ops {
	/* May this SEND or WRITE packet be placed? RNR sets *info to the delay in us. */
	u8 (*check_place)(void *ctx, const struct mr_place *pl, u32 *info);
	/* Check, and for an atomic execute (setting ex->orig), a Read or atomic in MSN order. */
	u8 (*execute)(void *ctx, struct mr_exec *ex);
};

/* The state of one stream, both directions: what the caller allocates per stream. */
struct mr_stream {
	struct mr_tx_stream tx;
	struct mr_rx_stream rx;
};

/* What the sender needs of all its paths for one packet, summed in one pass. */
struct mr_conn_sums {
	u32 outstanding;	/* packets in flight */
	u32 window;		/* [MR-CC-6] the connection's window */
	u64 min_srtt;		/* [MR-CC-7] the lowest SRTT of an ACTIVE path; 0: none */
};

/*
 * mr_conn_next_packet()'s view of the paths between the packets of one transmit run:
 * valid while it is called again at the same now with nothing else called on the
 * connection in between.  Its own data packets are then the only change, and they add
 * one to a path's outstanding count and make no probe or tail probe due that was not.
 */
struct mr_tx_run {
	bool valid;
	u32 events;		/* mr_conn.tx_events it was taken at */
	u64 now;
	struct mr_conn_sums sums;	/* the sums, outstanding counting its packets */
};

struct mr_conn {
	struct mr_conn_cfg cfg;
	const struct mr_conn_ops *ops;	/* NULL: everything may be placed and executed */
	void *ops_ctx;
	bool failed;		/* [MR-CONN-10] */
	bool ended;		/* [MR-CONN-14] the peer ended it: no new messages taken */
	bool challenge;		/* [MR-CONN-7] send a PROBE that the peer must answer */
	u64 last_ack_ns;
	u64 last_timer_ns;	/* the last mr_conn_on_timer(), [MR-CONN-10] */
	u64 rng;
	u32 rr_stream;
	u32 rr_msgack;		/* the first stream the next ACK's MSGACKs consider */
	u32 rr_path;
	u32 burst_path;		/* [MR-CC-8] the path of the burst under way */
	u32 burst_left;		/* packets it may still take */
	u32 avoid_path;		/* the path of the last loss, [MR-REL-1] */
	u32 peer_hint_mbps;	/* latest nonzero rate hint from the peer */
	u32 local_hint;		/* encoded hint we return in ACKs (set by the caller) */
	u64 next_send_ns;	/* pacing: the next send, when it is in the future */
	u64 pace_ns;		/* pacing: the next packet's slot, perhaps past ([MR-CC-7]) */
	u64 pace_late_ns;	/* how late the sender reaches its slots (mean, gain 1/8) */
	bool pace_late_valid;	/* pace_late_ns has its first sample */
	u64 pace_late_sample;	/* this wake-up's lateness, learned once it is done */
	u64 last_rto_ns;	/* [MR-REL-5] when a path last timed out (0: never) */
	u32 last_rto_path;	/* and which */
	u64 last_tlp_ns;	/* [MR-REL-6] when the last tail-loss probe went (0: never) */
	u64 rebalance_at_ns;	/* [MR-PATH-10] the end of this epoch (0: none begun) */
	struct mr_path_tx tx_path[MR_MAX_PATHS];
	struct mr_sack_rx rx_path[MR_MAX_PATHS];
	/*
	 * The streams' state lives in memory the caller gives mr_conn_open_stream() and gets
	 * back from mr_conn_close_stream(), so a connection holds what its QPs use. A closed
	 * slot points to a shared, never written stream that is not in use.
	 */
	struct mr_tx_stream *tx[MR_CONN_STREAMS];
	struct mr_rx_stream *rx[MR_CONN_STREAMS];
	struct mr_stream *mem[MR_CONN_STREAMS];
	u32 n_slots;		/* slots from n_slots on are closed */
	struct mr_rx_closed closed[MR_CLOSED_STREAMS];	/* a ring, newest at closed_next - 1 */
	u32 closed_next;
	u32 closed_due;		/* records with a MSGACK or NAK due; 0: ACKs skip the ring */
	/* Event counters, for the caller's statistics; they only grow (and wrap). */
	u32 retransmits;	/* packets sent again, for any reason */
	u32 msg_probes;
	u32 tail_probes;
	u32 naks_sent;
	u32 rx_dropped;
	u32 rx_duplicates;
	u32 sack_losses;	/* packets a SACK showed lost, [MR-REL-1] */
	u32 rtos;		/* path retransmission timeouts, [MR-REL-5] */
	u32 spurious_rtos;	/* RTOs whose "lost" packets all arrived: window restored */
	u32 rtos_held;		/* RTOs put off while the whole connection was silent */
	u32 path_failures;	/* paths failed and re-rolled, [MR-PATH-6] */
	u32 path_rebalances;	/* paths moved off a shared bottleneck, [MR-PATH-10] */
	u32 ecn_echoes;		/* CE marks the peer's ACKs reported */
	u32 naks_received;
	u32 rx_bad_rsns;	/* Sends naming a receive they cannot have, [MR-SEC-2] */
	u32 acks_sent;
	u32 acks_received;
	u32 pacer_blocked;	/* asked for a packet before its slot, [MR-CC-7] */
	u32 window_full;	/* asked for a packet with the window full, [MR-CC-6] */
	u64 ack_inflight_sum;	/* each ACK's path: its outstanding PSNs as it came, summed */
	u32 inflight_max;	/* the most PSNs one path had outstanding as an ACK came */
	u32 tx_events;		/* calls that may change what tx_run holds (mr_conn_touch()) */
	struct mr_tx_run tx_run;
};

/*
 * Every entry point that changes the connection but mr_conn_next_packet() calls this
 * first: the transmit run's view (mr_tx_run) is stale after it.
 */
static inline void mr_conn_touch(struct mr_conn *c)
{
	c->tx_events++;
}

/* A packet to send: header fields in pkt; the caller attaches the payload. */
struct mr_tx_desc {
	struct mr_pkt pkt;
	u16 entropy;		/* UDP source port */
	u8 stream_slot;
	u64 cookie;		/* of the message, to find its source buffer */
	u64 va;			/* READ_RESP: the responder's source address of offset 0 */
	u32 rkey;
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
	u64 cookie;		/* READ_RESP, ATOMIC_RESP: the requester's WQE */
	u64 orig;		/* ATOMIC_RESP */
};

/* A Read or atomic to execute at the responder, [MR-VERBS-4]. */
struct mr_exec {
	u8 stream_slot;
	u8 opcode;
	u32 msn;
	u64 va;
	u32 rkey;
	u32 len;
	u64 swap_add;
	u64 compare;
	u64 orig;		/* set by the caller for atomics */
};

enum mr_completion_kind {
	MR_COMPL_SEND,		/* requester: message acknowledged */
	MR_COMPL_RECV,		/* responder: message complete, in MSN order */
	MR_COMPL_STREAM_ERROR,	/* responder: the stream entered the error state */
};

/* mr_completion.flags of a MR_COMPL_RECV. */
#define MR_COMPL_F_IMM		0x1	/* imm is valid */
#define MR_COMPL_F_INV		0x2	/* inv_rkey was invalidated by the sender's request */
#define MR_COMPL_F_SOLICITED	0x4

/*
 * MR_COMPL_RECV: opcode MR_OP_SEND, or MR_OP_WRITE for a Write with immediate; rsn is the
 * receive WQE it consumes, [MR-VERBS-12]; len the message length. Plain Writes, Reads
 * and atomics complete nothing at the responder.
 */
struct mr_completion {
	u8 kind;
	u8 opcode;
	u8 stream_slot;
	u8 status;		/* enum mr_wc_status */
	u8 nak_code;		/* MR_COMPL_STREAM_ERROR: the NAK that put the stream in error */
	u16 flags;		/* MR_COMPL_F_* */
	u32 msn;
	u32 rsn;
	u32 len;
	u32 imm;		/* MR_COMPL_F_IMM */
	u32 inv_rkey;		/* MR_COMPL_F_INV */
	u64 cookie;
	u64 orig;		/* atomics */
};

enum mr_rx_result {
	MR_RX_RESULT_NONE,	/* consumed, nothing to place */
	MR_RX_RESULT_PLACE,	/* *place filled */
	MR_RX_RESULT_DROP,	/* invalid or unknown: dropped */
};

void mr_conn_cfg_defaults(struct mr_conn_cfg *cfg);
void mr_conn_init(struct mr_conn *c, const struct mr_conn_cfg *cfg);
/*
 * Pair a local stream (our QPN) with the peer's, its state in mem (any contents; the
 * engine owns it until the stream is closed); returns the slot, or -1 when all are taken.
 */
int mr_conn_open_stream(struct mr_conn *c, u32 local_id, u32 peer_id, struct mr_stream *mem);
/*
 * [MR-VERBS-11] give the slot back: its messages are dropped (the caller has flushed
 * them), packets for it are dropped from now on, and mr_conn_open_stream may reuse it.
 * Returns the stream's memory (NULL if the slot was not open) for the caller to free.
 */
struct mr_stream *mr_conn_close_stream(struct mr_conn *c, u32 slot);
/*
 * [MR-VERBS-8] the stream's QP left RTS/RTR for Error: nothing of it is sent again (its
 * messages complete flushed, Read and atomic responses are dropped), and what arrives
 * for it is refused with a NAK of nak_code. The slot stays taken until closed.
 */
void mr_conn_error_stream(struct mr_conn *c, u32 slot, u8 nak_code);
/*
 * [MR-CONN-14] the stream in slot has neither sent nor received: no message of its
 * own was started, none of the peer's arrived, nothing is owed.  Such a stream loses
 * nothing when its connection ends, and goes on in the next one.
 */
bool mr_conn_stream_unused(const struct mr_conn *c, u32 slot);
/*
 * [MR-CONN-14] the peer ended the connection: from now on no work request is taken
 * (mr_conn_post_wr() refuses it as if the window were full), so that a stream that
 * carried nothing stays so until it moves to the next connection with its WQEs.
 */
void mr_conn_end(struct mr_conn *c);
/*
 * Queue a work request; returns 0, or -1 when the stream's message window is full, a
 * Read or atomic would exceed the stream's max_rd_atomic ([MR-VERBS-16]) or the
 * connection ended ([MR-CONN-14]).
 */
int mr_conn_post_wr(struct mr_conn *c, u32 slot, const struct mr_wr *wr);
/* The same for a SEND, WRITE or READ_REQ without flags. */
int mr_conn_post(struct mr_conn *c, u32 slot, u8 opcode, u32 len, u64 va, u32 rkey, u64 cookie);
/* [MR-NAK-4] the QP's rnr_retry (7: infinite) and min_rnr_timer. */
void mr_conn_set_rnr(struct mr_conn *c, u32 slot, u8 rnr_retry, u32 min_rnr_us);
/*
 * [MR-VERBS-16] the QP's max_rd_atomic: at most that many Reads and atomics of the stream
 * posted and not yet completed (0 counts as 1; at most MR_STREAM_MAX_MSGS, the default).
 * mr_conn_post_wr() refuses one more as if the window were full.
 */
void mr_conn_set_rd_atomic(struct mr_conn *c, u32 slot, u32 max_rd_atomic);
/* [MR-CONN-10] [MR-VERBS-8] fail every stream: oldest WQE with status, the rest flushed. */
void mr_conn_fail(struct mr_conn *c, u8 status);
u8 mr_nak_status(u8 code);

/*
 * The caller could not read the source of a Read response (the responder's MR went away
 * after the Read was checked): stop sending it and NAK the Read with code, [MR-SEC-1]. A
 * requester that already has every byte has completed the Read and ignores the NAK.
 */
void mr_conn_abort_response(struct mr_conn *c, u32 slot, u32 msn, u8 code);

/* [MR-CONN-7] ask the peer for an ACK now (a PROBE with ACK_REQ on an active path). */
void mr_conn_challenge(struct mr_conn *c);

/* Sender, sender.c. */
bool mr_conn_next_packet(struct mr_conn *c, u64 now, struct mr_tx_desc *out);
void mr_conn_on_ack(struct mr_conn *c, u64 now, const struct mr_pkt *ack);
void mr_conn_on_timer(struct mr_conn *c, u64 now);
void mr_conn_on_nak(struct mr_conn *c, u64 now, const struct mr_pkt *nak);
/* Earliest RTO, tail-loss probe, message probe, RNR wait or connection timeout. */
u64 mr_conn_sender_deadline(const struct mr_conn *c);

/* Receiver, receiver.c. */
enum mr_rx_result mr_conn_receive(struct mr_conn *c, u64 now, const struct mr_pkt *pkt, bool ce,
				  struct mr_place *place);
/* ACKs, then NAKs, [MR-NAK-3]. */
bool mr_conn_next_ack(struct mr_conn *c, u64 now, struct mr_pkt *out);
/*
 * [MR-ACK-9] a stream stopped taking messages and has a MSGACK due: an ACK goes at once,
 * so that the requester learns what was completed before the QPs are torn down; with
 * copies 2, two ACKs on two paths.
 */
void mr_conn_ack_stream_end(struct mr_conn *c, u32 copies);

/* Completions in MSN order per stream, conn.c. */
bool mr_conn_poll_completion(struct mr_conn *c, struct mr_completion *out);
/*
 * Earliest time at which on_timer, next_ack or next_packet may have work
 * (sender.c: the receiver's ACK deadlines with the sender's own).
 */
u64 mr_conn_next_deadline(const struct mr_conn *c);
/* Nothing outstanding, open, unacknowledged or uncompleted on either side. */
bool mr_conn_quiescent(const struct mr_conn *c);

#endif /* MR_CONN_H */
