// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The sending half: choose packet and path, process ACKs, detect loss, run RTOs. */
#include "codec.h"
#include "conn.h"

struct mr_pick {
	u32 slot;
	u32 msn;
	u32 idx;
	bool retx;
	bool probe;		/* [MR-REL-11] message probe */
};

static struct mr_pick mr_make_pick(u32 slot, u32 msn, u32 idx, bool retx, bool probe)
{
	struct mr_pick p = { slot, msn, idx, retx, probe };

	return p;
}

static u32 mr_conn_outstanding(const struct mr_conn *c)
{
	u32 p, n = 0;

	for (p = 0; p < c->cfg.n_paths; p++)
		n += c->tx_path[p].outstanding;
	return n;
}

/* [MR-CC-6] */
static u32 mr_conn_window(const struct mr_conn *c)
{
	u32 p, w = 0;

	for (p = 0; p < c->cfg.n_paths; p++)
		if (c->tx_path[p].state == MR_PATH_ACTIVE)
			w += mr_cc_window(&c->tx_path[p].cc);
	return mr_min_u32(mr_max_u32(w, 1), c->cfg.conn_max_window);
}

/*
 * [MR-REL-1] retransmissions before new data; [MR-CC-13] streams round-robin. Message
 * probes come between the two.
 */
static bool mr_pick_packet(struct mr_conn *c, u64 now, struct mr_pick *pick)
{
	bool have_new = false, have_probe = false;
	struct mr_pick first_new = {0}, first_probe = {0};
	u32 k, msn;

	for (k = 0; k < MR_CONN_STREAMS; k++) {
		u32 slot = (c->rr_stream + k) % MR_CONN_STREAMS;
		struct mr_tx_stream *st = &c->tx[slot];

		if (!st->in_use)
			continue;
		for (msn = st->msn_acked; msn != st->next_msn; msn++) {
			struct mr_tx_msg *m = mr_tx_stream_msg(st, msn);
			bool retx = false;
			u32 idx;

			if (m->state != MR_MSG_OPEN)
				continue;
			if (mr_tx_msg_next_index(m, &idx, &retx)) {
				if (retx) {
					*pick = mr_make_pick(slot, msn, idx, true, false);
					return true;
				}
				if (!have_new) {
					first_new = mr_make_pick(slot, msn, idx, false, false);
					have_new = true;
				}
			} else if (m->acked_count == m->npkts && !have_probe &&
				   now >= m->all_acked_ns + c->cfg.rto.min_ns) {
				first_probe = mr_make_pick(slot, msn, m->npkts - 1, true, true);
				have_probe = true;
			}
		}
	}
	if (have_probe) {
		*pick = first_probe;
		return true;
	}
	if (have_new) {
		*pick = first_new;
		c->rr_stream = (first_new.slot + 1) % MR_CONN_STREAMS;
		return true;
	}
	return false;
}

/* [MR-CC-8] most free window, then lowest SRTT, rotating among ties. */
static int mr_pick_path(struct mr_conn *c, bool retx)
{
	int best = -1, alt = -1;
	u32 best_free = 0, k;
	u64 best_srtt = 0;

	for (k = 0; k < c->cfg.n_paths; k++) {
		u32 p = (c->rr_path + k) % c->cfg.n_paths;
		const struct mr_path_tx *tp = &c->tx_path[p];
		u32 free = mr_path_free_window(tp);
		u64 srtt = tp->rtt.srtt_ns;

		if (!free)
			continue;
		if (retx && p == c->avoid_path) {
			alt = (int)p;
			continue;
		}
		if (best < 0 || free > best_free || (free == best_free && srtt < best_srtt)) {
			best = (int)p;
			best_free = free;
			best_srtt = srtt;
		}
	}
	if (best < 0)
		best = alt;
	if (best >= 0)
		c->rr_path = ((u32)best + 1) % c->cfg.n_paths;
	return best;
}

static void mr_fill_packet(struct mr_conn *c, u64 now, const struct mr_pick *pick,
			   struct mr_path_tx *tp, u32 path_id, struct mr_tx_desc *out)
{
	struct mr_tx_stream *st = &c->tx[pick->slot];
	struct mr_tx_msg *m = mr_tx_stream_msg(st, pick->msn);
	struct mr_bth *bth = &out->pkt.bth;
	u32 offset = pick->idx * c->cfg.pmtu;

	memset(out, 0, sizeof(*out));
	bth->version = MR_VERSION;
	bth->opcode = m->opcode;
	bth->conn_id = c->cfg.peer_conn_id;
	bth->path_id = (u16)path_id;
	bth->payload_len = (u16)(m->len ? mr_min_u32(c->cfg.pmtu, m->len - offset) : 0);
	bth->psn = tp->next_psn;
	bth->stream = st->dest;
	bth->msn = m->msn;
	bth->offset = offset;
	bth->timestamp = (u32)mr_div_u64(now, 1000);
	if (pick->idx == m->npkts - 1)
		bth->flags |= MR_F_LAST | MR_F_ACK_REQ;
	if (pick->retx)
		bth->flags |= MR_F_RETX;
	if (pick->probe || tp->state != MR_PATH_ACTIVE || mr_path_free_window(tp) == 1)
		bth->flags |= MR_F_ACK_REQ;
	if (m->opcode == MR_OP_SEND) {
		out->pkt.msgh.msg_len = m->len;
		out->pkt.msgh.rsn = m->rsn;
	} else {
		out->pkt.reth.va = m->va;
		out->pkt.reth.rkey = m->rkey;
		out->pkt.reth.length = m->len;
	}
	out->entropy = tp->entropy;
	out->stream_slot = (u8)pick->slot;
	out->cookie = m->cookie;
}

static void mr_record_sent(struct mr_path_tx *tp, u32 slot, u32 msn, u32 idx, u64 now)
{
	struct mr_tx_rec *rec = mr_path_rec(tp, tp->next_psn);

	rec->valid = true;
	rec->stream_slot = (u8)slot;
	rec->msn = msn;
	rec->pkt_idx = idx;
	rec->sent_ns = now;
	if (!tp->outstanding)
		tp->rto_start_ns = now;
	tp->outstanding++;
	tp->next_psn++;
	tp->sent++;
}

/*
 * [MR-PATH-8] a path in PROBE or SUSPECT with nothing in flight gets a PROBE, so that its
 * RTO clock runs and it either recovers or fails even when data prefers other paths.
 */
static bool mr_next_probe(struct mr_conn *c, u64 now, struct mr_tx_desc *out)
{
	u32 p;

	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_path_tx *tp = &c->tx_path[p];

		if ((tp->state != MR_PATH_PROBE && tp->state != MR_PATH_SUSPECT) ||
		    tp->outstanding)
			continue;
		memset(out, 0, sizeof(*out));
		out->pkt.bth.version = MR_VERSION;
		out->pkt.bth.opcode = MR_OP_PROBE;
		out->pkt.bth.flags = MR_F_ACK_REQ;
		out->pkt.bth.conn_id = c->cfg.peer_conn_id;
		out->pkt.bth.path_id = (u16)p;
		out->pkt.bth.psn = tp->next_psn;
		out->pkt.bth.timestamp = (u32)mr_div_u64(now, 1000);
		out->entropy = tp->entropy;
		out->stream_slot = MR_REC_PROBE;
		mr_record_sent(tp, MR_REC_PROBE, 0, 0, now);
		return true;
	}
	return false;
}

bool mr_conn_next_packet(struct mr_conn *c, u64 now, struct mr_tx_desc *out)
{
	struct mr_tx_stream *st;
	struct mr_path_tx *tp;
	struct mr_pick pick;
	int path;

	if (c->next_send_ns && now < c->next_send_ns)
		return false;
	if (mr_next_probe(c, now, out))
		return true;
	if (mr_conn_outstanding(c) >= mr_conn_window(c))
		return false;
	if (!mr_pick_packet(c, now, &pick))
		return false;
	path = mr_pick_path(c, pick.retx);
	if (path < 0)
		return false;
	tp = &c->tx_path[path];
	st = &c->tx[pick.slot];
	mr_fill_packet(c, now, &pick, tp, (u32)path, out);

	mr_record_sent(tp, pick.slot, pick.msn, pick.idx, now);
	if (pick.probe) {
		mr_tx_stream_msg(st, pick.msn)->all_acked_ns = now;
		c->msg_probes++;
	} else {
		mr_tx_msg_on_sent(mr_tx_stream_msg(st, pick.msn), pick.idx);
		if (pick.retx)
			c->retransmits++;
	}
	/* [MR-CC-7] pace at the receiver's hint when there is one */
	if (c->peer_hint_mbps) {
		u64 bytes = out->pkt.bth.payload_len + MR_BTH_LEN + 16;
		u64 gap = mr_div_u64(bytes * 8000ULL, c->peer_hint_mbps);

		c->next_send_ns = mr_max_u64(c->next_send_ns, now) + gap;
	}
	return true;
}

/* A PSN left the path: the packet it carried was delivered or is lost. */
static void mr_retire(struct mr_conn *c, struct mr_path_tx *tp, struct mr_tx_rec *rec,
		      bool delivered, u64 now)
{
	struct mr_tx_msg *m;

	rec->valid = false;
	tp->outstanding--;
	if (rec->stream_slot >= MR_CONN_STREAMS)
		return;		/* a PROBE carries no data */
	m = mr_tx_stream_msg(&c->tx[rec->stream_slot], rec->msn);
	if (m->msn != rec->msn)
		return;		/* the message already completed and its slot moved on */
	if (delivered)
		mr_tx_msg_on_delivered(m, rec->pkt_idx, now);
	else
		mr_tx_msg_on_lost(m, rec->pkt_idx);
}

static void mr_apply_msgacks(struct mr_conn *c, const struct mr_ackh *ack)
{
	u32 i, s;

	for (i = 0; i < ack->n_msg_acks; i++) {
		for (s = 0; s < MR_CONN_STREAMS; s++) {
			if (c->tx[s].in_use && c->tx[s].dest == ack->msg_acks[i].stream) {
				mr_tx_stream_on_msgack(&c->tx[s], ack->msg_acks[i].msn_cum);
				break;
			}
		}
	}
}

/* [MR-SACK-2] [MR-SACK-3] [MR-ACK-7] */
void mr_conn_on_ack(struct mr_conn *c, u64 now, const struct mr_pkt *pkt)
{
	const struct mr_ackh *ack = &pkt->ack;
	u32 path = pkt->bth.path_id, psn, delivered = 0, highest_end;
	struct mr_path_tx *tp;
	u64 newest_sent = 0;
	bool inflated = false, any_loss = false;

	if (pkt->bth.opcode != MR_OP_ACK || path >= c->cfg.n_paths)
		return;
	tp = &c->tx_path[path];
	if (mr_seq_after(ack->cum_psn, tp->next_psn))
		return;		/* acknowledges PSNs never sent */
	if (ack->rate_hint)
		c->peer_hint_mbps = mr_rate_hint_decode(ack->rate_hint);
	mr_apply_msgacks(c, ack);

	/* Delivered PSNs, and the end of the highest one. */
	highest_end = tp->una;
	for (psn = tp->una; psn != tp->next_psn; psn++) {
		struct mr_tx_rec *rec = mr_path_rec(tp, psn);

		if (!mr_sack_ack_covers(ack, psn))
			continue;
		highest_end = psn + 1;
		if (!rec->valid)
			continue;
		newest_sent = mr_max_u64(newest_sent, rec->sent_ns);
		mr_retire(c, tp, rec, true, now);
		delivered++;
	}
	/* A path delivers in order: anything before the highest delivered PSN is lost. */
	for (psn = tp->una; psn != highest_end; psn++) {
		struct mr_tx_rec *rec = mr_path_rec(tp, psn);

		if (!rec->valid)
			continue;
		mr_retire(c, tp, rec, false, now);
		tp->lost++;
		any_loss = true;
	}
	mr_path_advance_una(tp);
	if (any_loss) {
		c->avoid_path = path;
		mr_cc_on_loss(&tp->cc);
	}
	if (delivered) {
		u64 sample = now > newest_sent ? now - newest_sent : 1;

		mr_rtt_sample(&tp->rtt, sample);
		inflated = sample > tp->rtt.min_rtt_ns + MR_RTT_TARGET_NS;
		mr_path_on_progress(tp, now);
	}
	mr_cc_on_ack(&tp->cc, delivered, ack->ce_count, ack->pkt_count, inflated, tp->una,
		     tp->next_psn);
}

/* [MR-REL-5] every outstanding PSN of the path is lost. */
static void mr_path_expire(struct mr_conn *c, u32 path, u64 now)
{
	struct mr_path_tx *tp = &c->tx_path[path];
	u16 used[MR_MAX_PATHS];
	u32 psn, p;

	for (psn = tp->una; psn != tp->next_psn; psn++) {
		struct mr_tx_rec *rec = mr_path_rec(tp, psn);

		if (rec->valid) {
			mr_retire(c, tp, rec, false, now);
			tp->lost++;
		}
	}
	tp->una = tp->next_psn;
	for (p = 0; p < c->cfg.n_paths; p++)
		used[p] = c->tx_path[p].entropy;
	mr_path_on_rto(tp, c->cfg.fail_rtos, mr_entropy_pick(&c->rng, used, c->cfg.n_paths));
	c->avoid_path = path;
}

void mr_conn_on_timer(struct mr_conn *c, u64 now)
{
	u32 p;

	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_path_tx *tp = &c->tx_path[p];

		if (tp->outstanding && now >= tp->rto_start_ns + mr_path_rto_ns(tp, &c->cfg.rto))
			mr_path_expire(c, p, now);
	}
}
