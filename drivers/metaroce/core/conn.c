// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Connection set-up, stream pairing, work posting and MSN-ordered completion polling. */
#include "conn.h"

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
}

void mr_conn_init(struct mr_conn *c, const struct mr_conn_cfg *cfg)
{
	u16 used[MR_MAX_PATHS];
	u32 p;

	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	if (c->cfg.n_paths < 1 || c->cfg.n_paths > MR_MAX_PATHS)
		c->cfg.n_paths = MR_DEFAULT_PATHS;
	if (c->cfg.pmtu < 256)
		c->cfg.pmtu = 256;
	c->cfg.pmtu -= c->cfg.pmtu % 256;	/* [MR-CONN-6] */
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

int mr_conn_open_stream(struct mr_conn *c, u32 local_id, u32 peer_id)
{
	u32 i;

	for (i = 0; i < MR_CONN_STREAMS; i++) {
		if (c->tx[i].in_use)
			continue;
		mr_tx_stream_init(&c->tx[i], peer_id & MR_STREAM_ID_MASK);
		mr_rx_stream_init(&c->rx[i], local_id & MR_STREAM_ID_MASK);
		return (int)i;
	}
	return -1;
}

int mr_conn_post(struct mr_conn *c, u32 slot, u8 opcode, u32 len, u64 va, u32 rkey, u64 cookie)
{
	struct mr_tx_stream *st;
	struct mr_tx_msg *m;

	if (slot >= MR_CONN_STREAMS || !c->tx[slot].in_use || len > MR_MAX_MSG_LEN)
		return -1;
	if (opcode != MR_OP_SEND && opcode != MR_OP_WRITE)
		return -1;
	st = &c->tx[slot];
	if (!mr_tx_stream_can_post(st))
		return -1;
	m = mr_tx_stream_msg(st, st->next_msn);
	memset(m, 0, sizeof(*m));
	m->state = MR_MSG_OPEN;
	m->opcode = opcode;
	m->msn = st->next_msn++;
	m->len = len;
	m->npkts = mr_msg_npkts(len, c->cfg.pmtu);
	m->va = va;
	m->rkey = rkey;
	m->cookie = cookie;
	if (opcode == MR_OP_SEND)
		m->rsn = st->next_rsn++;
	return 0;
}

bool mr_conn_poll_completion(struct mr_conn *c, struct mr_completion *out)
{
	u32 i;

	for (i = 0; i < MR_CONN_STREAMS; i++) {
		struct mr_rx_stream *rs = &c->rx[i];
		struct mr_tx_stream *ts = &c->tx[i];

		if (rs->in_use && rs->msn_reported != rs->msn_cum) {
			struct mr_rx_msg *m = &rs->msg[rs->msn_reported % MR_STREAM_MAX_MSGS];

			memset(out, 0, sizeof(*out));
			out->kind = MR_COMPL_RECV;
			out->opcode = m->opcode;
			out->stream_slot = (u8)i;
			out->flags = m->flags;
			out->msn = m->msn;
			out->rsn = m->rsn;
			out->len = m->len;
			out->imm = m->imm;
			m->state = MR_MSG_FREE;
			rs->msn_reported++;
			rs->touched = true;	/* the peer learns the new msn_cum */
			return true;
		}
		if (ts->in_use && ts->msn_polled != ts->msn_acked) {
			struct mr_tx_msg *m = mr_tx_stream_msg(ts, ts->msn_polled);

			memset(out, 0, sizeof(*out));
			out->kind = MR_COMPL_SEND;
			out->opcode = m->opcode;
			out->stream_slot = (u8)i;
			out->msn = m->msn;
			out->len = m->len;
			out->cookie = m->cookie;
			m->state = MR_MSG_FREE;
			ts->msn_polled++;
			return true;
		}
	}
	return false;
}

u64 mr_conn_next_deadline(const struct mr_conn *c)
{
	u64 t = MR_NO_DEADLINE;
	u32 p, i, msn;

	for (p = 0; p < c->cfg.n_paths; p++) {
		const struct mr_path_tx *tp = &c->tx_path[p];
		const struct mr_sack_rx *rp = &c->rx_path[p];

		if (tp->outstanding)
			t = mr_min_u64(t, tp->rto_start_ns + mr_path_rto_ns(tp, &c->cfg.rto));
		if (rp->ack_now)
			t = 0;
		else if (rp->unacked && rp->ack_deadline_ns)
			t = mr_min_u64(t, rp->ack_deadline_ns);
	}
	for (i = 0; i < MR_CONN_STREAMS; i++) {
		const struct mr_tx_stream *st = &c->tx[i];

		if (!st->in_use)
			continue;
		for (msn = st->msn_acked; msn != st->next_msn; msn++) {
			const struct mr_tx_msg *m = &st->msg[msn % MR_STREAM_MAX_MSGS];

			if (m->state == MR_MSG_OPEN && m->acked_count == m->npkts)
				t = mr_min_u64(t, m->all_acked_ns + c->cfg.rto.min_ns);
		}
	}
	if (c->next_send_ns)
		t = mr_min_u64(t, c->next_send_ns);
	return t;
}

bool mr_conn_quiescent(const struct mr_conn *c)
{
	u32 p, i, msn;

	for (p = 0; p < c->cfg.n_paths; p++)
		if (c->tx_path[p].outstanding || c->rx_path[p].unacked || c->rx_path[p].ack_now)
			return false;
	for (i = 0; i < MR_CONN_STREAMS; i++) {
		const struct mr_tx_stream *ts = &c->tx[i];
		const struct mr_rx_stream *rs = &c->rx[i];

		if (ts->in_use && ts->msn_polled != ts->next_msn)
			return false;
		if (!rs->in_use)
			continue;
		if (rs->msn_reported != rs->msn_cum)
			return false;
		for (msn = 0; msn < MR_STREAM_MAX_MSGS; msn++)
			if (rs->msg[msn].state != MR_MSG_FREE)
				return false;
	}
	return true;
}
