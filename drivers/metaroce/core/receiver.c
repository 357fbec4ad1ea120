// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The receiving half: validate, record SACK, suppress duplicates, place, and build ACKs. */
#include "codec.h"
#include "conn.h"

static struct mr_rx_stream *mr_rx_lookup(struct mr_conn *c, u32 id, u32 *slot)
{
	u32 i;

	for (i = 0; i < MR_CONN_STREAMS; i++) {
		if (c->rx[i].in_use && c->rx[i].id == id) {
			*slot = i;
			return &c->rx[i];
		}
	}
	return NULL;
}

/* [MR-ACK-5] */
static void mr_rx_schedule_ack(struct mr_conn *c, struct mr_sack_rx *s, u64 now, bool at_once)
{
	if (s->unacked < 0xffff)
		s->unacked++;
	if (at_once || s->unacked >= c->cfg.ack_freq)
		s->ack_now = true;
	else if (!s->ack_deadline_ns)
		s->ack_deadline_ns = now + c->cfg.ack_delay_ns;
}

static void mr_rx_count(struct mr_sack_rx *s, const struct mr_pkt *pkt, bool ce)
{
	if (s->pkt_count < 0xffff)
		s->pkt_count++;
	if (ce && s->ce_count < 0xffff)
		s->ce_count++;
	s->ts_echo = pkt->bth.timestamp;
}

enum mr_rx_result mr_conn_receive(struct mr_conn *c, u64 now, const struct mr_pkt *pkt, bool ce,
				  struct mr_place *place)
{
	const struct mr_bth *bth = &pkt->bth;
	enum mr_sack_verdict sv;
	enum mr_rx_verdict mv;
	struct mr_rx_stream *st;
	struct mr_sack_rx *s;
	u32 slot = 0;

	if (bth->opcode == MR_OP_ACK) {
		mr_conn_on_ack(c, now, pkt);
		return MR_RX_RESULT_NONE;
	}
	if (bth->conn_id != c->cfg.local_conn_id || bth->path_id >= c->cfg.n_paths)
		goto drop;
	s = &c->rx_path[bth->path_id];
	sv = mr_sack_rx_classify(s, bth->psn);
	if (sv == MR_SACK_BEYOND_WINDOW)
		goto drop;	/* [MR-ACK-3] no acknowledgment */
	if (bth->opcode == MR_OP_PROBE) {
		mr_sack_rx_record(s, bth->psn);
		mr_rx_count(s, pkt, ce);
		mr_rx_schedule_ack(c, s, now, true);
		return MR_RX_RESULT_NONE;
	}
	if (bth->opcode != MR_OP_SEND && bth->opcode != MR_OP_WRITE)
		goto drop;	/* Reads and atomics are not implemented by this engine yet */
	st = mr_rx_lookup(c, bth->stream, &slot);
	if (!st)
		goto drop;
	mv = mr_rx_stream_classify(st, pkt, c->cfg.pmtu);
	if (mv == MR_RX_BEYOND || mv == MR_RX_INVALID)
		goto drop;	/* [MR-REL-9] not acknowledged, the sender will resend */

	mr_sack_rx_record(s, bth->psn);
	mr_rx_count(s, pkt, ce);
	st->touched = true;
	if (sv == MR_SACK_DUPLICATE || mv == MR_RX_DUP) {
		/* [MR-ACK-3] [MR-REL-7] [MR-REL-10] acknowledge at once, place nothing */
		c->rx_duplicates++;
		mr_rx_schedule_ack(c, s, now, true);
		return MR_RX_RESULT_NONE;
	}
	mr_rx_schedule_ack(c, s, now, (bth->flags & MR_F_ACK_REQ) || ce ||
			   sv == MR_SACK_OUT_OF_ORDER);
	mr_rx_stream_accept(st, pkt, c->cfg.pmtu);

	memset(place, 0, sizeof(*place));
	place->stream_slot = (u8)slot;
	place->opcode = bth->opcode;
	place->msn = bth->msn;
	place->offset = bth->offset;
	place->len = bth->payload_len;
	place->data = pkt->payload;
	if (bth->opcode == MR_OP_SEND) {
		place->rsn = pkt->msgh.rsn;
	} else {
		place->va = pkt->reth.va;
		place->rkey = pkt->reth.rkey;
	}
	return MR_RX_RESULT_PLACE;
drop:
	c->rx_dropped++;
	return MR_RX_RESULT_DROP;
}

/* [MR-ACK-1] [MR-ACK-2] [MR-ACK-4] [MR-ACK-6] */
static void mr_build_ack(struct mr_conn *c, u32 path, struct mr_pkt *out)
{
	struct mr_sack_rx *s = &c->rx_path[path];
	struct mr_ackh *ack = &out->ack;
	u32 i;

	memset(out, 0, sizeof(*out));
	out->bth.version = MR_VERSION;
	out->bth.opcode = MR_OP_ACK;
	out->bth.conn_id = c->cfg.peer_conn_id;
	out->bth.path_id = (u16)path;
	ack->cum_psn = s->cum_psn;
	ack->ts_echo = s->ts_echo;
	ack->rate_hint = (u16)c->local_hint;
	ack->ce_count = s->ce_count;
	ack->pkt_count = s->pkt_count;
	memcpy(ack->sack, s->bits, sizeof(ack->sack));
	for (i = 0; i < MR_CONN_STREAMS && ack->n_msg_acks < MR_ACK_MAX_MSG_ACKS; i++) {
		struct mr_rx_stream *st = &c->rx[i];

		if (!st->in_use || !st->touched)
			continue;
		ack->msg_acks[ack->n_msg_acks].stream = st->id;
		ack->msg_acks[ack->n_msg_acks].msn_cum = st->msn_reported;
		ack->n_msg_acks++;
		st->touched = false;
	}
	s->ce_count = 0;
	s->pkt_count = 0;
	s->unacked = 0;
	s->ack_now = false;
	s->ack_deadline_ns = 0;
}

bool mr_conn_next_ack(struct mr_conn *c, u64 now, struct mr_pkt *out)
{
	u32 p;

	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_sack_rx *s = &c->rx_path[p];

		if (s->ack_now || (s->unacked && s->ack_deadline_ns && now >= s->ack_deadline_ns)) {
			mr_build_ack(c, p, out);
			return true;
		}
	}
	return false;
}
