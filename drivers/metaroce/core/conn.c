// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Connection set-up, stream pairing, work posting and MSN-ordered completion polling. */
#include "conn.h"

/* What every closed slot points to: not in use, and never written. */
static struct mr_tx_stream mr_tx_closed;
static struct mr_rx_stream mr_rx_closed;

void mr_conn_cfg_defaults(struct mr_conn_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->pmtu = 4096;
	cfg->n_paths = MR_DEFAULT_PATHS;
	cfg->fail_rtos = MR_PATH_FAIL_RTOS;
	cfg->ack_freq = MR_ACK_FREQ;
	cfg->init_cwnd = MR_INIT_CWND;
	cfg->conn_max_window = MR_CONN_MAX_WINDOW;
	cfg->ack_delay_ns = MR_ACK_DELAY_NS;
	cfg->rto.initial_ns = MR_INITIAL_RTO_NS;
	cfg->rto.min_ns = MR_MIN_RTO_NS;
	cfg->rto.max_ns = MR_MAX_RTO_NS;
	cfg->conn_timeout_ns = MR_CONN_TIMEOUT_NS;
}

void mr_conn_init(struct mr_conn *c, const struct mr_conn_cfg *cfg)
{
	u16 used[MR_MAX_PATHS];
	u32 p;

	memset(c, 0, sizeof(*c));
	for (p = 0; p < MR_CONN_STREAMS; p++) {
		c->tx[p] = &mr_tx_closed;
		c->rx[p] = &mr_rx_closed;
	}
	c->cfg = *cfg;
	if (c->cfg.n_paths < 1 || c->cfg.n_paths > MR_MAX_PATHS)
		c->cfg.n_paths = MR_DEFAULT_PATHS;
	if (c->cfg.pmtu < MR_MIN_PMTU)
		c->cfg.pmtu = MR_MIN_PMTU;
	c->cfg.pmtu -= c->cfg.pmtu % MR_PMTU_ALIGN;	/* [MR-CONN-6] */
	if (c->cfg.pmtu > 0xff00)
		c->cfg.pmtu = 0xff00;
	c->rng = cfg->seed;
	for (p = 0; p < c->cfg.n_paths; p++) {
		/* [MR-PATH-3] path p starts at initial_psn + p * 2^24 */
		u16 e = mr_entropy_pick(&c->rng, used, p);

		used[p] = e;
		mr_path_init(&c->tx_path[p], cfg->tx_initial_psn + p * MR_PATH_PSN_STRIDE, e,
			     MR_PATH_ACTIVE, c->cfg.init_cwnd);
		mr_sack_rx_init(&c->rx_path[p], cfg->rx_initial_psn + p * MR_PATH_PSN_STRIDE);
	}
}

int mr_conn_open_stream(struct mr_conn *c, u32 local_id, u32 peer_id, struct mr_stream *mem)
{
	u32 i;

	mr_conn_touch(c);
	if (!mem)
		return -1;
	for (i = 0; i < MR_CONN_STREAMS; i++) {
		if (c->mem[i])
			continue;
		c->mem[i] = mem;
		c->tx[i] = &mem->tx;
		c->rx[i] = &mem->rx;
		mr_tx_stream_init(c->tx[i], peer_id & MR_STREAM_ID_MASK);
		mr_rx_stream_init(c->rx[i], local_id & MR_STREAM_ID_MASK);
		if (i >= c->n_slots)
			c->n_slots = i + 1;
		return (int)i;
	}
	return -1;
}

void mr_conn_error_stream(struct mr_conn *c, u32 slot, u8 nak_code)
{
	struct mr_tx_stream *ts;
	struct mr_rx_stream *rs;
	u32 i;

	mr_conn_touch(c);
	if (slot >= MR_CONN_STREAMS)
		return;
	ts = c->tx[slot];
	rs = c->rx[slot];
	if (ts->in_use) {
		mr_tx_stream_error(ts, ts->msn_polled, MR_WC_WR_FLUSH_ERR);
		/* Responses to the peer's Reads and atomics are not sent either. */
		for (i = 0; i < MR_STREAM_MAX_MSGS; i++)
			mr_tx_resp_set_state(ts, &ts->resp[i], MR_MSG_FREE);
	}
	if (rs->in_use && !rs->err) {
		mr_rx_stream_error(rs, rs->msn_cum, nak_code);
		/*
		 * [MR-VERBS-8] the NAK answers the peer's packets for the stream; sent
		 * now, it would name a message the peer may never post (every tear-down
		 * sent one).
		 */
		rs->nak_pending = false;
		rs->err_reported = true;	/* the caller flushes the receives itself */
		/*
		 * [MR-ACK-9] what it completed, once more, in two ACKs: the last MSGACK
		 * may be lost, and the consumer's tear-down follows at once.
		 */
		if (rs->msn_reported) {
			rs->touched = true;
			rs->msgack_repeats = 1;
			mr_conn_ack_stream_end(c, 2);
		}
	}
}

bool mr_conn_stream_unused(const struct mr_conn *c, u32 slot)
{
	const struct mr_tx_stream *ts;
	const struct mr_rx_stream *rs;
	u32 i;

	if (slot >= MR_CONN_STREAMS || !c->mem[slot])
		return false;
	ts = c->tx[slot];
	rs = c->rx[slot];
	if (ts->next_msn || ts->err || rs->msn_cum || rs->next_rsn || rs->err || rs->nak_pending ||
	    rs->touched)
		return false;
	for (i = 0; i < MR_STREAM_MAX_MSGS; i++)
		if (rs->msg[i].state != MR_MSG_FREE || ts->resp[i].state != MR_MSG_FREE)
			return false;
	return true;
}

void mr_conn_end(struct mr_conn *c)
{
	mr_conn_touch(c);
	c->ended = true;
}

struct mr_stream *mr_conn_close_stream(struct mr_conn *c, u32 slot)
{
	struct mr_stream *mem;
	u32 p, psn;

	mr_conn_touch(c);
	if (slot >= MR_CONN_STREAMS || !c->mem[slot])
		return NULL;
	if (c->rx[slot]->in_use) {
		/* [MR-VERBS-11] remember what it completed, for a probe whose MSGACK was lost */
		struct mr_rx_closed *r = &c->closed[c->closed_next++ % MR_CLOSED_STREAMS];

		if (r->valid && (r->touched || r->nak_pending))
			c->closed_due--;	/* overwritten with its answer due */
		r->id = c->rx[slot]->id;
		r->msn_cum = c->rx[slot]->msn_reported;
		r->valid = true;
		r->nak_pending = false;
		/* [MR-ACK-9] and says so at once, once more */
		r->touched = r->msn_cum != 0;
		if (r->touched) {
			c->closed_due++;
			mr_conn_ack_stream_end(c, 1);
		}
	}
	/*
	 * Packets of the stream still in flight keep their PSNs, so the paths' SACK and
	 * congestion state stay whole, but they now carry nothing: their records no longer
	 * name the slot, and a later stream in the slot never takes their acknowledgments.
	 */
	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_path_tx *tp = &c->tx_path[p];

		for (psn = tp->una; psn != tp->next_psn; psn++) {
			struct mr_tx_rec *rec = mr_path_rec(tp, psn);

			if (rec->valid && rec->stream_slot == slot)
				rec->stream_slot = MR_REC_PROBE;
		}
	}
	mem = c->mem[slot];
	c->mem[slot] = NULL;
	c->tx[slot] = &mr_tx_closed;
	c->rx[slot] = &mr_rx_closed;
	while (c->n_slots && !c->mem[c->n_slots - 1])
		c->n_slots--;
	return mem;
}

int mr_conn_post_wr(struct mr_conn *c, u32 slot, const struct mr_wr *wr)
{
	struct mr_tx_stream *st;
	struct mr_tx_msg *m;
	bool request = mr_opcode_is_request(wr->opcode);

	mr_conn_touch(c);
	if (slot >= MR_CONN_STREAMS || !c->tx[slot]->in_use || wr->len > MR_MAX_MSG_LEN)
		return -1;
	if (c->ended)
		return -1;	/* [MR-CONN-14] the WQE waits for the next connection */
	if (wr->opcode != MR_OP_SEND && wr->opcode != MR_OP_WRITE && !request)
		return -1;
	/* [MR-WIRE-4] IMM on SEND and WRITE, INV on SEND only, never both */
	if (((wr->flags & MR_WR_IMM) && request) ||
	    ((wr->flags & MR_WR_INV) && wr->opcode != MR_OP_SEND) ||
	    ((wr->flags & MR_WR_IMM) && (wr->flags & MR_WR_INV)))
		return -1;
	st = c->tx[slot];
	if (!mr_tx_stream_can_post(st))
		return -1;
	/* [MR-VERBS-16] the QP's max_rd_atomic: a Read or atomic waits for one to complete */
	if (request && st->rd_atomic_open >= st->rd_atomic_max)
		return -1;
	m = mr_tx_stream_msg(st, st->next_msn);
	memset(m, 0, sizeof(*m));
	m->state = MR_MSG_OPEN;
	m->opcode = wr->opcode;
	m->msn = st->next_msn++;
	m->len = wr->opcode == MR_OP_READ_REQ || !request ? wr->len : 8;
	m->npkts = request ? 1 : mr_msg_npkts(m->len, c->cfg.pmtu);
	m->va = wr->va;
	m->rkey = wr->rkey;
	m->swap_add = wr->swap_add;
	m->compare = wr->compare;
	m->cookie = wr->cookie;
	m->fence = !!(wr->flags & MR_WR_FENCE);
	if (request) {
		m->resp_npkts = wr->opcode == MR_OP_READ_REQ ?
				mr_msg_npkts(m->len, c->cfg.pmtu) : 1;
		st->rd_atomic_open++;
	}
	if (wr->flags & MR_WR_IMM) {
		m->last_flags |= MR_F_IMM;
		m->imm = wr->imm;
	}
	if (wr->flags & MR_WR_INV) {
		m->last_flags |= MR_F_INV;
		m->inv_rkey = wr->inv_rkey;
	}
	/* [MR-WIRE-4] SOLICITED only on a SEND or a Write with immediate */
	if ((wr->flags & MR_WR_SOLICITED) &&
	    (wr->opcode == MR_OP_SEND || (wr->flags & MR_WR_IMM)))
		m->last_flags |= MR_F_SOLICITED;
	/* [MR-VERBS-12] Sends and Writes with immediate consume receive WQEs in MSN order */
	if (wr->opcode == MR_OP_SEND || (wr->flags & MR_WR_IMM))
		m->rsn = st->next_rsn++;
	return 0;
}

int mr_conn_post(struct mr_conn *c, u32 slot, u8 opcode, u32 len, u64 va, u32 rkey, u64 cookie)
{
	struct mr_wr wr = {
		.opcode = opcode, .len = len, .va = va, .rkey = rkey, .cookie = cookie,
	};

	if (mr_opcode_is_request(opcode) && opcode != MR_OP_READ_REQ)
		return -1;
	return mr_conn_post_wr(c, slot, &wr);
}

void mr_conn_set_rnr(struct mr_conn *c, u32 slot, u8 rnr_retry, u32 min_rnr_us)
{
	mr_conn_touch(c);
	if (slot >= MR_CONN_STREAMS || !c->tx[slot]->in_use)
		return;
	c->tx[slot]->rnr_retry = rnr_retry;
	c->tx[slot]->min_rnr_us = min_rnr_us;
}

void mr_conn_set_rd_atomic(struct mr_conn *c, u32 slot, u32 max_rd_atomic)
{
	mr_conn_touch(c);
	if (slot >= MR_CONN_STREAMS || !c->tx[slot]->in_use)
		return;
	/* 0 (a consumer that never set it) allows one, as RoCE hardware does */
	c->tx[slot]->rd_atomic_max = mr_max_u32(1, mr_min_u32(max_rd_atomic, MR_STREAM_MAX_MSGS));
}

/* [MR-NAK-2] the requester's completion status for each NAK code. */
u8 mr_nak_status(u8 code)
{
	switch (code) {
	case MR_NAK_RNR:
		return MR_WC_RNR_RETRY_EXC_ERR;
	case MR_NAK_INVALID_REQUEST:
		return MR_WC_REM_INV_REQ_ERR;
	case MR_NAK_BAD_RKEY:
	case MR_NAK_BOUNDS:
	case MR_NAK_ACCESS:
		return MR_WC_REM_ACCESS_ERR;
	default:
		return MR_WC_REM_OP_ERR;
	}
}

/* A requester's WQE is finished when acknowledged and, for Reads and atomics, answered. */
static bool mr_tx_msg_finished(const struct mr_tx_stream *st, const struct mr_tx_msg *m)
{
	if (mr_opcode_is_request(m->opcode))
		return mr_tx_msg_resp_done(m);
	return mr_seq_before(m->msn, st->msn_acked);
}

void mr_conn_fail(struct mr_conn *c, u8 status)
{
	u32 i, msn;

	mr_conn_touch(c);
	c->failed = true;
	for (i = 0; i < c->n_slots; i++) {
		struct mr_tx_stream *ts = c->tx[i];
		struct mr_rx_stream *rs = c->rx[i];

		if (ts->in_use) {
			for (msn = ts->msn_polled; msn != ts->next_msn; msn++)
				if (!mr_tx_msg_finished(ts, mr_tx_stream_msg(ts, msn)))
					break;
			mr_tx_stream_error(ts, msn, status);
		}
		if (rs->in_use) {
			mr_rx_stream_error(rs, rs->msn_cum, MR_NAK_INVALID_REQUEST);
			rs->nak_pending = false;	/* nobody to tell */
		}
	}
}

static bool mr_poll_rx(struct mr_conn *c, u32 i, struct mr_completion *out)
{
	struct mr_rx_stream *rs = c->rx[i];

	while (rs->msn_reported != rs->msn_cum) {
		struct mr_rx_msg *m = &rs->msg[rs->msn_reported % MR_STREAM_MAX_MSGS];
		/* [MR-VERBS-12] only Sends and Writes with immediate consume receive WQEs */
		bool recv = m->opcode == MR_OP_SEND ||
			    (m->opcode == MR_OP_WRITE && (m->flags & MR_F_IMM));

		memset(out, 0, sizeof(*out));
		out->kind = MR_COMPL_RECV;
		out->opcode = m->opcode;
		out->stream_slot = (u8)i;
		if (m->flags & MR_F_IMM)
			out->flags |= MR_COMPL_F_IMM;
		if (m->flags & MR_F_INV)
			out->flags |= MR_COMPL_F_INV;
		if (m->flags & MR_F_SOLICITED)
			out->flags |= MR_COMPL_F_SOLICITED;
		out->msn = m->msn;
		/* a Write carries no rsn: it takes the next receive WQE in MSN order */
		out->rsn = m->opcode == MR_OP_SEND ? m->rsn : rs->next_rsn;
		out->len = m->len;
		out->imm = m->imm;
		out->inv_rkey = m->inv_rkey;
		m->state = MR_MSG_FREE;
		rs->msn_reported++;
		rs->touched = true;	/* the peer learns the new msn_cum */
		if (recv) {
			rs->next_rsn = out->rsn + 1;
			return true;
		}
	}
	if (rs->err && !rs->err_reported && rs->msn_reported == rs->err_msn) {
		memset(out, 0, sizeof(*out));
		out->kind = MR_COMPL_STREAM_ERROR;
		out->stream_slot = (u8)i;
		out->msn = rs->err_msn;
		out->status = mr_nak_status(rs->nak_code);
		out->nak_code = rs->nak_code;
		rs->err_reported = true;
		return true;
	}
	return false;
}

/* [MR-VERBS-3] in posting order; [MR-VERBS-8] the failed WQE, then flushes. */
static bool mr_poll_tx(struct mr_conn *c, u32 i, struct mr_completion *out)
{
	struct mr_tx_stream *ts = c->tx[i];
	struct mr_tx_msg *m;
	u8 status = MR_WC_SUCCESS;

	if (ts->msn_polled == ts->next_msn)
		return false;
	m = mr_tx_stream_msg(ts, ts->msn_polled);
	if (mr_tx_stream_in_error(ts, ts->msn_polled))
		status = ts->msn_polled == ts->err_msn ? ts->err_status : MR_WC_WR_FLUSH_ERR;
	else if (!mr_tx_msg_finished(ts, m))
		return false;
	memset(out, 0, sizeof(*out));
	out->kind = MR_COMPL_SEND;
	out->opcode = m->opcode;
	out->stream_slot = (u8)i;
	out->status = status;
	out->msn = m->msn;
	out->len = m->len;
	out->cookie = m->cookie;
	out->orig = m->orig;
	if (mr_opcode_is_request(m->opcode))
		ts->rd_atomic_open--;
	m->state = MR_MSG_FREE;
	ts->msn_polled++;
	return true;
}

bool mr_conn_poll_completion(struct mr_conn *c, struct mr_completion *out)
{
	u32 i;

	for (i = 0; i < c->n_slots; i++) {
		if (c->rx[i]->in_use && mr_poll_rx(c, i, out))
			return true;
		if (c->tx[i]->in_use && mr_poll_tx(c, i, out))
			return true;
	}
	return false;
}

bool mr_conn_quiescent(const struct mr_conn *c)
{
	u32 p, i, msn;

	for (p = 0; p < c->cfg.n_paths; p++)
		if (c->tx_path[p].outstanding || c->rx_path[p].unacked || c->rx_path[p].ack_now)
			return false;
	for (i = 0; i < c->n_slots; i++) {
		const struct mr_tx_stream *ts = c->tx[i];
		const struct mr_rx_stream *rs = c->rx[i];

		if (ts->in_use && (ts->msn_polled != ts->next_msn || ts->resp_open))
			return false;
		if (!rs->in_use)
			continue;
		if (rs->msn_reported != rs->msn_cum || rs->nak_pending)
			return false;
		for (msn = 0; msn < MR_STREAM_MAX_MSGS; msn++)
			if (rs->msg[msn].state != MR_MSG_FREE)
				return false;
	}
	return true;
}
