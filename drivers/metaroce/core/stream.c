// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Message windows on both sides of a stream; completion strictly follows MSN order. */
#include "codec.h"
#include "stream.h"

u32 mr_msg_npkts(u32 len, u32 pmtu)
{
	return len ? len / pmtu + (len % pmtu ? 1 : 0) : 1;
}

void mr_tx_stream_init(struct mr_tx_stream *st, u32 dest)
{
	memset(st, 0, sizeof(*st));
	st->in_use = true;
	st->dest = dest;
	st->rnr_retry = 7;
	st->rd_atomic_max = MR_STREAM_MAX_MSGS;
}

/* A Read may complete before its MSGACK, so the ring's tail is the older of the two. */
bool mr_tx_stream_can_post(const struct mr_tx_stream *st)
{
	u32 tail = mr_seq_before(st->msn_acked, st->msn_polled) ? st->msn_acked : st->msn_polled;

	return st->next_msn - tail < MR_STREAM_MAX_MSGS;
}

bool mr_opcode_is_request(u8 opcode)
{
	return opcode == MR_OP_READ_REQ || opcode == MR_OP_ATOMIC_CAS ||
	       opcode == MR_OP_ATOMIC_FADD;
}

bool mr_tx_msg_resp_done(const struct mr_tx_msg *m)
{
	return m->resp_received == m->resp_npkts;
}

void mr_tx_msg_restart(struct mr_tx_msg *m, u64 not_before_ns)
{
	m->round++;
	m->next_new = 0;
	m->base = 0;
	m->acked_count = 0;
	memset(m->acked, 0, sizeof(m->acked));
	memset(m->lost, 0, sizeof(m->lost));
	m->n_lost = 0;
	m->rnr_until_ns = not_before_ns;
}

void mr_tx_stream_error(struct mr_tx_stream *st, u32 msn, u8 status)
{
	if (st->err && !mr_seq_before(msn, st->err_msn))
		return;
	st->err = true;
	st->err_msn = msn;
	st->err_status = status;
}

void mr_tx_resp_set_state(struct mr_tx_stream *st, struct mr_tx_msg *r, u8 state)
{
	u64 bit = 1ULL << (r - st->resp);

	r->state = state;
	if (state == MR_MSG_OPEN)
		st->resp_open |= bit;
	else
		st->resp_open &= ~bit;
}

bool mr_tx_msg_next_index(const struct mr_tx_msg *m, u32 *idx, bool *is_retx)
{
	u32 first_lost;

	if (m->state != MR_MSG_OPEN)
		return false;
	first_lost = m->n_lost ? mr_bits_first_set(m->lost) : MR_SACK_BITS;
	if (first_lost < MR_SACK_BITS) {
		*idx = m->base + first_lost;
		*is_retx = true;
		return true;
	}
	/* [MR-REL-8] never beyond base + 256 */
	if (m->next_new < m->npkts && m->next_new - m->base < MR_MSG_PKT_WINDOW) {
		*idx = m->next_new;
		*is_retx = false;
		return true;
	}
	return false;
}

/* Clears the lost bit of idx (at or after base), keeping n_lost. */
static void mr_tx_msg_found(struct mr_tx_msg *m, u32 idx)
{
	if (m->n_lost && mr_bits_test(m->lost, idx - m->base)) {
		mr_bits_clear(m->lost, idx - m->base);
		m->n_lost--;
	}
}

void mr_tx_msg_on_sent(struct mr_tx_msg *m, u32 idx)
{
	if (idx == m->next_new)
		m->next_new++;
	if (idx >= m->base)
		mr_tx_msg_found(m, idx);
}

bool mr_tx_msg_on_delivered(struct mr_tx_msg *m, u32 idx, u64 now)
{
	u32 run;

	if (m->state != MR_MSG_OPEN || idx >= m->npkts || mr_tx_msg_is_acked(m, idx))
		return false;
	mr_bits_set(m->acked, idx - m->base);
	mr_tx_msg_found(m, idx);
	m->acked_count++;
	run = mr_bits_trailing_ones(m->acked);
	if (run) {
		m->base += run;
		mr_bits_shift_down(m->acked, run);
		if (m->n_lost)	/* the bits shifted out are acknowledged, never lost */
			mr_bits_shift_down(m->lost, run);
	}
	if (m->acked_count == m->npkts) {
		m->all_acked_ns = now;
		return true;
	}
	return false;
}

void mr_tx_msg_on_lost(struct mr_tx_msg *m, u32 idx)
{
	if (m->state == MR_MSG_OPEN && idx < m->npkts && !mr_tx_msg_is_acked(m, idx) &&
	    idx - m->base < MR_SACK_BITS && !mr_bits_test(m->lost, idx - m->base)) {
		mr_bits_set(m->lost, idx - m->base);
		m->n_lost++;
	}
}

bool mr_tx_stream_on_msgack(struct mr_tx_stream *st, u32 msn_cum)
{
	u32 msn;

	if (mr_seq_after(msn_cum, st->next_msn))
		return false;
	if (!mr_seq_after(msn_cum, st->msn_acked))
		return true;
	for (msn = st->msn_acked; msn != msn_cum; msn++) {
		struct mr_tx_msg *m = mr_tx_stream_msg(st, msn);

		/* a Read may already have completed and freed its slot */
		if (m->msn == msn && m->state == MR_MSG_OPEN)
			m->state = MR_MSG_DONE;
	}
	st->msn_acked = msn_cum;
	return true;
}

void mr_rx_stream_init(struct mr_rx_stream *st, u32 id)
{
	memset(st, 0, sizeof(*st));
	st->in_use = true;
	st->id = id;
}

static u32 mr_rx_payload_len(u32 msg_len, u32 offset, u32 pmtu)
{
	return mr_min_u32(pmtu, msg_len - offset);
}

/*
 * [MR-SEC-2] The rsn a Send at msn may carry. Every message from msn_reported on consumes
 * at most one receive WQE, in MSN order ([MR-VERBS-12]), so its rsn lies between next_rsn
 * and next_rsn + (msn - msn_reported); a Send already known at distance d in MSN lies at
 * a distance of 1 to |d| in rsn, on the same side. Anything else names a receive that
 * has completed or belongs to another message: never placed.
 */
static bool mr_rx_rsn_possible(const struct mr_rx_stream *st, u32 msn, u32 rsn)
{
	u32 i;

	if (mr_seq_before(rsn, st->next_rsn) || rsn - st->next_rsn > msn - st->msn_reported)
		return false;
	for (i = 0; i < MR_STREAM_MAX_MSGS; i++) {
		const struct mr_rx_msg *n = &st->msg[i];
		s32 dm = (s32)(msn - n->msn), dr = (s32)(rsn - n->rsn);

		if (n->state == MR_MSG_FREE || n->opcode != MR_OP_SEND || n->msn == msn)
			continue;
		if ((dm > 0 && (dr < 1 || dr > dm)) || (dm < 0 && (dr > -1 || dr < dm)))
			return false;
	}
	return true;
}

enum mr_rx_verdict mr_rx_stream_classify(const struct mr_rx_stream *st, const struct mr_pkt *pkt,
					 u32 pmtu)
{
	const struct mr_bth *bth = &pkt->bth;
	const struct mr_rx_msg *m;
	u32 len = mr_pkt_msg_len(pkt), idx;

	/* [MR-REL-10] completed messages take no more bytes */
	if (mr_seq_before(bth->msn, st->msn_cum))
		return MR_RX_DUP;
	/* [MR-REL-9] */
	if (bth->msn - st->msn_reported >= MR_STREAM_MAX_MSGS)
		return MR_RX_BEYOND;
	/* [MR-WIRE-10] packets are cut at PMTU */
	if (bth->offset % pmtu || bth->payload_len != mr_rx_payload_len(len, bth->offset, pmtu))
		return MR_RX_INVALID;
	m = &st->msg[bth->msn % MR_STREAM_MAX_MSGS];
	if (m->state == MR_MSG_FREE)
		return bth->opcode == MR_OP_SEND &&
		       !mr_rx_rsn_possible(st, bth->msn, pkt->msgh.rsn) ? MR_RX_BAD_RSN : MR_RX_NEW;
	if (m->msn != bth->msn || m->len != len || m->opcode != bth->opcode)
		return MR_RX_INVALID;
	/* [MR-SEC-2] every packet of a Send names the receive its first one named */
	if (m->opcode == MR_OP_SEND && pkt->msgh.rsn != m->rsn && m->state == MR_MSG_OPEN)
		return MR_RX_BAD_RSN;
	if (m->state == MR_MSG_DONE)
		return MR_RX_DUP;
	idx = bth->offset / pmtu;
	/* [MR-REL-7] */
	if (idx < m->base || mr_bits_test(m->bits, idx - m->base))
		return MR_RX_DUP;
	if (idx - m->base >= MR_MSG_PKT_WINDOW)
		return MR_RX_BEYOND;
	return MR_RX_NEW;
}

void mr_rx_stream_accept(struct mr_rx_stream *st, const struct mr_pkt *pkt, u32 pmtu)
{
	const struct mr_bth *bth = &pkt->bth;
	struct mr_rx_msg *m = &st->msg[bth->msn % MR_STREAM_MAX_MSGS];
	u32 idx = bth->offset / pmtu, run;

	if (m->state == MR_MSG_FREE) {
		memset(m, 0, sizeof(*m));
		m->state = MR_MSG_OPEN;
		m->opcode = bth->opcode;
		m->msn = bth->msn;
		m->len = mr_pkt_msg_len(pkt);
		m->npkts = mr_msg_npkts(m->len, pmtu);
		m->rsn = bth->opcode == MR_OP_SEND ? pkt->msgh.rsn : 0;
	}
	if (bth->flags & MR_F_LAST) {
		/* [MR-WIRE-9] */
		m->flags = bth->flags;
		m->imm = (bth->flags & MR_F_IMM) ? pkt->imm : 0;
		m->inv_rkey = (bth->flags & MR_F_INV) ? pkt->inv_rkey : 0;
	}
	mr_bits_set(m->bits, idx - m->base);
	m->received++;
	run = mr_bits_trailing_ones(m->bits);
	m->base += run;
	mr_bits_shift_down(m->bits, run);
	if (m->received == m->npkts)
		m->state = MR_MSG_DONE;
}

bool mr_rx_stream_msg_complete(const struct mr_rx_stream *st, u32 msn)
{
	const struct mr_rx_msg *m = &st->msg[msn % MR_STREAM_MAX_MSGS];

	if (mr_seq_before(msn, st->msn_cum))
		return true;
	return m->state == MR_MSG_DONE && m->msn == msn;
}

struct mr_rx_msg *mr_rx_stream_head_done(struct mr_rx_stream *st)
{
	struct mr_rx_msg *m = &st->msg[st->msn_cum % MR_STREAM_MAX_MSGS];

	if (m->state != MR_MSG_DONE || m->msn != st->msn_cum ||
	    st->msn_cum - st->msn_reported >= MR_STREAM_MAX_MSGS)
		return NULL;
	if (st->err && !mr_seq_before(st->msn_cum, st->err_msn))
		return NULL;
	return m;
}

void mr_rx_stream_error(struct mr_rx_stream *st, u32 msn, u8 code)
{
	if (!st->err || mr_seq_before(msn, st->err_msn)) {
		st->err = true;
		st->err_msn = msn;
		st->nak_code = code;
		st->nak_msn = msn;
		st->nak_info = 0;
	}
	st->nak_pending = true;
}
