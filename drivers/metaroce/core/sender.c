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
	bool resp;		/* a READ_RESP or ATOMIC_RESP */
};

static struct mr_pick mr_make_pick(u32 slot, u32 msn, u32 idx, bool retx, bool probe)
{
	struct mr_pick p = { slot, msn, idx, retx, probe, false };

	return p;
}

static struct mr_tx_msg *mr_pick_msg(struct mr_conn *c, const struct mr_pick *p)
{
	struct mr_tx_stream *st = c->tx[p->slot];

	return p->resp ? mr_tx_stream_resp(st, p->msn) : mr_tx_stream_msg(st, p->msn);
}

/* [MR-REL-11] one RTO of the path that delivered the message's last packet. */
static u64 mr_msg_probe_at(const struct mr_conn *c, const struct mr_tx_msg *m)
{
	u32 p = m->probe_path < c->cfg.n_paths ? m->probe_path : 0;

	return m->all_acked_ns + mr_path_rto_ns(&c->tx_path[p], &c->cfg.rto);
}

/* [MR-VERBS-5] a fenced WQE waits for every earlier Read and atomic. */
static bool mr_fence_blocks(struct mr_tx_stream *st, u32 msn)
{
	u32 x;

	for (x = st->msn_polled; x != msn; x++) {
		const struct mr_tx_msg *m = mr_tx_stream_msg(st, x);

		if (m->state != MR_MSG_FREE && mr_opcode_is_request(m->opcode) &&
		    !mr_tx_msg_resp_done(m))
			return true;
	}
	return false;
}

/* Some path has received an ACK at or after t. */
static bool mr_conn_heard_since(const struct mr_conn *c, u64 t)
{
	u32 p;

	for (p = 0; p < c->cfg.n_paths; p++)
		if (c->tx_path[p].last_ack_ns >= t)
			return true;
	return false;
}

/*
 * [MR-REL-6] PTO = max(2 SRTT, MIN_RTO / 2) after the later of last send and last ACK;
 * none while the connection's last probe has not been answered by any ACK.
 */
static u64 mr_tlp_pto(const struct mr_conn *c, const struct mr_path_tx *tp)
{
	return mr_max_u64(2 * tp->rtt.srtt_ns, c->cfg.rto.min_ns / 2);
}

static u64 mr_tlp_at(const struct mr_conn *c, const struct mr_path_tx *tp)
{
	u64 pto = mr_tlp_pto(c, tp);

	if (!tp->outstanding || tp->tlp_done || tp->state != MR_PATH_ACTIVE ||
	    tp->next_psn - tp->una >= MR_SACK_BITS || pto >= mr_path_rto_ns(tp, &c->cfg.rto))
		return MR_NO_DEADLINE;
	if (c->last_tlp_ns && !mr_conn_heard_since(c, c->last_tlp_ns))
		return MR_NO_DEADLINE;
	return mr_max_u64(tp->last_send_ns, tp->last_ack_ns) + pto;
}

/*
 * Whether a path's tail probe is due at now: mr_tlp_at() <= now, with its one
 * cheap condition first.  A path that is sending has sent a moment ago, so this
 * is the test each packet pays on each path ([MR-REL-6]).
 */
static bool mr_tlp_due(const struct mr_conn *c, const struct mr_path_tx *tp, u64 now)
{
	if (!tp->outstanding || tp->tlp_done ||
	    now < mr_max_u64(tp->last_send_ns, tp->last_ack_ns) + mr_tlp_pto(c, tp))
		return false;
	return now >= mr_tlp_at(c, tp);
}

static u32 mr_conn_outstanding(const struct mr_conn *c)
{
	u32 p, n = 0;

	for (p = 0; p < c->cfg.n_paths; p++)
		n += c->tx_path[p].outstanding;
	return n;
}

static void mr_conn_sum(const struct mr_conn *c, struct mr_conn_sums *s)
{
	u32 p, w = 0;

	s->outstanding = 0;
	s->min_srtt = 0;
	for (p = 0; p < c->cfg.n_paths; p++) {
		const struct mr_path_tx *tp = &c->tx_path[p];

		s->outstanding += tp->outstanding;
		if (tp->state != MR_PATH_ACTIVE)
			continue;
		w += mr_cc_window(&tp->cc);
		if (tp->rtt.have_sample && (!s->min_srtt || tp->rtt.srtt_ns < s->min_srtt))
			s->min_srtt = tp->rtt.srtt_ns;
	}
	s->window = mr_min_u32(mr_max_u32(w, 1), c->cfg.conn_max_window);
}

/* [MR-CC-6] */
static u32 mr_conn_window(const struct mr_conn *c)
{
	struct mr_conn_sums s;

	mr_conn_sum(c, &s);
	return s.window;
}

/*
 * The responder's half of mr_pick_packet() for one stream: only the responses it still
 * owes, oldest MSN first (the requester completes them in that order). True for a
 * retransmission, which goes first; otherwise fills *first_new if nothing has yet.
 */
static bool mr_pick_response(struct mr_conn *c, u32 slot, struct mr_pick *first_new,
			     bool *have_new)
{
	struct mr_tx_stream *st = c->tx[slot];
	u32 oldest = c->rx[slot]->msn_cum % MR_STREAM_MAX_MSGS;
	u64 open = st->resp_open;

	/* responses are for the MR_STREAM_MAX_MSGS MSNs before msn_cum: start at its slot */
	if (oldest)
		open = (open >> oldest) | (open << (MR_STREAM_MAX_MSGS - oldest));
	while (open) {
		u32 i = (oldest + (u32)__builtin_ctzll(open)) % MR_STREAM_MAX_MSGS;
		struct mr_tx_msg *r = &st->resp[i];
		bool retx = false;
		u32 idx;

		open &= open - 1;
		if (!mr_tx_msg_next_index(r, &idx, &retx))
			continue;
		if (retx || !*have_new) {
			*first_new = mr_make_pick(slot, r->msn, idx, retx, false);
			first_new->resp = true;
			*have_new = true;
		}
		if (retx)
			return true;
	}
	return false;
}

/*
 * [MR-REL-1] retransmissions before new data; [MR-CC-13] streams round-robin. Message
 * probes come between the two. Changes nothing but where the next scan of a stream
 * starts (mr_tx_stream.scan_msn): also asks whether there is a packet to send at all
 * (the pacer, mr_conn_next_packet()).
 */
static bool mr_pick_packet(struct mr_conn *c, u64 now, struct mr_pick *pick)
{
	bool have_new = false, have_probe = false;
	struct mr_pick first_new = {0}, first_probe = {0};
	u32 k, msn;

	for (k = 0; k < c->n_slots; k++) {
		u32 slot = (c->rr_stream + k) % c->n_slots;
		struct mr_tx_stream *st = c->tx[slot];
		bool inert = true;	/* the messages so far have nothing for us */

		if (!st->in_use)
			continue;
		/* where this run's last scan of the stream found the first message that had */
		msn = st->scan_now == now && st->scan_events == c->tx_events ? st->scan_msn :
									     st->msn_acked;
		st->scan_now = now;
		st->scan_events = c->tx_events;
		for (; msn != st->next_msn; msn++) {
			struct mr_tx_msg *m = mr_tx_stream_msg(st, msn);
			bool retx = false, untouched;
			u32 idx;

			if (inert)
				st->scan_msn = msn;
			if (m->state != MR_MSG_OPEN || m->msn != msn)
				continue;
			if (mr_tx_stream_in_error(st, msn))
				break;
			if (m->fence && mr_fence_blocks(st, msn))
				break;
			if (now < m->rnr_until_ns)
				continue;
			untouched = mr_tx_msg_untouched(m);
			if (mr_tx_msg_next_index(m, &idx, &retx)) {
				inert = false;
				if (retx) {
					*pick = mr_make_pick(slot, msn, idx, true, false);
					return true;
				}
				if (!have_new) {
					first_new = mr_make_pick(slot, msn, idx, false, false);
					have_new = true;
				}
			} else if (m->acked_count == m->npkts && now >= mr_msg_probe_at(c, m)) {
				inert = false;
				if (!have_probe) {
					first_probe = mr_make_pick(slot, msn, m->npkts - 1, true,
								   true);
					have_probe = true;
				}
			}
			/* the rest of the stream is untouched too: nothing to resend or probe */
			if (untouched)
				break;
		}
		if (inert)
			st->scan_msn = msn;
		if (mr_pick_response(c, slot, &first_new, &have_new)) {
			*pick = first_new;
			return true;
		}
	}
	if (have_probe) {
		*pick = first_probe;
		return true;
	}
	if (have_new) {
		*pick = first_new;
		return true;
	}
	return false;
}

/*
 * [MR-CC-8] new data stays on the path of the previous packet for a burst of
 * MR_PATH_BURST while that path has room: the receiver then acknowledges a
 * burst with one ACK instead of one per packet sprayed over every path.
 */
static bool mr_burst_continues(const struct mr_conn *c, bool retx)
{
	const struct mr_path_tx *tp;

	if (retx || !c->burst_left || c->burst_path >= c->cfg.n_paths)
		return false;
	tp = &c->tx_path[c->burst_path];
	return tp->state == MR_PATH_ACTIVE && mr_path_free_window(tp) > 0;
}

/* [MR-CC-8] most free window, then lowest SRTT, rotating among ties. */
static int mr_pick_path(struct mr_conn *c, u64 now, bool retx)
{
	int best = -1, alt = -1;
	u32 best_free = 0, best_limit = 1, k;
	u64 best_srtt = 0;

	if (mr_burst_continues(c, retx)) {
		c->burst_left--;
		return (int)c->burst_path;
	}

	for (k = 0; k < c->cfg.n_paths; k++) {
		u32 p = (c->rr_path + k) % c->cfg.n_paths;
		const struct mr_path_tx *tp = &c->tx_path[p];
		u32 free = mr_path_free_window(tp), limit = free + tp->outstanding;
		/* [MR-CC-8] a stale estimate ranks as the lowest: the path is tried again */
		u64 srtt = mr_path_rtt_stale(tp, now) ? 0 : tp->rtt.srtt_ns, l, r;

		if (!free)
			continue;
		if (retx && p == c->avoid_path) {
			alt = (int)p;
			continue;
		}
		/* [MR-CC-8] the largest free share of its window (free / limit), then SRTT. */
		l = (u64)free * best_limit;
		r = (u64)best_free * limit;
		if (best < 0 || l > r || (l == r && srtt < best_srtt)) {
			best = (int)p;
			best_free = free;
			best_limit = limit;
			best_srtt = srtt;
		}
	}
	if (best < 0)
		best = alt;
	if (best >= 0)
		c->rr_path = ((u32)best + 1) % c->cfg.n_paths;
	/* A burst starts on an ACTIVE path with new data; a retransmission ends one. */
	c->burst_left = 0;
	if (best >= 0 && !retx && c->tx_path[best].state == MR_PATH_ACTIVE) {
		c->burst_path = (u32)best;
		c->burst_left = MR_PATH_BURST - 1;
	}
	return best;
}

static void mr_fill_packet(struct mr_conn *c, u64 now, const struct mr_pick *pick,
			   struct mr_path_tx *tp, u32 path_id, struct mr_tx_desc *out)
{
	struct mr_tx_stream *st = c->tx[pick->slot];
	struct mr_tx_msg *m = mr_pick_msg(c, pick);
	struct mr_bth *bth = &out->pkt.bth;
	u32 offset = pick->idx * c->cfg.pmtu;
	bool data = m->opcode == MR_OP_SEND || m->opcode == MR_OP_WRITE ||
		    m->opcode == MR_OP_READ_RESP;

	memset(out, 0, sizeof(*out));
	bth->version = MR_VERSION;
	bth->opcode = m->opcode;
	bth->conn_id = c->cfg.peer_conn_id;
	bth->path_id = (u16)path_id;
	if (data && m->len)
		bth->payload_len = (u16)mr_min_u32(c->cfg.pmtu, m->len - offset);
	bth->psn = tp->next_psn;
	bth->stream = st->dest;
	bth->msn = m->msn;
	bth->offset = data ? offset : 0;
	bth->timestamp = (u32)mr_div_u64(now, 1000);
	if (pick->idx == m->npkts - 1) {
		bth->flags |= MR_F_LAST | MR_F_ACK_REQ;
		/* [MR-WIRE-9] IMMH and IETH travel in the LAST packet only */
		bth->flags |= m->last_flags;
		out->pkt.imm = m->imm;
		out->pkt.inv_rkey = m->inv_rkey;
	}
	if (pick->retx)
		bth->flags |= MR_F_RETX;
	/* [MR-REL-11] every packet was acknowledged: the receiver must say whether it has them */
	if (pick->probe)
		bth->flags |= MR_F_MSG_PROBE;
	if (pick->probe || tp->state != MR_PATH_ACTIVE || mr_path_free_window(tp) <= 1)
		bth->flags |= MR_F_ACK_REQ;
	switch (m->opcode) {
	case MR_OP_SEND:
		out->pkt.msgh.msg_len = m->len;
		out->pkt.msgh.rsn = m->rsn;
		break;
	case MR_OP_READ_RESP:
		/* [MR-WIRE-7] the caller reads from the responder's va + offset */
		out->pkt.msgh.msg_len = m->len;
		out->va = m->va;
		out->rkey = m->rkey;
		break;
	case MR_OP_ATOMIC_RESP:
		out->pkt.atomic_orig = m->orig;
		break;
	case MR_OP_ATOMIC_CAS:
	case MR_OP_ATOMIC_FADD:
		out->pkt.atomic.va = m->va;
		out->pkt.atomic.rkey = m->rkey;
		out->pkt.atomic.swap_add = m->swap_add;
		out->pkt.atomic.compare = m->compare;
		break;
	default:	/* WRITE, READ_REQ */
		out->pkt.reth.va = m->va;
		out->pkt.reth.rkey = m->rkey;
		out->pkt.reth.length = m->len;
		break;
	}
	out->entropy = tp->entropy;
	out->stream_slot = (u8)pick->slot;
	out->cookie = m->cookie;
}

/* in_flight: the connection's packets in flight before this one (mr_conn_outstanding()). */
static void mr_record_sent(struct mr_conn *c, struct mr_path_tx *tp, const struct mr_pick *pick,
			   u8 round, u64 now, u32 in_flight)
{
	struct mr_tx_rec *rec = mr_path_rec(tp, tp->next_psn);

	if (!in_flight && !pick->retx)
		c->last_ack_ns = now;	/* [MR-CONN-10] the silence counts from here */
	rec->valid = true;
	rec->resp = pick->resp;
	rec->round = round;
	rec->stream_slot = (u8)pick->slot;
	rec->msn = pick->msn;
	rec->pkt_idx = pick->idx;
	rec->sent_ns = now;
	if (mr_path_rtt_stale(tp, now))
		tp->rtt_restart = true;
	if (!tp->outstanding)
		tp->rto_start_ns = now;
	tp->last_send_ns = now;
	tp->outstanding++;
	tp->next_psn++;
	tp->sent++;
}

/*
 * [MR-PATH-8] a path in PROBE or SUSPECT with nothing in flight gets a PROBE, so that its
 * RTO clock runs and it either recovers or fails even when data prefers other paths.
 */
void mr_conn_challenge(struct mr_conn *c)
{
	mr_conn_touch(c);
	c->challenge = true;
}

/* Nothing in flight and nothing the sender still owes: every message acknowledged. */
static bool mr_conn_tx_idle(const struct mr_conn *c)
{
	u32 i;

	if (mr_conn_outstanding(c))
		return false;
	for (i = 0; i < c->n_slots; i++) {
		const struct mr_tx_stream *st = c->tx[i];

		if (!st->in_use)
			continue;
		if (st->msn_acked != st->next_msn || st->resp_open)
			return false;
	}
	return true;
}

static bool mr_next_probe(struct mr_conn *c, u64 now, struct mr_tx_desc *out)
{
	struct mr_pick probe = mr_make_pick(MR_REC_PROBE, 0, 0, true, false);
	u32 p;

	u32 challenge_path = 0;

	/* [MR-CONN-7] a challenge goes on the first active path (path 0 if none is) */
	for (p = 0; c->challenge && p < c->cfg.n_paths; p++) {
		if (c->tx_path[p].state == MR_PATH_ACTIVE) {
			challenge_path = p;
			break;
		}
	}
	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_path_tx *tp = &c->tx_path[p];
		bool challenge = c->challenge && p == challenge_path;

		if (!challenge && ((tp->state != MR_PATH_PROBE && tp->state != MR_PATH_SUSPECT) ||
				   tp->outstanding))
			continue;
		c->challenge &= !challenge;
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
		/*
		 * [MR-CONN-10] a challenge of an idle connection starts the silence
		 * clock, as new data would; one of a connection that still owes data
		 * (a path probe, or a challenge while all is lost) must not.
		 */
		if (challenge && mr_conn_tx_idle(c))
			c->last_ack_ns = now;
		mr_record_sent(c, tp, &probe, 0, now, mr_conn_outstanding(c));
		return true;
	}
	return false;
}

/*
 * [MR-REL-6] the newest outstanding packet of a silent path goes again on the same path,
 * with a new PSN and ACK_REQ, without declaring the old one lost.
 */
static bool mr_next_tlp(struct mr_conn *c, u64 now, struct mr_tx_desc *out)
{
	u32 p, psn;

	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_path_tx *tp = &c->tx_path[p];
		struct mr_tx_rec *rec = NULL;
		struct mr_tx_msg *m;
		struct mr_pick pick;

		if (!mr_tlp_due(c, tp, now))
			continue;
		tp->tlp_done = true;
		for (psn = tp->next_psn; psn != tp->una; psn--) {
			rec = mr_path_rec(tp, psn - 1);
			if (rec->valid)
				break;
			rec = NULL;
		}
		if (!rec || rec->stream_slot >= MR_CONN_STREAMS)
			continue;	/* nothing, or a PROBE that asks for its ACK already */
		pick = mr_make_pick(rec->stream_slot, rec->msn, rec->pkt_idx, true, false);
		pick.resp = rec->resp;
		m = mr_pick_msg(c, &pick);
		if (m->state != MR_MSG_OPEN || m->msn != rec->msn || m->round != rec->round ||
		    mr_tx_msg_is_acked(m, rec->pkt_idx))
			continue;
		mr_fill_packet(c, now, &pick, tp, p, out);
		out->pkt.bth.flags |= MR_F_ACK_REQ;
		mr_record_sent(c, tp, &pick, m->round, now, mr_conn_outstanding(c));
		c->tail_probes++;
		c->last_tlp_ns = now;
		return true;
	}
	return false;
}

/*
 * [MR-CC-7] rate = min(hint, MR_PACE_GAIN * conn_window * pmtu * 8 / min_srtt): the
 * larger gap wins.  The gain leaves the window in charge: pacing at one window per SRTT
 * fell behind whenever the SRTT grew (a busy host), and the rate with it.  Each packet
 * has a slot one gap after the previous one.  A sender woken late (a coarse or delayed
 * timer) sends the packets whose slots have passed, at most
 * MR_PACE_BURST of them: counting from now instead gave one packet per wake-up, and
 * in an emulated guest, whose timers fire every half millisecond or so, that capped a
 * connection at about 2,000 packets a second whatever its window.  Slots pass unused
 * only while the pacer holds the sender back: a sender with nothing to send, or a full
 * window, starts again one gap from now (mr_pace_idle()).
 */
static void mr_pace(struct mr_conn *c, u64 now, u32 payload_len, const struct mr_conn_sums *s)
{
	u64 bytes = payload_len + MR_BTH_LEN + 16, gap = 0, oldest, horizon;

	if (c->peer_hint_mbps)
		gap = mr_div_u64(bytes * 8000ULL, c->peer_hint_mbps);
	if (s->min_srtt)
		gap = mr_max_u64(gap, mr_div_u64(bytes * s->min_srtt,
						 MR_PACE_GAIN * s->window * c->cfg.pmtu));
	if (!gap)
		return;
	/*
	 * One gap after the previous slot, which may lie at most MR_PACE_BURST gaps
	 * back; after a pause that pacing did not impose (0), one gap from now.
	 */
	horizon = mr_max_u64(MR_PACE_BURST * gap, 2 * c->pace_late_ns);
	oldest = now > horizon ? now - horizon : 0;
	c->pace_ns = (c->pace_ns ? mr_max_u64(c->pace_ns, oldest) : now) + gap;
	c->next_send_ns = c->pace_ns > now ? c->pace_ns : 0;
}

/*
 * [MR-CC-7] fold the lateness of the wake-up that just ended into the mean (its
 * first sample taken whole, then with gain 1/8), once the sender stops.
 */
static void mr_pace_learn(struct mr_conn *c)
{
	u64 late = c->pace_late_sample - 1;

	if (!c->pace_late_sample)
		return;
	c->pace_late_sample = 0;
	if (!c->pace_late_valid) {
		c->pace_late_ns = late;
		c->pace_late_valid = true;
	} else {
		c->pace_late_ns = c->pace_late_ns - c->pace_late_ns / 8 + late / 8;
	}
}

/* Not held back by the pacer: slots that pass now are not owed to the sender. */
static bool mr_pace_idle(struct mr_conn *c)
{
	mr_pace_learn(c);
	c->pace_ns = 0;
	return false;
}

bool mr_conn_next_packet(struct mr_conn *c, u64 now, struct mr_tx_desc *out)
{
	struct mr_conn_sums sums;
	struct mr_tx_run *run;
	struct mr_path_tx *tp;
	struct mr_tx_msg *m;
	struct mr_pick pick;
	bool none = false;	/* mr_pick_packet() found nothing at this now */
	int path;

	if (c->failed)
		return false;
	if (c->next_send_ns && now < c->next_send_ns) {
		none = !mr_pick_packet(c, now, &pick);
		if (!none) {
			c->pacer_blocked++;
			mr_pace_learn(c);
			return false;
		}
		/*
		 * [MR-CC-7] a sender with nothing to send now (all sent, or
		 * waiting for RNR, a fence, an error) does not wait for its
		 * slot (no wake-up for it): it is idle, as at a slot that
		 * passed.  A probe that is due goes now; new data later goes
		 * at once and the packet after it a gap later.
		 */
		c->next_send_ns = 0;
	}
	/*
	 * [MR-CC-7] how late we reached the slot we waited for: learned after
	 * this wake-up's packets went (mr_pace_learn()), so that one outlier
	 * does not open the catch-up horizon for its own burst.
	 */
	if (c->next_send_ns)
		c->pace_late_sample = now - c->next_send_ns + 1;
	/*
	 * The pacing gap has passed: forget it, so that an engine with nothing
	 * to send names no deadline in the past (its timer would fire at once,
	 * forever). The slots go on in pace_ns.
	 */
	c->next_send_ns = 0;
	/*
	 * Within a transmit run (struct mr_tx_run) a probe or tail probe due at now was
	 * sent by the first call, and the sums only count this run's data packets.
	 */
	run = &c->tx_run;
	if (!run->valid || run->now != now || run->events != c->tx_events) {
		run->valid = false;
		if (mr_next_probe(c, now, out) || mr_next_tlp(c, now, out))
			return true;
		mr_conn_sum(c, &run->sums);
		run->valid = true;
		run->now = now;
		run->events = c->tx_events;
	}
	/* The sums before this packet; picking it changes none of them. */
	sums = run->sums;
	if (sums.outstanding >= sums.window) {
		c->window_full++;
		return mr_pace_idle(c);
	}
	if (none || !mr_pick_packet(c, now, &pick))
		return mr_pace_idle(c);
	if (!pick.retx)		/* new data: the next stream's turn */
		c->rr_stream = (pick.slot + 1) % MR_CONN_STREAMS;
	path = mr_pick_path(c, now, pick.retx);
	if (path < 0)
		return mr_pace_idle(c);
	tp = &c->tx_path[path];
	m = mr_pick_msg(c, &pick);
	mr_fill_packet(c, now, &pick, tp, (u32)path, out);

	mr_record_sent(c, tp, &pick, m->round, now, sums.outstanding);
	run->sums.outstanding++;
	m->rnr_until_ns = 0;
	if (pick.probe) {
		m->all_acked_ns = now;
		c->msg_probes++;
	} else {
		mr_tx_msg_on_sent(m, pick.idx);
		if (pick.retx)
			c->retransmits++;
	}
	mr_pace(c, now, out->pkt.bth.payload_len, &sums);
	return true;
}

/* A PSN left the path: the packet it carried was delivered or is lost. */
static void mr_retire(struct mr_conn *c, struct mr_path_tx *tp, u32 path, struct mr_tx_rec *rec,
		      bool delivered, u64 now)
{
	struct mr_tx_msg *m;
	struct mr_pick pick;

	rec->valid = false;
	tp->outstanding--;
	if (rec->stream_slot >= MR_CONN_STREAMS)
		return;		/* a PROBE carries no data */
	pick = mr_make_pick(rec->stream_slot, rec->msn, rec->pkt_idx, false, false);
	pick.resp = rec->resp;
	m = mr_pick_msg(c, &pick);
	if (m->msn != rec->msn || m->round != rec->round)
		return;		/* the slot moved on, or RNR restarted the message */
	if (!delivered) {
		mr_tx_msg_on_lost(m, rec->pkt_idx);
		return;
	}
	if (mr_tx_msg_on_delivered(m, rec->pkt_idx, now)) {
		m->probe_path = (u8)path;
		if (rec->resp)	/* kept for the replay cache */
			mr_tx_resp_set_state(c->tx[rec->stream_slot], m, MR_MSG_DONE);
	}
}

static void mr_apply_msgacks(struct mr_conn *c, const struct mr_ackh *ack)
{
	u32 i, s;

	for (i = 0; i < ack->n_msg_acks; i++) {
		for (s = 0; s < c->n_slots; s++) {
			if (c->tx[s]->in_use && c->tx[s]->dest == ack->msg_acks[i].stream) {
				mr_tx_stream_on_msgack(c->tx[s], ack->msg_acks[i].msn_cum);
				break;
			}
		}
	}
}

/*
 * [MR-CC-3] how far an RTT sample is above min_rtt + max(MR_RTT_TARGET, 4 RTTVAR):
 * the path's own noise raises the bar, so jitter does not pass for a queue.
 */
static u64 mr_rtt_excess_ns(const struct mr_rtt *rtt, u64 sample)
{
	u64 bar = rtt->min_rtt_ns + mr_max_u64(MR_RTT_TARGET_NS, 4 * rtt->rttvar_ns);

	return sample > bar ? sample - bar : 0;
}

/*
 * [MR-REL-5] a spurious RTO: the ACK shows every PSN that the path's pending
 * RTOs declared lost delivered after all (a stall, not a loss), so the window
 * goes back to what it was.  The packets sent again cannot be taken back, but
 * the next stall of the same length need not cost them: every path's RTO floor
 * rises to cover the delay (a stall is the host's or the peer's, not a path's).
 */
static void mr_path_undo_rto(struct mr_conn *c, struct mr_path_tx *tp, const struct mr_ackh *ack,
			     u32 delivered, u64 now)
{
	u32 psn, p;

	if (!tp->undo_cwnd_q10)
		return;
	if (tp->undo_to - tp->undo_from > MR_SACK_BITS) {
		tp->undo_cwnd_q10 = 0;	/* more than one ACK can show */
		return;
	}
	for (psn = tp->undo_from; psn != tp->undo_to; psn++) {
		if (!mr_sack_ack_covers(ack, psn)) {
			/* a path delivers in order: a later PSN came, this one is lost */
			if (delivered)
				tp->undo_cwnd_q10 = 0;
			return;
		}
	}
	tp->cc.cwnd_q10 = mr_max_u32(tp->cc.cwnd_q10, tp->undo_cwnd_q10);
	tp->undo_cwnd_q10 = 0;
	c->spurious_rtos++;
	/*
	 * Only an ACK that is the first to answer packets sent before the RTO shows
	 * a stall: it echoes one of them, or it counts more packets than the path
	 * sent since (a stalled receiver took them all in one go).  An ACK that
	 * answers only later packets (the originals' ACK was lost) says nothing of
	 * how long the first would have taken, and would ratchet the floor up.
	 */
	if (((ack->ts_echo && (s32)(ack->ts_echo - tp->undo_rto_us) < 0) ||
	     ack->pkt_count > tp->next_psn - tp->undo_to) && now > tp->undo_sent_ns)
		for (p = 0; p < c->cfg.n_paths; p++)
			mr_path_stall_floor_raise(&c->tx_path[p], now, now - tp->undo_sent_ns);
}

/* [MR-PATH-2] an entropy that none of the connection's paths uses. */
static u16 mr_conn_new_entropy(struct mr_conn *c)
{
	u16 used[MR_MAX_PATHS];
	u32 p;

	for (p = 0; p < c->cfg.n_paths; p++)
		used[p] = c->tx_path[p].entropy;
	return mr_entropy_pick(&c->rng, used, c->cfg.n_paths);
}

/*
 * [MR-PATH-10] a path chosen to move leaves once nothing it sent is outstanding: its
 * packets on the old route and the new could otherwise arrive out of PSN order, and a
 * path's gap means loss ([MR-SACK-3]).  It keeps its PSN space and window; its RTT
 * estimators restart with the first sample of the new route.
 */
static void mr_path_repath(struct mr_conn *c, struct mr_path_tx *tp)
{
	if (!tp->repath || tp->outstanding)
		return;
	tp->entropy = mr_conn_new_entropy(c);
	tp->repath = false;
	tp->rerolls++;
	tp->rtt_restart = true;
	c->path_rebalances++;
}

/*
 * [MR-PATH-10] hashing puts some paths on the same link and none on others; a path that
 * shares its bottleneck delivers a fraction of what a path alone on one does.  Once per
 * epoch (MR_REBALANCE_SRTTS of the largest SRTT), the ACTIVE path that delivered least
 * moves to new entropy if it was congested and delivered less than 2/3 of the path that
 * delivered most.  One path per epoch, so that two paths of one link do not both leave
 * it empty; a path with no congestion is slow because the sender had little to send.
 * When moving cannot help (more paths than links, or all on one), paths stay slow and
 * keep moving: every n_paths moves double the epochs in a row a path must be slow
 * before it moves, up to 2^MR_REBALANCE_BACKOFF_MAX.
 */
static void mr_conn_rebalance(struct mr_conn *c, u64 now)
{
	u32 p, best = 0, slow = c->cfg.n_paths, backoff;
	u64 srtt = 0;

	if (now < c->rebalance_at_ns || c->cfg.n_paths < 2)
		return;
	for (p = 0; p < c->cfg.n_paths; p++)
		if (c->tx_path[p].rtt.have_sample)
			srtt = mr_max_u64(srtt, c->tx_path[p].rtt.srtt_ns);
	if (!srtt)
		return;
	if (!c->rebalance_at_ns)
		goto next_epoch;	/* the first: count from here */
	backoff = mr_min_u32(c->path_rebalances / c->cfg.n_paths, MR_REBALANCE_BACKOFF_MAX);
	for (p = 0; p < c->cfg.n_paths; p++) {
		const struct mr_path_tx *tp = &c->tx_path[p];

		if (tp->state == MR_PATH_ACTIVE && !tp->repath)
			best = mr_max_u32(best, tp->epoch_delivered);
	}
	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_path_tx *tp = &c->tx_path[p];
		bool is_slow = best >= MR_REBALANCE_MIN_PKTS && tp->state == MR_PATH_ACTIVE &&
			       !tp->repath && tp->epoch_congested &&
			       (u64)tp->epoch_delivered * MR_Q10 <
				       (u64)best * MR_REBALANCE_SHARE_Q10;

		if (!is_slow) {
			tp->slow_epochs = 0;
			continue;
		}
		if (tp->slow_epochs < 255)
			tp->slow_epochs++;
		if (tp->slow_epochs < 1u << backoff)
			continue;
		if (slow == c->cfg.n_paths ||
		    tp->epoch_delivered < c->tx_path[slow].epoch_delivered)
			slow = p;
	}
	if (slow < c->cfg.n_paths) {
		struct mr_path_tx *tp = &c->tx_path[slow];

		tp->repath = true;
		tp->slow_epochs = 0;
		mr_path_repath(c, tp);
	}
next_epoch:
	for (p = 0; p < c->cfg.n_paths; p++) {
		c->tx_path[p].epoch_delivered = 0;
		c->tx_path[p].epoch_congested = false;
	}
	c->rebalance_at_ns = now + MR_REBALANCE_SRTTS * srtt;
}

/* [MR-SACK-2] [MR-SACK-3] [MR-ACK-7] */
void mr_conn_on_ack(struct mr_conn *c, u64 now, const struct mr_pkt *pkt)
{
	const struct mr_ackh *ack = &pkt->ack;
	u32 path = pkt->bth.path_id, psn, delivered = 0, lost = 0, highest_end;
	struct mr_path_tx *tp;
	u64 newest_sent = 0, excess_ns = MR_CC_NO_SAMPLE;
#ifdef METAROCE_MUTATION_RETX_WINDOW
	bool gap = false;
#endif

	mr_conn_touch(c);
	if (pkt->bth.opcode != MR_OP_ACK || path >= c->cfg.n_paths)
		return;
	tp = &c->tx_path[path];
	if (mr_seq_after(ack->cum_psn, tp->next_psn))
		return;		/* acknowledges PSNs never sent */
	c->acks_received++;
	c->ack_inflight_sum += tp->outstanding;
	c->inflight_max = mr_max_u32(c->inflight_max, tp->outstanding);
	c->last_ack_ns = now;
	tp->last_ack_ns = now;
	mr_path_stall_floor_decay(tp, now);
	tp->tlp_done = false;
	if (ack->rate_hint)
		c->peer_hint_mbps = mr_rate_hint_decode(ack->rate_hint);
	mr_apply_msgacks(c, ack);

	/* Delivered PSNs, and the end of the highest one. */
	highest_end = tp->una;
	for (psn = tp->una; psn != tp->next_psn; psn++) {
		struct mr_tx_rec *rec = mr_path_rec(tp, psn);

		if (!mr_sack_ack_covers(ack, psn)) {
#ifdef METAROCE_MUTATION_RETX_WINDOW
			gap = gap || rec->valid;
#endif
			continue;
		}
		highest_end = psn + 1;
#ifdef METAROCE_MUTATION_RETX_WINDOW
		/* Test-only mutation: go-back-N, SACKed PSNs after a gap count as lost. */
		if (gap)
			continue;
#endif
		if (!rec->valid)
			continue;
		newest_sent = mr_max_u64(newest_sent, rec->sent_ns);
		mr_retire(c, tp, path, rec, true, now);
		delivered++;
	}
	/* A path delivers in order: anything before the highest delivered PSN is lost. */
	for (psn = tp->una; psn != highest_end; psn++) {
		struct mr_tx_rec *rec = mr_path_rec(tp, psn);

		if (!rec->valid)
			continue;
		mr_retire(c, tp, path, rec, false, now);
		tp->lost++;
		c->sack_losses++;
		lost++;
	}
	mr_path_advance_una(tp);
	if (lost) {
		c->avoid_path = path;
		tp->undo_cwnd_q10 = 0;	/* a real loss: the RTO's cut stands */
		mr_cc_on_loss(&tp->cc, lost);
	} else {
		mr_path_undo_rto(c, tp, ack, delivered, now);
	}
	if (delivered) {
		u64 sample = now > newest_sent ? now - newest_sent : 1;

		mr_path_rtt_sample(tp, sample);
		excess_ns = mr_rtt_excess_ns(&tp->rtt, sample);
		mr_path_on_progress(tp, now);
	} else if (ack->ts_echo) {
		/*
		 * [MR-REL-3] an ACK for PSNs already declared lost: the
		 * echoed send time still measures the path, so one whose
		 * RTT exceeds its RTO learns it instead of timing out
		 * for ever.
		 */
		u32 us = (u32)mr_div_u64(now, 1000) - ack->ts_echo;

		if (us && us <= MR_TS_SAMPLE_MAX_US)
			mr_path_rtt_sample(tp, (u64)us * 1000);
	}
	/* [MR-PATH-5] any ACK revives a path in PROBE or SUSPECT. */
	if (!delivered && (tp->state == MR_PATH_PROBE || tp->state == MR_PATH_SUSPECT))
		mr_path_on_progress(tp, now);
	c->ecn_echoes += ack->ce_count;
	mr_cc_on_ack(&tp->cc, delivered, ack->ce_count, ack->pkt_count, excess_ns, tp->una,
		     tp->next_psn);
	/* [MR-PATH-10] */
	tp->epoch_delivered += delivered;
	if (ack->ce_count || (excess_ns != MR_CC_NO_SAMPLE && excess_ns))
		tp->epoch_congested = true;
	mr_path_repath(c, tp);
	mr_conn_rebalance(c, now);
}

/* [MR-REL-5] every outstanding PSN of the path is lost. */
static void mr_path_expire(struct mr_conn *c, u32 path, u64 now)
{
	struct mr_path_tx *tp = &c->tx_path[path];
	u32 psn;

	if (!tp->undo_cwnd_q10) {
		tp->undo_from = tp->una;
		tp->undo_cwnd_q10 = tp->cc.cwnd_q10;
		tp->undo_sent_ns = now;
		tp->undo_rto_us = (u32)mr_div_u64(now, 1000);
	}
	tp->undo_to = tp->next_psn;
	for (psn = tp->una; psn != tp->next_psn; psn++) {
		struct mr_tx_rec *rec = mr_path_rec(tp, psn);

		if (rec->valid) {
			if (psn - tp->undo_from < MR_SACK_BITS)
				tp->undo_sent_ns = mr_min_u64(tp->undo_sent_ns, rec->sent_ns);
			mr_retire(c, tp, path, rec, false, now);
			tp->lost++;
		}
	}
	tp->una = tp->next_psn;
	tp->epoch_congested = true;	/* [MR-PATH-10] */
	c->rtos++;
	c->last_rto_ns = now;
	c->last_rto_path = path;
	if (mr_path_on_rto(tp, c->cfg.fail_rtos, mr_conn_new_entropy(c))) {
		c->path_failures++;
		tp->undo_cwnd_q10 = 0;	/* a new route: nothing to learn about the old */
	}
	mr_path_repath(c, tp);
	c->avoid_path = path;
}

/*
 * [MR-REL-5] another path timed out, still waits for an answer to what it sent since,
 * and no path has heard from the peer in between: the peer or the network is silent as
 * a whole (a stalled host, most often), and this path's timeout would tell nothing that
 * the other one's does not.  A path that timed out waits for an answer to its probe
 * (PROBE or SUSPECT), also in the instant between its timeout and the probe's sending:
 * RTOs that come due in one timer run (a late timer, the first window of a connection)
 * are held too.  Once the other path waits for nothing, nothing of it would end the
 * silence, and this path's timeout goes ahead.
 */
static bool mr_conn_silent_since_rto(const struct mr_conn *c, u32 path)
{
	const struct mr_path_tx *last = &c->tx_path[c->last_rto_path];

#ifdef METAROCE_MUTATION_RTO_EVERY_PATH
	/* Test-only mutation: every path times out on its own. */
	return false;
#endif
	return c->last_rto_ns && c->last_rto_path != path &&
	       (last->outstanding || last->state == MR_PATH_PROBE ||
		last->state == MR_PATH_SUSPECT) &&
	       !mr_conn_heard_since(c, c->last_rto_ns);
}

void mr_conn_on_timer(struct mr_conn *c, u64 now)
{
	u32 p;

	mr_conn_touch(c);
	if (c->failed)
		return;
	/*
	 * [MR-CONN-10] the silence counts only while we ran.  With data outstanding
	 * an RTO is at most MR_MAX_RTO away, so a timer later than that by a quarter
	 * of the timeout means that we stalled (a descheduled VM, a busy host): the
	 * time away is not the peer's silence.
	 */
	if (c->last_timer_ns &&
	    now > c->last_timer_ns + c->cfg.rto.max_ns + c->cfg.conn_timeout_ns / 4) {
		u64 before = c->last_timer_ns > c->last_ack_ns ?
			     c->last_timer_ns - c->last_ack_ns : 0;

		c->last_ack_ns = now - before;
	}
	c->last_timer_ns = now;
	if (mr_conn_outstanding(c) && now >= c->last_ack_ns + c->cfg.conn_timeout_ns) {
		mr_conn_fail(c, MR_WC_RETRY_EXC_ERR);
		return;
	}
	for (p = 0; p < c->cfg.n_paths; p++) {
		struct mr_path_tx *tp = &c->tx_path[p];

		mr_path_stall_floor_decay(tp, now);
		if (!tp->outstanding || now < tp->rto_start_ns + mr_path_rto_ns(tp, &c->cfg.rto))
			continue;
		if (mr_conn_silent_since_rto(c, p)) {
			c->rtos_held++;
			tp->rto_start_ns = now;	/* it runs again from here */
			continue;
		}
		mr_path_expire(c, p, now);
	}
}

/* [MR-NAK-2] [MR-NAK-4] the requester's side of a NAK. */
void mr_conn_on_nak(struct mr_conn *c, u64 now, const struct mr_pkt *pkt)
{
	u32 s, msn = pkt->bth.msn, wait_us;
	struct mr_tx_stream *st = NULL;
	struct mr_tx_msg *m;

	mr_conn_touch(c);
	c->naks_received++;
	for (s = 0; s < c->n_slots && !st; s++)
		if (c->tx[s]->in_use && c->tx[s]->dest == pkt->bth.stream)
			st = c->tx[s];
	if (!st || mr_seq_before(msn, st->msn_polled) || !mr_seq_before(msn, st->next_msn))
		return;
	c->last_ack_ns = now;
	m = mr_tx_stream_msg(st, msn);
	if (m->msn != msn || m->state == MR_MSG_FREE)
		return;
	if (pkt->nak.code != MR_NAK_RNR) {
		mr_tx_stream_error(st, msn, mr_nak_status(pkt->nak.code));
		return;
	}
	/* one retry per refusal: NAKs for the other packets of the round repeat it */
	if (m->state != MR_MSG_OPEN || mr_tx_stream_in_error(st, msn) || !m->next_new ||
	    now < m->rnr_until_ns)
		return;
	if (st->rnr_retry != MR_RNR_INFINITE && m->rnr_count >= st->rnr_retry) {
		mr_tx_stream_error(st, msn, MR_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	m->rnr_count++;
	wait_us = mr_max_u32(pkt->nak.info, st->min_rnr_us);
	mr_tx_msg_restart(m, now + (u64)wait_us * 1000);
}

void mr_conn_abort_response(struct mr_conn *c, u32 slot, u32 msn, u8 code)
{
	struct mr_tx_msg *r;
	struct mr_rx_stream *st;

	mr_conn_touch(c);
	if (slot >= MR_CONN_STREAMS)
		return;
	r = mr_tx_stream_resp(c->tx[slot], msn);
	st = c->rx[slot];
	if (r->msn != msn || r->state != MR_MSG_OPEN)
		return;
	mr_tx_resp_set_state(c->tx[slot], r, MR_MSG_DONE);
	r->round++;		/* its packets in flight no longer count */
	if (!st->nak_pending) {
		st->nak_code = code;
		st->nak_msn = msn;
		st->nak_info = 0;
		st->nak_pending = true;
	}
}

/*
 * The earliest time the sender has something to do that no packet arrival starts: an
 * RTO, the connection timeout, a tail-loss probe, the end of an RNR wait, a message
 * probe. Only what mr_conn_on_timer() or mr_conn_next_packet() would then act on
 * counts: a time that has passed but cannot be acted on would make the caller's timer
 * fire at once, again and again. So the last three, which send, wait for the pacing
 * time, and an RNR wait or a message probe counts only while the window has room:
 * the window opens on an ACK or an RTO, and both are events of their own.
 */
u64 mr_conn_sender_deadline(const struct mr_conn *c)
{
	u64 t = MR_NO_DEADLINE, send = MR_NO_DEADLINE;
	bool room = false;
	u32 p, i, msn;

	if (c->failed)
		return t;
	for (p = 0; p < c->cfg.n_paths; p++) {
		const struct mr_path_tx *tp = &c->tx_path[p];

		if (tp->outstanding)
			t = mr_min_u64(t, tp->rto_start_ns + mr_path_rto_ns(tp, &c->cfg.rto));
		send = mr_min_u64(send, mr_tlp_at(c, tp));
		room |= mr_path_free_window(tp) > 0;
	}
	if (mr_conn_outstanding(c)) {
		t = mr_min_u64(t, c->last_ack_ns + c->cfg.conn_timeout_ns);
		room &= mr_conn_outstanding(c) < mr_conn_window(c);
	}
	for (i = 0; room && i < c->n_slots; i++) {
		const struct mr_tx_stream *st = c->tx[i];

		if (!st->in_use)
			continue;
		for (msn = st->msn_acked; msn != st->next_msn; msn++) {
			const struct mr_tx_msg *m = &st->msg[msn % MR_STREAM_MAX_MSGS];

			if (m->state != MR_MSG_OPEN || m->msn != msn ||
			    mr_tx_stream_in_error(st, msn))
				continue;
			if (mr_tx_msg_untouched(m))
				break;	/* and so is every later message: no wait, no probe */
			if (m->rnr_until_ns)
				send = mr_min_u64(send, m->rnr_until_ns);
			else if (m->acked_count == m->npkts)
				send = mr_min_u64(send, mr_msg_probe_at(c, m));
		}
	}
	if (send != MR_NO_DEADLINE && c->next_send_ns)
		send = mr_max_u64(send, c->next_send_ns);
	return mr_min_u64(t, send);
}

u64 mr_conn_next_deadline(const struct mr_conn *c)
{
	u64 t = MR_NO_DEADLINE;
	u32 p, i;

	if (c->failed)
		return t;
	for (p = 0; p < c->cfg.n_paths; p++) {
		const struct mr_sack_rx *rp = &c->rx_path[p];

		if (rp->ack_now)
			t = 0;
		else if (rp->unacked && rp->ack_deadline_ns)
			t = mr_min_u64(t, rp->ack_deadline_ns);
	}
	for (i = 0; i < c->n_slots; i++)
		if (c->rx[i]->in_use && c->rx[i]->nak_pending)
			t = 0;
	if (c->challenge)
		t = 0;
	t = mr_min_u64(t, mr_conn_sender_deadline(c));
	if (c->next_send_ns)
		t = mr_min_u64(t, c->next_send_ns);
	return t;
}
