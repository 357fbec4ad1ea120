// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The receiving half: validate, record SACK, suppress duplicates, place, and build ACKs. */
#include "codec.h"
#include "conn.h"

static struct mr_rx_stream *mr_rx_lookup(struct mr_conn *c, u32 id, u32 *slot)
{
	u32 i;

	for (i = 0; i < c->n_slots; i++) {
		if (c->rx[i]->in_use && c->rx[i]->id == id) {
			*slot = i;
			return c->rx[i];
		}
	}
	return NULL;
}

/*
 * [MR-VERBS-11] a packet for stream id, which is not open. When a stream of that id has
 * closed, its MSGACK is due again if it had completed msn, and else a NAK, for msn will
 * never complete; returns true then (the answer goes at once).
 */
static bool mr_rx_closed_answer(struct mr_conn *c, u32 id, u32 msn)
{
	u32 i;

	for (i = 1; i <= MR_CLOSED_STREAMS; i++) {
		struct mr_rx_closed *r = &c->closed[(c->closed_next - i) % MR_CLOSED_STREAMS];

		if (!r->valid || r->id != id)
			continue;
		if (!r->touched && !r->nak_pending)
			c->closed_due++;
		if (mr_seq_before(msn, r->msn_cum)) {
			r->touched = true;
		} else {
			r->nak_msn = msn;
			r->nak_pending = true;
		}
		return true;
	}
	return false;
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

/*
 * [MR-VERBS-4] Reads and atomics execute when every earlier message is complete; the
 * response goes out through the responder's own paths, [MR-REL-12].
 */
static u8 mr_rx_execute(struct mr_conn *c, u32 slot, struct mr_rx_msg *m)
{
	struct mr_tx_stream *ts = c->tx[slot];
	struct mr_tx_msg *r = mr_tx_stream_resp(ts, m->msn);
	bool read = m->opcode == MR_OP_READ_REQ;
	struct mr_exec ex;
	u8 code = 0;

	memset(&ex, 0, sizeof(ex));
	ex.stream_slot = (u8)slot;
	ex.opcode = m->opcode;
	ex.msn = m->msn;
	ex.va = m->req.va;
	ex.rkey = m->req.rkey;
	ex.len = read ? m->req.length : 8;
	ex.swap_add = m->req.swap_add;
	ex.compare = m->req.compare;
	if (!read && (ex.va & 7))
		code = MR_NAK_ACCESS;	/* misaligned atomic */
	else if (c->ops && c->ops->execute)
		code = c->ops->execute(c->ops_ctx, &ex);
	if (code)
		return code;
	memset(r, 0, sizeof(*r));
	mr_tx_resp_set_state(ts, r, MR_MSG_OPEN);
	r->opcode = read ? MR_OP_READ_RESP : MR_OP_ATOMIC_RESP;
	r->msn = m->msn;
	r->len = read ? ex.len : 0;
	r->npkts = mr_msg_npkts(r->len, c->cfg.pmtu);
	r->va = ex.va;
	r->rkey = ex.rkey;
	r->orig = ex.orig;
	return 0;
}

/* [MR-VERBS-2] move msn_cum over complete messages, executing requests on the way. */
static void mr_rx_advance(struct mr_conn *c, u32 slot)
{
	struct mr_rx_stream *st = c->rx[slot];
	struct mr_rx_msg *m;
	u8 code;

	while ((m = mr_rx_stream_head_done(st))) {
		if (mr_opcode_is_request(m->opcode)) {
			code = mr_rx_execute(c, slot, m);
			if (code) {
				mr_rx_stream_error(st, m->msn, code);
				return;
			}
		}
		st->msn_cum++;
	}
}

/* [MR-REL-12] a duplicate of an answered atomic is answered again from the cache. */
static void mr_rx_replay(struct mr_conn *c, u32 slot, const struct mr_pkt *pkt)
{
	struct mr_tx_stream *ts = c->tx[slot];
	struct mr_tx_msg *r = mr_tx_stream_resp(ts, pkt->bth.msn);

	if (pkt->bth.opcode == MR_OP_READ_REQ || r->msn != pkt->bth.msn ||
	    r->opcode != MR_OP_ATOMIC_RESP || r->state != MR_MSG_DONE)
		return;
	mr_tx_resp_set_state(ts, r, MR_MSG_OPEN);
	mr_tx_msg_restart(r, 0);
}

static bool mr_rx_ack_at_once(const struct mr_pkt *pkt, bool ce, enum mr_sack_verdict sv)
{
	return (pkt->bth.flags & MR_F_ACK_REQ) || ce || sv == MR_SACK_OUT_OF_ORDER;
}

/*
 * The requester's half of a Read or atomic: place the response at the WQE's buffer once,
 * [MR-SEC-1] [MR-REL-7].
 */
static void mr_rx_fill_place(const struct mr_pkt *pkt, u32 slot, struct mr_place *place);

static enum mr_rx_result mr_rx_response(struct mr_conn *c, u64 now, const struct mr_pkt *pkt,
					bool ce, enum mr_sack_verdict sv, struct mr_place *place)
{
	const struct mr_bth *bth = &pkt->bth;
	struct mr_sack_rx *s = &c->rx_path[bth->path_id];
	bool read = bth->opcode == MR_OP_READ_RESP;
	struct mr_tx_stream *ts;
	struct mr_tx_msg *m;
	u32 slot = 0, idx;

	if (!mr_rx_lookup(c, bth->stream, &slot)) {
		/* [MR-VERBS-11] */
		mr_sack_rx_record(s, bth->psn);
		mr_rx_count(s, pkt, ce);
		mr_rx_schedule_ack(c, s, now, mr_rx_ack_at_once(pkt, ce, sv));
		return MR_RX_RESULT_DROP;
	}
	ts = c->tx[slot];
	m = mr_tx_stream_msg(ts, bth->msn);
	if (mr_seq_before(bth->msn, ts->msn_polled) || m->msn != bth->msn ||
	    m->state == MR_MSG_FREE || mr_tx_stream_in_error(ts, bth->msn))
		goto dup;	/* completed or flushed: acknowledge, place nothing */
	if (!mr_seq_before(bth->msn, ts->next_msn) ||
	    m->opcode != (read ? MR_OP_READ_REQ : m->opcode) || !mr_opcode_is_request(m->opcode) ||
	    (read && (pkt->msgh.msg_len != m->len || bth->offset % c->cfg.pmtu ||
		      bth->payload_len != mr_min_u32(c->cfg.pmtu, m->len - bth->offset))) ||
	    (!read && m->opcode == MR_OP_READ_REQ))
		return MR_RX_RESULT_DROP;
	idx = read ? bth->offset / c->cfg.pmtu : 0;
	if (idx < m->resp_base || mr_bits_test(m->resp_bits, idx - m->resp_base))
		goto dup;
	if (idx - m->resp_base >= MR_MSG_PKT_WINDOW)
		return MR_RX_RESULT_DROP;
	mr_sack_rx_record(s, bth->psn);
	mr_rx_count(s, pkt, ce);
	mr_rx_schedule_ack(c, s, now, mr_rx_ack_at_once(pkt, ce, sv) || sv == MR_SACK_DUPLICATE);
	if (sv == MR_SACK_DUPLICATE)
		return MR_RX_RESULT_NONE;
	mr_bits_set(m->resp_bits, idx - m->resp_base);
	m->resp_received++;
	idx = mr_bits_trailing_ones(m->resp_bits);
	m->resp_base += idx;
	mr_bits_shift_down(m->resp_bits, idx);
	mr_rx_fill_place(pkt, slot, place);
	place->cookie = m->cookie;
	place->orig = pkt->atomic_orig;
	if (!read)
		m->orig = pkt->atomic_orig;
	return MR_RX_RESULT_PLACE;
dup:
	mr_sack_rx_record(s, bth->psn);
	mr_rx_count(s, pkt, ce);
	c->rx_duplicates++;
	mr_rx_schedule_ack(c, s, now, true);
	return MR_RX_RESULT_NONE;
}

static void mr_rx_fill_place(const struct mr_pkt *pkt, u32 slot, struct mr_place *place)
{
	const struct mr_bth *bth = &pkt->bth;

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
}

static bool mr_rx_is_request(u8 opcode)
{
	return opcode == MR_OP_SEND || opcode == MR_OP_WRITE || mr_opcode_is_request(opcode);
}

enum mr_rx_result mr_conn_receive(struct mr_conn *c, u64 now, const struct mr_pkt *pkt, bool ce,
				  struct mr_place *place)
{
	const struct mr_bth *bth = &pkt->bth;
	enum mr_sack_verdict sv;
	enum mr_rx_verdict mv;
	struct mr_rx_stream *st;
	struct mr_sack_rx *s;
	u32 slot = 0, info = 0;
	u8 code = 0;

	mr_conn_touch(c);
	if (c->failed)
		goto drop;
	if (bth->opcode == MR_OP_ACK) {
		mr_conn_on_ack(c, now, pkt);
		return MR_RX_RESULT_NONE;
	}
	if (bth->conn_id != c->cfg.local_conn_id)
		goto drop;
	if (bth->opcode == MR_OP_NAK) {
		mr_conn_on_nak(c, now, pkt);
		return MR_RX_RESULT_NONE;
	}
	if (bth->path_id >= c->cfg.n_paths)
		goto drop;
	s = &c->rx_path[bth->path_id];
	sv = mr_sack_rx_classify(s, bth->psn);
	if (sv == MR_SACK_BEYOND_WINDOW)
		goto drop;	/* [MR-ACK-3] no acknowledgment */
	if (pkt->sport >= MR_ENTROPY_MIN)
		s->entropy = pkt->sport;	/* [MR-ACK-8] the ACK goes back the same way */
	if (bth->opcode == MR_OP_PROBE) {
		mr_sack_rx_record(s, bth->psn);
		mr_rx_count(s, pkt, ce);
		mr_rx_schedule_ack(c, s, now, true);
		return MR_RX_RESULT_NONE;
	}
	if (bth->opcode == MR_OP_READ_RESP || bth->opcode == MR_OP_ATOMIC_RESP) {
		enum mr_rx_result res = mr_rx_response(c, now, pkt, ce, sv, place);

		if (res == MR_RX_RESULT_DROP)
			goto drop;
		return res;
	}
	if (!mr_rx_is_request(bth->opcode))
		goto drop;
	st = mr_rx_lookup(c, bth->stream, &slot);
	if (!st) {
		/*
		 * [MR-VERBS-11] a closed or unknown stream: the PSN is acknowledged so that the
		 * path stays healthy for the other streams, nothing is placed. A closed stream
		 * answers at once: by MSGACK for a message it completed before it closed, and
		 * with a NAK for any other.
		 */
		bool closed = mr_rx_closed_answer(c, bth->stream, bth->msn);

		mr_sack_rx_record(s, bth->psn);
		mr_rx_count(s, pkt, ce);
		mr_rx_schedule_ack(c, s, now, closed || mr_rx_ack_at_once(pkt, ce, sv));
		goto drop;
	}
	if (st->err && !mr_seq_before(bth->msn, st->err_msn)) {
		/* [MR-NAK-1] [MR-NAK-3] [MR-VERBS-8] acknowledge, place nothing, NAK again */
		mr_sack_rx_record(s, bth->psn);
		mr_rx_count(s, pkt, ce);
		mr_rx_schedule_ack(c, s, now, true);
		st->nak_pending = true;
		return MR_RX_RESULT_NONE;
	}
	mv = mr_rx_stream_classify(st, pkt, c->cfg.pmtu);
	if (mv == MR_RX_BEYOND || mv == MR_RX_INVALID)
		goto drop;	/* [MR-REL-9] not acknowledged, the sender will resend */
	if (mv == MR_RX_BAD_RSN && sv != MR_SACK_DUPLICATE) {
		/* [MR-SEC-2] [MR-NAK-1] acknowledged, placed nowhere, the stream fails */
		mr_sack_rx_record(s, bth->psn);
		mr_rx_count(s, pkt, ce);
		mr_rx_schedule_ack(c, s, now, true);
		st->touched = true;
		c->rx_bad_rsns++;
		mr_rx_stream_error(st, bth->msn, MR_NAK_INVALID_REQUEST);
		return MR_RX_RESULT_NONE;
	}

	if ((bth->flags & MR_F_MSG_PROBE) && !mr_rx_stream_msg_complete(st, bth->msn)) {
		/*
		 * [MR-REL-11] [MR-NAK-4] the sender holds every packet of the message
		 * acknowledged, we do not have them all: some were refused (RNR) and the
		 * NAK was lost or gave way to a later message's (one per stream). Place
		 * nothing and ask for the whole message again, or it never completes.
		 */
		mr_sack_rx_record(s, bth->psn);
		mr_rx_count(s, pkt, ce);
		mr_rx_schedule_ack(c, s, now, true);
		st->touched = true;
		st->nak_code = MR_NAK_RNR;
		st->nak_msn = bth->msn;
		st->nak_info = 0;
		st->nak_pending = true;
		return MR_RX_RESULT_NONE;
	}
	if (sv == MR_SACK_DUPLICATE || mv == MR_RX_DUP || mv == MR_RX_BAD_RSN) {
		/* [MR-ACK-3] [MR-REL-7] [MR-REL-10] acknowledge at once, place nothing */
		mr_sack_rx_record(s, bth->psn);
		mr_rx_count(s, pkt, ce);
		st->touched = true;
		c->rx_duplicates++;
		mr_rx_schedule_ack(c, s, now, true);
		if (mv == MR_RX_DUP)
			mr_rx_replay(c, slot, pkt);
		/*
		 * No RNR NAK again for a duplicate: it is what a resent message
		 * brings first, and a NAK would restart it before the packets we
		 * refused come; a lost RNR NAK comes back through the message
		 * probe ([MR-REL-11]).
		 */
		return MR_RX_RESULT_NONE;
	}
	mr_rx_fill_place(pkt, slot, place);
	if ((bth->opcode == MR_OP_SEND || bth->opcode == MR_OP_WRITE) && c->ops &&
	    c->ops->check_place)
		code = c->ops->check_place(c->ops_ctx, place, &info);
	mr_sack_rx_record(s, bth->psn);
	mr_rx_count(s, pkt, ce);
	st->touched = true;
	if (code) {
		/* [MR-NAK-1] the PSN is acknowledged; nothing is placed */
		mr_rx_schedule_ack(c, s, now, true);
		if (code == MR_NAK_RNR) {
			st->nak_code = MR_NAK_RNR;
			st->nak_msn = bth->msn;
			st->nak_info = info;
			st->nak_pending = true;
		} else {
			mr_rx_stream_error(st, bth->msn, code);
		}
		return MR_RX_RESULT_NONE;
	}
	mr_rx_schedule_ack(c, s, now, mr_rx_ack_at_once(pkt, ce, sv));
	mr_rx_stream_accept(st, pkt, c->cfg.pmtu);
	if (mr_opcode_is_request(bth->opcode)) {
		struct mr_rx_msg *m = &st->msg[bth->msn % MR_STREAM_MAX_MSGS];
		bool read = bth->opcode == MR_OP_READ_REQ;

		m->req.va = read ? pkt->reth.va : pkt->atomic.va;
		m->req.rkey = read ? pkt->reth.rkey : pkt->atomic.rkey;
		m->req.length = read ? pkt->reth.length : 8;
		m->req.swap_add = pkt->atomic.swap_add;
		m->req.compare = pkt->atomic.compare;
	}
	mr_rx_advance(c, slot);
	return mr_opcode_is_request(bth->opcode) ? MR_RX_RESULT_NONE : MR_RX_RESULT_PLACE;
drop:
	c->rx_dropped++;
	return MR_RX_RESULT_DROP;
}

static void mr_ack_add_msgack(struct mr_ackh *ack, u32 stream, u32 msn_cum)
{
	ack->msg_acks[ack->n_msg_acks].stream = stream;
	ack->msg_acks[ack->n_msg_acks].msn_cum = msn_cum;
	ack->n_msg_acks++;
}

/* [MR-ACK-1] [MR-ACK-2] [MR-ACK-4] [MR-ACK-6] */
static void mr_build_ack(struct mr_conn *c, u32 path, struct mr_pkt *out)
{
	struct mr_sack_rx *s = &c->rx_path[path];
	struct mr_ackh *ack = &out->ack;
	bool repeat = false;
	u32 i;

	memset(out, 0, sizeof(*out));
	out->bth.version = MR_VERSION;
	out->bth.opcode = MR_OP_ACK;
	out->bth.conn_id = c->cfg.peer_conn_id;
	out->bth.path_id = (u16)path;
	/* [MR-ACK-8] back the way the path's newest packet came; any way before one came */
	out->sport = s->entropy ? s->entropy : mr_entropy_random(&c->rng);
	ack->cum_psn = s->cum_psn;
	/* [MR-ACK-9] an ACK no packet triggered echoes no time: it would measure nothing */
	ack->ts_echo = s->pkt_count ? s->ts_echo : 0;
	ack->rate_hint = (u16)c->local_hint;
	ack->ce_count = s->ce_count;
	ack->pkt_count = s->pkt_count;
	memcpy(ack->sack, s->bits, sizeof(ack->sack));
	/*
	 * [MR-ACK-6] at most MR_ACK_MAX_MSG_ACKS streams an ACK: starting where the last one
	 * stopped, so that with more touched streams than that none waits for ever.
	 */
	for (i = 0; i < c->n_slots && ack->n_msg_acks < MR_ACK_MAX_MSG_ACKS; i++) {
		u32 slot = (c->rr_msgack + i) % c->n_slots;
		struct mr_rx_stream *st = c->rx[slot];

		if (!st->in_use || !st->touched)
			continue;
		mr_ack_add_msgack(ack, st->id, st->msn_reported);
		if (st->msgack_repeats) {
			st->msgack_repeats--;	/* [MR-ACK-9] */
			repeat = true;
		} else {
			st->touched = false;
		}
		if (ack->n_msg_acks == MR_ACK_MAX_MSG_ACKS)
			c->rr_msgack = slot + 1;
	}
	/* [MR-VERBS-11] closed streams that were probed for what they completed */
	for (i = 0; c->closed_due && i < MR_CLOSED_STREAMS &&
	     ack->n_msg_acks < MR_ACK_MAX_MSG_ACKS; i++) {
		struct mr_rx_closed *r = &c->closed[i];

		if (!r->valid || !r->touched)
			continue;
		mr_ack_add_msgack(ack, r->id, r->msn_cum);
		r->touched = false;
		if (!r->nak_pending)
			c->closed_due--;
	}
	c->acks_sent++;
	s->ce_count = 0;
	s->pkt_count = 0;
	s->unacked = 0;
	s->ack_deadline_ns = 0;
	/*
	 * [MR-ACK-6] streams still touched go in the next ACK, at once.  [MR-ACK-9] a
	 * repeat goes on another path (mr_conn_ack_stream_end()), or on this one when
	 * there is no other.
	 */
	s->ack_now = repeat && c->cfg.n_paths == 1;
	for (i = 0; ack->n_msg_acks == MR_ACK_MAX_MSG_ACKS && i < c->n_slots; i++)
		if (c->rx[i]->in_use && c->rx[i]->touched)
			s->ack_now = true;
	for (i = 0; c->closed_due && ack->n_msg_acks == MR_ACK_MAX_MSG_ACKS &&
	     i < MR_CLOSED_STREAMS; i++)
		if (c->closed[i].valid && c->closed[i].touched)
			s->ack_now = true;
}

/* [MR-NAK-3] a NAK names the stream and msn of the failed message. */
static void mr_build_nak(struct mr_conn *c, u32 stream, u32 msn, u8 code, u32 info,
			 struct mr_pkt *out)
{
	memset(out, 0, sizeof(*out));
	out->bth.version = MR_VERSION;
	out->bth.opcode = MR_OP_NAK;
	out->bth.conn_id = c->cfg.peer_conn_id;
	out->bth.stream = stream;
	out->bth.msn = msn;
	out->nak.code = code;
	out->nak.info = code == MR_NAK_RNR ? info : 0;
	out->sport = mr_entropy_random(&c->rng);	/* [MR-ENC-2] */
	c->naks_sent++;
}

static bool mr_next_nak(struct mr_conn *c, struct mr_pkt *out)
{
	u32 i;

	for (i = 0; i < c->n_slots; i++) {
		struct mr_rx_stream *st = c->rx[i];

		if (!st->in_use || !st->nak_pending)
			continue;
		mr_build_nak(c, st->id, st->nak_msn, st->nak_code, st->nak_info, out);
		st->nak_pending = false;
		return true;
	}
	for (i = 0; c->closed_due && i < MR_CLOSED_STREAMS; i++) {
		struct mr_rx_closed *r = &c->closed[i];

		if (!r->valid || !r->nak_pending)
			continue;
		/* [MR-VERBS-11] a message of a closed stream: it never completes */
		mr_build_nak(c, r->id, r->nak_msn, MR_NAK_INVALID_REQUEST, 0, out);
		r->nak_pending = false;
		if (!r->touched)
			c->closed_due--;
		return true;
	}
	return false;
}

/* A path's echoed peer time a is newer than b; 0 is none, older than any. */
static bool mr_ts_newer(u32 a, u32 b)
{
	return a && (!b || (s32)(a - b) > 0);
}

void mr_conn_ack_stream_end(struct mr_conn *c, u32 copies)
{
	u32 p, best = 0, next = MR_MAX_PATHS;

	mr_conn_touch(c);
	/*
	 * [MR-ACK-9] on the path that heard from the peer last, by the peer's clock: it
	 * worked a moment ago, and [MR-ACK-8] sends the ACK back the way that came.  A
	 * repeat goes on the path that heard from it the moment before, so that one
	 * lost or dead link cannot take both.
	 */
	for (p = 1; p < c->cfg.n_paths; p++) {
		if (mr_ts_newer(c->rx_path[p].ts_echo, c->rx_path[best].ts_echo)) {
			next = best;
			best = p;
		} else if (next == MR_MAX_PATHS ||
			   mr_ts_newer(c->rx_path[p].ts_echo, c->rx_path[next].ts_echo)) {
			next = p;
		}
	}
	c->rx_path[best].ack_now = true;
	if (copies > 1 && next != MR_MAX_PATHS)
		c->rx_path[next].ack_now = true;
}

bool mr_conn_next_ack(struct mr_conn *c, u64 now, struct mr_pkt *out)
{
	u32 p;

	if (c->failed)
		return false;

	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_sack_rx *s = &c->rx_path[p];

		if (s->ack_now || (s->unacked && s->ack_deadline_ns && now >= s->ack_deadline_ns)) {
			mr_build_ack(c, p, out);
			return true;
		}
	}
	return mr_next_nak(c, out);
}
